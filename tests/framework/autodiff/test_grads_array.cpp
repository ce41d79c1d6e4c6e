// Backward formulas of the shape and indexing ops against float64 central differences, plus
// second-order checks (the formulas are ops, so a nested tape differentiates them again).
#include <functional>

#include "tests/support/grad_check.h"

using namespace ember;
using ember::testing::check_gradients;
using ember::testing::check_tensor;
using ember::testing::gradient_of;
using ember::testing::rand64;
using ember::testing::TensorFn;

namespace {

Tensor ids(const std::vector<int64_t>& v, const Shape& shape, DType t = DType::Int64) {
  return ember::testing::make(std::vector<double>(v.begin(), v.end()), shape, t);
}

// f and, through square so that the second derivative depends on x, its gradient.
void check_first_and_second(const std::string& what, const TensorFn& f, const std::vector<Tensor>& xs) {
  check_gradients(what, f, xs);
  TensorFn squared = [f](const std::vector<Tensor>& in) { return ops::square(f(in)); };
  check_gradients(what + " (second order)", gradient_of(squared, 0), xs);
}

}  // namespace

TEST_CASE("reshape, transpose and broadcast_to gradients", "[autodiff][grads]") {
  Tensor x = rand64({2, 3, 4}, 1);
  check_first_and_second("reshape", [](const auto& in) { return ops::reshape(in[0], Shape{4, -1}); }, {x});
  check_first_and_second("expand_dims/squeeze",
                         [](const auto& in) { return ops::squeeze(ops::expand_dims(in[0], 1), {1}); }, {x});
  check_first_and_second("transpose default", [](const auto& in) { return ops::transpose(in[0]); }, {x});
  check_first_and_second("transpose 1 2 0", [](const auto& in) { return ops::transpose(in[0], {1, 2, 0}); }, {x});
  check_first_and_second("broadcast_to (3,1) -> (2,3,4)",
                         [](const auto& in) { return ops::broadcast_to(in[0], Shape{2, 3, 4}); },
                         {rand64({3, 1}, 2)});
  check_first_and_second("broadcast_to scalar", [](const auto& in) { return ops::broadcast_to(in[0], Shape{2, 2}); },
                         {rand64({}, 3)});
}

TEST_CASE("concat, stack and split gradients", "[autodiff][grads]") {
  Tensor a = rand64({2, 3}, 1), b = rand64({2, 1}, 2), c = rand64({2, 4}, 3);
  auto cat1 = [](const std::vector<Tensor>& in) { return ops::concat(in, 1); };
  check_gradients("concat axis 1", cat1, {a, b, c});
  check_gradients("concat axis 0", [](const auto& in) { return ops::concat(in, -2); },
                  {rand64({1, 3}, 4), rand64({3, 3}, 5)});
  check_gradients("concat of one", [](const auto& in) { return ops::concat(in, 0); }, {a});
  for (size_t k = 0; k < 3; ++k) {
    TensorFn sq = [cat1](const std::vector<Tensor>& in) { return ops::square(cat1(in)); };
    check_gradients("concat second order, input " + std::to_string(k), gradient_of(sq, k), {a, b, c});
  }
  check_gradients("stack axis 1", [](const auto& in) { return ops::stack(in, 1); }, {a, rand64({2, 3}, 6)});
  check_first_and_second("split", [](const auto& in) {
    auto parts = ops::split(in[0], std::vector<int64_t>{1, -1, 2}, 1);
    return ops::concat({parts[2], parts[0]}, 1);  // part 1 unused: its gradient is zero
  }, {rand64({2, 5}, 7)});
}

