"""CSCGraph: the in-neighbour CSC graph every sampler reads.

`indptr[v]:indptr[v+1]` slices `indices` to give the in-neighbours (message sources) of node v.
The constructor validates everything the C++ kernels rely on, so a CSCGraph is always safe to
hand to them. A relation of a typed graph (gnnrepro.typed_graph) is a CSCGraph whose sources are
another node type's: `num_src_nodes` bounds its `indices`; by default it is `num_nodes`.
"""
from __future__ import annotations

import warnings

import torch

from gnnrepro.checks import check_device, check_int, check_node_ids
from gnnrepro.pinning import pin_in_place, share_memory_in_place

__all__ = ["CSCGraph"]

_INDEX_DTYPES = (torch.int32, torch.int64)


class CSCGraph:
    """In-neighbour CSC graph: `indptr` int64 [N+1], `indices` int32 or int64 [E] in
    [0, num_src_nodes) (default N)."""

    def __init__(self, indptr: torch.Tensor, indices: torch.Tensor, *, validate: bool = True,
                 num_src_nodes: int | None = None, edge_ids: torch.Tensor | None = None):
        if not isinstance(indptr, torch.Tensor):
            raise TypeError(f"indptr must be a torch.Tensor, got {type(indptr).__name__}")
        if not isinstance(indices, torch.Tensor):
            raise TypeError(f"indices must be a torch.Tensor, got {type(indices).__name__}")
        if indptr.dtype != torch.int64:
            raise TypeError(f"indptr must be int64, got {indptr.dtype}")
        if indices.dtype not in _INDEX_DTYPES:
            raise TypeError(f"indices must be int32 or int64, got {indices.dtype}")
        if indptr.dim() != 1 or indices.dim() != 1:
            raise ValueError(
                f"indptr and indices must be 1-D, got shapes {tuple(indptr.shape)} and "
                f"{tuple(indices.shape)}")
        if indptr.device != indices.device:
            raise ValueError(f"indptr is on {indptr.device} but indices is on {indices.device}")
        if indptr.numel() < 1:
            raise ValueError("indptr must have at least one element (N+1 with N >= 0)")
        self.indptr = indptr.contiguous()
        self.indices = indices.contiguous()
        self.num_src_nodes = (indptr.numel() - 1 if num_src_nodes is None
                              else check_int("num_src_nodes", num_src_nodes, 0))
        # The id of the edge at each CSC position, where it is not the position itself (a graph
        # built from an edge list whose ids the caller keeps): samplers report these.
        if edge_ids is not None:
            if not isinstance(edge_ids, torch.Tensor) or edge_ids.dtype != torch.int64:
                raise TypeError("edge_ids must be an int64 tensor")
            if edge_ids.shape != indices.shape or edge_ids.device != indices.device:
                raise ValueError(f"edge_ids must have one entry per edge ({indices.numel()}) "
                                 f"on {indices.device}, got shape {tuple(edge_ids.shape)} on "
                                 f"{edge_ids.device}")
            edge_ids = edge_ids.contiguous()
        self.edge_ids = edge_ids
        if validate:
            self._validate()

    def _validate(self) -> None:
        indptr, indices = self.indptr, self.indices
        num_nodes, num_edges = indptr.numel() - 1, indices.numel()
        num_src = self.num_src_nodes
        if int(indptr[0]) != 0:
            raise ValueError(f"indptr must start at 0, starts at {int(indptr[0])}")
        if int(indptr[-1]) != num_edges:
            raise ValueError(
                f"indptr must end at len(indices) = {num_edges}, ends at {int(indptr[-1])}")
        if num_nodes > 0 and bool((indptr[1:] < indptr[:-1]).any()):
            first = int(torch.nonzero(indptr[1:] < indptr[:-1])[0, 0])
            raise ValueError(f"indptr must be non-decreasing; indptr[{first + 1}] < indptr[{first}]")
        if num_edges > 0:
            lo, hi = int(indices.min()), int(indices.max())
            if lo < 0 or hi >= num_src:
                bound = ("num_nodes" if num_src == num_nodes else "num_src_nodes")
                raise ValueError(
                    f"indices must lie in [0, {bound}={num_src}), found values in [{lo}, {hi}]")

    @classmethod
    def from_edges(cls, src: torch.Tensor, dst: torch.Tensor, num_nodes: int,
                   index_dtype: torch.dtype = torch.int64, num_src_nodes: int | None = None,
                   keep_edge_ids: bool = False) -> "CSCGraph":
        """Build from a COO edge list (message flows src -> dst); keeps multi-edges and loops.
        `num_nodes` counts the destinations, `num_src_nodes` (default num_nodes) the sources;
        with `keep_edge_ids` an edge's id is its position in the list (else its CSC position).

        Within one destination, neighbours keep the order of the input edge list.
        """
        check_int("num_nodes", num_nodes, 0)
        num_src = num_nodes if num_src_nodes is None else check_int("num_src_nodes",
                                                                     num_src_nodes, 0)
        if index_dtype not in _INDEX_DTYPES:
            raise TypeError(f"index_dtype must be torch.int32 or torch.int64, got {index_dtype}")
        device = src.device if isinstance(src, torch.Tensor) else torch.device("cpu")
        src, dst = (check_node_ids(t, n, name, device).to(torch.int64)
                    for name, t, n in (("src", src, num_src), ("dst", dst, num_nodes)))
        if src.numel() != dst.numel():
            raise ValueError(f"src and dst differ in length: {src.numel()} vs {dst.numel()}")
        order = torch.argsort(dst, stable=True)
        counts = torch.bincount(dst, minlength=num_nodes)
        indptr = torch.zeros(num_nodes + 1, dtype=torch.int64, device=device)
        torch.cumsum(counts, 0, out=indptr[1:])
        return cls(indptr, src[order].to(index_dtype), validate=False, num_src_nodes=num_src,
                   edge_ids=order if keep_edge_ids else None)

    @property
    def num_nodes(self) -> int:
        return self.indptr.numel() - 1

    @property
    def num_edges(self) -> int:
        return self.indices.numel()

    @property
    def device(self) -> torch.device:
        return self.indptr.device

    def in_degrees(self) -> torch.Tensor:
        """In-degree of every node (int64 [N])."""
        return self.indptr[1:] - self.indptr[:-1]

    def nbytes(self) -> int:
        """Bytes held by indptr and indices."""
        return (self.indptr.numel() * self.indptr.element_size()
                + self.indices.numel() * self.indices.element_size())

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "CSCGraph":
        """This graph with both arrays on `device` (itself if they are there already); the
        arrays were validated when this graph was made, so the copy is not validated again."""
        device = check_device(device)
        if device == self.device:
            return self
        edge_ids = (None if self.edge_ids is None
                    else self.edge_ids.to(device, non_blocking=non_blocking))
        return CSCGraph(self.indptr.to(device, non_blocking=non_blocking),
                        self.indices.to(device, non_blocking=non_blocking), validate=False,
                        num_src_nodes=self.num_src_nodes, edge_ids=edge_ids)

    def share_memory_(self) -> "CSCGraph":
        """Move both arrays to shared memory in place so worker processes map, not copy, them."""
        share_memory_in_place(self.indptr)
        share_memory_in_place(self.indices)
        if self.edge_ids is not None:
            share_memory_in_place(self.edge_ids)
        return self

    def pin_memory_(self) -> "CSCGraph":
        """Page-lock both arrays in place (gnnrepro.pinning: unregistered when their storage is
        freed); no-op with a warning without CUDA, RuntimeError if page-locking fails."""
        if not torch.cuda.is_available():
            warnings.warn("pin_memory_: CUDA is not available; the graph stays pageable",
                          stacklevel=2)
            return self
        for name, t in (("indptr", self.indptr), ("indices", self.indices)):
            if t.numel() and not pin_in_place(t):
                raise RuntimeError(f"could not page-lock the graph's {name} "
                                   f"({t.numel() * t.element_size() / 2**20:.1f} MiB; "
                                   "cudaHostRegister failed: locked-memory limit?)")
        return self

    def __repr__(self) -> str:
        src = ("" if self.num_src_nodes == self.num_nodes
               else f"num_src_nodes={self.num_src_nodes}, ")
        return (f"CSCGraph(num_nodes={self.num_nodes}, {src}num_edges={self.num_edges}, "
                f"index_dtype={self.indices.dtype}, device={self.device})")
