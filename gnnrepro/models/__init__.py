"""Models that train on sampled Blocks (GraphSAGE) and the graph-free MLP baseline."""
from gnnrepro.models.graphsage import GraphSAGE, SAGEConv
from gnnrepro.models.mlp import MLP

__all__ = ["GraphSAGE", "MLP", "SAGEConv"]
