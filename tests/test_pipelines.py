"""The named training pipelines: DGL's DataLoader behind our BatchSource (coverage, features,
labels, valid blocks, seeded order), the pipelines training the same model, train() with a
given loader, and the per-batch timeline."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from gnnrepro import datasets
from gnnrepro.config import FEATURE_SOURCES, PIPELINES, SAMPLER_DEVICES, TrainConfig
from gnnrepro.pipeline import STAGES, BatchSource
from gnnrepro.training import make_loader, train_pipeline

from helpers import edge_multiplicity, require_dgl

FANOUTS, BATCH = [6, 4], 64
SETTINGS = dict(epochs=2, hidden=32, lr=0.01)


def dgl_loader(dataset: datasets.Dataset) -> BatchSource:
    return make_loader(dataset, TrainConfig(pipeline="dgl", fanouts=FANOUTS, batch_size=BATCH,
                                            device="cpu", seed=5))


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def dgl_epochs(dataset: datasets.Dataset) -> list[list]:
    require_dgl()
    loader = dgl_loader(dataset)
    assert isinstance(loader, BatchSource) and loader.in_process
    return [list(loader), list(loader)]


def test_dgl_epoch_covers_every_training_id_once(dataset, dgl_epochs) -> None:
    for epoch in dgl_epochs:
        seeds = torch.cat([mb.seeds for mb in epoch])
        assert sorted(seeds.tolist()) == sorted(dataset.train_idx.tolist())
        assert all(mb.seeds.numel() == BATCH for mb in epoch[:-1])
    assert not torch.equal(dgl_epochs[0][0].seeds, dgl_epochs[1][0].seeds), "no reshuffle"


def test_dgl_batches_carry_the_right_rows_labels_and_edges(dataset, dgl_epochs) -> None:
    edges = edge_multiplicity(dataset.graph)
    for mb in dgl_epochs[0][:3]:
        assert torch.equal(mb.x, dataset.features[mb.input_nodes])
        assert torch.equal(mb.y, dataset.labels[mb.seeds])
        assert torch.equal(mb.blocks[-1].dst_nodes, mb.seeds)
        assert torch.equal(mb.blocks[0].src_nodes, mb.input_nodes)
        for block, fanout in zip(mb.blocks, FANOUTS):
            assert int(block.in_degrees().max()) <= fanout
            dst = block.dst_nodes[block.edge_dst()]
            src = block.src_nodes[block.indices]
            assert all((d, s) in edges for d, s in zip(dst.tolist(), src.tolist()))


def test_dgl_order_depends_only_on_the_seed(dataset, dgl_epochs) -> None:
    again = dgl_loader(dataset)
    assert [mb.seeds.tolist() for mb in again] == [mb.seeds.tolist() for mb in dgl_epochs[0]]
    torch_rng, numpy_rng = torch.random.get_rng_state(), np.random.get_state()
    list(again)
    assert torch.equal(torch.random.get_rng_state(), torch_rng), "touched torch's RNG"
    assert np.array_equal(np.random.get_state()[1], numpy_rng[1]), "touched numpy's RNG"


def test_dgl_work_and_spans_cover_every_batch(dataset, dgl_epochs) -> None:
    loader = dgl_loader(dataset)
    n = len(list(loader))
    work = loader.work_seconds()
    assert work["sample"] > 0 and work["extract"] > 0
    spans = loader.spans()
    assert sorted((s.batch, s.stage) for s in spans) == \
        sorted((b, st) for b in range(n) for st in ("sample", "extract"))
    assert all(s.start <= s.end for s in spans)


@pytest.fixture(scope="module")
def fused_run(dataset: datasets.Dataset):
    return train_pipeline("fused", dataset, FANOUTS, batch_size=BATCH, timeline_batches=2,
                          **SETTINGS)


def test_fused_pinned_trains_the_same_model_as_fused(dataset, fused_run) -> None:
    pinned = train_pipeline("fused+pinned", dataset, FANOUTS, batch_size=BATCH, workers=2,
                            prefetch=3, **SETTINGS)
    assert pinned.losses == fused_run.losses
    assert (pinned.val_acc, pinned.test_acc) == (fused_run.val_acc, fused_run.test_acc)
    assert pinned.params["pipeline"] == "fused+pinned" and pinned.params["workers"] == 2
    assert pinned.params["config"]["worker_kind"] == "thread"  # recorded with the settings


def test_dgl_pipeline_learns_like_ours(dataset, fused_run) -> None:
    require_dgl()
    result = train_pipeline("dgl", dataset, FANOUTS, batch_size=BATCH, **SETTINGS)
    assert result.losses[1] < result.losses[0]
    assert result.test_acc >= 3 / dataset.num_classes
    # same model, data and steps; only the sampler's random draws differ
    assert abs(result.test_acc - fused_run.test_acc) < 0.1
    assert result.params["pipeline"] == "dgl" and "DGLLoader" in result.params["loader"]
    assert result.params["sampler"] == "NeighborSampler"
    assert (fused_run.params["sampler"], fused_run.params["eval_sampler"]) == \
        ("FusedSampler", "FusedSampler")
    for e in result.epochs:
        assert all(e.stages[s]["work_s"] > 0 for s in STAGES)
        assert all(e.stages[s]["exposed_s"] is not None for s in STAGES)


def test_dgl_native_trains_dgls_own_model_on_dgls_blocks(dataset) -> None:
    require_dgl()
    from gnnrepro.baselines.dgl_model import DGLGraphSAGE
    from gnnrepro.sampling import Block
    loader = make_loader(dataset, TrainConfig(pipeline="dgl-native", fanouts=FANOUTS,
                                              batch_size=BATCH, device="cpu", seed=5))
    first = next(iter(loader))
    assert not any(isinstance(b, Block) for b in first.blocks)  # DGL's blocks, unconverted
    assert "native_blocks=True" in repr(loader)
    result = train_pipeline("dgl-native", dataset, FANOUTS, batch_size=BATCH, **SETTINGS)
    assert result.params["model"] == "DGL SAGEConv-mean"
    assert result.losses[1] < result.losses[0]
    assert result.test_acc >= 3 / dataset.num_classes
    layers = DGLGraphSAGE(4, 8, 3, 2, 0.5).layers
    assert [type(layer).__module__.split(".")[:2] for layer in layers] == [["dgl", "nn"]] * 2


def test_dgl_model_gives_the_same_logits_on_our_blocks_and_dgls(dataset) -> None:
    require_dgl()
    from gnnrepro.baselines.dgl_model import DGLGraphSAGE
    from gnnrepro.baselines.dgl_samplers import from_dgl_block
    from gnnrepro.baselines.dgl_import import import_dgl
    loader = make_loader(dataset, TrainConfig(pipeline="dgl-native", fanouts=FANOUTS,
                                              batch_size=BATCH, device="cpu", seed=5))
    mb = next(iter(loader))
    ours = [from_dgl_block(b, import_dgl().NID) for b in mb.blocks]
    model = DGLGraphSAGE(dataset.num_features, 16, dataset.num_classes, len(FANOUTS),
                         0.5).eval()
    torch.testing.assert_close(model(ours, mb.x), model(mb.blocks, mb.x))
    with pytest.raises(ValueError, match="blocks has 1 blocks"):
        model(ours[:1], mb.x)
    with pytest.raises(ValueError, match="hidden must be >= 1"):
        DGLGraphSAGE(4, 0, 3, 2, 0.5)


def test_build_model_names_an_unknown_architecture(dataset) -> None:
    from gnnrepro.training import build_model
    with pytest.raises(ValueError, match="architecture must be one of graphsage, dgl-sage"):
        build_model(dataset, 2, 8, 0.5, 0, torch.device("cpu"), "gat")


def test_timeline_holds_each_stage_of_the_first_batches(fused_run) -> None:
    for e in fused_run.epochs:
        assert {s["batch"] for s in e.timeline} == {0, 1}
        for b in (0, 1):
            stages = {(s["stage"], s["lane"]) for s in e.timeline if s["batch"] == b}
            assert {("sample", "loader"), ("extract", "loader"), ("wait", "trainer"),
                    ("forward", "trainer"), ("backward", "trainer")} <= stages
        assert all(0 <= s["start"] <= s["end"] <= e.epoch_s for s in e.timeline)
        starts = [s["start"] for s in e.timeline]
        assert starts == sorted(starts)
        forward = {s["batch"]: s for s in e.timeline if s["stage"] == "forward"}
        sample = {s["batch"]: s for s in e.timeline if s["stage"] == "sample"}
        assert sample[1]["start"] >= forward[0]["end"], "serial pipeline overlapped"


@pytest.mark.parametrize("sampler_device", SAMPLER_DEVICES)
@pytest.mark.parametrize("feature_source", FEATURE_SOURCES)
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_placement_runs_or_names_the_setting(dataset, sampler_device, feature_source,
                                                   device) -> None:
    """On this machine: (cpu, pinned) on the cpu device runs; every other combination raises
    ValueError naming the setting and why, before anything is built. With CUDA the GPU
    combinations are exercised by tests/gpu."""
    if torch.cuda.is_available():
        pytest.skip("the GPU combinations run in tests/gpu")
    config = TrainConfig(pipeline="fused", fanouts=FANOUTS, batch_size=BATCH, device=device,
                         sampler_device=sampler_device, feature_source=feature_source,
                         epochs=1, hidden=8)
    if device == "cuda":
        with pytest.raises(ValueError, match="device is 'cuda'.*0 CUDA device"):
            make_loader(dataset, config)
    elif (sampler_device, feature_source) == ("cpu", "pinned"):
        result = train_pipeline("fused", dataset, FANOUTS, **{
            k: v for k, v in config.to_dict().items() if k not in ("pipeline", "fanouts")})
        assert result.params["config"]["feature_source"] == "pinned"
    else:
        bad = "sampler_device" if sampler_device != "cpu" else "feature_source"
        value = sampler_device if bad == "sampler_device" else feature_source
        with pytest.raises(ValueError, match=f"{bad}='{value}' needs a CUDA device; this "
                                             "machine has none"):
            make_loader(dataset, config)


def test_gpu_sampler_takes_no_workers_and_reference_stays_on_cpu(dataset,
                                                                 monkeypatch) -> None:
    """The placement rules that do not depend on the machine: a GPU sampler runs in the
    trainer, and the reference sampler has no GPU placement."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    from gnnrepro.config import check_placement
    with pytest.raises(ValueError, match="workers must be 0"):
        check_placement("cuda", "uva", "pinned", workers=1)
    check_placement("cuda", "cuda", "device", workers=0)
    with pytest.raises(ValueError, match="needs device='cuda'"):
        check_placement("cpu", "cpu", "uva")
    with pytest.raises(ValueError, match="pipeline='reference'"):
        make_loader(dataset, TrainConfig(pipeline="reference", fanouts=FANOUTS, device="cpu",
                                         feature_source="uva"))


