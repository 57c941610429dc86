"""What train() needs to stop anywhere and resume bit for bit: the run's checkpoints, the
position in the run, and clean stops on SIGINT / SIGTERM.

Why a resumed run equals an uninterrupted one: the batches depend only on (seed, epoch, batch
index) (gnnrepro.pipeline.loader), so a Loader set to (epoch, step) yields the rest of that epoch
unchanged; everything else that decides the next steps is saved at a step boundary: the model's
and the optimizer's state and, for every rank, its torch random state (dropout), its epoch's
running loss sum and seed count (the reported loss) and its finished epochs' statistics.

A checkpoint is written after the optimizer step of every `every`-th step of the run (or, with
`every` None, after each epoch's last step) by rank 0, holding what every rank saves (gathered).
With several ranks all of them take part in a save, and a stop asked of any rank stops all of
them at the same step (one all-reduced flag per step).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

import torch
import torch.distributed as dist
from torch import nn

from gnnrepro.checks import check_bool, check_int
from gnnrepro.env import source_hash
from gnnrepro.training.checkpoint import Checkpointer, fault_after_step

__all__ = ["Checkpointing", "Position", "RunCheckpoints", "TrainingStopped",
           "add_checkpoint_options", "checkpointing_from_args"]

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True)
class Checkpointing:
    """How train() checkpoints: into `directory`, every `every` optimizer steps (None: at the
    end of each epoch), keeping the last `keep`; with `resume`, from the newest valid one."""

    directory: str | os.PathLike
    every: int | None = None
    keep: int = 3
    resume: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.directory, (str, os.PathLike)):
            raise TypeError(f"checkpoint_dir must be a path, got "
                            f"{type(self.directory).__name__}")
        if self.every is not None:
            check_int("checkpoint_every", self.every, 1)
        check_int("keep_checkpoints", self.keep, 1)
        check_bool("resume", self.resume)


def add_checkpoint_options(parser: argparse.ArgumentParser) -> None:
    """The Checkpointing settings as command-line options (every training entry has them)."""
    group = parser.add_argument_group("checkpoints")
    group.add_argument("--checkpoint-dir", type=Path, default=None,
                       help="write checkpoints here (atomically; the last --keep-checkpoints "
                            "kept); SIGINT/SIGTERM then stop after the step with one written")
    group.add_argument("--checkpoint-every", type=int, default=None, metavar="STEPS",
                       help="a checkpoint every STEPS optimizer steps (default: at the end of "
                            "each epoch)")
    group.add_argument("--keep-checkpoints", type=int, default=3, metavar="K")
    group.add_argument("--resume", action="store_true",
                       help="go on from the newest valid checkpoint in --checkpoint-dir, to "
                            "the same weights as an uninterrupted run")


def checkpointing_from_args(args: argparse.Namespace) -> Checkpointing | None:
    """The Checkpointing the options of add_checkpoint_options ask for; None without
    --checkpoint-dir (ValueError if another checkpoint option was given without it)."""
    if args.checkpoint_dir is None:
        if args.resume or args.checkpoint_every is not None:
            raise ValueError("--resume and --checkpoint-every need --checkpoint-dir")
        return None
    return Checkpointing(args.checkpoint_dir, args.checkpoint_every, args.keep_checkpoints,
                         args.resume)


class Position(NamedTuple):
    """Where a run is: the next step `step` of epoch `epoch`, after `global_step` steps."""

    epoch: int
    step: int
    global_step: int


class TrainingStopped(KeyboardInterrupt):
    """train() was asked to stop (SIGINT or SIGTERM) and stopped after a step, its checkpoint
    written: `checkpoint` is the file, `position` where a resumed run goes on. A
    KeyboardInterrupt (a stop the user asked for, not an error), so handlers of errors
    (`except Exception`) let it through."""

    def __init__(self, signal_name: str, checkpoint: Path, position: Position):
        self.signal_name, self.checkpoint, self.position = signal_name, checkpoint, position
        super().__init__(f"stopped by {signal_name} at epoch {position.epoch}, step "
                         f"{position.step} (step {position.global_step} of the run); "
                         f"checkpoint {checkpoint}: run the same command with --resume "
                         f"(resume=True) to go on from there")


class Restored(NamedTuple):
    """A resumed run's state: its position, the finished epochs (EpochStats as dicts), and
    the running epoch's loss sum and seed count so far."""

    position: Position
    history: list[dict[str, Any]]
    loss_sum: torch.Tensor
    num_seeds: int
    path: Path


def _rng_state(device: torch.device) -> dict[str, torch.Tensor]:
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict[str, torch.Tensor], device: torch.device) -> None:
    torch.set_rng_state(state["cpu"])
    if device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], device)


