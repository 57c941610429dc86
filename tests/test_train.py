"""train(): it learns (loss falls, accuracy well above chance and above a feature-only MLP),
its stage times are complete, it is reproducible and pipeline-independent, its result is
JSON-ready, and bad arguments raise."""
from __future__ import annotations

import contextlib
import json
import math

import pytest
import torch
from torch import nn

from gnnrepro import datasets
from gnnrepro.models import MLP
from gnnrepro.pipeline import STAGES, Loader
from gnnrepro.sampling import FusedSampler
from gnnrepro.training import TrainResult, train
from gnnrepro.training.loop import EpochStats

EPOCHS, BATCH, HIDDEN, LR = 4, 64, 64, 0.01
SETTINGS = dict(epochs=EPOCHS, hidden=HIDDEN, lr=LR, seed=0)


def train_with(dataset: datasets.Dataset, sampler: FusedSampler, workers: int = 0,
               prefetch: int = 2, **kwargs) -> TrainResult:
    """train() on a Loader over `sampler` (closed afterwards), evaluated with `sampler`."""
    with contextlib.closing(Loader(dataset, sampler, "cpu", BATCH, workers=workers,
                                   prefetch=prefetch, seed=0)) as loader:
        return train(dataset, loader, sampler, **(SETTINGS | kwargs))


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def sampler(dataset: datasets.Dataset) -> FusedSampler:
    return FusedSampler(dataset.graph, [10, 5], seed=0)


@pytest.fixture(scope="module")
def result(dataset: datasets.Dataset, sampler: FusedSampler) -> TrainResult:
    return train_with(dataset, sampler, eval_every=2)


def mlp_test_accuracy(dataset: datasets.Dataset, steps: int) -> float:
    """A feature-only MLP (same depth, width, optimizer, batch size) trained for `steps`
    steps on the training ids; its test accuracy."""
    torch.manual_seed(0)
    model = MLP(dataset.num_features, HIDDEN, dataset.num_classes, num_layers=2)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    train_ids = dataset.train_idx
    for step in range(steps):
        if step % math.ceil(train_ids.numel() / BATCH) == 0:
            order = train_ids[torch.randperm(train_ids.numel())]
        b = step % math.ceil(train_ids.numel() / BATCH)
        ids = order[b * BATCH: (b + 1) * BATCH]
        loss = nn.functional.cross_entropy(model(dataset.features[ids]), dataset.labels[ids])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        pred = model(dataset.features[dataset.test_idx]).argmax(dim=1)
    return (pred == dataset.labels[dataset.test_idx]).float().mean().item()


def test_loss_decreases(result: TrainResult) -> None:
    losses = result.losses
    assert len(losses) == EPOCHS
    assert all(b < a for a, b in zip(losses, losses[1:])), losses


def test_accuracy_beats_chance_and_mlp(result: TrainResult, dataset: datasets.Dataset) -> None:
    assert 0.0 <= result.val_acc <= 1.0 and 0.0 <= result.test_acc <= 1.0
    assert result.test_acc >= 3 / dataset.num_classes
    steps = EPOCHS * math.ceil(dataset.train_idx.numel() / BATCH)
    mlp = mlp_test_accuracy(dataset, steps)
    assert result.test_acc > mlp, (result.test_acc, mlp)


def test_epoch_stats(result: TrainResult) -> None:
    for i, e in enumerate(result.epochs):
        assert e.epoch == i and e.epoch_s > 0 and e.seeds_per_s > 0
        assert e.peak_rss_mb > 0 and e.peak_gpu_mb is None  # CPU run
        assert e.val_acc is None if i % 2 == 0 else 0.0 <= e.val_acc <= 1.0
        assert list(e.stages) == list(STAGES)
        for times in e.stages.values():
            assert times["work_s"] >= 0 and times["exposed_s"] >= 0
        assert e.stages["sample"]["exposed_s"] + e.stages["extract"]["exposed_s"] > 0
        assert e.loader_wait_s >= e.stages["sample"]["exposed_s"]


def test_same_seed_same_run(result: TrainResult, dataset: datasets.Dataset,
                            sampler: FusedSampler) -> None:
    again = train_with(dataset, sampler, eval_every=2)
    assert again.losses == result.losses
    assert [e.val_acc for e in again.epochs] == [e.val_acc for e in result.epochs]
    assert (again.val_acc, again.test_acc) == (result.val_acc, result.test_acc)


