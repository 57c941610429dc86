"""Weighted and masked sampling reaches what users call: DGL's NeighborSampler(prob=/mask=) and
PyG's weight_attr through the drop-ins (node and link loaders), make_loader / train_pipeline's
`weights`, and `replace`. A mask by the peer's edge id (on an edge list shuffled, so that it
differs from our CSC order) must keep every masked edge out of every block, the batches must
be the ones FusedSampler(weights=...) gives alone, and bad input must name its argument."""
from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from helpers import require_dgl
from gnnrepro.config import TrainConfig
from gnnrepro.drop_in import (DataLoader, LinkNeighborLoader, NeighborLoader,
                              as_edge_prediction_sampler)
from gnnrepro.interop.convert import dgl_csc, pyg_graph
from gnnrepro.sampling import FusedSampler
from gnnrepro.training import make_loader, run_training, train_pipeline

FANOUTS = [4, 3]  # input layer first
SETTINGS = {"threads": 1, "workers": 1}


@pytest.fixture(scope="module")
def edges(dataset) -> tuple[torch.Tensor, torch.Tensor]:
    """The dataset's edges (src, dst) in a shuffled order: the peers' edge ids."""
    g = dataset.graph
    dst = torch.repeat_interleave(torch.arange(g.num_nodes), g.in_degrees())
    perm = torch.randperm(g.num_edges, generator=torch.Generator().manual_seed(5))
    return g.indices.to(torch.int64)[perm], dst[perm]


@pytest.fixture(scope="module")
def mask(dataset) -> torch.Tensor:
    """About half the edges kept, by the peer's edge id."""
    return torch.rand(dataset.graph.num_edges, generator=torch.Generator().manual_seed(7)) < 0.5


def edge_ids_of(src: torch.Tensor, dst: torch.Tensor,
                num_nodes: int) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The edge id (position in src/dst) of global (u, v) pairs, in a graph without repeated
    edges; asserts every pair is an edge."""
    keys = dst * num_nodes + src
    order = torch.argsort(keys)
    sorted_keys = keys[order]

    def ids(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        wanted = v.to(torch.int64) * num_nodes + u.to(torch.int64)
        pos = torch.searchsorted(sorted_keys, wanted).clamp(max=keys.numel() - 1)
        assert torch.equal(sorted_keys[pos], wanted), "a sampled edge is not a graph edge"
        return order[pos]
    return ids


def block_edges(block: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """A block's edges as global (src, dst): ours (gnnrepro Block) or a DGL block."""
    if hasattr(block, "edge_dst"):
        return block.src_nodes[block.indices], block.dst_nodes[block.edge_dst()]
    from gnnrepro.baselines.dgl_import import import_dgl
    nid = import_dgl().NID
    u, v = block.edges()
    return block.srcdata[nid][u], block.dstdata[nid][v]


def pyg_data(**fields: Any) -> Any:
    """A PyG Data of `fields`, or where PyG is missing an object with them (what the drop-ins
    read)."""
    try:
        from torch_geometric.data import Data
    except ImportError:
        return SimpleNamespace(**fields)
    return Data(**fields)


def assert_same_blocks(got: list, alone: list) -> None:
    for g, a in zip(got, alone):
        gu, gv = block_edges(g)
        au, av = block_edges(a)
        assert torch.equal(gu, au) and torch.equal(gv, av)


def test_dgl_prob_and_mask_sample_by_dgl_edge_id(dataset, edges, mask) -> None:
    require_dgl()
    from gnnrepro.baselines.dgl_import import import_dgl
    dgl = import_dgl()
    src, dst = edges
    g = dgl.graph((src, dst), num_nodes=dataset.num_nodes)
    g.ndata["feat"], g.ndata["label"] = dataset.features, dataset.labels
    g.edata["m"] = mask
    g.edata["w"] = mask * torch.rand(g.num_edges(), generator=torch.Generator().manual_seed(1))
    ids = edge_ids_of(src, dst, dataset.num_nodes)
    alone = FusedSampler(dgl_csc(g, edge_ids=True), FANOUTS, weights=g.edata["w"])
    with DataLoader(g, dataset.train_idx, dgl.dataloading.NeighborSampler(FANOUTS, prob="w"),
                    batch_size=64, **SETTINGS) as loader:
        for batch_id, (input_nodes, seeds, blocks) in enumerate(loader):
            for block in blocks:
                assert bool(g.edata["w"][ids(*block_edges(block))].gt(0).all())
            want = alone.sample(seeds, batch_id)
            assert torch.equal(input_nodes, want.input_nodes)
            assert_same_blocks(blocks, want.blocks)
    # a mask, with replacement: every destination with a kept in-edge picks fanout of them
    sampler = dgl.dataloading.NeighborSampler(FANOUTS, mask="m", replace=True)
    kept = torch.bincount(dst[mask], minlength=dataset.num_nodes)
    with DataLoader(g, dataset.train_idx, sampler, batch_size=64, **SETTINGS) as loader:
        _, seeds, blocks = next(iter(loader))
    assert bool(mask[ids(*block_edges(blocks[-1]))].all())
    expected = torch.where(kept[seeds] > 0, FANOUTS[-1], 0)
    assert torch.equal(blocks[-1].in_degrees(), expected)


