// Tests of ops::matmul: every dtype, transposes, broadcast batches, large products against a naive
// double-precision loop, empty dims and the error cases.
#include <cmath>
#include <tuple>
#include <vector>

#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::tolerance_for;
using ember::testing::same_values;
using ember::testing::values_as_double;

namespace {

const DType kDTypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32, DType::Int64};

// Naive reference in double: a is (..., m, k) (or (..., k, m) with ta), b likewise; batch dims
// broadcast. Deliberately index-by-index so that it shares no code with the kernels.
std::vector<double> reference(const std::vector<double>& a, const Shape& sa, const std::vector<double>& b,
                              const Shape& sb, bool ta, bool tb, Shape* out_shape) {
  const int64_t ra = sa.rank(), rb = sb.rank();
  const int64_t m = ta ? sa[ra - 1] : sa[ra - 2], k = ta ? sa[ra - 2] : sa[ra - 1];
  const int64_t n = tb ? sb[rb - 2] : sb[rb - 1];
  const int64_t r = std::max(ra, rb) - 2;
  std::vector<int64_t> da(r, 1), db(r, 1), dout(r);
  for (int64_t i = 0; i < ra - 2; ++i) da[r - (ra - 2) + i] = sa[i];
  for (int64_t i = 0; i < rb - 2; ++i) db[r - (rb - 2) + i] = sb[i];
  int64_t batches = 1;
  for (int64_t i = 0; i < r; ++i) batches *= (dout[i] = std::max(da[i], db[i]));
  std::vector<double> out(static_cast<size_t>(batches * m * n));
  for (int64_t t = 0; t < batches; ++t) {
    int64_t rest = t, ia = 0, ib = 0, mul_a = 1, mul_b = 1;
    for (int64_t i = r - 1; i >= 0; --i) {
      const int64_t idx = rest % dout[i];
      rest /= dout[i];
      ia += (da[i] == 1 ? 0 : idx) * mul_a;
      ib += (db[i] == 1 ? 0 : idx) * mul_b;
      mul_a *= da[i];
      mul_b *= db[i];
    }
    const double* pa = a.data() + ia * m * k;
    const double* pb = b.data() + ib * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += (ta ? pa[p * m + i] : pa[i * k + p]) * (tb ? pb[j * k + p] : pb[p * n + j]);
        out[static_cast<size_t>((t * m + i) * n + j)] = s;
      }
  }
  if (out_shape) {
    *out_shape = Shape(dout);
    out_shape->push_back(m);
    out_shape->push_back(n);
  }
  return out;
}

// Deterministic small integers in [-3, 3]: exact in every dtype, and short sums stay exact in bfloat16.
std::vector<double> small_ints(int64_t count, int seed) {
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = static_cast<double>((i * 5 + seed) % 7 - 3);
  return v;
}

// Deterministic values in [-1, 1).
std::vector<double> wave(int64_t count, int seed) {
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = std::sin(0.37 * static_cast<double>(i) + seed);
  return v;
}

}  // namespace

TEST_CASE("matmul: 2x3 @ 3x2 in every dtype", "[ops][linalg]") {
  for (DType t : kDTypes) {
    INFO("dtype " << t);
    Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, t);
    Tensor b = make({7, 8, 9, 10, 11, 12}, {3, 2}, t);
    check_tensor(ops::matmul(a, b), t, {2, 2}, {58, 64, 139, 154}, tolerance_for(t), 0);
    // (3, 2) @ (2, 3): the other way round.
    check_tensor(ops::matmul(b, a), t, {3, 3}, {39, 54, 69, 49, 68, 87, 59, 82, 105}, tolerance_for(t), 0);
  }
}

