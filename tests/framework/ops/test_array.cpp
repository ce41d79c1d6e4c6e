// Shape ops: reshape, expand_dims, squeeze, transpose, concat, stack, split, pad, tile, broadcast_to.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::iota;
using ember::testing::kAllDTypes;
using ember::testing::as_dtype_values;

namespace {

Tensor range_t(const Shape& s, DType t = DType::Float32) { return make(as_dtype_values(t, iota(s.num_elements())), s, t); }

}  // namespace

TEST_CASE("reshape is a view with one inferred dimension", "[ops][array]") {
  for (DType t : kAllDTypes) {
    INFO("dtype " << t);
    Tensor x = range_t({2, 3}, t);
    Tensor y = ops::reshape(x, {3, -1});
    check_tensor(y, t, {3, 2}, as_dtype_values(t, iota(6)));
    CHECK(y.raw_data() == x.raw_data());
  }
  check_tensor(ops::reshape(range_t({2, 3}), {-1}), DType::Float32, {6}, iota(6));
  check_tensor(ops::reshape(range_t({1}), {}), DType::Float32, {}, {0});
  // TF leaves zero dims out of the product, so -1 can be inferred beside them.
  CHECK(ops::reshape(range_t({0, 3}), {-1, 0}).shape() == Shape{3, 0});
  CHECK(ops::reshape(range_t({0, 3}), {-1, 3}).shape() == Shape{0, 3});
  CHECK(ops::reshape(range_t({0, 3}), {2, 0, 5}).shape() == Shape{2, 0, 5});
}

