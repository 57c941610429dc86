"""The mini-batch pipeline (stages 1-2): sampling workers, staging slots, CUDA streams, prefetch,
and each data-parallel rank's share of an epoch (gnnrepro.pipeline.shard). The named training
pipelines built on it live in gnnrepro.training.pipelines."""
from gnnrepro.pipeline.loader import Loader, epoch_order
from gnnrepro.pipeline.shard import ShardPlan
from gnnrepro.pipeline.source import BatchSource
from gnnrepro.pipeline.spans import STAGES, Span

__all__ = ["STAGES", "BatchSource", "Loader", "ShardPlan", "Span", "epoch_order"]