TEST_CASE("matmul: the four transpose combinations", "[ops][linalg]") {
  // a = [[1, 2, 3], [4, 5, 6]], b = [[7, 8], [9, 10], [11, 12]]; at, bt hold them transposed.
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, at = {1, 4, 2, 5, 3, 6};
  const std::vector<double> b = {7, 8, 9, 10, 11, 12}, bt = {7, 9, 11, 8, 10, 12};
  for (DType t : kDTypes) {
    INFO("dtype " << t);
    const double tol = tolerance_for(t);
    check_tensor(ops::matmul(make(a, {2, 3}, t), make(b, {3, 2}, t)), t, {2, 2}, {58, 64, 139, 154}, tol, 0);
    check_tensor(ops::matmul(make(at, {3, 2}, t), make(b, {3, 2}, t), {.transpose_a = true}), t, {2, 2},
                 {58, 64, 139, 154}, tol, 0);
    check_tensor(ops::matmul(make(a, {2, 3}, t), make(bt, {2, 3}, t), {.transpose_b = true}), t, {2, 2},
                 {58, 64, 139, 154}, tol, 0);
    check_tensor(ops::matmul(make(at, {3, 2}, t), make(bt, {2, 3}, t), {.transpose_a = true, .transpose_b = true}),
                 t, {2, 2}, {58, 64, 139, 154}, tol, 0);
  }
}

TEST_CASE("matmul: batched with hand-computed values", "[ops][linalg]") {
  // Batch of 2 against one shared b (broadcast): [[1,0],[0,1]] and [[1,2],[3,4]] times [[1,1],[2,3]].
  for (DType t : kDTypes) {
    INFO("dtype " << t);
    Tensor a = make({1, 0, 0, 1, 1, 2, 3, 4}, {2, 2, 2}, t);
    Tensor b = make({1, 1, 2, 3}, {2, 2}, t);
    check_tensor(ops::matmul(a, b), t, {2, 2, 2}, {1, 1, 2, 3, 5, 7, 11, 15}, tolerance_for(t), 0);
    // Shared a against a batch of b: b broadcast the other way.
    check_tensor(ops::matmul(b, a), t, {2, 2, 2}, {1, 1, 2, 3, 4, 6, 11, 16}, tolerance_for(t), 0);
    // Same batch on both sides, transposed b: [[1,0],[0,1]] @ [[1,1],[2,3]]^T, [[1,2],[3,4]] @ [[1,0],[0,1]]^T.
    Tensor b2 = make({1, 1, 2, 3, 1, 0, 0, 1}, {2, 2, 2}, t);
    check_tensor(ops::matmul(a, b2, {.transpose_b = true}), t, {2, 2, 2}, {1, 2, 1, 3, 1, 2, 3, 4}, tolerance_for(t),
                 0);
  }
}

TEST_CASE("matmul: broadcast batch dims (2 1 3 4) @ (5 4 2) -> (2 5 3 2)", "[ops][linalg]") {
  const Shape sa{2, 1, 3, 4}, sb{5, 4, 2};
  const std::vector<double> va = small_ints(sa.num_elements(), 1), vb = small_ints(sb.num_elements(), 2);
  Shape expected_shape;
  const std::vector<double> expected = reference(va, sa, vb, sb, false, false, &expected_shape);
  REQUIRE(expected_shape == Shape{2, 5, 3, 2});
  // A spot value worked by hand: a[0,0,0,:] = [-2, 3, 1, -1], b[0,:,0] = [-1, 2, -2, 1] -> 2 + 6 - 2 - 1.
  REQUIRE(std::vector<double>(va.begin(), va.begin() + 4) == std::vector<double>{-2, 3, 1, -1});
  REQUIRE(std::vector<double>{vb[0], vb[2], vb[4], vb[6]} == std::vector<double>{-1, 2, -2, 1});
  REQUIRE(expected[0] == 5);
  for (DType t : kDTypes) {
    INFO("dtype " << t);
    check_tensor(ops::matmul(make(va, sa, t), make(vb, sb, t)), t, expected_shape, expected, tolerance_for(t), 0);
  }
}

