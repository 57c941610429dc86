"""DGL's DistDGL on M local "machines", the baseline beside `bench partitioned`: its own METIS
partitions (dgl.distributed.partition_graph), one DistGraph server and one trainer per
machine, DistDGL's DistNodeDataLoader with NeighborSampler, the same GraphSAGE, fanouts, global
batch size and epochs, DDP over gloo. Loopback only: DGL's ip_config lists 127.0.0.1 once per
machine, each with its own port.

DistDGL assumes one machine per host, in two ways (ONE_HOST); each machine here is therefore a
process of its own that (1) tells its trainer its machine id rather than letting DGL look for
its address in ip_config, and (2) with several machines, first moves into a mount namespace of
its own with an empty tmpfs on /dev/shm (as root: unshare(CLONE_NEWNS)), so that its server and
trainer share their partition's shared memory with each other and with no other machine. The
machine's server is its child, in the same namespace, and dies with it. Where the namespace
cannot be made (no CAP_SYS_ADMIN), several machines are not run and the reason says why.

Bytes moved: the loopback interface's received bytes over the training epochs (all of
DistDGL's traffic: sampling requests, feature pulls and DDP's gradient all-reduce), per step.

Every process is a gnnrepro.supervisor child; a failure anywhere stops them all and is
returned as the baseline's reason (step, exception) instead of figures.
"""
from __future__ import annotations

import ctypes
import dataclasses
import math
import multiprocessing.connection
import os
import statistics
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from gnnrepro.baselines.dgl_distributed import attempt_partition, prepare_distdgl
from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.baselines.dgl_samplers import from_dgl_block
from gnnrepro.config import TrainConfig
from gnnrepro.datasets import load_scaled
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.distributed.partitioned.local import free_port
from gnnrepro.models.graphsage import GraphSAGE
from gnnrepro.progress import Progress
from gnnrepro.sampling.args import stream_seed
from gnnrepro.supervisor import ChildFailed, Supervisor, run_reporting

__all__ = ["ONE_HOST", "partition_in_child", "run_distdgl"]

_SHM = "/dev/shm"
_CLONE_NEWNS, _MS_REC, _MS_PRIVATE, _PR_SET_PDEATHSIG = 0x00020000, 1 << 14, 1 << 18, 1
ONE_HOST = (
    "DistDGL assumes one machine per IP address, and so cannot run two machines on one host: "
    "(1) a trainer finds its machine by the first ip_config line whose address is one of its "
    "host's (dgl.distributed.rpc_client.get_local_machine_id), so every trainer here takes "
    "machine 0 and its shared-memory partition; (2) servers put their partition in POSIX "
    "shared memory named by the graph and the data only ('<graph>_node_node_map', "
    "'node~_N~feat-kvdata-', ...), so two servers on one host overwrite each other's /dev/shm "
    "files. The runs end in a server's IndexError (ids of the wrong part) or SIGBUS (a file "
    "resized under its map). A two-machine DistDGL run needs two hosts (or containers with "
    "their own addresses and /dev/shm); this benchmark runs on one host, over loopback, and "
    "so gives each machine its machine id and, in a mount namespace of its own, its own "
    "/dev/shm (needs root: CAP_SYS_ADMIN).")


def private_shared_memory() -> None:
    """Move this process (its main thread, and every process it starts afterwards) into a
    mount namespace of its own with an empty tmpfs on /dev/shm. Raises OSError naming the step
    that failed (without CAP_SYS_ADMIN: EPERM)."""
    libc = ctypes.CDLL(None, use_errno=True)
    steps = (("unshare(CLONE_NEWNS)", lambda: libc.unshare(_CLONE_NEWNS)),
             ("make / private", lambda: libc.mount(b"none", b"/", None,
                                                     _MS_REC | _MS_PRIVATE, None)),
             ("mount a tmpfs on /dev/shm", lambda: libc.mount(b"tmpfs", _SHM.encode(),
                                                               b"tmpfs", 0, b"mode=1777")))
    for step, call in steps:
        if call() != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{step} for a private /dev/shm: {os.strerror(errno)}")


def _loopback_received_bytes() -> int:
    """Bytes the loopback interface has received (/proc/net/dev)."""
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, fields = line.partition(":")
        if name.strip() == "lo":
            return int(fields.split()[0])
    raise OSError("no loopback interface in /proc/net/dev")


def _remove_shared_memory(before: set[str], graph_name: str) -> None:
    """Unlink the /dev/shm files DistDGL's servers of this run created and left behind (killed
    servers do not clean up): new since `before` and named by this run's graph or DGL's
    KVStore."""
    for name in set(os.listdir(_SHM)) - before:
        if name.startswith(graph_name) or name.endswith("-kvdata-"):
            try:
                os.unlink(os.path.join(_SHM, name))
            except FileNotFoundError:
                pass