TEST_CASE("strided_slice gradient", "[autodiff][grads]") {
  Tensor x = rand64({4, 5, 6}, 1);
  using O = ops::StridedSliceOptions;
  struct Case {
    std::string name;
    std::vector<int64_t> b, e, s;
    O o;
  };
  const std::vector<Case> cases = {
      {"x[1:3, :, 2:5]", {1, 0, 2}, {3, 0, 5}, {1, 1, 1}, O{.begin_mask = 2, .end_mask = 2}},
      {"x[::2, 1::3, ::4]", {0, 1, 0}, {0, 0, 0}, {2, 3, 4}, O{.begin_mask = 5, .end_mask = 7}},
      {"x[::-1]", {0}, {0}, {-1}, O{.begin_mask = 1, .end_mask = 1}},
      {"x[3:0:-2, ::-3, -2:1:-1]", {3, 0, -2}, {0, 0, 1}, {-2, -3, -1}, O{.begin_mask = 2, .end_mask = 2}},
      {"x[-1:-5:-3, 4:0:-4, 5::-5]", {-1, 4, 5}, {-5, 0, 0}, {-3, -4, -5}, O{.end_mask = 4}},
      {"x[1, :, 2] (shrink)", {1, 0, 2}, {2, 0, 3}, {1, 1, 1},
       O{.begin_mask = 2, .end_mask = 2, .shrink_axis_mask = 5}},
      {"x[..., 3] (ellipsis, shrink)", {0, 3}, {0, 4}, {1, 1}, O{.ellipsis_mask = 1, .shrink_axis_mask = 2}},
      {"x[:, None, 1:4:2] (new axis)", {0, 0, 1}, {0, 0, 4}, {1, 1, 2},
       O{.begin_mask = 1, .end_mask = 1, .new_axis_mask = 2}},
      {"x[None, ..., ::-2, None]", {0, 0, 0, 0}, {0, 0, 0, 0}, {1, 1, -2, 1},
       O{.begin_mask = 4, .end_mask = 4, .ellipsis_mask = 2, .new_axis_mask = 9}},
      {"x[2:2] (empty)", {2}, {2}, {1}, O{}},
      {"x[10:20] (clamped, empty)", {10}, {20}, {1}, O{}},
      {"x[-100:100:7]", {-100}, {100}, {7}, O{}},
  };
  for (const Case& c : cases)
    check_first_and_second(c.name, [&c](const auto& in) { return ops::strided_slice(in[0], c.b, c.e, c.s, c.o); },
                           {x});
  check_first_and_second("slice", [](const auto& in) { return ops::slice(in[0], {1, 2}, {2, -1}); },
                         {rand64({3, 5}, 2)});
}

TEST_CASE("gather gradient", "[autodiff][grads]") {
  Tensor p = rand64({4, 3, 2}, 1);
  SECTION("axis 0, repeated indices, 2-D indices") {
    Tensor i = ids({2, 0, 2, 2, 3, 0}, {2, 3});
    check_first_and_second("gather axis 0", [i](const auto& in) { return ops::gather(in[0], i); }, {p});
  }
  SECTION("axis 1, int32 indices") {
    Tensor i = ids({1, 1, 0, 2, 1}, {5}, DType::Int32);
    check_first_and_second("gather axis 1", [i](const auto& in) { return ops::gather(in[0], i, {.axis = 1}); }, {p});
  }
  SECTION("last axis, scalar index") {
    Tensor i = ids({1}, {});
    check_first_and_second("gather axis -1 scalar", [i](const auto& in) { return ops::gather(in[0], i, {.axis = -1}); },
                           {p});
  }
  SECTION("batch_dims 1, axis 1") {
    Tensor i = ids({0, 2, 2, 1, 1, 1, 2, 0}, {4, 2});
    check_first_and_second("gather batch_dims 1 axis 1",
                           [i](const auto& in) { return ops::gather(in[0], i, {.axis = 1, .batch_dims = 1}); }, {p});
  }
  SECTION("batch_dims 1, axis 2 (a dimension between batch and axis)") {
    Tensor i = ids({1, 0, 1, 1, 0, 0, 1, 1}, {4, 2}, DType::Int32);
    check_first_and_second("gather batch_dims 1 axis 2",
                           [i](const auto& in) { return ops::gather(in[0], i, {.axis = 2, .batch_dims = 1}); }, {p});
  }
  SECTION("batch_dims 2") {
    Tensor i = ids({0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1}, {4, 3, 2});
    check_first_and_second("gather batch_dims 2",
                           [i](const auto& in) { return ops::gather(in[0], i, {.axis = 2, .batch_dims = 2}); }, {p});
  }
  SECTION("empty indices") {
    Tensor i = ids({}, {0});
    check_gradients("gather empty", [i](const auto& in) { return ops::gather(in[0], i); }, {p});
  }
  SECTION("no gradient for the indices") {
    Tensor i = ids({1, 0}, {2});
    GradientTape tape;
    tape.watch(p);
    tape.watch(i);
    Tensor y = ops::gather(p, i);
    std::vector<Tensor> g = tape.gradient(y, {p, i});
    CHECK(g[0].defined());
    CHECK_FALSE(g[1].defined());
  }
}

