"""The mini-batch pipeline (stages 1-2): sampling workers, staging slots, CUDA streams, prefetch."""
from gnnrepro.pipeline.loader import Loader, epoch_order

__all__ = ["Loader", "epoch_order"]
