"""Exchange: one all-to-all of variable-length 1-D tensors between the ranks, the only way the
partitioned sampler and feature store talk to other machines.

`GlooExchange` runs it on a torch.distributed group (two all_to_all_single calls: the sizes,
then the data); `ThreadExchange` simulates the ranks as threads of one process, so the same
code is tested without processes. Both count the bytes each rank sends to the others, by kind.
"""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import defaultdict

import torch
import torch.distributed as dist

__all__ = ["Exchange", "GlooExchange", "ThreadExchange"]


class Exchange(ABC):
    """One rank's end of the all-to-all. Every rank must call `all_to_all` the same number of
    times, in the same order."""

    def __init__(self, rank: int, world_size: int):
        self.rank = rank
        self.world_size = world_size
        self.bytes_sent: dict[str, int] = defaultdict(int)  # to other ranks, by kind

    def all_to_all(self, sends: list[torch.Tensor], kind: str) -> list[torch.Tensor]:
        """Send `sends[q]` (1-D, one dtype for all) to rank q; return what each rank q sent to
        this one, in rank order. `kind` labels the bytes counted."""
        if len(sends) != self.world_size:
            raise ValueError(f"sends must hold one tensor per rank ({self.world_size}), got "
                             f"{len(sends)}")
        self.bytes_sent[kind] += sum(t.numel() * t.element_size()
                                     for q, t in enumerate(sends) if q != self.rank)
        return self._all_to_all(sends)

    @abstractmethod
    def _all_to_all(self, sends: list[torch.Tensor]) -> list[torch.Tensor]: ...


class GlooExchange(Exchange):
    """The all-to-all over a torch.distributed process group (its timeout applies)."""

    def __init__(self, group: dist.ProcessGroup | None = None):
        super().__init__(dist.get_rank(group), dist.get_world_size(group))
        self.group = group

    def _all_to_all(self, sends: list[torch.Tensor]) -> list[torch.Tensor]:
        sizes = torch.tensor([t.numel() for t in sends], dtype=torch.int64)
        recv_sizes = torch.empty_like(sizes)
        dist.all_to_all_single(recv_sizes, sizes, group=self.group)
        dtype = sends[0].dtype
        out = torch.empty(int(recv_sizes.sum()), dtype=dtype)
        dist.all_to_all_single(out, torch.cat([t.to(dtype) for t in sends]),
                               output_split_sizes=recv_sizes.tolist(),
                               input_split_sizes=sizes.tolist(), group=self.group)
        return list(out.split(recv_sizes.tolist()))


class ThreadExchange:
    """`world_size` simulated ranks in threads of one process: `endpoint(rank)` is the Exchange
    of the thread playing rank `rank`. A rank that does not arrive within `timeout_s` breaks the
    exchange for all (threading.BrokenBarrierError)."""

    def __init__(self, world_size: int, timeout_s: float = 60.0):
        self.world_size = world_size
        self._board: list[list[torch.Tensor] | None] = [None] * world_size
        self._barrier = threading.Barrier(world_size, timeout=timeout_s)

    def endpoint(self, rank: int) -> Exchange:
        if not 0 <= rank < self.world_size:
            raise ValueError(f"rank must be in [0, {self.world_size}), got {rank}")
        return _ThreadEndpoint(self, rank)


class _ThreadEndpoint(Exchange):
    def __init__(self, hub: ThreadExchange, rank: int):
        super().__init__(rank, hub.world_size)
        self._hub = hub

    def _all_to_all(self, sends: list[torch.Tensor]) -> list[torch.Tensor]:
        hub = self._hub
        hub._board[self.rank] = sends
        hub._barrier.wait()  # everyone has posted
        out = [hub._board[q][self.rank] for q in range(self.world_size)]  # type: ignore[index]
        hub._barrier.wait()  # everyone has read: the board may be reused
        return out