def test_dgl_drop_in_names_a_bad_field(dataset, edges) -> None:
    require_dgl()
    from gnnrepro.baselines.dgl_import import import_dgl
    dgl = import_dgl()
    g = dgl.graph(edges, num_nodes=dataset.num_nodes)
    g.ndata["feat"], g.ndata["label"] = dataset.features, dataset.labels
    e = g.num_edges()
    g.edata["neg"] = torch.where(torch.arange(e) == 3, -1.0, 1.0)
    g.edata["nan"] = torch.where(torch.arange(e) == 2, float("nan"), 1.0)
    g.edata["int"] = torch.ones(e, dtype=torch.int64)
    g.edata["wide"] = torch.ones(e, 2)
    for field, error, match in [
            ("missing", ValueError, r"prob/mask='missing'\): g.edata has no 'missing'"),
            ("neg", ValueError, r"g.edata\['neg'\]\[3\] = -1.0"),
            ("nan", ValueError, r"g.edata\['nan'\] must be finite"),
            ("int", TypeError, r"g.edata\['int'\] must be a floating-point"),
            ("wide", ValueError, r"g.edata\['wide'\] must be 1-D")]:
        with pytest.raises(error, match=match):
            DataLoader(g, dataset.train_idx, dgl.dataloading.NeighborSampler([3], prob=field))
    with pytest.raises(ValueError, match=r"NeighborSampler\(edge_dir='out'\)"):
        DataLoader(g, dataset.train_idx, dgl.dataloading.NeighborSampler([3], edge_dir="out"))


def test_pyg_weight_attr_is_per_edge_index_column(dataset, edges, mask) -> None:
    src, dst = edges
    weight = mask * torch.rand(mask.numel(), generator=torch.Generator().manual_seed(2))
    data = pyg_data(x=dataset.features, y=dataset.labels, edge_index=torch.stack([src, dst]),
                    edge_weight=weight, num_nodes=dataset.num_nodes)
    ids = edge_ids_of(src, dst, dataset.num_nodes)
    alone = FusedSampler(pyg_graph(data, edge_ids=True), FANOUTS, weights=weight)
    with NeighborLoader(data, list(reversed(FANOUTS)), batch_size=64,
                        input_nodes=dataset.train_idx, weight_attr="edge_weight",
                        **SETTINGS) as loader:
        for batch_id, batch in enumerate(loader):
            u, v = batch.n_id[batch.edge_index]
            assert bool(weight[ids(u, v)].gt(0).all())
            want = alone.sample(batch.n_id[:batch.batch_size], batch_id)
            assert torch.equal(batch.n_id, want.input_nodes)
    # with replacement every seed with a positive weight picks the seeds' fanout
    with NeighborLoader(data, list(reversed(FANOUTS)), batch_size=64, replace=True,
                        input_nodes=dataset.train_idx, weight_attr="edge_weight",
                        **SETTINGS) as loader:
        batch = next(iter(loader))
    u, v = batch.n_id[batch.edge_index]
    assert bool(weight[ids(u, v)].gt(0).all())
    seeds = batch.n_id[:batch.batch_size]
    picks = torch.bincount(batch.edge_index[1], minlength=batch.n_id.numel())[:batch.batch_size]
    positive = torch.bincount(dst[weight > 0], minlength=dataset.num_nodes)[seeds]
    assert torch.equal(picks, torch.where(positive > 0, FANOUTS[-1], 0))


def test_pyg_drop_in_names_a_bad_weight_attr(dataset, edges) -> None:
    src, dst = edges
    e = src.numel()
    data = pyg_data(x=dataset.features, y=dataset.labels, edge_index=torch.stack([src, dst]),
                    num_nodes=dataset.num_nodes, short=torch.ones(e - 1),
                    neg=torch.where(torch.arange(e) == 5, -2.0, 1.0),
                    inf=torch.full((e,), float("inf")))
    for attr, error, match in [
            ("missing", ValueError, "weight_attr='missing': data has no attribute 'missing'"),
            ("short", ValueError, r"data.short \(weight_attr\) must be 1-D with one entry per "
                                  rf"edge \({e}\)"),
            ("neg", ValueError, r"data.neg \(weight_attr\)\[5\] = -2.0"),
            ("inf", ValueError, r"data.inf \(weight_attr\) must be finite"),
            (3, TypeError, "weight_attr must be the name")]:
        with pytest.raises(error, match=match):
            NeighborLoader(data, [3], weight_attr=attr)
        with pytest.raises(error, match=match):
            LinkNeighborLoader(data, [3], weight_attr=attr)