TEST_CASE("unsorted_segment_sum gradient", "[autodiff][grads]") {
  Tensor seg = ids({2, 0, 2, 4}, {4});
  check_first_and_second("unsorted_segment_sum 1-D ids",
                         [seg](const auto& in) { return ops::unsorted_segment_sum(in[0], seg, 5); },
                         {rand64({4, 3}, 1)});
  Tensor seg2 = ids({1, 1, 0, 1, 2, 0}, {2, 3}, DType::Int32);
  check_first_and_second("unsorted_segment_sum 2-D ids",
                         [seg2](const auto& in) { return ops::unsorted_segment_sum(in[0], seg2, 3); },
                         {rand64({2, 3, 2}, 2)});
}

TEST_CASE("pad gradient in every mode", "[autodiff][grads]") {
  Tensor x = rand64({3, 4, 2}, 1);
  const std::vector<std::pair<int64_t, int64_t>> p = {{1, 2}, {0, 3}, {1, 0}};
  const std::vector<std::pair<int64_t, int64_t>> full_reflect = {{2, 2}, {3, 3}, {1, 1}};
  const std::vector<std::pair<int64_t, int64_t>> full_symmetric = {{3, 3}, {4, 4}, {2, 2}};
  check_first_and_second("pad CONSTANT", [&](const auto& in) { return ops::pad(in[0], p, {.constant_values = 2.5}); },
                         {x});
  check_first_and_second("pad REFLECT", [&](const auto& in) { return ops::pad(in[0], p, {.mode = "REFLECT"}); }, {x});
  check_first_and_second("pad SYMMETRIC", [&](const auto& in) { return ops::pad(in[0], p, {.mode = "symmetric"}); },
                         {x});
  check_first_and_second("pad REFLECT, largest paddings",
                         [&](const auto& in) { return ops::pad(in[0], full_reflect, {.mode = "REFLECT"}); }, {x});
  check_first_and_second("pad SYMMETRIC, largest paddings",
                         [&](const auto& in) { return ops::pad(in[0], full_symmetric, {.mode = "SYMMETRIC"}); }, {x});
  check_first_and_second("pad REFLECT 1-D",
                         [](const auto& in) { return ops::pad(in[0], {{3, 1}}, {.mode = "REFLECT"}); },
                         {rand64({4}, 2)});
}

TEST_CASE("tile gradient", "[autodiff][grads]") {
  Tensor x = rand64({2, 3}, 1);
  check_first_and_second("tile 1 3", [](const auto& in) { return ops::tile(in[0], {1, 3}); }, {x});
  check_first_and_second("tile 3 1", [](const auto& in) { return ops::tile(in[0], {3, 1}); }, {x});
  check_first_and_second("tile 2 3", [](const auto& in) { return ops::tile(in[0], {2, 3}); }, {x});
  check_first_and_second("tile 1 1", [](const auto& in) { return ops::tile(in[0], {1, 1}); }, {x});
  check_gradients("tile 0 2", [](const auto& in) { return ops::tile(in[0], {0, 2}); }, {x});
  check_first_and_second("tile 3-D", [](const auto& in) { return ops::tile(in[0], {2, 1, 3}); },
                         {rand64({2, 1, 2}, 2)});
}

TEST_CASE("strided_slice gradient places the values exactly", "[autodiff][grads]") {
  // x[4:0:-2] of a length-6 vector picks elements 4 and 2.
  Tensor x = rand64({6}, 1);
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::strided_slice(x, {4}, {0}, {-2});
  Tensor dy = ember::testing::make({10, 20}, {2}, DType::Float64);
  Tensor g = tape.gradient(y, {x}, {.output_gradients = {dy}})[0];
  check_tensor(g, DType::Float64, {6}, {0, 0, 20, 0, 10, 0});
}
