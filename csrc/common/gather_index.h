// Index math of gather_rows shared by the CPU op and the CUDA kernel (host and device).
#pragma once
#include <cstdint>

#include "hd.h"

namespace gnnrepro {

// Whether `row` indexes one of `num_rows` rows (negative rows are out of range).
GNNREPRO_HD bool row_in_range(int64_t row, int64_t num_rows) {
  return static_cast<uint64_t>(row) < static_cast<uint64_t>(num_rows);
}

// Offset of element k of row `row` in a contiguous table of `row_elems` elements per row.
GNNREPRO_HD int64_t row_offset(int64_t row, int64_t row_elems, int64_t k) {
  return row * row_elems + k;
}

}  // namespace gnnrepro
