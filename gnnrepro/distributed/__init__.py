"""Data-parallel training on 1 to 8 GPUs (NCCL) or CPU ranks (gloo) with one shared copy of the
data per machine.

* `launch(world_size, ...)` launches the ranks from Python (gnnrepro.distributed.launch).
* `python -m gnnrepro.distributed ...` is the same training under torchrun (env:// rendezvous),
  single- or multi-node (gnnrepro.distributed.__main__).
* The dataset lives once per machine in shared memory: the Python launcher shares it with the
  ranks it starts; under torchrun the machine's lowest rank shares it with the others
  (gnnrepro.distributed.machine_share).
* Each rank runs gnnrepro.training's one loop under DistributedDataParallel on its share of
  every epoch (gnnrepro.distributed.rank, gnnrepro.pipeline.shard).
* Graphs larger than one machine: gnnrepro.distributed.partitioned trains on a partition
  (gnnrepro.partition), one part per machine, sampling and features exchanged with the owners.
"""
from gnnrepro.distributed.launch import DistributedResult, launch, unavailable
from gnnrepro.distributed.machine_share import share_dataset_, share_on_machine

__all__ = ["DistributedResult", "launch", "share_dataset_", "share_on_machine", "unavailable"]
