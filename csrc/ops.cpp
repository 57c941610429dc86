// Operator schemas of the gnnrepro library and the Python module stub.
//
// One schema per op; CPU and CUDA kernels register against it (TORCH_LIBRARY_IMPL) in their own
// files, so `torch.ops.gnnrepro.<op>` dispatches on the device of its tensor arguments.
#include <torch/extension.h>

#include "features/disk_reader.h"

TORCH_LIBRARY(gnnrepro, m) {
  // Fused neighbour sampling + to_block for all layers of one mini-batch.
  // fanouts[i] is GNN layer i's fanout (-1: all neighbours); seeds are sampled with fanouts[-1].
  // node_map: int32 [N], all -1 on entry and on exit (also after an error): the dense relabel
  // map. An entry outside [-1, sources so far) raises, so no content makes the op read or write
  // out of bounds or emit an out-of-range id; an in-range leftover cannot be told from a real
  // id, so the map belongs to this op alone (FusedSampler owns one per process).
  // workspace: int64 scratch the op grows as needed; keep it across calls to avoid allocations.
  // Neither may share memory with an input. Keep both across calls: then a batch allocates
  // nothing but its outputs.
  // Returns [indptr, indices, src_nodes] per block, input layer first.
  m.def(
      "sample_fused(Tensor indptr, Tensor indices, Tensor seeds, int[] fanouts, bool replace, "
      "int seed, int batch_id, Tensor(a!) node_map, Tensor(b!) workspace) -> Tensor[]");

  // ---- Feature extraction (csrc/features) ----
  // Row gather: out[i, :] = src[index[i], :] for a 2-D contiguous src, int64 or int32 index, into
  // a caller-owned contiguous `out` of src's dtype with at least len(index) rows (e.g. a pinned
  // staging buffer). Returns out[:len(index)], a view of out.
  m.def("gather_rows(Tensor src, Tensor index, Tensor(a!) out) -> Tensor(a!)");
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("cuda_compiled", []() {
#ifdef GNNREPRO_WITH_CUDA
    return true;
#else
    return false;
#endif
  }, "Whether the CUDA kernels were compiled into this build.");
  gnnrepro::register_disk_reader(m);  // DiskReader, ReadJob: the O_DIRECT feature reader
}