TEST_CASE("matmul: transposes with broadcast batches and operands of different rank", "[ops][linalg]") {
  struct Case {
    Shape sa, sb;
    bool ta, tb;
  };
  const Case cases[] = {
      {{4, 3}, {2, 5, 4}, true, true},           // a shared and transposed, b batched and transposed
      {{2, 3, 4}, {4, 5}, false, false},         // batched a, shared b: folds into one taller product
      {{2, 4, 3}, {4, 5}, true, false},          // the same with a transposed (no fold)
      {{4, 3}, {2, 3, 5}, false, false},         // shared a, batched b
      {{3, 1, 2, 3, 4}, {2, 1, 4, 5}, false, false},  // broadcast on both sides
      {{2, 1, 3, 4, 2}, {1, 3, 1, 3, 4}, true, true},
  };
  for (const Case& c : cases) {
    INFO("a " << c.sa << " ta=" << c.ta << ", b " << c.sb << " tb=" << c.tb);
    const std::vector<double> va = small_ints(c.sa.num_elements(), 3), vb = small_ints(c.sb.num_elements(), 5);
    Shape shape;
    const std::vector<double> expected = reference(va, c.sa, vb, c.sb, c.ta, c.tb, &shape);
    for (DType t : kDTypes) {
      INFO("dtype " << t);
      check_tensor(ops::matmul(make(va, c.sa, t), make(vb, c.sb, t), {.transpose_a = c.ta, .transpose_b = c.tb}), t,
                   shape, expected, tolerance_for(t), 0);
    }
  }
}

TEST_CASE("matmul: more batch dims than oneDNN takes", "[ops][linalg]") {
  // Alternating broadcasts cannot be merged: 11 batch dims, beyond oneDNN's 10.
  const Shape sa{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 2, 3}, sb{1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 3, 2};
  const std::vector<double> va = small_ints(sa.num_elements(), 1), vb = small_ints(sb.num_elements(), 4);
  Shape shape;
  const std::vector<double> expected = reference(va, sa, vb, sb, false, false, &shape);
  for (DType t : {DType::Float32, DType::Float64, DType::BFloat16}) {
    INFO("dtype " << t);
    check_tensor(ops::matmul(make(va, sa, t), make(vb, sb, t)), t, shape, expected, tolerance_for(t), 0);
  }
}

TEST_CASE("matmul: large float32 against a naive double loop", "[ops][linalg]") {
  struct Case {
    Shape sa, sb;
    bool ta, tb;
  };
  const Case cases[] = {
      {{257, 129}, {129, 65}, false, false},
      {{129, 257}, {65, 129}, true, true},
      {{3, 67, 45}, {45, 33}, false, false},
      {{3, 45, 67}, {2, 1, 33, 45}, true, true},
  };
  for (const Case& c : cases) {
    INFO("a " << c.sa << " ta=" << c.ta << ", b " << c.sb << " tb=" << c.tb);
    const std::vector<double> va = wave(c.sa.num_elements(), 1), vb = wave(c.sb.num_elements(), 2);
    Shape shape;
    const std::vector<double> expected = reference(va, c.sa, vb, c.sb, c.ta, c.tb, &shape);
    Tensor a = make(va, c.sa, DType::Float32), b = make(vb, c.sb, DType::Float32);
    check_tensor(ops::matmul(a, b, {.transpose_a = c.ta, .transpose_b = c.tb}), DType::Float32, shape, expected, 1e-4,
                 1e-4);
    check_tensor(ops::matmul(make(va, c.sa, DType::Float64), make(vb, c.sb, DType::Float64),
                             {.transpose_a = c.ta, .transpose_b = c.tb}),
                 DType::Float64, shape, expected, 1e-12, 1e-12);
  }
}

TEST_CASE("matmul: large half types accumulate in float32", "[ops][linalg]") {
  // Summing K = 300 terms of size ~1 in the half type itself would miss these tolerances by far.
  const Shape sa{40, 300}, sb{300, 30};
  for (DType t : {DType::Float16, DType::BFloat16}) {
    INFO("dtype " << t);
    Tensor a = make(wave(sa.num_elements(), 1), sa, t), b = make(wave(sb.num_elements(), 2), sb, t);
    // Reference from the rounded inputs, so only accumulation and the final rounding differ.
    const std::vector<double> ra = ember::testing::values_as_double(a), rb = ember::testing::values_as_double(b);
    Shape shape;
    const std::vector<double> expected = reference(ra, sa, rb, sb, false, false, &shape);
    const double ulp = t == DType::Float16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    check_tensor(ops::matmul(a, b), t, shape, expected, ulp, 1e-4);
  }
}