TEST_CASE("reshape errors name both shapes", "[ops][array]") {
  Tensor x = range_t({2, 3});
  REQUIRE_THROWS_AS(ops::reshape(x, {4, 2}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::reshape(x, {4, 2}), Catch::Contains("reshape") && Catch::Contains("(2, 3)") &&
                                                   Catch::Contains("(4, 2)"));
  REQUIRE_THROWS_WITH(ops::reshape(x, {-1, -1}), Catch::Contains("reshape") && Catch::Contains("-1"));
  REQUIRE_THROWS_AS(ops::reshape(x, {-2, -3}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::reshape(x, {-1, 4}), Catch::Contains("reshape") && Catch::Contains("(2, 3)"));
}

TEST_CASE("expand_dims and squeeze", "[ops][array]") {
  Tensor x = range_t({2, 3});
  check_tensor(ops::expand_dims(x, 0), DType::Float32, {1, 2, 3}, iota(6));
  check_tensor(ops::expand_dims(x, -1), DType::Float32, {2, 3, 1}, iota(6));
  check_tensor(ops::expand_dims(x, 1), DType::Float32, {2, 1, 3}, iota(6));
  check_tensor(ops::expand_dims(x, -3), DType::Float32, {1, 2, 3}, iota(6));
  REQUIRE_THROWS_AS(ops::expand_dims(x, 3), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::expand_dims(x, -4), Catch::Contains("expand_dims"));

  Tensor s = range_t({1, 2, 1, 3, 1}, DType::Int64);
  check_tensor(ops::squeeze(s), DType::Int64, {2, 3}, iota(6));
  check_tensor(ops::squeeze(s, {-1}), DType::Int64, {1, 2, 1, 3}, iota(6));
  check_tensor(ops::squeeze(s, {0, 2}), DType::Int64, {2, 3, 1}, iota(6));
  check_tensor(ops::squeeze(range_t({1, 0, 1})), DType::Float32, {0}, {});
  REQUIRE_THROWS_AS(ops::squeeze(s, {1}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::squeeze(s, {1}), Catch::Contains("squeeze") && Catch::Contains("got 2"));
  REQUIRE_THROWS_WITH(ops::squeeze(s, {5}), Catch::Contains("squeeze"));
}

TEST_CASE("transpose permutes dimensions", "[ops][array]") {
  for (DType t : kAllDTypes) {
    INFO("dtype " << t);
    check_tensor(ops::transpose(range_t({2, 3}, t)), t, {3, 2}, as_dtype_values(t, {0, 3, 1, 4, 2, 5}));
    // batched last-two swap, generic permutation, default reversal
    Tensor x = range_t({2, 2, 3}, t);
    check_tensor(ops::transpose(x, {0, 2, 1}), t, {2, 3, 2}, as_dtype_values(t, {0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11}));
    check_tensor(ops::transpose(x, {2, 0, 1}), t, {3, 2, 2}, as_dtype_values(t, {0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
    check_tensor(ops::transpose(x), t, {3, 2, 2}, as_dtype_values(t, {0, 6, 3, 9, 1, 7, 4, 10, 2, 8, 5, 11}));
    check_tensor(ops::transpose(x, {1, 0, 2}), t, {2, 2, 3}, as_dtype_values(t, {0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11}));
  }
  check_tensor(ops::transpose(range_t({})), DType::Float32, {}, {0});
  check_tensor(ops::transpose(range_t({0, 3})), DType::Float32, {3, 0}, {});
  check_tensor(ops::transpose(range_t({1, 3}), {1, 0}), DType::Float32, {3, 1}, {0, 1, 2});
}

TEST_CASE("transpose of large tensors matches the naive loop", "[ops][array]") {
  const int64_t a = 3, b = 131, c = 257;  // not multiples of the tile size
  Tensor x = range_t({a, b, c}, DType::Float64);
  std::vector<double> want(static_cast<size_t>(a * b * c)), want2(want.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k) {
        double v = static_cast<double>((i * b + j) * c + k);
        want[static_cast<size_t>((i * c + k) * b + j)] = v;   // perm (0, 2, 1)
        want2[static_cast<size_t>((k * a + i) * b + j)] = v;  // perm (2, 0, 1)
      }
  check_tensor(ops::transpose(x, {0, 2, 1}), DType::Float64, {a, c, b}, want);
  check_tensor(ops::transpose(x, {2, 0, 1}), DType::Float64, {c, a, b}, want2);
  Tensor m = range_t({b * 4, c * 2}, DType::Float16);
  Tensor mt = ops::transpose(m);
  std::vector<double> got = ember::testing::values_as_double(mt), src = ember::testing::values_as_double(m);
  bool ok = true;
  for (int64_t i = 0; i < b * 4 && ok; ++i)
    for (int64_t j = 0; j < c * 2; ++j) ok = ok && got[static_cast<size_t>(j * b * 4 + i)] == src[static_cast<size_t>(i * c * 2 + j)];
  CHECK(ok);
}

TEST_CASE("transpose rejects bad perms", "[ops][array]") {
  Tensor x = range_t({2, 3});
  REQUIRE_THROWS_AS(ops::transpose(x, {0, 0}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::transpose(x, {0, 2}), Catch::Contains("transpose") && Catch::Contains("[0, 2]"));
  REQUIRE_THROWS_WITH(ops::transpose(x, {0}), Catch::Contains("transpose"));
  REQUIRE_THROWS_AS(ops::transpose(x, {-1, 0}), InvalidArgument);
}

TEST_CASE("concat joins along an axis", "[ops][array]") {
  for (DType t : kAllDTypes) {
    INFO("dtype " << t);
    Tensor a = make(as_dtype_values(t, {0, 1, 2, 3}), {2, 2}, t), b = make(as_dtype_values(t, {4, 5}), {2, 1}, t);
    check_tensor(ops::concat({a, b}, 1), t, {2, 3}, as_dtype_values(t, {0, 1, 4, 2, 3, 5}));
    check_tensor(ops::concat({a, b, a}, -1), t, {2, 5}, as_dtype_values(t, {0, 1, 4, 0, 1, 2, 3, 5, 2, 3}));
    Tensor c = make(as_dtype_values(t, {6, 7}), {1, 2}, t);
    check_tensor(ops::concat({a, c}, 0), t, {3, 2}, as_dtype_values(t, {0, 1, 2, 3, 6, 7}));
  }
  Tensor a = range_t({2, 2}), e = range_t({2, 0});
  check_tensor(ops::concat({e, a, e}, 1), DType::Float32, {2, 2}, {0, 1, 2, 3});
  check_tensor(ops::concat({a}, 0), DType::Float32, {2, 2}, {0, 1, 2, 3});
  check_tensor(ops::concat({range_t({0, 3}), range_t({0, 3})}, 0), DType::Float32, {0, 3}, {});
  // large: the parallel paths
  Tensor big = range_t({64, 1024}), big2 = range_t({64, 512}, DType::Float32);
  Tensor cat = ops::concat({big, big2}, 1);
  REQUIRE(cat.shape() == Shape{64, 1536});
  std::vector<float> v = cat.to_vector<float>();
  CHECK(v[1024] == 0.0f);
  CHECK(v[1535] == 511.0f);
  CHECK(v[1536 * 63 + 1023] == 63 * 1024 + 1023);
  CHECK(v[1536 * 63 + 1535] == 63 * 512 + 511);
  Tensor cat0 = ops::concat({big, big}, 0);
  CHECK(cat0.to_vector<float>()[64 * 1024 + 5] == 5.0f);
}

TEST_CASE("concat errors", "[ops][array]") {
  Tensor a = range_t({2, 2});
  REQUIRE_THROWS_WITH(ops::concat({}, 0), Catch::Contains("concat"));
  REQUIRE_THROWS_AS(ops::concat({a, range_t({2, 2}, DType::Int32)}, 0), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::concat({a, range_t({2, 2}, DType::Int32)}, 0),
                      Catch::Contains("concat") && Catch::Contains("float32") && Catch::Contains("int32"));
  REQUIRE_THROWS_WITH(ops::concat({a, range_t({3, 3})}, 0), Catch::Contains("concat") && Catch::Contains("(3, 3)"));
  REQUIRE_THROWS_WITH(ops::concat({a, range_t({4})}, 0), Catch::Contains("concat"));
  REQUIRE_THROWS_WITH(ops::concat({a, a}, 2), Catch::Contains("concat"));
  REQUIRE_THROWS_WITH(ops::concat({range_t({}), range_t({})}, 0), Catch::Contains("concat"));
}

TEST_CASE("stack joins along a new axis", "[ops][array]") {
  for (DType t : {DType::Float32, DType::Int64, DType::Bool, DType::Float16}) {
    Tensor a = make(as_dtype_values(t, {0, 1, 2}), {3}, t), b = make(as_dtype_values(t, {3, 4, 5}), {3}, t);
    check_tensor(ops::stack({a, b}), t, {2, 3}, as_dtype_values(t, {0, 1, 2, 3, 4, 5}));
    check_tensor(ops::stack({a, b}, -1), t, {3, 2}, as_dtype_values(t, {0, 3, 1, 4, 2, 5}));
    check_tensor(ops::stack({a, b}, 1), t, {3, 2}, as_dtype_values(t, {0, 3, 1, 4, 2, 5}));
  }
  check_tensor(ops::stack({range_t({}), range_t({})}), DType::Float32, {2}, {0, 0});
  check_tensor(ops::stack({range_t({0, 2})}, 1), DType::Float32, {0, 1, 2}, {});
  REQUIRE_THROWS_WITH(ops::stack({range_t({3}), range_t({2})}), Catch::Contains("stack") && Catch::Contains("(2,)"));
  REQUIRE_THROWS_WITH(ops::stack({range_t({3}), range_t({3}, DType::Int32)}), Catch::Contains("stack"));
  REQUIRE_THROWS_WITH(ops::stack({range_t({3})}, 2), Catch::Contains("stack"));
  REQUIRE_THROWS_WITH(ops::stack({}), Catch::Contains("stack"));
}

TEST_CASE("split into equal parts or given sizes", "[ops][array]") {
  for (DType t : kAllDTypes) {
    INFO("dtype " << t);
    Tensor x = range_t({2, 6}, t);
    std::vector<Tensor> p = ops::split(x, 3, 1);
    REQUIRE(p.size() == 3);
    check_tensor(p[0], t, {2, 2}, as_dtype_values(t, {0, 1, 6, 7}));
    check_tensor(p[2], t, {2, 2}, as_dtype_values(t, {4, 5, 10, 11}));
    std::vector<Tensor> q = ops::split(x, std::vector<int64_t>{1, -1, 0}, -1);
    REQUIRE(q.size() == 3);
    check_tensor(q[0], t, {2, 1}, as_dtype_values(t, {0, 6}));
    check_tensor(q[1], t, {2, 5}, as_dtype_values(t, {1, 2, 3, 4, 5, 7, 8, 9, 10, 11}));
    check_tensor(q[2], t, {2, 0}, {});
  }
  std::vector<Tensor> rows = ops::split(range_t({4, 2}), 2);
  check_tensor(rows[1], DType::Float32, {2, 2}, {4, 5, 6, 7});
  std::vector<Tensor> empty = ops::split(range_t({0, 2}), 2);
  CHECK(empty[0].shape() == Shape{0, 2});
}

TEST_CASE("split errors", "[ops][array]") {
  Tensor x = range_t({2, 6});
  REQUIRE_THROWS_AS(ops::split(x, 4, 1), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::split(x, 4, 1), Catch::Contains("split") && Catch::Contains("divisible"));
  REQUIRE_THROWS_WITH(ops::split(x, 0, 1), Catch::Contains("split"));
  REQUIRE_THROWS_WITH(ops::split(x, std::vector<int64_t>{2, 3}, 1), Catch::Contains("split") && Catch::Contains("6"));
  REQUIRE_THROWS_WITH(ops::split(x, std::vector<int64_t>{-1, -1}, 1), Catch::Contains("split"));
  REQUIRE_THROWS_WITH(ops::split(x, std::vector<int64_t>{7, -1}, 1), Catch::Contains("split"));
  REQUIRE_THROWS_WITH(ops::split(x, std::vector<int64_t>{-2, 8}, 1), Catch::Contains("split"));
  REQUIRE_THROWS_WITH(ops::split(x, 2, 2), Catch::Contains("split"));
}

TEST_CASE("pad CONSTANT", "[ops][array]") {
  for (DType t : kAllDTypes) {
    INFO("dtype " << t);
    Tensor x = make(as_dtype_values(t, {1, 2, 3, 4}), {2, 2}, t);
    double c = t == DType::Bool ? 1 : 9;
    check_tensor(ops::pad(x, {{1, 0}, {0, 2}}, {.constant_values = c}), t, {3, 4},
                 as_dtype_values(t, {c, c, c, c, 1, 2, c, c, 3, 4, c, c}));
    check_tensor(ops::pad(x, {{0, 0}, {1, 1}}), t, {2, 4}, as_dtype_values(t, {0, 1, 2, 0, 0, 3, 4, 0}));
  }
  // trailing unpadded dims are copied as blocks
  Tensor x = range_t({1, 2, 2});
  check_tensor(ops::pad(x, {{0, 0}, {1, 0}, {0, 0}}, {.constant_values = -1}), DType::Float32, {1, 3, 2},
               {-1, -1, 0, 1, 2, 3});
  check_tensor(ops::pad(x, {{1, 0}, {0, 0}, {0, 0}}), DType::Float32, {2, 2, 2}, {0, 0, 0, 0, 0, 1, 2, 3});
  check_tensor(ops::pad(x, {{0, 0}, {0, 0}, {0, 0}}), DType::Float32, {1, 2, 2}, {0, 1, 2, 3});
  check_tensor(ops::pad(range_t({0, 2}), {{1, 1}, {0, 0}}, {.constant_values = 5}), DType::Float32, {2, 2},
               {5, 5, 5, 5});
  check_tensor(ops::pad(range_t({}), {}), DType::Float32, {}, {0});
}

TEST_CASE("pad REFLECT and SYMMETRIC", "[ops][array]") {
  for (DType t : {DType::Float32, DType::Int64, DType::BFloat16, DType::UInt8}) {
    INFO("dtype " << t);
    Tensor v = make({1, 2, 3}, {3}, t);
    check_tensor(ops::pad(v, {{2, 2}}, {.mode = "REFLECT"}), t, {7}, {3, 2, 1, 2, 3, 2, 1});
    check_tensor(ops::pad(v, {{3, 3}}, {.mode = "symmetric"}), t, {9}, {3, 2, 1, 1, 2, 3, 3, 2, 1});
  }
  // TF's documented example
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32);
  check_tensor(ops::pad(x, {{1, 1}, {2, 2}}, {.mode = "Reflect"}), DType::Float32, {4, 7},
               {6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1});
  check_tensor(ops::pad(x, {{1, 1}, {2, 2}}, {.mode = "SYMMETRIC"}), DType::Float32, {4, 7},
               {2, 1, 1, 2, 3, 3, 2, 2, 1, 1, 2, 3, 3, 2, 5, 4, 4, 5, 6, 6, 5, 5, 4, 4, 5, 6, 6, 5});
}

TEST_CASE("pad errors", "[ops][array]") {
  Tensor x = range_t({2, 3});
  REQUIRE_THROWS_WITH(ops::pad(x, {{1, 1}}), Catch::Contains("pad"));
  REQUIRE_THROWS_AS(ops::pad(x, {{-1, 0}, {0, 0}}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::pad(x, {{-1, 0}, {0, 0}}), Catch::Contains("pad") && Catch::Contains("non-negative"));
  REQUIRE_THROWS_WITH(ops::pad(x, {{2, 0}, {0, 0}}, {.mode = "REFLECT"}), Catch::Contains("pad"));
  CHECK_NOTHROW(ops::pad(x, {{2, 0}, {0, 0}}, {.mode = "SYMMETRIC"}));
  REQUIRE_THROWS_WITH(ops::pad(x, {{3, 0}, {0, 0}}, {.mode = "SYMMETRIC"}), Catch::Contains("pad"));
  REQUIRE_THROWS_WITH(ops::pad(x, {{0, 0}, {0, 0}}, {.mode = "WRAP"}), Catch::Contains("pad") && Catch::Contains("WRAP"));
}

TEST_CASE("tile repeats along each dimension", "[ops][array]") {
  for (DType t : kAllDTypes) {
    INFO("dtype " << t);
    Tensor x = make(as_dtype_values(t, {1, 2, 3, 4}), {2, 2}, t);
    check_tensor(ops::tile(x, {1, 2}), t, {2, 4}, as_dtype_values(t, {1, 2, 1, 2, 3, 4, 3, 4}));
    check_tensor(ops::tile(x, {2, 1}), t, {4, 2}, as_dtype_values(t, {1, 2, 3, 4, 1, 2, 3, 4}));
  }
  Tensor v = range_t({2});
  check_tensor(ops::tile(v, {3}), DType::Float32, {6}, {0, 1, 0, 1, 0, 1});
  check_tensor(ops::tile(v, {0}), DType::Float32, {0}, {});
  check_tensor(ops::tile(range_t({}), {}), DType::Float32, {}, {0});
  REQUIRE_THROWS_WITH(ops::tile(v, {1, 2}), Catch::Contains("tile"));
  REQUIRE_THROWS_AS(ops::tile(v, {-1}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::tile(v, {-1}), Catch::Contains("tile"));
}

TEST_CASE("broadcast_to follows NumPy rules", "[ops][array]") {
  for (DType t : kAllDTypes) {
    INFO("dtype " << t);
    check_tensor(ops::broadcast_to(make(as_dtype_values(t, {1, 2, 3}), {3}, t), {2, 3}), t, {2, 3}, as_dtype_values(t, {1, 2, 3, 1, 2, 3}));
    check_tensor(ops::broadcast_to(make(as_dtype_values(t, {1, 2}), {2, 1}, t), {2, 3}), t, {2, 3}, as_dtype_values(t, {1, 1, 1, 2, 2, 2}));
  }
  check_tensor(ops::broadcast_to(Tensor::scalar<int32_t>(7), {2, 2}), DType::Int32, {2, 2}, {7, 7, 7, 7});
  check_tensor(ops::broadcast_to(range_t({1, 3}), {0, 3}), DType::Float32, {0, 3}, {});
  check_tensor(ops::broadcast_to(range_t({2, 1, 2}), {2, 2, 2}), DType::Float32, {2, 2, 2}, {0, 1, 0, 1, 2, 3, 2, 3});
  REQUIRE_THROWS_AS(ops::broadcast_to(range_t({3}), {2, 2}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::broadcast_to(range_t({3}), {2, 2}),
                      Catch::Contains("broadcast_to") && Catch::Contains("(3,)") && Catch::Contains("(2, 2)"));
  REQUIRE_THROWS_WITH(ops::broadcast_to(range_t({2, 3}), {3}),
                      Catch::Contains("broadcast_to") && Catch::Contains("(2, 3)") && Catch::Contains("(3,)"));
  REQUIRE_THROWS_WITH(ops::broadcast_to(range_t({3}), {1}), Catch::Contains("broadcast_to"));
}
