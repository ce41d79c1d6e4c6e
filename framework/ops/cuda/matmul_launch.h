#pragma once
// Host launcher of the integer matmul kernel (cuBLASLt has no int32/int64 GEMM), C++17-clean.
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"

namespace ember::cuda {

// For each of `batch` products: c = op(a) @ op(b), row-major, with a (m, k) or stored (k, m) when ta, b (k, n)
// or stored (n, k) when tb; consecutive products are a_stride / b_stride elements apart in a / b (0 =
// broadcast) and m * n apart in c. Int32 and Int64 wrap around on overflow (two's complement).
void launch_matmul_int(DT dt, const void* a, const void* b, void* c, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                       int64_t batch, int64_t a_stride, int64_t b_stride, int device, const char* op);

}  // namespace ember::cuda