TEST_CASE("matmul: large integer products are exact", "[ops][linalg]") {
  const Shape sa{2, 64, 70}, sb{70, 50};
  const std::vector<double> va = small_ints(sa.num_elements(), 2), vb = small_ints(sb.num_elements(), 6);
  Shape shape;
  const std::vector<double> expected = reference(va, sa, vb, sb, false, false, &shape);
  for (DType t : {DType::Int32, DType::Int64})
    check_tensor(ops::matmul(make(va, sa, t), make(vb, sb, t)), t, shape, expected, 0, 0);
}

TEST_CASE("matmul: the result does not depend on the thread count", "[ops][linalg]") {
  const int before = config::get_intra_op_parallelism_threads();
  // A shared b (one folded sgemm) and a batched b (the matmul primitive, cached per thread count).
  for (const Shape& sb : {Shape{90, 80}, Shape{4, 90, 80}}) {
    const Shape sa{4, 100, 80};
    const std::vector<double> va = wave(sa.num_elements(), 3), vb = wave(sb.num_elements(), 4);
    const std::vector<double> expected = reference(va, sa, vb, sb, false, true, nullptr);
    for (int threads : {1, 2, 1}) {
      config::set_intra_op_parallelism_threads(threads);
      INFO("b " << sb << ", threads " << threads);
      check_tensor(ops::matmul(make(va, sa, DType::Float32), make(vb, sb, DType::Float32), {.transpose_b = true}),
                   DType::Float32, {4, 100, 90}, expected, 1e-4, 1e-4);
    }
  }
  config::set_intra_op_parallelism_threads(before);
}

TEST_CASE("matmul: small products give the same bits whatever the thread count", "[ops][linalg]") {
  // They run on the calling thread: oneDNN on 2 threads split the inner dimension of some (1 x 64 at k = 256).
  const int before = config::get_intra_op_parallelism_threads();
  for (const auto& [m, n, k, ta] : {std::tuple{1, 64, 256, false}, std::tuple{64, 1, 784, true},
                                    std::tuple{256, 10, 8, true}}) {
    const Shape sa = ta ? Shape{k, m} : Shape{m, k};
    const Tensor a = make(wave(m * k, 3), sa, DType::Float32), b = make(wave(k * n, 4), {k, n}, DType::Float32);
    std::vector<std::vector<double>> results;
    for (int threads : {1, 2}) {
      config::set_intra_op_parallelism_threads(threads);
      results.push_back(values_as_double(ops::matmul(a, b, {.transpose_a = ta})));
    }
    INFO(m << " x " << n << " at k = " << k << ", transpose_a " << ta);
    CHECK(same_values(results[0], results[1]));
  }
  config::set_intra_op_parallelism_threads(before);
}

TEST_CASE("matmul: small-batch products with a large matrix", "[ops][linalg]") {
  // At most 8 rows against a matrix of at least 65536 elements (a layer's x @ w, dy @ w^T and x^T @ dy at a
  // small batch): the CPU kernel splits the large matrix's rows over its threads itself, adding partial
  // products for x @ w. The split must hold for odd row counts, every transpose and a batch just past the
  // limit (9, oneDNN alone).
  const int before = config::get_intra_op_parallelism_threads();
  for (int64_t small : {1, 3, 8, 9})
    for (bool small_inner : {true, false})
      for (bool ta : {true, false})
        for (bool tb : {false, true}) {
          // The weight gradient's inner dimension is the batch; the forward products' rows are.
          const int64_t m = small_inner ? 301 : small, k = small_inner ? small : 301, n = 250;
          const Shape sa = ta ? Shape{k, m} : Shape{m, k}, sb = tb ? Shape{n, k} : Shape{k, n};
          const std::vector<double> va = wave(sa.num_elements(), 5), vb = wave(sb.num_elements(), 6);
          const std::vector<double> expected = reference(va, sa, vb, sb, ta, tb, nullptr);
          for (int threads : {2, 1}) {
            config::set_intra_op_parallelism_threads(threads);
            INFO("m " << m << " k " << k << " n " << n << " ta=" << ta << " tb=" << tb << ", threads " << threads);
            check_tensor(ops::matmul(make(va, sa, DType::Float32), make(vb, sb, DType::Float32),
                                     {.transpose_a = ta, .transpose_b = tb}),
                         DType::Float32, {m, n}, expected, 1e-4, 1e-5);
          }
        }
  config::set_intra_op_parallelism_threads(before);
}

