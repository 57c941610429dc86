// Operator schemas of the gnnrepro library and the Python module stub.
//
// One schema per op; CPU and CUDA kernels register against it (TORCH_LIBRARY_IMPL) in their own
// files, so `torch.ops.gnnrepro.<op>` dispatches on the device of its tensor arguments.
#include <torch/library.h>
#include <torch/csrc/utils/pybind.h>

#include "bench/random_reads.h"
#include "common/local_threads.h"
#include "common/output_pool.h"
#include "features/clock_cache.h"
#include "features/disk_gather.h"
#include "features/disk_reader.h"
#include "sampling/disjoint_relabel.h"
#include "sampling/relabel_mode.h"

TORCH_LIBRARY(gnnrepro, m) {
  // Fake-tensor (Meta) kernels of these ops live in Python: data-dependent output sizes need
  // torch.library's dynamic sizes. Torch imports that module when it needs them.
  m.set_python_module("gnnrepro._meta");
  // Fused neighbour sampling + to_block for all layers of one mini-batch.
  // fanouts[i] is GNN layer i's fanout (-1: all neighbours); seeds are sampled with fanouts[-1].
  // Returns [indptr, indices, src_nodes] per block, input layer first.
  //
  // node_map: int32 [N], the dense relabel map: memory the op works in, whose value it leaves
  // as it found it (all -1), so the schema declares no mutation and the op is functional for
  // torch.compile and fake tensors (an op that mutates an argument and returns Tensor[] cannot
  // be functionalized). It is never resized; the op's other scratch is no argument: a buffer
  // per calling thread on the CPU, kept across calls (no page faults in steady state), and the
  // caching allocator's, per call, on the GPU. The map's memory is the op's during a call: one
  // call at a time per map (each FusedSampler object owns one and serializes its calls), and it
  // must not share memory with an input. Its contract, the same for the CPU and the CUDA kernel:
  //   - all -1 on entry, and all -1 on exit, also after an error (an error resets every entry);
  //   - the op reads the entry of every seed and of every sampled neighbour. Before the op maps a
  //     node its entry must be -1; any other value (stale content: the map belongs to one op
  //     call at a time; each FusedSampler object owns one and serializes its calls) raises
  //     RuntimeError "node_map must be all -1 on entry", and never becomes a local id in a
  //     returned block or an out-of-bounds access. Entries the op does not read are not checked
  //     and left as they are.
  // Bad input raises in this order, whichever kernel runs and whatever else is wrong
  // (csrc/sampling/sample_errors.h): a seed outside [0, N) (ValueError, smallest position), a
  // seed's dirty map entry, a duplicate seed (ValueError, smallest node), then layer by layer
  // from the seeds outward: a sampled position of `indices` outside [0, N) (smallest position),
  // a sampled neighbour's dirty entry, the next layer's invalid indptr range (smallest node).
  // On the GPU the op runs on the current stream, syncs with the host fanouts.size() + 1 times
  // per call (c10::cuda stream syncs, visible to torch.cuda.set_sync_debug_mode) and queues no
  // work on node_map after its last sync, so calls from different streams may alternate.
  m.def(
      "sample_fused(Tensor indptr, Tensor indices, Tensor seeds, int[] fanouts, bool replace, "
      "int seed, int batch_id, Tensor node_map) -> Tensor[]");

  // The same op on a typed graph (csrc/sampling/typed_spec.h): node types 0..T-1 with
  // num_nodes[t] nodes each; relation r a CSC (indptrs[r] over its destination type
  // dst_types[r], indices[r] of ids of its source type src_types[r], one index dtype for all);
  // seeds[t] the seeds of type t (ids of that type, possibly empty); fanouts[l * R + r] layer
  // l's fanout of relation r (-1: all, 0: none). Every relation is sampled into its destination
  // type in one pass, relation by relation; each type's sources are its destinations first,
  // then its new sources in order of first appearance (relations in order, then destinations,
  // then picks). Returns per layer, input layer first: per relation its block indptr, indices
  // (local ids among its source type's sources) and, if return_eids, edge ids (positions in
  // indices[r]); then per type its source nodes. node_map: int32 [sum(num_nodes)], with the
  // contract above. Random numbers are keyed by (seed, batch, layer, relation, node), relation 0
  // drawing as the homogeneous op, which is this op's one-type, one-relation case.
  // edge_weights / alias_tables / positive_counts: empty (every relation uniform), or per
  // relation None (uniform) or its float32 weights, one per edge, with what weight_table
  // returned for them: a weighted relation (common/weighted_picks.h). Only positive weights are
  // picked: without replacement by successive sampling (min(fanout, positive weights) picks, all
  // of them in order where fewer than the fanout), with replacement independently (fanout
  // picks where any weight is positive).
  // seed_times: empty, or per type its seeds' int64 times, making the call temporal (CPU only):
  // each seed is sampled on its own (disjoint subgraphs; seeds may repeat), at its time at every
  // hop. edge_times: empty or per relation None (untimed: every edge a candidate) or its int64
  // edge times, non-decreasing within each destination; a timed destination's candidates are
  // its edges with time in [seed time - time_window, seed time] (time_window -1: no lower
  // bound), picked uniformly (temporal_strategy 0) or its fanout most recent (1, without
  // replacement). No relation of a temporal call may be weighted. A temporal call's outputs per
  // layer end with, per type, each source's seed index (seeds numbered across the types in
  // order); its node_map is not used (left all -1). excluded_edges: empty, or per relation None
  // or its sorted, distinct CSC positions that this call must not sample, on the relation's
  // indices' device (calls that are not temporal): a destination samples among its other
  // neighbours (common/exclusion.h; a weighted one as if their weights were zero:
  // common/weighted_picks.h).
  m.def(
      "sample_fused_typed(Tensor[] indptrs, Tensor[] indices, int[] src_types, int[] dst_types, "
      "int[] num_nodes, Tensor[] seeds, int[] fanouts, bool replace, int seed, int batch_id, "
      "bool return_eids, Tensor?[] edge_weights, Tensor?[] alias_tables, "
      "Tensor?[] positive_counts, Tensor?[] edge_times, Tensor[] seed_times, int time_window, "
      "int temporal_strategy, Tensor?[] excluded_edges, Tensor node_map) -> Tensor[]");

  // A weighted relation's sampling arrays from its CSC and its float32 weights (one per edge,
  // non-negative and finite: ValueError otherwise): (alias table int64 [E * words], each
  // destination's Walker alias table with the ids it gives, 2 words an edge for int32 indices
  // and 3 for int64, as common/weighted_picks.h packs them; positive counts int64 [N]).
  m.def("weight_table(Tensor indptr, Tensor indices, Tensor weights) -> (Tensor, Tensor)");

  // ---- Feature extraction (csrc/features) ----
  // Row gather: out[i, :] = src[index[i], :] for a 2-D contiguous src, int64 or int32 index, into
  // a caller-owned contiguous `out` of src's dtype with at least len(index) rows (e.g. a pinned
  // staging buffer); out[len(index):] is left alone. Returns nothing (so the op can be
  // functionalized: a returned view of `out` could not). An index outside [0, src rows)
  // raises on the CPU; on the GPU the kernel is stream-ordered with no host sync, so it cannot
  // raise: such a row is never read and its out row is zero-filled (callers check ids first).
  m.def("gather_rows(Tensor src, Tensor index, Tensor(a!) out) -> ()");

  // ---- Model (csrc/models) ----
  // relu_dropout: relu(h) with each element kept with probability 1 - p and scaled by
  // 1 / (1 - p), else 0; the keep decisions are a function of (seed, element index) only
  // (common/dropout_mask.h). relu_dropout_backward: grad / (1 - p) where out > 0, else 0.
  // CPU kernels only: gnnrepro.models.dropout uses torch's ops for other devices.
  m.def("relu_dropout(Tensor h, float p, int seed) -> Tensor");
  m.def("relu_dropout_backward(Tensor grad, Tensor out, float p) -> Tensor");
  // neighbour_mean_backward: the gradient [num_src, d] of mean[v] = mean of h[indices[e]] over
  // v's edges (embedding_bag "mean" over the CSC indptr/indices, int64 or int32) given
  // grad_mean [num_dst, d]; a source with no edge gets zeros. Deterministic for any threads.
  m.def("neighbour_mean_backward(Tensor grad_mean, Tensor indptr, Tensor indices, int num_src) "
        "-> Tensor");
  // sparse_adam_: torch.optim.SparseAdam's update (its arithmetic) of param's rows `indices`
  // (strictly increasing: a coalesced gradient) with gradient rows `values`, at Adam step
  // `step` (>= 1): moments and parameter rows read and written once. CPU kernel only:
  // gnnrepro.training.sparse_adam uses torch's update elsewhere.
  m.def("sparse_adam_(Tensor(a!) param, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, "
        "Tensor indices, Tensor values, float lr, float beta1, float beta2, float eps, "
        "int step) -> ()");
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
  gnnrepro::register_local_threads(m);  // set_local_num_threads: one thread's OpenMP count
  gnnrepro::register_clock_cache(m);  // ClockCache: the disk store's CLOCK row cache
  gnnrepro::register_disk_gather(m);  // DiskGather: the disk store's gather, one call a batch
  gnnrepro::register_random_reads(m);  // random_line_reads: the random-read ceiling probe
  gnnrepro::register_relabel_mode(m);  // parallel_relabel_threads: the sampler's relabel
  gnnrepro::register_disjoint_relabel(m);  // disjoint_relabel: the CUDA op's, for the tests
  m.def("output_pool_stats", &gnnrepro::output_pool_stats,
        "[bytes cached, most bytes cached, allocations from the cache, allocations of new "
        "memory] of the pool the CPU sampler's outputs come from (csrc/common/output_pool.h).");
}
