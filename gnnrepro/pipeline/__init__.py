"""The mini-batch pipeline (stages 1-2): sampling workers, staging slots, CUDA streams, prefetch;
each data-parallel rank's share of an epoch (gnnrepro.pipeline.shard); and the named training
pipelines built on it (gnnrepro.pipeline.pipelines)."""
from gnnrepro.pipeline.loader import Loader, epoch_order
from gnnrepro.pipeline.shard import ShardPlan
from gnnrepro.pipeline.source import BatchSource

__all__ = ["BatchSource", "Loader", "ShardPlan", "epoch_order"]
