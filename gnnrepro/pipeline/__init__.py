"""The mini-batch pipeline (stages 1-2): sampling workers, staging slots, CUDA streams, prefetch;
and the named training pipelines built on it (gnnrepro.pipeline.pipelines)."""
from gnnrepro.pipeline.loader import Loader, epoch_order
from gnnrepro.pipeline.source import BatchSource

__all__ = ["BatchSource", "Loader", "epoch_order"]
