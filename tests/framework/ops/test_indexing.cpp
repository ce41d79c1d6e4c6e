// Indexing ops: strided_slice, slice, gather, unsorted_segment_sum, one_hot.
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

// Python slice spellings; the masks follow what TF's __getitem__ produces.
Tensor ss(const Tensor& x, std::vector<int64_t> b, std::vector<int64_t> e, std::vector<int64_t> s,
          ops::StridedSliceOptions o = {}) {
  return ops::strided_slice(x, b, e, s, o);
}

}  // namespace

TEST_CASE("strided_slice mirrors Python slicing", "[ops][indexing]") {
  for (DType t : kAllDTypes) {
    INFO("dtype " << t);
    Tensor v = range_t({10}, t);
    // v[::-1]
    check_tensor(ss(v, {0}, {0}, {-1}, {.begin_mask = 1, .end_mask = 1}), t, {10},
                 as_dtype_values(t, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
    // v[1:-1:2]
    check_tensor(ss(v, {1}, {-1}, {2}), t, {4}, as_dtype_values(t, {1, 3, 5, 7}));
    // v[-3:]
    check_tensor(ss(v, {-3}, {0}, {1}, {.end_mask = 1}), t, {3}, as_dtype_values(t, {7, 8, 9}));
    // v[8:2:-3]
    check_tensor(ss(v, {8}, {2}, {-3}), t, {2}, as_dtype_values(t, {8, 5}));
    Tensor x = range_t({2, 3}, t);
    // x[..., 0]
    check_tensor(ss(x, {0, 0}, {0, 1}, {1, 1}, {.ellipsis_mask = 1, .shrink_axis_mask = 2}), t, {2}, as_dtype_values(t, {0, 3}));
    // x[:, tf.newaxis]
    check_tensor(ss(x, {0, 0}, {0, 0}, {1, 1}, {.begin_mask = 1, .end_mask = 1, .new_axis_mask = 2}), t, {2, 1, 3},
                 as_dtype_values(t, iota(6)));
    // x[-1]
    check_tensor(ss(x, {-1}, {0}, {1}, {.shrink_axis_mask = 1}), t, {3}, as_dtype_values(t, {3, 4, 5}));
    // x[::-1, ::2]
    check_tensor(ss(x, {0, 0}, {0, 0}, {-1, 2}, {.begin_mask = 3, .end_mask = 3}), t, {2, 2}, as_dtype_values(t, {3, 5, 0, 2}));
  }
}

TEST_CASE("strided_slice clamping, empties, ellipsis and new axes", "[ops][indexing]") {
  Tensor v = range_t({5});
  check_tensor(ss(v, {-100}, {100}, {1}), DType::Float32, {5}, iota(5));      // v[-100:100]
  check_tensor(ss(v, {100}, {-100}, {-1}), DType::Float32, {5}, {4, 3, 2, 1, 0});  // v[100:-100:-1]
  check_tensor(ss(v, {3}, {1}, {1}), DType::Float32, {0}, {});                  // v[3:1]
  check_tensor(ss(v, {1}, {3}, {-1}), DType::Float32, {0}, {});                 // v[1:3:-1]
  check_tensor(ss(v, {2}, {2}, {1}), DType::Float32, {0}, {});                  // v[2:2]
  check_tensor(ss(v, {1}, {0}, {1}, {.end_mask = 1}), DType::Float32, {4}, {1, 2, 3, 4});
  check_tensor(ss(v, {}, {}, {}), DType::Float32, {5}, iota(5));                // v[...] implicitly
  // v[tf.newaxis, 2] : new axis then a shrunk index
  check_tensor(ss(v, {0, 2}, {0, 3}, {1, 1}, {.new_axis_mask = 1, .shrink_axis_mask = 2}), DType::Float32, {1}, {2});
  // scalar: v[3]
  check_tensor(ss(v, {3}, {4}, {1}, {.shrink_axis_mask = 1}), DType::Float32, {}, {3});

  Tensor x = range_t({2, 3, 4}, DType::Int64);
  // x[1, ..., 1:3]
  check_tensor(ss(x, {1, 0, 1}, {2, 0, 3}, {1, 1, 1}, {.ellipsis_mask = 2, .shrink_axis_mask = 1}), DType::Int64,
               {3, 2}, {13, 14, 17, 18, 21, 22});
  // x[..., tf.newaxis, -1]: a new axis after the ellipsis
  check_tensor(ss(x, {0, 0, -1}, {0, 0, 0}, {1, 1, 1}, {.ellipsis_mask = 1, .new_axis_mask = 2, .shrink_axis_mask = 4}),
               DType::Int64, {2, 3, 1}, {3, 7, 11, 15, 19, 23});
  // x[:, 1] keeps the leading dimension, x[0, :, ::-2]
  check_tensor(ss(x, {0, 1}, {0, 2}, {1, 1}, {.begin_mask = 1, .end_mask = 1, .shrink_axis_mask = 2}), DType::Int64,
               {2, 4}, {4, 5, 6, 7, 16, 17, 18, 19});
  check_tensor(ss(x, {0, 0, 0}, {1, 0, 0}, {1, 1, -2}, {.begin_mask = 6, .end_mask = 6, .shrink_axis_mask = 1}),
               DType::Int64, {3, 2}, {3, 1, 7, 5, 11, 9});
  // slices of empty tensors
  check_tensor(ss(range_t({0, 3}), {0, 1}, {0, 3}, {1, 1}, {.begin_mask = 1, .end_mask = 1}), DType::Float32, {0, 2},
               {});
  check_tensor(ss(range_t({0}), {0}, {0}, {-1}, {.begin_mask = 1, .end_mask = 1}), DType::Float32, {0}, {});
}

TEST_CASE("strided_slice on a large tensor matches the naive loop", "[ops][indexing]") {
  Tensor x = range_t({64, 300}, DType::Float64);
  Tensor y = ss(x, {60, 1}, {0, 300}, {-3, 2});  // x[60:0:-3, 1::2]
  REQUIRE(y.shape() == Shape{20, 150});
  std::vector<double> want;
  for (int64_t i = 60; i > 0; i -= 3)
    for (int64_t j = 1; j < 300; j += 2) want.push_back(static_cast<double>(i * 300 + j));
  check_tensor(y, DType::Float64, {20, 150}, want);
}

TEST_CASE("strided_slice errors", "[ops][indexing]") {
  Tensor x = range_t({2, 3});
  REQUIRE_THROWS_AS(ss(x, {0}, {1}, {0}), InvalidArgument);
  REQUIRE_THROWS_WITH(ss(x, {0}, {1}, {0}), Catch::Contains("strided_slice") && Catch::Contains("zero"));
  REQUIRE_THROWS_WITH(ss(x, {5}, {6}, {1}, {.shrink_axis_mask = 1}),
                      Catch::Contains("strided_slice") && Catch::Contains("5"));
  REQUIRE_THROWS_WITH(ss(x, {-3}, {0}, {1}, {.shrink_axis_mask = 1}), Catch::Contains("strided_slice"));
  REQUIRE_THROWS_WITH(ss(x, {0, 0}, {0, 0}, {1, 1}, {.ellipsis_mask = 3}),
                      Catch::Contains("strided_slice") && Catch::Contains("ellipsis"));
  REQUIRE_THROWS_WITH(ss(x, {0, 0, 0}, {1, 1, 1}, {1, 1, 1}), Catch::Contains("strided_slice"));
  REQUIRE_THROWS_WITH(ss(x, {0, 0}, {1}, {1, 1}), Catch::Contains("strided_slice"));
  REQUIRE_THROWS_WITH(ops::strided_slice(x, {0, 0}, {1, 1}, {1}), Catch::Contains("strided_slice"));
  REQUIRE_THROWS_WITH(ss(range_t({0}), {0}, {1}, {1}, {.shrink_axis_mask = 1}), Catch::Contains("strided_slice"));
}

TEST_CASE("slice takes begin and size", "[ops][indexing]") {
  for (DType t : kAllDTypes) {
    INFO("dtype " << t);
    Tensor x = range_t({3, 4}, t);
    check_tensor(ops::slice(x, {1, 1}, {2, -1}), t, {2, 3}, as_dtype_values(t, {5, 6, 7, 9, 10, 11}));
    check_tensor(ops::slice(x, {0, 2}, {1, 1}), t, {1, 1}, as_dtype_values(t, {2}));
    check_tensor(ops::slice(x, {3, 0}, {0, 4}), t, {0, 4}, {});
  }
  Tensor x = range_t({3, 4});
  REQUIRE_THROWS_AS(ops::slice(x, {0, 0}, {4, 1}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::slice(x, {0, 0}, {4, 1}), Catch::Contains("slice") && Catch::Contains("(3, 4)"));
  REQUIRE_THROWS_WITH(ops::slice(x, {-1, 0}, {1, 1}), Catch::Contains("slice"));
  REQUIRE_THROWS_WITH(ops::slice(x, {4, 0}, {-1, 1}), Catch::Contains("slice"));
  REQUIRE_THROWS_WITH(ops::slice(x, {0, 0}, {-2, 1}), Catch::Contains("slice"));
  REQUIRE_THROWS_WITH(ops::slice(x, {0}, {1}), Catch::Contains("slice"));
}

TEST_CASE("gather picks slices along an axis", "[ops][indexing]") {
  for (DType it : {DType::Int32, DType::Int64}) {
    for (DType t : kAllDTypes) {
      INFO("dtype " << t << ", indices " << it);
      Tensor p = range_t({3, 2}, t);
      check_tensor(ops::gather(p, make({2, 0, 2}, {3}, it)), t, {3, 2}, as_dtype_values(t, {4, 5, 0, 1, 4, 5}));
      check_tensor(ops::gather(p, make({1, 1, 0, 1}, {2, 2}, it), {.axis = -1}), t, {3, 2, 2},
                   as_dtype_values(t, {1, 1, 0, 1, 3, 3, 2, 3, 5, 5, 4, 5}));
      check_tensor(ops::gather(p, make({1}, {}, it)), t, {2}, as_dtype_values(t, {2, 3}));
    }
  }
  Tensor p = range_t({2, 3, 2}, DType::Int64);
  // batch_dims = 1: each batch row uses its own indices
  Tensor idx = make({2, 0, 1, 1}, {2, 2}, DType::Int32);
  check_tensor(ops::gather(p, idx, {.axis = 1, .batch_dims = 1}), DType::Int64, {2, 2, 2},
               {4, 5, 0, 1, 8, 9, 8, 9});
  check_tensor(ops::gather(p, idx, {.axis = 1, .batch_dims = -1}), DType::Int64, {2, 2, 2},
               {4, 5, 0, 1, 8, 9, 8, 9});
  check_tensor(ops::gather(p, make({1, 0}, {2}, DType::Int64), {.axis = 2}), DType::Int64, {2, 3, 2},
               {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10});
  // empty indices
  check_tensor(ops::gather(p, make({}, {0}, DType::Int32)), DType::Int64, {0, 3, 2}, {});
  check_tensor(ops::gather(p, make({}, {0, 2}, DType::Int32), {.axis = 1}), DType::Int64, {2, 0, 2, 2}, {});
  // large: parallel rows
  Tensor big = range_t({1000, 64});
  std::vector<double> iv;
  for (int i = 0; i < 2000; ++i) iv.push_back((i * 7) % 1000);
  Tensor g = ops::gather(big, make(iv, {2000}, DType::Int64));
  std::vector<float> gv = g.to_vector<float>();
  CHECK(gv[64 * 1999 + 3] == static_cast<float>((1999 * 7 % 1000) * 64 + 3));
}

TEST_CASE("gather errors", "[ops][indexing]") {
  Tensor p = range_t({3, 2});
  REQUIRE_THROWS_AS(ops::gather(p, make({0, 3}, {2}, DType::Int32)), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::gather(p, make({0, 1, 1, 7}, {2, 2}, DType::Int32)),
                      Catch::Contains("gather") && Catch::Contains("[1, 1]") && Catch::Contains("7") &&
                          Catch::Contains("[0, 3)"));
  REQUIRE_THROWS_WITH(ops::gather(p, make({-1}, {1}, DType::Int64)), Catch::Contains("gather") && Catch::Contains("-1"));
  REQUIRE_THROWS_WITH(ops::gather(p, make({0}, {1}, DType::Float32)), Catch::Contains("gather") &&
                                                                          Catch::Contains("float32"));
  REQUIRE_THROWS_WITH(ops::gather(p, make({0}, {1}, DType::Int32), {.axis = 2}), Catch::Contains("gather"));
  REQUIRE_THROWS_WITH(ops::gather(p, make({0, 0, 0}, {3, 1}, DType::Int32), {.axis = 0, .batch_dims = 1}),
                      Catch::Contains("gather") && Catch::Contains("batch_dims"));
  REQUIRE_THROWS_WITH(ops::gather(p, make({0, 0}, {2, 1}, DType::Int32), {.axis = 1, .batch_dims = 1}),
                      Catch::Contains("gather"));
  REQUIRE_THROWS_WITH(ops::gather(p, make({0}, {1}, DType::Int32), {.axis = 1, .batch_dims = 2}),
                      Catch::Contains("gather"));
  REQUIRE_THROWS_WITH(ops::gather(Tensor::scalar<float>(1), make({0}, {1}, DType::Int32)), Catch::Contains("gather"));
}

TEST_CASE("unsorted_segment_sum", "[ops][indexing]") {
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32, DType::Int64,
                  DType::UInt8}) {
    for (DType it : {DType::Int32, DType::Int64}) {
      INFO("dtype " << t << ", ids " << it);
      Tensor d = make({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, t);
      check_tensor(ops::unsorted_segment_sum(d, make({0, 2, 0, 2}, {4}, it), 4), t, {4, 2},
                   {6, 8, 0, 0, 10, 12, 0, 0});
      // ids of rank 2, a prefix of data's shape
      check_tensor(ops::unsorted_segment_sum(d, make({1, 1, 0, 1, 0, 0, 2, 2}, {4, 2}, it), 3), t, {3},
                   {3 + 5 + 6, 1 + 2 + 4, 7 + 8});
    }
  }
  // wide rows take the column-parallel path
  Tensor wide = make(std::vector<double>(3 * 5000, 1.0), {3, 5000}, DType::Float32);
  Tensor w = ops::unsorted_segment_sum(wide, make({1, 0, 1}, {3}, DType::Int32), 2);
  std::vector<float> wv = w.to_vector<float>();
  CHECK(wv[0] == 1.0f);
  CHECK(wv[4999] == 1.0f);
  CHECK(wv[5000] == 2.0f);
  CHECK(wv[9999] == 2.0f);
  // many rows, many segments
  std::vector<double> ids;
  for (int i = 0; i < 100000; ++i) ids.push_back(i % 100);
  Tensor tall = ops::unsorted_segment_sum(make(std::vector<double>(100000, 1.0), {100000}, DType::Float64),
                                          make(ids, {100000}, DType::Int64), 100);
  check_tensor(tall, DType::Float64, {100}, std::vector<double>(100, 1000.0));
  // empty data, empty segments
  check_tensor(ops::unsorted_segment_sum(make({}, {0, 2}, DType::Float32), make({}, {0}, DType::Int32), 2),
               DType::Float32, {2, 2}, {0, 0, 0, 0});
  check_tensor(ops::unsorted_segment_sum(make({}, {0}, DType::Float32), make({}, {0}, DType::Int32), 0),
               DType::Float32, {0}, {});
}

TEST_CASE("unsorted_segment_sum errors", "[ops][indexing]") {
  Tensor d = range_t({4, 2});
  REQUIRE_THROWS_AS(ops::unsorted_segment_sum(d, make({0, 1, 2, 3}, {4}, DType::Int32), 3), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::unsorted_segment_sum(d, make({0, 1, 2, 3}, {4}, DType::Int32), 3),
                      Catch::Contains("unsorted_segment_sum") && Catch::Contains("3") && Catch::Contains("[0, 3)"));
  REQUIRE_THROWS_WITH(ops::unsorted_segment_sum(d, make({0, -1, 0, 0}, {4}, DType::Int64), 3),
                      Catch::Contains("unsorted_segment_sum") && Catch::Contains("-1"));
  REQUIRE_THROWS_WITH(ops::unsorted_segment_sum(d, make({0, 1}, {2}, DType::Int32), 3),
                      Catch::Contains("unsorted_segment_sum") && Catch::Contains("prefix"));
  REQUIRE_THROWS_WITH(ops::unsorted_segment_sum(make({1, 0}, {2}, DType::Bool), make({0, 1}, {2}, DType::Int32), 2),
                      Catch::Contains("unsorted_segment_sum") && Catch::Contains("bool"));
  REQUIRE_THROWS_WITH(ops::unsorted_segment_sum(d, make({0, 1, 0, 0}, {4}, DType::Float32), 2),
                      Catch::Contains("unsorted_segment_sum"));
  REQUIRE_THROWS_WITH(ops::unsorted_segment_sum(d, make({0, 0, 0, 0}, {4}, DType::Int32), -1),
                      Catch::Contains("unsorted_segment_sum"));
}

TEST_CASE("one_hot", "[ops][indexing]") {
  for (DType it : {DType::Int32, DType::Int64, DType::UInt8}) {
    INFO("indices " << it);
    Tensor i = make({1, 2, 2}, {3}, it);
    check_tensor(ops::one_hot(i, 3), DType::Float32, {3, 3}, {0, 1, 0, 0, 0, 1, 0, 0, 1});
    check_tensor(ops::one_hot(i, 3, {.axis = 0}), DType::Float32, {3, 3}, {0, 0, 0, 1, 0, 0, 0, 1, 1});
  }
  // out of range (and negative) indices give all-off rows
  Tensor i = make({0, 5, -1, 1}, {2, 2}, DType::Int64);
  check_tensor(ops::one_hot(i, 2), DType::Float32, {2, 2, 2}, {1, 0, 0, 0, 0, 0, 0, 1});
  check_tensor(ops::one_hot(i, 2, {.axis = 1}), DType::Float32, {2, 2, 2}, {1, 0, 0, 0, 0, 0, 0, 1});
  check_tensor(ops::one_hot(i, 2, {.axis = 0}), DType::Float32, {2, 2, 2}, {1, 0, 0, 0, 0, 0, 0, 1});
  Tensor j = make({2, 0}, {2}, DType::Int32);
  for (DType t : {DType::Float64, DType::Float16, DType::BFloat16, DType::Int32, DType::Int64, DType::UInt8}) {
    INFO("dtype " << t);
    check_tensor(ops::one_hot(j, 3, {.on_value = 5, .off_value = t == DType::UInt8 ? 0.0 : -1.0, .dtype = t}), t, {2, 3},
                 {t == DType::UInt8 ? 0. : -1., t == DType::UInt8 ? 0. : -1., 5, 5, t == DType::UInt8 ? 0. : -1.,
                  t == DType::UInt8 ? 0. : -1.});
  }
  check_tensor(ops::one_hot(j, 3, {.dtype = DType::Bool}), DType::Bool, {2, 3}, {0, 0, 1, 1, 0, 0});
  check_tensor(ops::one_hot(j, 0), DType::Float32, {2, 0}, {});
  check_tensor(ops::one_hot(make({}, {0}, DType::Int32), 4), DType::Float32, {0, 4}, {});
  check_tensor(ops::one_hot(Tensor::scalar<int32_t>(1), 3), DType::Float32, {3}, {0, 1, 0});
}

TEST_CASE("one_hot errors", "[ops][indexing]") {
  Tensor i = make({0, 1}, {2}, DType::Int32);
  REQUIRE_THROWS_AS(ops::one_hot(i, -1), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::one_hot(i, -1), Catch::Contains("one_hot") && Catch::Contains("depth"));
  REQUIRE_THROWS_WITH(ops::one_hot(i, 2, {.axis = 2}), Catch::Contains("one_hot") && Catch::Contains("axis"));
  REQUIRE_THROWS_WITH(ops::one_hot(i, 2, {.axis = -2}), Catch::Contains("one_hot"));
  REQUIRE_THROWS_WITH(ops::one_hot(make({0}, {1}, DType::Float32), 2),
                      Catch::Contains("one_hot") && Catch::Contains("float32"));
}
