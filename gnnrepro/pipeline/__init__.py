"""The mini-batch pipeline (stages 1-2), along its data flow: the batch plan (plan, shard: which
ids each batch holds, each data-parallel rank's share), the producers (this process, worker
threads or processes, staging slots), the hand-over to the device (streams, leased slots), and
the Loader that wires them. The named training pipelines built on it live in
gnnrepro.training.pipelines."""
from gnnrepro.pipeline.loader import Loader
from gnnrepro.pipeline.plan import BatchPlan, epoch_order
from gnnrepro.pipeline.shard import ShardPlan
from gnnrepro.pipeline.source import BatchSource
from gnnrepro.pipeline.spans import STAGES, Span

__all__ = ["STAGES", "BatchPlan", "BatchSource", "Loader", "ShardPlan", "Span", "epoch_order"]
