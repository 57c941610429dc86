"""gnnrepro: fused neighbour sampling and pinned multi-stream feature loading for GNN training."""
from gnnrepro.graph import CSCGraph

__version__ = "0.1.0"
__all__ = ["CSCGraph", "__version__"]