def test_link_drop_ins_sample_weighted(dataset, edges, mask) -> None:
    src, dst = edges
    ids = edge_ids_of(src, dst, dataset.num_nodes)
    data = pyg_data(x=dataset.features, edge_index=torch.stack([src, dst]),
                    m=mask.float(), num_nodes=dataset.num_nodes)
    for batch in LinkNeighborLoader(data, [3, 3], edge_label_index=data.edge_index[:, :300],
                                    weight_attr="m", batch_size=64):
        u, v = batch.n_id[batch.edge_index]
        assert u.numel() > 0 and bool(mask[ids(u, v)].all())
    require_dgl()
    from gnnrepro.baselines.dgl_import import import_dgl
    dgl = import_dgl()
    g = dgl.graph((src, dst), num_nodes=dataset.num_nodes)
    g.ndata["feat"], g.edata["m"] = dataset.features, mask
    sampler = as_edge_prediction_sampler(dgl.dataloading.NeighborSampler([3, 3], mask="m"),
                                         negative_sampler=1)
    for *_, blocks in DataLoader(g, torch.arange(300), sampler, batch_size=64):
        for block in blocks:
            assert bool(mask[ids(*block_edges(block))].all())
    # with exclusion as DGL's: a batch's own edges are weights zero for its blocks
    excluding = as_edge_prediction_sampler(dgl.dataloading.NeighborSampler([3, 3], mask="m"),
                                           exclude="self", negative_sampler=1)
    for _, pair, _, blocks in DataLoader(g, torch.arange(300), excluding, batch_size=64):
        for block in blocks:
            sampled = block.edata[dgl.EID]
            assert bool(mask[sampled].all()) and sampled.numel() > 0
            assert not bool(torch.isin(sampled, pair.edata[dgl.EID]).any())


def config(pipeline: str = "fused+pinned", **changes: Any) -> TrainConfig:
    return TrainConfig(pipeline=pipeline, fanouts=tuple(FANOUTS), batch_size=64, device="cpu",
                       **{**SETTINGS, **changes})


def test_make_loader_samples_with_the_weights(dataset, mask) -> None:
    g = dataset.graph  # no edge_ids: the weights are by CSC position
    ids = edge_ids_of(g.indices.to(torch.int64), torch.repeat_interleave(
        torch.arange(g.num_nodes), g.in_degrees()), g.num_nodes)
    alone = FusedSampler(g, FANOUTS, weights=mask, seed=11)
    for pipeline in ("fused", "fused+pinned"):
        with make_loader(dataset, config(pipeline, seed=11), weights=mask) as loader:
            for batch_id, batch in enumerate(loader):
                for block in batch.blocks:
                    assert bool(mask[ids(*block_edges(block))].all())
                assert_same_blocks(batch.blocks, alone.sample(batch.seeds, batch_id).blocks)


def test_training_samples_and_evaluates_with_the_weights(dataset, mask) -> None:
    g = dataset.graph
    seen: dict[str, Any] = {}

    def look(loader: Any) -> dict:
        seen["sampler"] = loader.sampler
        return {}

    result = run_training(dataset, config(epochs=1), weights=mask, replace=True,
                          before_close=look)
    assert result.params["weighted"] and result.params["replace"]
    sampler = seen["sampler"]
    assert sampler.replace and torch.equal(sampler.weights[0].weights, mask.float())
    # the evaluator samples as the loader: a weighted run is evaluated sampled
    assert set(result.params["eval_methods"].values()) == {"sampled"}
    with pytest.raises(ValueError, match="eval_method='layerwise' reads every edge"):
        train_pipeline("fused", dataset, FANOUTS, weights=mask, epochs=1, batch_size=64,
                       eval_method="layerwise", **SETTINGS)
    # a mask that keeps no edge: every block is empty
    with make_loader(dataset, config(), weights=torch.zeros(g.num_edges, dtype=torch.bool)) as ld:
        assert all(b.num_edges == 0 for b in next(iter(ld)).blocks)


def test_pipelines_that_cannot_weigh_refuse(dataset, mask) -> None:
    for pipeline in ("dgl", "dgl-native"):
        with pytest.raises(ValueError, match="weights and replace need pipeline 'fused'"):
            make_loader(dataset, config(pipeline), weights=mask)
        with pytest.raises(ValueError, match="weights and replace need pipeline 'fused'"):
            make_loader(dataset, config(pipeline), replace=True)
    with pytest.raises(ValueError, match="pipeline='reference'.*weights need pipeline"):
        make_loader(dataset, config("reference"), weights=mask)
    with make_loader(dataset, config("reference"), replace=True) as loader:
        assert loader.sampler.replace
    with pytest.raises(ValueError, match="weights must be 1-D with one entry per edge"):
        make_loader(dataset, config(), weights=mask[:-1])
    with pytest.raises(TypeError, match="replace must be a bool"):
        make_loader(dataset, config(), replace="yes")
