"""One copy of the dataset per machine for ranks that share no parent (torchrun).

torchrun starts the ranks as separate programs, so nothing is inherited: each rank loading the
dataset itself makes one copy per rank (a copy-on-write map of the cache is shared through the
page cache only until the rank's sampling workers need it in shared memory, which copies it).
Instead, the lowest rank of each machine loads the dataset and moves it into shared memory;
torch keeps each shared array as an unnamed file it holds open. The other ranks of that
machine open those very files through /proc/<leader pid>/fd/<fd> (Linux lets a process open
the files of another process of the same user) and map the same pages, so every rank - and
every sampling worker a rank starts, which receives the arrays as shared-memory handles - reads
one copy. Where that open is refused (another user, a hardened /proc), the rank loads its own
copy and says so in the returned description instead of failing.
"""
from __future__ import annotations

import errno
import math
import os
import socket
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from gnnrepro.datasets.dataset import Dataset
from gnnrepro.datasets.link_dataset import LinkDataset
from gnnrepro.datasets.temporal_dataset import TemporalDataset
from gnnrepro.pinning import share_memory_in_place

__all__ = ["attach_dataset", "describe_dataset", "machine_id", "share_dataset_",
           "share_on_machine"]

def machine_id() -> str:
    """Host name, this boot's id and the PID namespace: equal exactly for processes that see
    one another's /proc on one running machine (containers sharing a host and its network but
    not their PID numbers differ). $GNNREPRO_MACHINE_ID, when set, is the id instead: several
    torchrun invocations on one host then act as different machines (tests, benchmarks)."""
    override = os.environ.get("GNNREPRO_MACHINE_ID")
    if override:
        return override
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        pid_namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        boot, pid_namespace = "", 0
    return f"{socket.gethostname()}/{boot}/{pid_namespace}"


def share_dataset_(dataset: Dataset) -> Dataset:
    """Move the dataset's arrays into shared memory in place (once; already shared ones stay)."""
    for array in dataset.arrays().values():
        share_memory_in_place(array)
    return dataset


def describe_dataset(dataset: Dataset) -> dict[str, Any]:
    """What another process of this machine needs to map `dataset` (whose arrays must already
    be in shared memory, see share_dataset_): this pid, and per array the descriptor number,
    identity (device, inode) and size of its shared file, and the tensor's dtype, shape,
    strides and offset (fd None for an empty array). Picklable and small; valid while this
    process lives and keeps the arrays. Under torch's file_system sharing strategy the arrays
    are first moved (once, in this process) to the file-descriptor kind this needs."""
    arrays = {}
    for name, tensor in dataset.arrays().items():
        if tensor.device.type != "cpu" or not tensor.is_shared():
            raise ValueError(f"dataset.{name} must be a CPU tensor in shared memory")
        entry = {"fd": None, "file": None, "size": 0,
                 "dtype": str(tensor.dtype).removeprefix("torch."), "shape": tuple(tensor.shape),
                 "stride": tuple(tensor.stride()), "offset": tensor.storage_offset()}
        if tensor.untyped_storage().nbytes():
            fd, size = tensor.untyped_storage()._share_fd_cpu_()
            stat = os.fstat(fd)
            entry.update(fd=fd, file=(stat.st_dev, stat.st_ino), size=size)
        arrays[name] = entry
    return {"pid": os.getpid(), "arrays": arrays, "num_classes": dataset.num_classes,
            "name": dataset.name, "params": dict(dataset.params),
            "kind": type(dataset).__name__}


def _open_array(pid: int, entry: dict[str, Any]) -> torch.Tensor:
    """Map one array of another process (see describe_dataset). OSError if its file cannot be
    opened or is not the described one; ValueError if the description does not fit it."""
    dtype = getattr(torch, entry["dtype"], None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {entry['dtype']!r} in a dataset description")
    if entry["fd"] is None:
        if entry["size"] != 0 or math.prod(entry["shape"]) != 0:
            raise ValueError(f"an array without a file must be empty, got {entry}")
        return torch.empty(entry["shape"], dtype=dtype)
    path = f"/proc/{pid}/fd/{entry['fd']}"
    fd = os.open(path, os.O_RDWR)
    try:
        stat = os.fstat(fd)
        if [stat.st_dev, stat.st_ino] != list(entry["file"]):
            raise OSError(errno.ESTALE, "not the described shared file (a process in another "
                          "PID namespace, or one that has exited?)", path)
        # Must stay: asked for more than the file holds, _new_shared_fd_cpu would grow the
        # other process's file instead of failing.
        if stat.st_size < entry["size"]:
            raise ValueError(f"{path} is smaller than the described {entry['size']} bytes")
        storage = torch.UntypedStorage._new_shared_fd_cpu(fd, entry["size"])  # dups fd
    finally:
        os.close(fd)
    # A mapped storage cannot be resized, so set_ raises where shape, stride and offset would
    # reach past it.
    return torch.empty(0, dtype=dtype).set_(storage, entry["offset"], entry["shape"],
                                            entry["stride"])


#: The Dataset kinds a description names (each rebuilds from its own arrays()).
_DATASET_KINDS: dict[str, type[Dataset]] = {
    cls.__name__: cls for cls in (Dataset, TemporalDataset, LinkDataset)}


def attach_dataset(description: dict[str, Any]) -> Dataset:
    """The dataset `description` (describe_dataset, from another process of this machine)
    describes, mapping that process's shared pages: nothing is copied. The graph is validated
    as on any load, so a wrong description fails here, not in a kernel."""
    kind = _DATASET_KINDS[description.get("kind", "Dataset")]  # its arrays are its kind's
    return kind.from_arrays(
        {name: _open_array(description["pid"], entry)
         for name, entry in description["arrays"].items()},
        num_classes=description["num_classes"], name=description["name"],
        params=description["params"])


def share_on_machine(load: Callable[[], Dataset]) -> tuple[Dataset, str]:
    """Collective over the default process group: the lowest rank of each machine calls
    `load()` and moves the result into shared memory, the other ranks of that machine map it.
    Returns the dataset and how this rank got it ("loaded and shared", "mapped from rank R",
    or "own copy (...)" with the reason when mapping was refused, with a warning).

    The other ranks wait for the leader's load inside a collective, so the process group's
    timeout must cover it (building the cache on first use included)."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    machines: list[Any] = [None] * world_size
    dist.all_gather_object(machines, machine_id())
    leader = min(r for r in range(world_size) if machines[r] == machines[rank])
    dataset = share_dataset_(load()) if rank == leader else None
    descriptions: list[Any] = [None] * world_size
    dist.all_gather_object(descriptions, describe_dataset(dataset) if dataset is not None else None)
    if dataset is not None:
        how = "loaded and shared"
    else:
        try:
            dataset, how = attach_dataset(descriptions[leader]), f"mapped from rank {leader}"
        except (OSError, ValueError) as err:
            warnings.warn(f"rank {rank} cannot map rank {leader}'s dataset ({err}); "
                          f"loading its own copy", RuntimeWarning, stacklevel=2)
            dataset, how = share_dataset_(load()), f"own copy ({err})"
    dist.barrier()  # the leader's files stay open at least until every rank has mapped them
    return dataset, how
