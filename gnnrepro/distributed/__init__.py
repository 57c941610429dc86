"""Data-parallel training on 1 to 8 GPUs (NCCL) or CPU ranks (gloo) with one shared copy of the
data per machine.

* `run(world_size, ...)` launches the ranks from Python (gnnrepro.distributed.launch).
* `python -m gnnrepro.distributed ...` is the same training under torchrun (env:// rendezvous),
  single- or multi-node (gnnrepro.distributed.__main__).
* Each rank runs gnnrepro.train's epoch loop under DistributedDataParallel on its share of
  every epoch (gnnrepro.distributed.rank, gnnrepro.pipeline.shard).
"""
from gnnrepro.distributed.launch import DistributedResult, run, share_dataset_
from gnnrepro.distributed.rank import RunConfig

__all__ = ["DistributedResult", "RunConfig", "run", "share_dataset_"]
