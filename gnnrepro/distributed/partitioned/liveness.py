"""Liveness: which machine died, when a collective fails.

A collective whose peer is gone fails with the transport's words (a closed connection, a
timeout), which do not say which machine is gone. So every rank bumps a counter of its own in
the rendezvous store twice a second; when a rank's training raises, it reads the counters
twice, `wait_s` apart, and names the machines whose ranks stopped counting - or says that the
store itself (served by machine 0's torchrun agent) is unreachable.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import torch.distributed as dist

__all__ = ["Liveness"]

T = TypeVar("T")


class Liveness:
    """This rank's counter in `store` (a thread bumps it every `every_s`) and the check of
    every rank's counter; rank r runs on machine r // ranks_per_machine."""

    def __init__(self, store: dist.Store, rank: int, world_size: int, ranks_per_machine: int,
                 every_s: float = 0.5):
        self.store, self.rank, self.world_size = store, rank, world_size
        self.ranks_per_machine = ranks_per_machine
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._bump, daemon=True, name="liveness")
        self._thread.start()

    def _key(self, rank: int) -> str:
        return f"gnnrepro/alive/{rank}"

    def _bump(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.store.add(self._key(self.rank), 1)
            except (RuntimeError, OSError):  # the store is gone; the check will say so
                return

    def stop(self) -> None:
        self._stop.set()

    def silent_machines(self, wait_s: float = 2.5) -> list[int] | None:
        """Machines with a rank whose counter did not move in `wait_s`; None if the store
        cannot be reached."""
        try:
            before = [self.store.add(self._key(r), 0) for r in range(self.world_size)]
            time.sleep(wait_s)
            after = [self.store.add(self._key(r), 0) for r in range(self.world_size)]
        except (RuntimeError, OSError):
            return None
        return sorted({r // self.ranks_per_machine for r in range(self.world_size)
                       if after[r] == before[r] and r != self.rank})

    def guard(self, body: Callable[[], T]) -> T:
        """body(), or, if it raises, a RuntimeError saying which machines stopped responding
        (the original error chained)."""
        try:
            return body()
        except Exception as exc:
            silent = self.silent_machines()
            me = self.rank // self.ranks_per_machine
            if silent is None:
                who = ("the rendezvous store (machine 0's torchrun agent) is unreachable: "
                       "machine 0 is gone")
            elif silent:
                who = f"machine(s) {', '.join(map(str, silent))} stopped responding"
            else:
                who = "every machine is still alive"
            raise RuntimeError(f"rank {self.rank} on machine {me} failed ({who}): "
                               f"{type(exc).__name__}: {exc}") from exc