def _env(ip_config: Path, part_config: Path, machines: int, role: str) -> dict[str, str]:
    return {"DGL_DIST_MODE": "distributed", "DGL_ROLE": role, "DGL_NUM_SAMPLER": "0",
            "DGL_NUM_SERVER": "1", "DGL_NUM_CLIENT": str(machines),
            "DGL_IP_CONFIG": str(ip_config), "DGL_CONF_PATH": str(part_config),
            "DGL_GRAPH_FORMAT": "csc", "DGLBACKEND": "pytorch"}


def _server(env: dict[str, str], inbox: multiprocessing.connection.Connection,
            outbox: multiprocessing.connection.Connection) -> None:
    def body() -> None:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, 9)  # never outlive its machine process
        os.environ.update(env)
        dgl = import_dgl()
        prepare_distdgl(dgl)
        import dgl.distributed as dist_dgl

        dist_dgl.initialize(env["DGL_IP_CONFIG"])  # serves until the trainers leave

    run_reporting(body, outbox)


def _machine(server_env: dict[str, str], env: dict[str, str], graph_name: str, rank: int,
             world_size: int, port: int, config: TrainConfig, num_features: int,
             num_classes: int, isolate: bool, inbox: multiprocessing.connection.Connection,
             outbox: multiprocessing.connection.Connection) -> None:
    """Machine `rank`: (with `isolate`) its own /dev/shm, its server as a child, its trainer
    here (see the module doc)."""
    def body() -> dict[str, Any]:
        if isolate:
            private_shared_memory()
        server = Supervisor("spawn")
        try:
            server.start(f"dgl server {rank}", _server, (server_env,))
            return _train(env, graph_name, rank, world_size, port, config, num_features,
                          num_classes)
        finally:
            server.stop()
    run_reporting(body, outbox)