def test_workers_train_the_same_model(result: TrainResult, dataset: datasets.Dataset,
                                      sampler: FusedSampler) -> None:
    """Workers (threads, the default kind) change only speed: same losses and accuracies.
    The workers' sample and extract work is measured where it runs; how much of it the trainer
    waited for cannot be split between the two stages, so exposed_s is None and the wait is
    reported whole."""
    overlapped = train_with(dataset, sampler, workers=2, prefetch=3, eval_every=2)
    assert overlapped.losses == result.losses
    assert (overlapped.val_acc, overlapped.test_acc) == (result.val_acc, result.test_acc)
    for e in overlapped.epochs:
        for stage in ("sample", "extract"):
            assert e.stages[stage]["work_s"] > 0 and e.stages[stage]["exposed_s"] is None
        assert e.loader_wait_s > 0 and e.stages["forward"]["work_s"] > 0


def test_to_dict_is_json(result: TrainResult) -> None:
    d = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert d["params"]["fanouts"] == [10, 5] and d["params"]["num_layers"] == 2
    assert d["params"]["batch_size"] == BATCH and d["env"]["torch_threads"] == 1
    assert len(d["epochs"]) == EPOCHS and d["test_acc"] == result.test_acc


class NoFanouts:
    def sample(self, seeds: torch.Tensor, batch_id: int = 0) -> None: ...


@pytest.mark.parametrize("kwargs, error, name", [
    (dict(epochs=0), ValueError, "epochs"),
    (dict(epochs=2.0), TypeError, "epochs"),
    (dict(lr=0.0), ValueError, "lr"),
    (dict(lr="fast"), TypeError, "lr"),
    (dict(eval_every=0), ValueError, "eval_every"),
    (dict(eval_batch_size=0), ValueError, "eval_batch_size"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(hidden=0), ValueError, "hidden"),
    (dict(dropout=1.0), ValueError, "dropout"),
    (dict(timeline_batches=-1), ValueError, "timeline_batches"),
])
def test_bad_arguments(dataset: datasets.Dataset, sampler: FusedSampler, kwargs: dict,
                       error: type, name: str) -> None:
    with pytest.raises(error, match=name):
        train_with(dataset, sampler, **kwargs)


def test_bad_dataset_loader_or_evaluator(dataset: datasets.Dataset,
                                         sampler: FusedSampler) -> None:
    with contextlib.closing(Loader(dataset, sampler, "cpu", BATCH)) as loader:
        with pytest.raises(TypeError, match="dataset"):
            train("products-sim", loader, sampler)
        with pytest.raises(TypeError, match="loader"):
            train(dataset, [1, 2, 3], sampler)
        with pytest.raises(TypeError, match="evaluator"):
            train(dataset, loader, NoFanouts())


def test_summary_is_a_labelled_table_that_explains_a_wait_above_the_work():
    stages = {"sample": {"work_s": 0.5, "exposed_s": 0.5},
              "extract": {"work_s": 0.0956, "exposed_s": 0.1107},
              "forward": {"work_s": 1.0, "exposed_s": 1.0},
              "backward": {"work_s": 2.0, "exposed_s": 2.0}}
    epochs = [EpochStats(epoch=e, epoch_s=3.5 - e, seeds_per_s=1000.0 * (e + 1),
                         loss=1.5 / (e + 1), peak_rss_mb=1.0, peak_gpu_mb=None, stages=stages,
                         loader_wait_s=0.6, val_acc=0.75 if e == 1 else None)
              for e in range(2)]
    result = TrainResult(params={"eval_methods": {"test": "layerwise"}}, epochs=epochs,
                         val_acc=0.75, test_acc=0.7512, env={})
    lines = result.summary().splitlines()
    assert lines[0].split() == ["epoch", "time", "s", "seeds/s", "loss", "val", "acc"]
    assert lines[1].split() == ["0", "3.50", "1000", "1.5000", "-"]
    assert lines[2].split() == ["1", "2.50", "2000", "0.7500", "0.7500"]
    assert "test acc 0.7512 (layerwise)" in lines[3]
    assert lines[6].split() == ["extract:", "0.096", "0.111"]
    assert lines[-1].startswith("(extract: the wait includes the loader's own time")
    stages["extract"]["exposed_s"] = 0.05
    assert "(extract" not in result.summary()
