"""The one Loader on a typed dataset: per-type rows from per-type stores, labels of the target
type, the same batches from any workers; a homogeneous Dataset is the typed one-type case."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.features.store import InMemoryFeatureStore
from gnnrepro.features.typed_store import TypedFeatureStore
from gnnrepro.pipeline import Loader
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph

NUM = {"paper": 400, "author": 250, "field": 30}


@pytest.fixture(scope="module")
def typed() -> TypedDataset:
    gen = torch.Generator().manual_seed(0)

    def rnd(s: str, d: str, e: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.randint(0, NUM[s], (e,), generator=gen),
                torch.randint(0, NUM[d], (e,), generator=gen))

    writes, topic = rnd("author", "paper", 1600), rnd("paper", "field", 900)
    edges = {("author", "writes", "paper"): writes, ("paper", "rev_writes", "author"): writes[::-1],
             ("paper", "cites", "paper"): rnd("paper", "paper", 2000),
             ("paper", "has_topic", "field"): topic, ("field", "rev_has_topic", "paper"): topic[::-1]}
    graph = TypedGraph.from_edges(NUM, edges)
    features = {"paper": torch.randn(400, 16, generator=gen),
                "field": torch.randn(30, 16, generator=gen)}  # authors have none
    labels = torch.randint(0, 5, (400,), generator=gen)
    perm = torch.randperm(400, generator=gen)
    return TypedDataset(graph, features, labels, "paper", perm[:300].sort().values,
                        perm[300:350].sort().values, perm[350:].sort().values, 5, "tiny-typed")


def _epoch(loader: Loader) -> list:
    return [(b.seeds["paper"].clone(), {t: v.clone() for t, v in b.x.items()}, b.y.clone(),
             {t: v.clone() for t, v in b.input_nodes.items()}) for b in loader]


def test_batches_carry_each_types_rows_and_the_targets_labels(typed: TypedDataset) -> None:
    sampler = FusedSampler(typed.graph, [4, 3], seed=1)
    with Loader(typed, sampler, "cpu", 64, seed=2) as loader:
        seen = []
        for batch in loader:
            assert set(batch.x) == {"paper", "field"}  # featured types only
            for t, x in batch.x.items():
                assert torch.equal(x, typed.features[t][batch.input_nodes[t]])
            assert torch.equal(batch.y, typed.labels[batch.seeds["paper"]])
            assert batch.blocks[-1].num_dst["paper"] == batch.seeds["paper"].numel()
            seen.append(batch.seeds["paper"])
    assert torch.equal(torch.cat(seen).sort().values, typed.train_idx)
    assert sampler.target is None  # the Loader sampled with a copy that has the target set


@pytest.mark.parametrize("workers,kind", [(2, "thread"), (2, "process")])
def test_the_same_batches_from_workers(typed: TypedDataset, workers: int, kind: str) -> None:
    sampler = FusedSampler(typed.graph, [4, 3], seed=1, target="paper")
    with Loader(typed, sampler, "cpu", 64, seed=2) as loader:
        want = _epoch(loader)
    with Loader(typed, sampler, "cpu", 64, seed=2, workers=workers, worker_kind=kind) as loader:
        got = _epoch(loader)
    assert len(got) == len(want)
    for (s, x, y, ids), (s2, x2, y2, ids2) in zip(got, want):
        assert torch.equal(s, s2) and torch.equal(y, y2)
        assert all(torch.equal(x[t], x2[t]) and torch.equal(ids[t], ids2[t]) for t in x2)


def test_a_typed_store_checks_its_types(typed: TypedDataset) -> None:
    sampler = FusedSampler(typed.graph, [2], seed=1)
    narrow = InMemoryFeatureStore(torch.randn(30, 8), share=False, pin=False)
    with pytest.raises(ValueError, match="one width and dtype"):
        TypedFeatureStore({"paper": InMemoryFeatureStore(typed.features["paper"], share=False,
                                                         pin=False), "field": narrow})
    with pytest.raises(ValueError, match=r"feature_store\['field'\] holds 30 x 8"):
        Loader(typed, sampler, "cpu", 64, feature_store=TypedFeatureStore({"field": narrow}))
    with pytest.raises(TypeError, match="must be a TypedFeatureStore"):
        Loader(typed, sampler, "cpu", 64, feature_store=narrow)
    with pytest.raises(ValueError, match="feature_source='uva'"):
        Loader(typed, sampler, "cpu", 64, feature_source="uva")


def test_a_homogeneous_dataset_as_its_one_type_case(dataset) -> None:
    one = TypedDataset.from_dataset(dataset)
    homo = FusedSampler(dataset.graph, [5, 3], seed=4)
    typed = FusedSampler(one.graph, [5, 3], seed=4)
    with Loader(dataset, homo, "cpu", 256, seed=1) as a, Loader(one, typed, "cpu", 256,
                                                                   seed=1) as b:
        for x, y in zip(a, b):
            assert torch.equal(x.seeds, y.seeds["_N"]) and torch.equal(x.y, y.y)
            assert torch.equal(x.x, y.x["_N"])
            assert torch.equal(x.blocks[0].indices, y.blocks[0].blocks[("_N", "_E", "_N")].indices)


@pytest.mark.parametrize("fanouts", [[4, 3], [-1, 2], [{"writes": 0, "rev_writes": 5, "cites": 2,
                                                         "has_topic": 1, "rev_has_topic": 3}]])
def test_the_slot_bound_holds_every_batch_and_counts_featured_types_only(
        typed: TypedDataset, fanouts: list) -> None:
    from gnnrepro.pipeline.loader import _typed_max_input_rows
    sampler = FusedSampler(typed.graph, fanouts, seed=3, target="paper")
    bound = _typed_max_input_rows(typed, sampler.fanouts, 64)
    assert bound <= NUM["paper"] + NUM["field"]  # authors have no rows to stage
    with Loader(typed, sampler, "cpu", 64, seed=2) as loader:
        for batch in loader:
            assert sum(x.shape[0] for x in batch.x.values()) <= bound
