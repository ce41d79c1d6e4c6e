// softmax / log_softmax: stability with large logits, every axis and dtype, empty tensors, errors; the sparse
// softmax crossentropy against the composite it replaces.
// (conv2d and pooling are in test_conv.cpp and test_pool.cpp.)
#include <cmath>
#include <random>

#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::tolerance_for;
using ember::testing::values_as_double;
using ember::testing::kFloatDTypes;

namespace {

// softmax([0, 1, 2]) and log_softmax([0, 1, 2]).
const std::vector<double> kSoft012 = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
const std::vector<double> kLogSoft012 = {-2.4076059644443806, -1.4076059644443806, -0.40760596444438056};

}  // namespace

TEST_CASE("softmax of large logits stays finite", "[ops][nn][softmax]") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO("dtype " << dt);
    double tol = tolerance_for(dt);
    Tensor x = make({1000, 1001, -1000, -1001}, {2, 2}, dt);
    check_tensor(ops::softmax(x), dt, {2, 2},
                 {0.2689414213699951, 0.7310585786300049, 0.7310585786300049, 0.2689414213699951}, tol, tol);
    check_tensor(ops::log_softmax(x), dt, {2, 2},
                 {-1.3132616875182228, -0.31326168751822286, -0.31326168751822286, -1.3132616875182228}, tol, tol);
  }
}

TEST_CASE("softmax and log_softmax values for every dtype", "[ops][nn][softmax]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    double tol = tolerance_for(dt);
    Tensor x = make({0, 1, 2, 10, 11, 12}, {2, 3}, dt);
    std::vector<double> soft = kSoft012, logsoft = kLogSoft012;
    soft.insert(soft.end(), kSoft012.begin(), kSoft012.end());
    logsoft.insert(logsoft.end(), kLogSoft012.begin(), kLogSoft012.end());
    check_tensor(ops::softmax(x), dt, {2, 3}, soft, tol, tol);
    check_tensor(ops::softmax(x, 1), dt, {2, 3}, soft, tol, tol);
    check_tensor(ops::log_softmax(x, -1), dt, {2, 3}, logsoft, tol, 4 * tol);
    // Axis 0 (strided rows): each column is softmax([a, a + 10]).
    double p = 1 / (1 + std::exp(10.0));
    check_tensor(ops::softmax(x, 0), dt, {2, 3}, {p, p, p, 1 - p, 1 - p, 1 - p}, tol, tol);
    check_tensor(ops::softmax(x, -2), dt, {2, 3}, {p, p, p, 1 - p, 1 - p, 1 - p}, tol, tol);
    double lp = -std::log1p(std::exp(10.0));
    check_tensor(ops::log_softmax(x, 0), dt, {2, 3}, {lp, lp, lp, lp + 10, lp + 10, lp + 10}, tol, 4 * tol);
    check_tensor(ops::softmax(make({3}, {1}, dt)), dt, {1}, {1}, tol, tol);
  }
}

TEST_CASE("softmax over a middle axis with many inner columns", "[ops][nn][softmax]") {
  // x[o][k][j] = k + 50 j + 100 o: every (o, j) row along axis 1 is [0, 1, 2] shifted, so its softmax is kSoft012.
  // 1100 inner columns span two blocks of the strided kernel (at most 1024 wide).
  for (DType dt : {DType::Float32, DType::Float64}) {
    std::vector<double> v;
    std::vector<double> soft, logsoft;
    for (int o = 0; o < 2; ++o)
      for (int k = 0; k < 3; ++k)
        for (int j = 0; j < 1100; ++j) {
          v.push_back(k + 50.0 * j + 100.0 * o);
          soft.push_back(kSoft012[static_cast<size_t>(k)]);
          logsoft.push_back(kLogSoft012[static_cast<size_t>(k)]);
        }
    Tensor x = make(v, {2, 3, 1100}, dt);
    check_tensor(ops::softmax(x, 1), dt, {2, 3, 1100}, soft, 1e-5, 1e-6);
    check_tensor(ops::log_softmax(x, -2), dt, {2, 3, 1100}, logsoft, 1e-5, 1e-5);
  }
}

TEST_CASE("softmax on large random input matches a float64 computation", "[ops][nn][softmax]") {
  const int64_t rows = 1000, n = 100;
  std::mt19937 gen(3);
  std::normal_distribution<double> d(0, 5);
  std::vector<double> v(static_cast<size_t>(rows * n));
  for (double& x : v) x = d(gen);
  std::vector<double> want(v.size()), want_log(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < n; ++j) m = std::max(m, v[static_cast<size_t>(r * n + j)]);
    for (int64_t j = 0; j < n; ++j) s += std::exp(v[static_cast<size_t>(r * n + j)] - m);
    for (int64_t j = 0; j < n; ++j) {
      size_t i = static_cast<size_t>(r * n + j);
      want[i] = std::exp(v[i] - m) / s;
      want_log[i] = v[i] - m - std::log(s);
    }
  }
  Tensor x = make(v, {rows, n}, DType::Float32);
  check_tensor(ops::softmax(x), DType::Float32, {rows, n}, want, 1e-5, 1e-7);
  check_tensor(ops::log_softmax(x), DType::Float32, {rows, n}, want_log, 1e-5, 1e-5);
  // Rows sum to one.
  std::vector<double> got = values_as_double(ops::softmax(x));
  for (int64_t r = 0; r < rows; r += 97) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += got[static_cast<size_t>(r * n + j)];
    CHECK(std::abs(s - 1) < 1e-5);
  }
}