def _train(env: dict[str, str], graph_name: str, rank: int, world_size: int, port: int,
           config: TrainConfig, num_features: int, num_classes: int) -> dict[str, Any]:
    """Machine `rank`'s trainer: DistDGL's loader feeding our GraphSAGE under DDP."""
    os.environ.update(env)
    torch.set_num_threads(config.threads or 1)
    dgl = import_dgl()
    prepare_distdgl(dgl)
    import dgl.distributed as dist_dgl
    from dgl.distributed import rpc_client

    # The machine's id, given: DGL would take the first ip_config line with one of this
    # host's addresses, machine 0 for every trainer on one host.
    rpc_client.get_local_machine_id = lambda namebook: rank
    dist_dgl.initialize(env["DGL_IP_CONFIG"])
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                         rank=rank, world_size=world_size)
    g = dist_dgl.DistGraph(graph_name, part_config=env["DGL_CONF_PATH"])
    book = g.get_partition_book()
    sampler = dgl.dataloading.NeighborSampler(list(config.fanouts))

    def loader(mask: str, shuffle: bool, batch_size: int) -> Any:
        ids = dist_dgl.node_split(g.ndata[mask], book, force_even=True)
        return dgl.dataloading.DistNodeDataLoader(g, ids, sampler, batch_size=batch_size,
                                                  shuffle=shuffle, drop_last=False)

    torch.manual_seed(config.seed)
    model = GraphSAGE(num_features, config.hidden, num_classes, len(config.fanouts),
                      config.dropout)
    torch.manual_seed(stream_seed(config.seed, rank))
    trained = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.Adam(trained.parameters(), lr=config.lr)
    train_loader = loader("train_mask", True, config.batch_size)
    epochs = []
    torch.distributed.barrier()
    received = _loopback_received_bytes()
    steps = 0
    for epoch in range(config.epochs):
        start = time.perf_counter()
        with Progress(f"DistDGL rank {rank} epoch {epoch}", unit="batches") as progress:
            for input_nodes, seeds, blocks in train_loader:
                x = g.ndata["feat"][input_nodes]
                y = g.ndata["label"][seeds]
                loss = torch.nn.functional.cross_entropy(
                    trained([from_dgl_block(b, dgl.NID) for b in blocks], x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                steps += 1
                progress.update()
        epochs.append(time.perf_counter() - start)
    torch.distributed.barrier()
    received = _loopback_received_bytes() - received
    correct = torch.zeros(2, dtype=torch.int64)
    model.eval()
    test_loader = loader("test_mask", False, config.eval_batch_size)
    with torch.no_grad(), Progress(f"DistDGL rank {rank} test", unit="batches") as progress:
        for input_nodes, seeds, blocks in test_loader:
            pred = model([from_dgl_block(b, dgl.NID) for b in blocks],
                         g.ndata["feat"][input_nodes]).argmax(dim=1)
            correct += torch.tensor([int((pred == g.ndata["label"][seeds]).sum()),
                                     seeds.numel()])
            progress.update()
    torch.distributed.all_reduce(correct)
    torch.distributed.barrier()
    return {"epoch_s": epochs, "test_acc": correct[0].item() / max(correct[1].item(), 1),
            "loopback_bytes": received, "steps": steps}


def _partition(data_args: dict[str, Any], splits: dict[str, torch.Tensor], num_parts: int,
               out: Path, graph_name: str, inbox: Any, outbox: Any) -> None:
    """Child process: attempt_partition on the dataset of `data_args` with `splits`."""
    def body() -> dict[str, Any]:
        dataset = dataclasses.replace(load_scaled(**data_args), **splits)
        return attempt_partition(dataset, num_parts, out, graph_name)
    run_reporting(body, outbox)


def partition_in_child(dataset: Dataset, data_args: dict[str, Any], num_parts: int, out: Path,
                       graph_name: str, timeout_s: float) -> dict[str, Any]:
    """attempt_partition in a fresh process: DGL's partitioner holds several copies of the
    graph (19 GB and more at products-sim 1.0 for 2 parts), and a process the kernel kills for
    memory must be the baseline's, not the benchmark's. A death is the baseline's reason."""
    splits = {k: getattr(dataset, k) for k in ("train_idx", "val_idx", "test_idx")}
    step = "dgl.distributed.partition_graph(part_method='metis'), in a child process"
    supervisor = Supervisor("spawn")
    try:
        supervisor.start("dgl partition", _partition,
                         (data_args, splits, num_parts, out, graph_name))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for _, message in supervisor.receive(1.0):
                return message[1]
        return {"ran": False, "step": step, "reason": f"no result within {timeout_s} s"}
    except ChildFailed as exc:
        reason = f"{type(exc).__name__}: {exc}"[-3000:]
        if "SIGKILL" in str(exc) or "signal 9" in str(exc):
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
            reason += (f" (killed: most likely by the kernel for memory; this machine has "
                       f"{total:.0f} GiB)")
        return {"ran": False, "step": step, "reason": reason}
    finally:
        supervisor.stop()


def run_distdgl(dataset: Dataset, machines: int, config: TrainConfig, work_dir: Path,
                timeout_s: float = 900.0,
                data_args: dict[str, Any] | None = None) -> dict[str, Any]:
    """DistDGL on `machines` local machines (see the module doc): {"ran": True, "epoch_s",
    "epochs_s", "test_acc", "partition_s"} or {"ran": False, "step", "reason", ...}.
    `config.batch_size` is the global batch. With `data_args` (load_scaled's arguments of
    `dataset`) DGL's partitioning runs in a child process (partition_in_child)."""
    graph_name = f"gnnrepro{os.getpid()}"
    if data_args is None:
        part = attempt_partition(dataset, machines, work_dir / "parts", graph_name)
    else:
        part = partition_in_child(dataset, data_args, machines, work_dir / "parts",
                                  graph_name, timeout_s)
    if not part["ran"]:
        return part
    shm_before = set(os.listdir(_SHM))
    ip_config = work_dir / "ip_config.txt"
    ip_config.write_text("".join(f"127.0.0.1 {free_port()}\n" for _ in range(machines)))
    part_config = work_dir / "parts" / f"{graph_name}.json"
    per_rank = config.__class__(**{**config.to_dict(),
                                   "batch_size": math.ceil(config.batch_size / machines)})
    supervisor = Supervisor("spawn")
    step = "start DistDGL machines (a server and a trainer each)"
    try:
        port = free_port()
        for m in range(machines):
            server_env = (_env(ip_config, part_config, machines, "server")
                          | {"DGL_SERVER_ID": str(m)})
            supervisor.start(f"dgl machine {m}", _machine,
                             (server_env, _env(ip_config, part_config, machines, "default"),
                              graph_name, m, machines, port, per_rank, dataset.num_features,
                              dataset.num_classes, machines > 1))
        step = "DistDGL training"
        results: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout_s
        while len(results) < machines:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no result within {timeout_s} s")
            for index, message in supervisor.receive(1.0):
                if message[0] == "ok":
                    results[index] = message[1]
    except (ChildFailed, TimeoutError) as exc:
        failed = {"ran": False, "step": step,
                  "reason": f"{type(exc).__name__}: {exc}"[-3000:],
                  "partition_s": part["seconds"]}
        if machines > 1:
            failed["cause"] = ONE_HOST
        return failed
    except Exception as exc:  # the baseline's failure is a result, not an error
        return {"ran": False, "step": step, "reason": f"{type(exc).__name__}: {exc}",
                "traceback_tail": traceback.format_exc().strip().splitlines()[-8:]}
    finally:
        supervisor.stop()
        _remove_shared_memory(shm_before, graph_name)
    ranks_epoch_s = [results[r]["epoch_s"] for r in range(machines)]
    epoch_s = [max(r[e] for r in ranks_epoch_s) for e in range(config.epochs)]
    steps = results[0]["steps"]
    return {"ran": True, "machines": machines, "partition_s": part["seconds"],
            "epochs_s": epoch_s, "epoch_s": statistics.median(epoch_s[1:] or epoch_s),
            "test_acc": results[0]["test_acc"], "batch_size_per_rank": per_rank.batch_size,
            "own_shared_memory": machines > 1,
            "loopback_bytes_per_step": results[0]["loopback_bytes"] / max(steps, 1),
            "steps_per_rank": steps}