TEST_CASE("matmul: an inner dimension of 1 gives each element's rounded product", "[ops][linalg]") {
  // The outer products of a batch-1 weight gradient: every transpose, split over the pool or not, as wide as
  // the MLP's layers and narrower than the outer-product path takes; an inf times 0 is NaN, as in a sum.
  const int before = config::get_intra_op_parallelism_threads();
  for (const auto& [m, n] : {std::pair{784, 256}, std::pair{301, 64}, std::pair{256, 10}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int threads : {2, 1}) {
          config::set_intra_op_parallelism_threads(threads);
          std::vector<double> va = wave(m, 7), vb = wave(n, 8);
          va[3] = INFINITY;
          vb[5] = 0;
          const Tensor a = make(va, ta ? Shape{1, m} : Shape{m, 1}, DType::Float32);
          const Tensor b = make(vb, tb ? Shape{n, 1} : Shape{1, n}, DType::Float32);
          const Tensor c = ops::matmul(a, b, {.transpose_a = ta, .transpose_b = tb});
          INFO(m << " x " << n << " ta=" << ta << " tb=" << tb << ", threads " << threads);
          REQUIRE(c.shape() == Shape{m, n});
          const float* pa = a.data<float>();
          const float* pb = b.data<float>();
          const float* pc = c.data<float>();
          int64_t wrong = 0;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              const float want = pa[i] * pb[j], got = pc[i * n + j];
              wrong += !(got == want || (std::isnan(got) && std::isnan(want)));
            }
          CHECK(wrong == 0);
          CHECK(std::isnan(pc[3 * n + 5]));
        }
  config::set_intra_op_parallelism_threads(before);
}