class RunCheckpoints:
    """One run's checkpoints (see the module doc). Use as a context manager around the
    epochs: inside it SIGINT and SIGTERM ask for a stop at the next step instead of killing
    (in the main thread; elsewhere the process's handlers stay as they are)."""

    def __init__(self, settings: Checkpointing, identity: dict[str, Any], model: nn.Module,
                 optimizer: torch.optim.Optimizer, device: torch.device,
                 rank: int = 0, world_size: int = 1):
        self.settings, self.identity = settings, identity
        self.model, self.optimizer, self.device = model, optimizer, device
        self.rank, self.world_size = rank, world_size
        self.store = Checkpointer(settings.directory, settings.keep, rank)
        self._stop: str | None = None  # the signal's name once one asked for a stop
        self.save_seconds: list[float] = []  # each checkpoint's time, its gather included
        self.restore_seconds: float | None = None
        self._previous: dict[int, Any] = {}
        if world_size > 1:
            dist.barrier()  # rank 0 has made the directory and removed leftovers

    def __enter__(self) -> RunCheckpoints:
        if threading.current_thread() is threading.main_thread():
            for sig in _STOP_SIGNALS:
                self._previous[sig] = signal.signal(sig, self._ask_stop)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _ask_stop(self, signum: int, frame: FrameType | None) -> None:
        if self._stop is not None and signum == signal.SIGINT:  # a second Ctrl-C: now
            raise KeyboardInterrupt
        self._stop = signal.Signals(signum).name
        print(f"{self._stop}: stopping after this step and writing a checkpoint "
              f"(again to stop at once)", file=sys.stderr, flush=True)

    def restore(self) -> Restored | None:
        """With settings.resume, load the newest valid checkpoint into the model, the
        optimizer and this rank's random state, and return where to go on; None to start
        from the beginning (resume not asked, or no checkpoint yet: a line says so)."""
        if not self.settings.resume:
            return None
        began = time.perf_counter()
        found = self.store.latest(self.identity)
        if found is None:
            if self.rank == 0:
                print(f"no checkpoint in {self.settings.directory}: starting from the "
                      f"beginning", file=sys.stderr)
            return None
        state, path = found
        if state["code"] != source_hash() and self.rank == 0:
            print(f"{path} was written by other code (source hash {state['code']}, now "
                  f"{source_hash()}): resuming, but the result may differ from an "
                  f"uninterrupted run's", file=sys.stderr)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        mine = state["ranks"][self.rank]
        _set_rng_state(mine["rng"], self.device)
        self.restore_seconds = time.perf_counter() - began
        position = Position(*state["position"])
        if self.rank == 0:
            print(f"resuming from {path}: epoch {position.epoch}, step {position.step}",
                  file=sys.stderr)
        return Restored(position, mine["history"], mine["loss_sum"].to(self.device),
                        mine["num_seeds"], path)

    def after_step(self, position: Position, last_of_epoch: bool, loss_sum: torch.Tensor,
                   num_seeds: int, history: list[Any]) -> None:
        """Called after each optimizer step, `position` the next step: write a checkpoint
        when one is due or a stop was asked (then raise TrainingStopped)."""
        fault_after_step(position.global_step, self.rank)
        stop = self._stop_asked()
        every = self.settings.every
        due = last_of_epoch if every is None else position.global_step % every == 0
        if not (due or stop):
            return
        path = self._save(position, loss_sum, num_seeds, history)
        if stop:
            raise TrainingStopped(self._stop or "another rank's signal", path, position)

    def _stop_asked(self) -> bool:
        """Whether any rank was asked to stop (all ranks agree, at the same step)."""
        if self.world_size == 1:
            return self._stop is not None
        flag = torch.tensor([1 if self._stop is not None else 0], device=self.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())

    def _save(self, position: Position, loss_sum: torch.Tensor, num_seeds: int,
              history: list[Any]) -> Path:
        began = time.perf_counter()
        mine = {"rng": {k: v.cpu() for k, v in _rng_state(self.device).items()},
                "loss_sum": loss_sum.detach().cpu(), "num_seeds": num_seeds,
                "history": [e if isinstance(e, dict) else asdict(e) for e in history]}
        ranks: list[Any] = [mine]
        if self.world_size > 1:  # each rank's own dropout stream, loss and epochs
            ranks = [None] * self.world_size
            dist.all_gather_object(ranks, mine)
        path = self.store.directory / f"step-{position.global_step:010d}.ckpt"
        if self.rank == 0:
            state = {
                "identity": self.identity, "code": source_hash(),
                "position": list(position),
                "model": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
                "optimizer": self.optimizer.state_dict(),
                "ranks": ranks,
            }
            path = self.store.save(state, position.global_step)
        if self.world_size > 1:
            dist.barrier()  # no rank goes on (or stops) before the checkpoint is whole
        self.save_seconds.append(time.perf_counter() - began)
        return path

    def report(self) -> dict[str, Any]:
        """What the run's checkpoints cost: seconds per save (all of them) and to restore."""
        return {"save_s": list(self.save_seconds), "restore_s": self.restore_seconds}
