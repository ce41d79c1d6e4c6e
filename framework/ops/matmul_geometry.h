#pragma once
// The geometry of a (batched, broadcasting) matmul as every backend's kernels see it: shared by the CPU
// (oneDNN/Eigen) and CUDA (cuBLASLt) kernels, so both read batch dims alike. Internal (never installed).
#include <cstdint>
#include <utility>
#include <vector>

#include "framework/ops/attrs.h"
#include "framework/ops/broadcast.h"

namespace ember {

// The product as the kernels see it: a is (m, k) or stored (k, m) when ta, b is (k, n) or stored
// (n, k) when tb. Batch dims of size 1 are dropped and neighbours that broadcast the same way are
// merged, so a (2, 3, 4, m, k) @ (k, n) product has the single batch dim 24.
struct MatmulGeometry {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  std::vector<int64_t> batch;           // output batch dims, outermost first
  std::vector<int64_t> a_step, b_step;  // elements between consecutive matrices along each dim; 0 = broadcast
  int64_t batches = 1;
};

inline MatmulGeometry matmul_geometry(const Shape& a, const Shape& b, const MatMulAttrs& attrs) {
  MatmulGeometry g;
  g.ta = attrs.transpose_a;
  g.tb = attrs.transpose_b;
  const int64_t ra = a.rank(), rb = b.rank();
  g.m = g.ta ? a[ra - 1] : a[ra - 2];
  g.k = g.ta ? a[ra - 2] : a[ra - 1];
  g.n = g.tb ? b[rb - 2] : b[rb - 1];
  const Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const Shape ob = broadcast_shapes("matmul", ab, bb);
  const std::vector<int64_t> as = broadcast_strides(ab, ob), bs = broadcast_strides(bb, ob);
  for (int64_t i = 0; i < ob.rank(); ++i) {
    const int64_t size = ob[i];
    g.batches *= size;
    if (size == 1) continue;
    const int64_t sa = as[static_cast<size_t>(i)] * g.m * g.k, sb = bs[static_cast<size_t>(i)] * g.k * g.n;
    // Row-major dims with the same broadcast pattern are contiguous in both operands: merge them,
    // keeping the inner step.
    if (!g.batch.empty() && (g.a_step.back() != 0) == (sa != 0) && (g.b_step.back() != 0) == (sb != 0)) {
      g.batch.back() *= size;
      g.a_step.back() = sa;
      g.b_step.back() = sb;
    } else {
      g.batch.push_back(size);
      g.a_step.push_back(sa);
      g.b_step.push_back(sb);
    }
  }
  return g;
}

// Element offsets of the a and b matrices of output batch t.
inline std::pair<int64_t, int64_t> batch_offsets(const MatmulGeometry& g, int64_t t) {
  int64_t oa = 0, ob = 0;
  for (size_t i = g.batch.size(); i-- > 0;) {
    const int64_t idx = t % g.batch[i];
    t /= g.batch[i];
    oa += idx * g.a_step[i];
    ob += idx * g.b_step[i];
  }
  return {oa, ob};
}

// Batches of a against one shared b (a not transposed) are the row blocks of one taller a.
inline MatmulGeometry fold_shared_b(MatmulGeometry g) {
  if (g.batch.size() == 1 && g.b_step[0] == 0 && !g.ta) {
    g.m *= g.batches;
    g.batches = 1;
    g.batch.clear(), g.a_step.clear(), g.b_step.clear();
  }
  return g;
}

}  // namespace ember