TEST_CASE("softmax on empty tensors", "[ops][nn][softmax]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    check_tensor(ops::softmax(make({}, {2, 0}, dt)), dt, {2, 0}, {});
    check_tensor(ops::softmax(make({}, {0, 3}, dt)), dt, {0, 3}, {});
    check_tensor(ops::log_softmax(make({}, {3, 0, 2}, dt), 1), dt, {3, 0, 2}, {});
  }
}

TEST_CASE("softmax errors name the op", "[ops][nn][softmax]") {
  using Catch::Contains;
  Tensor xi = make({1, 2}, {2}, DType::Int32);
  REQUIRE_THROWS_AS(ops::softmax(xi), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::softmax(xi), Contains("softmax") && Contains("int32"));
  REQUIRE_THROWS_WITH(ops::log_softmax(xi), Contains("log_softmax") && Contains("int32"));
  Tensor x = make({1, 2, 3, 4}, {2, 2}, DType::Float32);
  REQUIRE_THROWS_AS(ops::softmax(x, 2), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::softmax(x, 2), Contains("softmax") && Contains("axis"));
  REQUIRE_THROWS_WITH(ops::log_softmax(x, -3), Contains("log_softmax") && Contains("axis"));
  REQUIRE_THROWS_WITH(ops::softmax(make({1}, {}, DType::Float32)), Contains("softmax") && Contains("rank"));
}

TEST_CASE("softmax of a row holding NaN is NaN", "[ops][nn][softmax]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    Tensor x = make({1, NAN, 3, 1, 2, 3}, {2, 3}, dt);
    check_tensor(ops::softmax(x), dt, {2, 3}, {NAN, NAN, NAN, kSoft012[0], kSoft012[1], kSoft012[2]}, tolerance_for(dt),
                 tolerance_for(dt));
    check_tensor(ops::log_softmax(x, 0), dt, {2, 3},
                 {-std::log1p(std::exp(0.0)), NAN, -std::log1p(std::exp(0.0)), -std::log1p(std::exp(0.0)), NAN,
                  -std::log1p(std::exp(0.0))},
                 tolerance_for(dt), tolerance_for(dt));
  }
}

namespace {
// Logits of `shape` uniform in [-30, 30) and labels (i * 5 + 3) % C of the shape without the class axis.
struct XentInputs {
  Tensor logits;
  Shape label_shape;
  std::vector<int64_t> labels;
  int64_t classes;
};
XentInputs xent_inputs(std::mt19937& rng, const Shape& shape, DType dt) {
  std::uniform_real_distribution<double> u(-30, 30);
  std::vector<double> v(static_cast<size_t>(shape.num_elements()));
  for (double& e : v) e = u(rng);
  const int64_t classes = shape[shape.rank() - 1];
  const Shape label_shape(std::vector<int64_t>(shape.begin(), shape.end() - 1));
  std::vector<int64_t> lab(static_cast<size_t>(label_shape.num_elements()));
  for (size_t i = 0; i < lab.size(); ++i) lab[i] = static_cast<int64_t>((i * 5 + 3) % static_cast<size_t>(classes));
  return {make(v, shape, dt), label_shape, lab, classes};
}
}  // namespace