def test_unknown_pipeline_and_placement() -> None:
    assert PIPELINES == ("dgl", "dgl-native", "reference", "fused", "fused+pinned")
    with pytest.raises(ValueError, match="pipeline must be one of"):
        TrainConfig(pipeline="fused+magic")
    with pytest.raises(ValueError, match="sampler_device must be one of cpu, cuda, uva"):
        TrainConfig(sampler_device="gpu")
    with pytest.raises(ValueError, match="feature_source must be one of pinned, uva, device"):
        TrainConfig(feature_source="disk")


def test_workers_and_prefetch_are_chosen_from_the_machine(monkeypatch) -> None:
    """None resolves by device, sampler placement and cores; an explicit count is kept."""
    from gnnrepro import config
    monkeypatch.setattr(config.machine, "resolve_threads", lambda threads, ranks=1: 8 // ranks)
    assert config.resolve_workers(None, "cpu") == 1
    assert config.resolve_workers(None, "cpu", ranks_per_machine=4) == 0  # 2 cores a rank
    assert config.resolve_workers(None, "cuda") == 4  # 7 free cores, capped
    assert config.resolve_workers(None, "cuda:0", ranks_per_machine=4) == 1  # 2 cores a rank
    assert config.resolve_workers(None, "cuda", sampler_device="uva") == 0  # GPU sampler
    assert config.resolve_workers(None, "cuda", feature_store="disk") == 0  # reads ahead
    assert config.resolve_workers(3, "cuda", sampler_device="cpu") == 3
    with pytest.raises(ValueError, match="workers must be"):
        config.resolve_workers(-1, "cpu")
    assert config.resolve_prefetch(None, 0) == 2 and config.resolve_prefetch(None, 4) == 4
    assert config.resolve_prefetch(1, 4) == 1
    with pytest.raises(ValueError, match="prefetch must be"):
        config.resolve_prefetch(0, 1)


def test_the_resolved_workers_and_prefetch_are_recorded(dataset) -> None:
    result = train_pipeline("fused+pinned", dataset, FANOUTS, batch_size=BATCH, device="cpu",
                            epochs=1, hidden=16)
    assert result.params["config"]["workers"] is None
    cores = len(os.sched_getaffinity(0))
    assert result.params["workers"] == (0 if cores <= 2 else 1)
    assert result.params["prefetch"] == 2
