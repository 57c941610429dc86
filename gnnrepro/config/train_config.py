"""TrainConfig: the settings of one training run, each checked by its setting."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from gnnrepro.config.settings import SETTINGS, validate

__all__ = ["TrainConfig"]


def _field(name: str) -> Any:
    default = SETTINGS[name].default
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default))
    return dataclasses.field(default=default)


@dataclass(frozen=True)
class TrainConfig:
    """The settings of one training run, every one checked by its setting on construction.

    `device` 'auto' is resolved and `threads`, `workers` and `prefetch` None become counts
    (resolve_threads, resolve_workers, resolve_prefetch) when the run starts, where the
    machine is known; fanouts are kept as a tuple (hashable).
    """

    pipeline: str = _field("pipeline")
    fanouts: tuple[int, ...] = tuple(SETTINGS["fanouts"].default)
    batch_size: int = _field("batch_size")
    epochs: int = _field("epochs")
    lr: float = _field("lr")
    hidden: int = _field("hidden")
    dropout: float = _field("dropout")
    device: str = _field("device")
    sampler_device: str = _field("sampler_device")
    feature_source: str = _field("feature_source")
    feature_store: str = _field("feature_store")
    threads: int | None = _field("threads")
    workers: int | None = _field("workers")
    worker_kind: str = _field("worker_kind")
    streams: int = _field("streams")
    prefetch: int | None = _field("prefetch")
    seed: int = _field("seed")
    eval_batch_size: int = _field("eval_batch_size")
    eval_method: str = _field("eval_method")
    eval_ids: int | None = _field("eval_ids")
    timeout_s: float = _field("timeout_s")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "fanouts":
                value = tuple(validate("fanouts", list(value) if isinstance(value, tuple)
                                       else value))
            else:
                value = validate(f.name, value)
            object.__setattr__(self, f.name, value)

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON-ready values; eval_ids absent where None (every id), so that
        runs stored before it keep their keys."""
        out = {**dataclasses.asdict(self), "fanouts": list(self.fanouts)}
        if out["eval_ids"] is None:
            del out["eval_ids"]
        return out
