"""Every placement (sampler_device x feature_source) trains on a GPU: the same batches as the
CPU pipeline (the counter-based sampler gives the same blocks on any device), features and
labels equal to the dataset's, and the same model trained. Runs only where CUDA exists."""
from __future__ import annotations

import contextlib

import pytest
import torch

from gnnrepro.config import FEATURE_SOURCES, SAMPLER_DEVICES, TrainConfig
from gnnrepro.training import make_loader, train_pipeline

from .conftest import needs_cuda

pytestmark = needs_cuda

FANOUTS, BATCH = (6, 4), 64
SETTINGS = dict(epochs=2, hidden=32, lr=0.01, batch_size=BATCH)


def _batches(dataset, pipeline: str = "fused", device: str = "cuda", **placement) -> list:
    config = TrainConfig(pipeline=pipeline, fanouts=FANOUTS, batch_size=BATCH, device=device,
                         **placement)
    with contextlib.closing(make_loader(dataset, config)) as loader:
        return [mb.to("cpu") for mb in loader]


@pytest.mark.parametrize("sampler_device", SAMPLER_DEVICES)
@pytest.mark.parametrize("feature_source", FEATURE_SOURCES)
def test_every_placement_delivers_the_cpu_pipelines_batches(dataset, sampler_device,
                                                            feature_source) -> None:
    reference = _batches(dataset)
    placed = _batches(dataset, sampler_device=sampler_device, feature_source=feature_source)
    _assert_same_batches(placed, reference, dataset)


def _assert_same_batches(placed: list, reference: list, dataset) -> None:
    assert len(placed) == len(reference)
    for got, want in zip(placed, reference):
        assert torch.equal(got.seeds, want.seeds)
        for a, b in zip(got.blocks, want.blocks):
            assert torch.equal(a.indptr, b.indptr) and torch.equal(a.indices, b.indices)
            assert torch.equal(a.src_nodes, b.src_nodes)
        assert torch.equal(got.x, dataset.features[got.input_nodes])
        assert torch.equal(got.y, dataset.labels[got.seeds])


@pytest.mark.parametrize("workers,worker_kind", [(0, "thread"), (3, "thread"), (2, "process")])
def test_loader_on_cuda_yields_the_cpu_loaders_batches(dataset, workers, worker_kind) -> None:
    """fused+pinned on the GPU (pinned slots, side-stream copies, W workers) hands over the
    batches that the same Loader makes on the CPU. The UVA placements above pinned the
    feature table in place; process workers then move it into shared memory, which must
    carry the registration along (gnnrepro.pinning.share_memory_in_place), not leave the
    freed memory registered: on an H100 that handed over stale rows."""
    reference = _batches(dataset, "fused+pinned", "cpu", workers=0)
    placed = _batches(dataset, "fused+pinned", "cuda", workers=workers, worker_kind=worker_kind)
    _assert_same_batches(placed, reference, dataset)


@pytest.mark.parametrize("eval_method", ["sampled", "layerwise"])
@pytest.mark.parametrize("sampler_device,feature_source", [
    ("cpu", "pinned"), ("uva", "uva"), ("cuda", "device")])
def test_placements_train_the_same_model(dataset, sampler_device, feature_source,
                                         eval_method) -> None:
    """Layer-wise evaluation runs over the sampler's graph where it lives (on the GPU for
    sampler_device cuda, with the test ids on the CPU: an H100 run failed there once)."""
    base = train_pipeline("fused", dataset, FANOUTS, device="cuda", eval_method=eval_method,
                          **SETTINGS)
    other = train_pipeline("fused", dataset, FANOUTS, device="cuda",
                           sampler_device=sampler_device, feature_source=feature_source,
                           eval_method=eval_method, **SETTINGS)
    assert other.losses == pytest.approx(base.losses, rel=1e-4)
    assert abs(other.test_acc - base.test_acc) < 0.02


def test_gpu_sampler_with_workers_is_refused(dataset) -> None:
    with pytest.raises(ValueError, match="workers must be 0"):
        make_loader(dataset, TrainConfig(pipeline="fused+pinned", fanouts=FANOUTS,
                                         device="cuda", sampler_device="cuda", workers=1))
