"""Graph partitions for training on several machines: METIS parts with 1-hop halos in a
memory-mappable directory with a checksummed manifest.

* `partition_dataset(dataset, num_parts, out)` writes one (`python -m gnnrepro partition`).
* `load_partition(path, ...)` opens one after checking it against its manifest.
"""
from gnnrepro.partition.build import partition_dataset
from gnnrepro.partition.manifest import PartData, Partition, PartitionError, load_partition

__all__ = ["PartData", "Partition", "PartitionError", "load_partition", "partition_dataset"]