TEST_CASE("sparse_softmax_cross_entropy_with_logits is -log_softmax at the label, bit for bit", "[ops][nn][softmax]") {
  std::mt19937 rng(7);
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (const Shape& shape : {Shape{5, 7}, Shape{2, 3, 10}, Shape{1, 1}, Shape{4}, Shape{64, 1000}}) {
      INFO("dtype " << dt << ", logits " << shape);
      const auto [logits, dims, lab, classes] = xent_inputs(rng, shape, dt);
      for (DType ldt : {DType::Int64, DType::Int32}) {
        Tensor labels = ops::cast(Tensor::from_vector<int64_t>(lab, dims), ldt);
        Tensor loss = ops::sparse_softmax_cross_entropy_with_logits(labels, logits);
        REQUIRE(loss.shape() == dims);
        REQUIRE(loss.dtype() == dt);
        // The composite it replaces in SparseCategoricalCrossentropy: the same formula, the same bits.
        Tensor picked = ops::gather(ops::reshape(ops::log_softmax(logits), Shape{-1, classes}),
                                    ops::reshape(labels, Shape{-1}), {.axis = 1, .batch_dims = 1});
        CHECK(values_as_double(loss) == values_as_double(ops::reshape(-picked, dims)));
      }
    }
  }
  // Large logits stay finite: log(1 + e^-1) - 0 and log(1 + e^-1) - (-1).
  Tensor x = make({1000, 999, -1000, -1001}, {2, 2}, DType::Float32);
  check_tensor(ops::sparse_softmax_cross_entropy_with_logits(Tensor::from_vector<int64_t>({0, 1}, {2}), x),
               DType::Float32, {2}, {0.31326168751822286, 1.3132616875182228}, 1e-6, 1e-6);
  check_tensor(ops::sparse_softmax_cross_entropy_with_logits(Tensor::from_vector<int64_t>({}, {0}),
                                                             make({}, {0, 3}, DType::Float32)),
               DType::Float32, {0}, {});
}

TEST_CASE("sparse_softmax_cross_entropy_backprop is softmax - one_hot, bit for bit", "[ops][nn][softmax]") {
  std::mt19937 rng(8);
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (const Shape& shape : {Shape{5, 7}, Shape{2, 3, 10}, Shape{1, 1}, Shape{4}, Shape{64, 1000}, Shape{0, 3}}) {
      INFO("dtype " << dt << ", logits " << shape);
      auto [logits, dims, lab, classes] = xent_inputs(rng, shape, dt);
      if (lab.size() > 2) lab[1] = classes, lab[2] = -1;  // out of range: nothing subtracted, as one_hot's zero row
      for (DType ldt : {DType::Int64, DType::Int32}) {
        Tensor labels = ops::cast(Tensor::from_vector<int64_t>(lab, dims), ldt);
        Tensor got = ops::sparse_softmax_cross_entropy_backprop(labels, logits);
        REQUIRE(got.shape() == shape);
        REQUIRE(got.dtype() == dt);
        Tensor composite = ops::softmax(logits, -1) - ops::one_hot(labels, classes, {.dtype = dt});
        CHECK(values_as_double(got) == values_as_double(composite));
      }
    }
  }
  const Tensor logits = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32);
  REQUIRE_THROWS_WITH(ops::sparse_softmax_cross_entropy_backprop(Tensor::from_vector<int64_t>({0, 1, 2}, {3}), logits),
                      Catch::Contains("sparse_softmax_cross_entropy_backprop: labels of shape (3,)"));
  REQUIRE_THROWS_WITH(ops::sparse_softmax_cross_entropy_backprop(Tensor::from_vector<int64_t>({0, 1}, {2}),
                                                                 ops::cast(logits, DType::Float16)),
                      Catch::Contains("sparse_softmax_cross_entropy_backprop: logits must be float32 or float64") &&
                          Catch::Contains("float16"));
}

TEST_CASE("sparse_softmax_cross_entropy_with_logits errors name the op and what was wrong", "[ops][nn][softmax]") {
  using Catch::Contains;
  const char* op = "sparse_softmax_cross_entropy_with_logits";
  Tensor logits = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32);
  Tensor labels = Tensor::from_vector<int64_t>({2, 0}, {2});
  REQUIRE_THROWS_WITH(ops::sparse_softmax_cross_entropy_with_logits(Tensor::from_vector<int64_t>({1, 3}, {2}), logits),
                      Contains(op) && Contains("labels[1] = 3") && Contains("[0, 3)"));
  REQUIRE_THROWS_WITH(ops::sparse_softmax_cross_entropy_with_logits(Tensor::from_vector<int64_t>({-1, 0}, {2}), logits),
                      Contains(op) && Contains("= -1"));
  REQUIRE_THROWS_WITH(ops::sparse_softmax_cross_entropy_with_logits(Tensor::from_vector<int64_t>({0, 1, 2}, {3}), logits),
                      Contains(op) && Contains("labels of shape (3,)") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(ops::sparse_softmax_cross_entropy_with_logits(ops::cast(labels, DType::Float32), logits),
                      Contains(op) && Contains("labels must be int32 or int64") && Contains("float32"));
  REQUIRE_THROWS_WITH(ops::sparse_softmax_cross_entropy_with_logits(labels, ops::cast(logits, DType::Float16)),
                      Contains(op) && Contains("float16"));
  REQUIRE_THROWS_WITH(ops::sparse_softmax_cross_entropy_with_logits(Tensor::from_vector<int64_t>({0}, Shape{}), make({}, {0}, DType::Float32)),
                      Contains(op) && Contains("no classes"));
  REQUIRE_THROWS_AS(ops::sparse_softmax_cross_entropy_with_logits(labels, make({1}, {}, DType::Float32)), InvalidArgument);
}