TEST_CASE("matmul_bias and matmul_bias_relu: the bits of matmul then add (then relu); bfloat16 rounds once",
          "[ops][linalg]") {
  // Every float dtype, the small-batch products the CPU kernel splits itself, a batched product, and NaN and
  // infinities in the product and the bias.
  struct Case {
    Shape sa, sb;
    bool tb;
  };
  const Case cases[] = {{{3, 4}, {4, 5}, false}, {{8, 300}, {300, 250}, false}, {{1, 256}, {250, 256}, true},
                        {{2, 3, 7}, {7, 6}, false}};
  const int before = config::get_intra_op_parallelism_threads();
  for (int threads : {2, 1}) {
    config::set_intra_op_parallelism_threads(threads);
    for (const Case& c : cases)
      for (DType t : ember::testing::kFloatDTypes) {
        INFO("a " << c.sa << ", b " << c.sb << " tb=" << c.tb << ", " << t << ", threads " << threads);
        std::vector<double> va = wave(c.sa.num_elements(), 7), vb = wave(c.sb.num_elements(), 8);
        const int64_t n = c.tb ? c.sb[0] : c.sb[c.sb.rank() - 1];
        std::vector<double> vbias = wave(n, 9);
        va[1] = std::nan("");
        vbias[0] = INFINITY;
        if (n > 2) vbias[2] = -INFINITY;
        const Tensor a = make(va, c.sa, t), b = make(vb, c.sb, t), bias = make(vbias, {n}, t);
        const Tensor separate = ops::add(ops::matmul(a, b, {.transpose_b = c.tb}), bias);
        const Tensor fused = ops::matmul_bias(a, b, bias, {.transpose_b = c.tb});
        REQUIRE(fused.dtype() == t);
        REQUIRE(fused.shape() == separate.shape());
        const Tensor with_relu = ops::matmul_bias_relu(a, b, bias, {.transpose_b = c.tb});
        REQUIRE(with_relu.shape() == separate.shape());
        if (t == DType::BFloat16) {
          // oneDNN's AMX matmul adds the bias to the float32 sum before the one rounding: within the separate
          // add's rounding, with the NaNs and infinities where they were; the relu is relu's.
          const std::vector<double> got = values_as_double(fused), want = values_as_double(separate);
          double scale = 1;
          for (double w : want) scale = std::isfinite(w) ? std::max(scale, std::abs(w)) : scale;
          for (size_t i = 0; i < want.size(); ++i) {
            INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
            if (std::isfinite(want[i])) CHECK(std::abs(got[i] - want[i]) <= ember::testing::tolerance_for(t) * scale);
            else CHECK(same_values({got[i]}, {want[i]}));
          }
          CHECK(same_values(values_as_double(with_relu), values_as_double(ops::relu(fused))));
        } else {
          CHECK(same_values(values_as_double(fused), values_as_double(separate)));
          CHECK(same_values(values_as_double(with_relu), values_as_double(ops::relu(separate))));
        }
      }
  }
  config::set_intra_op_parallelism_threads(before);
  // Finite operands: bfloat16's relu runs inside oneDNN's primitive, and gives relu's values.
  for (DType t : ember::testing::kFloatDTypes) {
    INFO(t);
    const Tensor a = make(wave(8 * 300, 7), {8, 300}, t), b = make(wave(300 * 250, 8), {300, 250}, t),
                 bias = make(wave(250, 9), {250}, t);
    CHECK(same_values(values_as_double(ops::matmul_bias_relu(a, b, bias)),
                      values_as_double(ops::relu(ops::matmul_bias(a, b, bias)))));
  }
}

TEST_CASE("matmul_bias: errors name the op, the shapes and dtypes", "[ops][linalg]") {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32), b = make({1, 2, 3, 4, 5, 6}, {3, 2}, DType::Float32);
  REQUIRE_THROWS_WITH(ops::matmul_bias(a, b, make({1, 2, 3}, {3}, DType::Float32)),
                      Catch::Contains("matmul_bias") && Catch::Contains("[2]") && Catch::Contains("(3,)"));
  REQUIRE_THROWS_WITH(ops::matmul_bias_relu(a, b, make({1, 2}, {1, 2}, DType::Float32)),
                      Catch::Contains("matmul_bias_relu") && Catch::Contains("(1, 2)"));
  REQUIRE_THROWS_WITH(ops::matmul_bias(a, b, make({1, 2}, {2}, DType::Float64)),
                      Catch::Contains("matmul_bias") && Catch::Contains("float64") && Catch::Contains("float32"));
  REQUIRE_THROWS_WITH(ops::matmul_bias(a, make({1, 2, 3, 4}, {2, 2}, DType::Float32), make({1, 2}, {2}, DType::Float32)),
                      Catch::Contains("matmul_bias") && Catch::Contains("inner dimensions"));
  Tensor ai = make({1, 2, 3, 4}, {2, 2}, DType::Int32);
  REQUIRE_THROWS_WITH(ops::matmul_bias(ai, ai, make({1, 2}, {2}, DType::Int32)),
                      Catch::Contains("matmul_bias") && Catch::Contains("int32"));
  REQUIRE_THROWS_AS(ops::matmul_bias(a, b, Tensor()), InvalidArgument);
}

