"""Models that train on sampled Blocks (GraphSAGE), on typed graphs' TypedBlocks (R-GCN, R-GAT
with MLPerf's preset, learnable embeddings for featureless node types) and the graph-free MLP
baseline."""
from gnnrepro.models.embeddings import (NodeEmbeddings, OptimizerGroup, make_optimizers,
                                        sparse_parameters)
from gnnrepro.models.graphsage import GraphSAGE, SAGEConv
from gnnrepro.models.mlp import MLP
from gnnrepro.models.rgat import RGAT, RGAT_MLPERF, RGATPreset, RelGATConv
from gnnrepro.models.rgcn import RGCN, RelGraphConv
from gnnrepro.models.typed_model import TypedModel

__all__ = ["GraphSAGE", "MLP", "NodeEmbeddings", "OptimizerGroup", "RGAT", "RGAT_MLPERF",
           "RGATPreset", "RGCN", "RelGATConv", "RelGraphConv", "SAGEConv", "TypedModel",
           "make_optimizers", "sparse_parameters"]