TEST_CASE("matmul: empty dimensions", "[ops][linalg]") {
  for (DType t : kDTypes) {
    INFO("dtype " << t);
    // K = 0: an empty sum, so zeros.
    check_tensor(ops::matmul(make({}, {2, 0}, t), make({}, {0, 3}, t)), t, {2, 3}, {0, 0, 0, 0, 0, 0});
    check_tensor(ops::matmul(make({}, {0, 2}, t), make({}, {3, 0}, t), {.transpose_a = true, .transpose_b = true}), t,
                 {2, 3}, {0, 0, 0, 0, 0, 0});
    check_tensor(ops::matmul(make({}, {0, 3}, t), make({1, 2, 3, 4, 5, 6}, {3, 2}, t)), t, {0, 2}, {});
    check_tensor(ops::matmul(make({1, 2, 3, 4, 5, 6}, {2, 3}, t), make({}, {3, 0}, t)), t, {2, 0}, {});
    check_tensor(ops::matmul(make({}, {0, 2, 3}, t), make({1, 2, 3, 4, 5, 6}, {3, 2}, t)), t, {0, 2, 2}, {});
    check_tensor(ops::matmul(make({}, {3, 0, 2, 0}, t), make({}, {1, 0, 4}, t)), t, {3, 0, 2, 4}, {});
  }
}

TEST_CASE("matmul: errors", "[ops][linalg]") {
  Tensor m23 = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32);
  Tensor m42 = make({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, DType::Float32);
  Tensor v3 = make({1, 2, 3}, {3}, DType::Float32);

  SECTION("rank below 2") {
    REQUIRE_THROWS_AS(ops::matmul(v3, m23), InvalidArgument);
    REQUIRE_THROWS_WITH(ops::matmul(v3, m23), Catch::Contains("matmul") && Catch::Contains("rank >= 2") &&
                                                  Catch::Contains("(3,)") && Catch::Contains("(2, 3)"));
    REQUIRE_THROWS_AS(ops::matmul(m23, v3), InvalidArgument);
    REQUIRE_THROWS_AS(ops::matmul(m23, Tensor::scalar(1.0f)), InvalidArgument);
  }
  SECTION("mixed dtypes") {
    Tensor d = make({1, 2, 3, 4, 5, 6}, {3, 2}, DType::Float64);
    REQUIRE_THROWS_AS(ops::matmul(m23, d), InvalidArgument);
    REQUIRE_THROWS_WITH(ops::matmul(m23, d),
                        Catch::Contains("matmul") && Catch::Contains("float32") && Catch::Contains("float64"));
  }
  SECTION("unsupported dtypes") {
    for (DType t : {DType::UInt8, DType::Bool}) {
      Tensor a = make({1, 0, 1, 1}, {2, 2}, t);
      REQUIRE_THROWS_AS(ops::matmul(a, a), InvalidArgument);
      REQUIRE_THROWS_WITH(ops::matmul(a, a), Catch::Contains("matmul") && Catch::Contains(dtype_name(t)));
    }
  }
  SECTION("inner dimensions disagree") {
    REQUIRE_THROWS_AS(ops::matmul(m23, m42), InvalidArgument);
    REQUIRE_THROWS_WITH(ops::matmul(m23, m42), Catch::Contains("matmul") && Catch::Contains("(2, 3)") &&
                                                   Catch::Contains("(4, 2)") && Catch::Contains("transpose_a=false"));
    // Transposing a turns (2, 3) into (3, 2): 2 meets the 4 rows of b.
    REQUIRE_THROWS_WITH(ops::matmul(m23, m42, {.transpose_a = true}),
                        Catch::Contains("transpose_a=true") && Catch::Contains("transpose_b=false"));
    // In the other order the same operands agree: (4, 2) @ (2, 3).
    check_tensor(ops::matmul(m42, m23), DType::Float32, {4, 3},
                 {9, 12, 15, 19, 26, 33, 29, 40, 51, 39, 54, 69});
  }
  SECTION("batch dims that do not broadcast") {
    Tensor a = make(std::vector<double>(12, 1), {2, 2, 3}, DType::Float32);
    Tensor b = make(std::vector<double>(18, 1), {3, 3, 2}, DType::Float32);
    REQUIRE_THROWS_AS(ops::matmul(a, b), InvalidArgument);
    REQUIRE_THROWS_WITH(ops::matmul(a, b),
                        Catch::Contains("matmul") && Catch::Contains("(2, 2, 3)") && Catch::Contains("(3, 3, 2)"));
  }
  SECTION("undefined input") {
    REQUIRE_THROWS_AS(ops::matmul(Tensor(), m23), InvalidArgument);
  }
}
