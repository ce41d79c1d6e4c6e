// ops::cond, ops::while_loop and TensorArray: eager, traced (one trace serving every value), their effects only
// where a call takes them, and their gradients (a tape inside the function, or outside it).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <sstream>

#include "framework/ember.h"
#include "tests/support/half_testing.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;

namespace {

Tensor sample(const Shape& s, uint64_t seed) { return random::normal(s, {.seed = seed}); }
Tensor f32(float v) { return Tensor::scalar<float>(v); }
Tensor i32(int32_t v) { return Tensor::scalar<int32_t>(v); }

// cond(sum(x) > 0, 3 x^2, sin x) * w, summed: the two branches have different gradients.
Tensor branchy(const Tensor& x, const Tensor& w) {
  Tensor zero = Tensor::scalar_of(0, x.dtype());
  Tensor y = ops::cond(ops::greater(ops::reduce_sum(x), zero), [&] { return x * x * 3.0; }, [&] { return ops::sin(x); });
  return ops::reduce_sum(y * w);
}

// x squared n times over (a while_loop whose pass count is a value): x^(2^n).
std::vector<Tensor> square_n(const Tensor& x, const Tensor& n) {
  return ops::while_loop([&](const std::vector<Tensor>& v) { return ops::less(v[0], n); },
                         [](const std::vector<Tensor>& v) -> std::vector<Tensor> {
                           return {v[0] + i32(1), v[1] * v[1]};
                         },
                         {i32(0), x});
}

}  // namespace

TEST_CASE("cond runs one branch eagerly, and traced picks per call with one trace", "[control_flow]") {
  int traced_true = 0, traced_false = 0;
  auto f = ember::function([&](const Tensor& p, const Tensor& x) {
    return ops::cond(
        p,
        [&] {
          ++traced_true;
          return x * 2.0f;
        },
        [&] {
          ++traced_false;
          return x - 1.0f;
        });
  });
  Tensor x = sample({3}, 1);
  Tensor yes = Tensor::scalar_of(1, DType::Bool), no = Tensor::scalar_of(0, DType::Bool);
  CHECK(same_bits(f(yes, x), x * 2.0f));
  CHECK(same_bits(f(no, x), x - 1.0f));
  CHECK(same_bits(f(yes, x), x * 2.0f));
  CHECK(f.tracing_count() == 1);
  CHECK(traced_true == 1);  // each branch traced once, run by every call that takes it
  CHECK(traced_false == 1);
  // Eager: only the branch taken runs.
  CHECK(same_bits(ops::cond(no, [&] { return x * 2.0f; }, [&] { return x - 1.0f; }), x - 1.0f));

  std::ostringstream printed;
  printed << f.concrete_functions()[0]->graph();
  CHECK(printed.str().find("cond(") != std::string::npos);
  CHECK(printed.str().find("true: graph(") != std::string::npos);
  CHECK(printed.str().find("false: graph(") != std::string::npos);
}

TEST_CASE("cond returns tuples and nothing", "[control_flow]") {
  auto f = ember::function([](const Tensor& p, const Tensor& x) {
    auto [a, b] = ops::cond(p, [&] { return std::tuple<Tensor, Tensor>{x, x * 2.0f}; },
                            [&] { return std::tuple<Tensor, Tensor>{x * 3.0f, x}; });
    return a + b;
  });
  Tensor x = sample({2}, 2);
  CHECK(same_bits(f(Tensor::scalar_of(1, DType::Bool), x), x + x * 2.0f));
  CHECK(same_bits(f(Tensor::scalar_of(0, DType::Bool), x), x * 3.0f + x));
}

TEST_CASE("a branch's variable writes, prints and random draws happen only when a call takes it", "[control_flow]") {
  Variable taken(f32(0), {.name = "taken"});
  std::ostringstream out;
  auto f = ember::function([&](const Tensor& p) {
    ops::cond(
        p,
        [&] {
          taken.assign_add(f32(1));
          ops::print({"true branch"}, {.output_stream = &out});
        },
        [&] { ops::print({"false branch"}, {.output_stream = &out}); });
    return random::uniform({2});
  });
  random::set_seed(7);
  Tensor r1 = f(Tensor::scalar_of(1, DType::Bool));  // the trace: each branch traced, one run
  Tensor r2 = f(Tensor::scalar_of(0, DType::Bool));
  Tensor r3 = f(Tensor::scalar_of(1, DType::Bool));
  CHECK(taken.value().item<float>() == 2.0f);
  CHECK(out.str() == "true branch\nfalse branch\ntrue branch\n");
  // The draws after the cond are eager's sequence: tracing the branches drew nothing for good.
  random::set_seed(7);
  CHECK(same_bits(r1, random::uniform({2})));
  CHECK(same_bits(r2, random::uniform({2})));
  CHECK(same_bits(r3, random::uniform({2})));
}

TEST_CASE("a variable written in a branch is read again after the cond", "[control_flow]") {
  Variable v(f32(1), {.name = "v"});
  auto f = ember::function([&](const Tensor& p) {
    Tensor before = v.read_value();
    ops::cond(p, [&] { v.assign(f32(10)); }, [] {});
    return before + v.read_value();
  });
  CHECK(f(Tensor::scalar_of(0, DType::Bool)).item<float>() == 2.0f);   // traced on the branch not taken
  CHECK(f(Tensor::scalar_of(1, DType::Bool)).item<float>() == 11.0f);  // the replay reads the write
  CHECK(f(Tensor::scalar_of(1, DType::Bool)).item<float>() == 20.0f);
}

TEST_CASE("a tensor made outside the function may be used in both branches, a loop, and after them",
          "[control_flow]") {
  const Tensor table = Tensor::from_vector<float>({1, 2, 3});  // first seen inside a branch: a constant there
  auto f = ember::function([&](const Tensor& i, const Tensor& p) {
    Tensor picked = ops::cond(p, [&] { return ops::gather(table, i); }, [&] { return ops::gather(table, i) * 2.0f; });
    Tensor summed = ops::while_loop([](const std::vector<Tensor>& v) { return ops::less(v[0], i32(2)); },
                                    [&](const std::vector<Tensor>& v) {
                                      return std::vector<Tensor>{v[0] + i32(1), v[1] + ops::reduce_sum(table)};
                                    },
                                    {i32(0), f32(0)})[1];
    return picked + summed + ops::reduce_sum(table);
  });
  const Tensor idx = Tensor::from_vector<int32_t>({0, 2});
  CHECK(f(idx, Tensor::scalar(true)).to_vector<float>() == std::vector<float>{19, 21});
  CHECK(f(idx, Tensor::scalar(false)).to_vector<float>() == std::vector<float>{20, 24});
  CHECK(f.tracing_count() == 1);
  // A host tensor made inside a branch is the branch's: used after the cond, refused as any other.
  auto leak = ember::function([](const Tensor& p) {
    Tensor t;
    Tensor r = ops::cond(p, [&] { t = f32(1); return t + f32(1); }, [&] { t = f32(2); return t + f32(2); });
    return r + t;
  });
  CHECK_THROWS_WITH(leak(Tensor::scalar(true)), Catch::Contains("made inside a branch of ops::cond"));
}

TEST_CASE("cond's refusals", "[control_flow]") {
  auto mismatched = ember::function([](const Tensor& p, const Tensor& x) {
    return ops::cond(p, [&] { return x; }, [&] { return ops::reduce_sum(x); });
  });
  CHECK_THROWS_AS(mismatched(Tensor::scalar_of(1, DType::Bool), sample({3}, 3)), InvalidArgument);
  CHECK_THROWS_WITH(mismatched(Tensor::scalar_of(1, DType::Bool), sample({3}, 3)),
                    Catch::Contains("output 0 is float32(3,) in true_fn and float32() in false_fn"));
  Tensor x = sample({3}, 4);
  CHECK_THROWS_AS(ops::cond(x, [&] { return x; }, [&] { return x; }), InvalidArgument);  // not a 0-d bool
  // A tensor made inside a branch and used outside it.
  auto leak = ember::function([](const Tensor& p, const Tensor& x) {
    Tensor inner;
    Tensor r = ops::cond(
        p,
        [&] {
          inner = x * 2.0f;
          return x;
        },
        [&] { return x; });
    return r + inner;
  });
  CHECK_THROWS_WITH(leak(Tensor::scalar_of(1, DType::Bool), x), Catch::Contains("made inside a branch of ops::cond"));
}

TEST_CASE("while_loop runs as many passes as each call's values ask, with one trace", "[control_flow]") {
  auto f = ember::function([](const Tensor& x, const Tensor& n) { return square_n(x, n)[1]; });
  Tensor x = Tensor::from_vector<float>({1.1f, -0.9f});
  for (int32_t n : {0, 1, 3, 2}) {
    Tensor expected = square_n(x, i32(n))[1];  // eager: a C++ loop
    CHECK(same_bits(f(x, i32(n)), expected));
  }
  CHECK(f.tracing_count() == 1);
  std::ostringstream printed;
  printed << f.concrete_functions()[0]->graph();
  CHECK(printed.str().find("while(") != std::string::npos);
  CHECK(printed.str().find("body: graph(") != std::string::npos);

  // maximum_iterations caps the passes, eager and traced.
  auto capped = ember::function([](const Tensor& x) {
    return ops::while_loop([](const std::vector<Tensor>&) { return Tensor::scalar_of(1, DType::Bool); },
                           [](const std::vector<Tensor>& v) -> std::vector<Tensor> { return {v[0] + 1.0f}; }, {x},
                           {.maximum_iterations = 5})[0];
  });
  CHECK(capped(f32(0)).item<float>() == 5.0f);
}

TEST_CASE("a variable assigned in a loop body reads each pass's write", "[control_flow]") {
  Variable counter(f32(0), {.name = "counter"});
  auto f = ember::function([&](const Tensor& n) {
    return ops::while_loop([&](const std::vector<Tensor>& v) { return ops::less(v[0], n); },
                           [&](const std::vector<Tensor>& v) -> std::vector<Tensor> {
                             counter.assign_add(f32(1));
                             return {v[0] + i32(1)};
                           },
                           {i32(0)})[0];
  });
  f(i32(3));
  CHECK(counter.value().item<float>() == 3.0f);  // tracing the body wrote nothing for good
  f(i32(4));
  CHECK(counter.value().item<float>() == 7.0f);
}

TEST_CASE("while_loop's refusals", "[control_flow]") {
  auto growing = ember::function([](const Tensor& x) {
    return ops::while_loop([](const std::vector<Tensor>&) { return Tensor::scalar_of(0, DType::Bool); },
                           [](const std::vector<Tensor>& v) -> std::vector<Tensor> {
                             return {ops::concat({v[0], v[0]}, 0)};
                           },
                           {x})[0];
  });
  CHECK_THROWS_WITH(growing(sample({2}, 5)), Catch::Contains("loop_vars[0] enters the loop as float32(2,) but is "
                                                             "float32(4,) after one iteration"));
  auto not_bool = ember::function([](const Tensor& x) {
    return ops::while_loop([](const std::vector<Tensor>& v) { return v[0]; },
                           [](const std::vector<Tensor>& v) -> std::vector<Tensor> { return {v[0]}; }, {x})[0];
  });
  CHECK_THROWS_WITH(not_bool(f32(1)), Catch::Contains("cond's result must be a 0-d bool tensor"));
  CHECK_THROWS_AS(ops::while_loop([](const std::vector<Tensor>&) { return Tensor::scalar_of(0, DType::Bool); },
                                  [](const std::vector<Tensor>& v) { return v; }, {}),
                  InvalidArgument);
}

TEST_CASE("cond's gradient, taken inside the function, is eager's for the branch each call takes", "[control_flow]") {
  Tensor w = sample({4}, 6);
  auto grad = ember::function([&](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    return tape.gradient(branchy(x, w), x);
  });
  Tensor pos = ops::abs(sample({4}, 7)), neg = -ops::abs(sample({4}, 8));
  for (const Tensor& x : {pos, neg, pos, neg}) {
    GradientTape tape;
    tape.watch(x);
    Tensor expected = tape.gradient(branchy(x, w), x);
    CHECK(same_bits(grad(x), expected));
  }
  CHECK(grad.tracing_count() == 1);
}

TEST_CASE("a branch's and a loop body's gradients are eager's where the compiler would merge their ops",
          "[control_flow]") {
  // Three casts of one float32 weight to half (an RNN cell's steps under a mixed policy): eager widens each
  // cast's gradient before summing them in float32. The compiler merges the casts in the branch it runs; a tape
  // must see the branch as traced, else the sum is taken in half.
  for (const DType half : {DType::BFloat16, DType::Float16}) {
    INFO(dtype_name(half));
    Variable w(sample({8, 8}, 1), {.name = "w"});
    const Tensor x = sample({16, 8}, 2);
    auto body = [&](const Tensor& in) { return ember::testing::three_half_steps(in, w, half); };
    auto in_cond = [&](const Tensor& in, const Tensor& p) {
      GradientTape tape;
      Tensor h = ops::cond(p, [&] { return body(in) * 2.0f; }, [&] { return body(in); });
      return tape.gradient(ops::reduce_sum(ops::square(h)), {w})[0];
    };
    auto in_loop = [&](const Tensor& in) {
      GradientTape tape;
      std::vector<Tensor> out = ops::while_loop([](const std::vector<Tensor>& v) { return ops::less(v[0], i32(2)); },
                                                [&](const std::vector<Tensor>& v) -> std::vector<Tensor> {
                                                  return {v[0] + i32(1), body(v[1])};
                                                },
                                                {i32(0), in});
      return tape.gradient(ops::reduce_sum(ops::square(out[1])), {w})[0];
    };
    auto traced_cond = ember::function(in_cond);
    auto traced_loop = ember::function(in_loop);
    for (const bool p : {false, true, false}) CHECK(same_bits(traced_cond(x, Tensor::scalar<bool>(p)), in_cond(x, Tensor::scalar<bool>(p))));
    CHECK(same_bits(traced_loop(x), in_loop(x)));
    CHECK(same_bits(traced_loop(x), in_loop(x)));
  }
}

TEST_CASE("while_loop's gradient matches float64 finite differences for every pass count", "[control_flow]") {
  auto grad = ember::function([](const Tensor& x, const Tensor& n) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = ops::reduce_sum(ops::sin(square_n(x, n)[1]));
    return tape.gradient(y, x);
  });
  const std::vector<double> x0{0.7, -1.05, 0.93};
  for (int32_t n : {0, 1, 2, 3}) {
    Tensor x = Tensor::from_vector<double>(x0);
    std::vector<double> g = grad(x, i32(n)).to_vector<double>();
    for (size_t i = 0; i < x0.size(); ++i) {
      const double h = 1e-6;
      auto at = [&](double delta) {
        std::vector<double> p = x0;
        p[i] += delta;
        return ops::reduce_sum(ops::sin(square_n(Tensor::from_vector<double>(p), i32(n))[1])).item<double>();
      };
      const double fd = (at(h) - at(-h)) / (2 * h);
      CHECK(g[i] == Approx(fd).epsilon(1e-6).margin(1e-8));
    }
  }
  CHECK(grad.tracing_count() == 1);
}

TEST_CASE("a tape outside the function differentiates its loop, traced call and replays alike", "[control_flow]") {
  auto f = ember::function([](const Tensor& x, const Tensor& n) { return square_n(x, n)[1]; });
  Tensor x = Tensor::from_vector<float>({0.9f, 1.1f});
  for (int32_t n : {2, 3, 1}) {
    GradientTape traced_tape, eager_tape;
    traced_tape.watch(x);
    Tensor y = ops::reduce_sum(f(x, i32(n)));
    eager_tape.watch(x);
    Tensor y_eager = ops::reduce_sum(square_n(x, i32(n))[1]);
    CHECK(same_bits(traced_tape.gradient(y, x), eager_tape.gradient(y_eager, x)));
  }
}

TEST_CASE("TensorArray writes, reads and stacks, eagerly and in a traced loop", "[control_flow]") {
  TensorArray ta(DType::Float32, 3);
  ta = ta.write(1, Tensor::from_vector<float>({1, 2})).write(i32(0), Tensor::from_vector<float>({3, 4}));
  CHECK(ta.stack().to_vector<float>() == std::vector<float>{3, 4, 1, 2, 0, 0});
  CHECK(ta.read(i32(1)).to_vector<float>() == std::vector<float>{1, 2});
  CHECK(TensorArray(DType::Float32, 2).unstack(Tensor::from_vector<float>({5, 6}, {2, 1})).read(1).item<float>() ==
        6.0f);
  CHECK_THROWS_WITH(ta.write(3, f32(0)), Catch::Contains("index 3 is not in [0, 3)"));
  CHECK_THROWS_AS(ta.write(0, f32(0)), InvalidArgument);  // shape [] against [2]
  CHECK_THROWS_AS(TensorArray(DType::Float32, 2).stack(), FailedPrecondition);

  // Powers of x, one per pass, gathered in a loop.
  auto powers = ember::function([](const Tensor& x) {
    TensorArray out(DType::Float32, 4, x.shape());
    auto r = ops::while_loop([](const std::vector<Tensor>& v) { return ops::less(v[0], i32(4)); },
                             [](const std::vector<Tensor>& v) -> std::vector<Tensor> {
                               Tensor next = v[1] * 2.0f;
                               return {v[0] + i32(1), next, TensorArray(v[2]).write(v[0], v[1]).stack()};
                             },
                             {i32(0), x, out.stack()});
    return r[2];
  });
  CHECK(powers(Tensor::from_vector<float>({1, 3})).to_vector<float>() == std::vector<float>{1, 3, 2, 6, 4, 12, 8, 24});
}

TEST_CASE("the RNN loop h = tanh(h W_hh + x[t] W_xh) trains inside a function", "[control_flow]") {
  const int64_t steps = 5, batch = 4, features = 3, units = 6;
  Variable w_xh(sample({features, units}, 10) * 0.5f, {.name = "w_xh"});
  Variable w_hh(sample({units, units}, 11) * 0.3f, {.name = "w_hh"});
  Variable w_out(sample({units, 1}, 12) * 0.5f, {.name = "w_out"});
  std::vector<Variable> vars{w_xh, w_hh, w_out};
  Tensor xs = sample({steps, batch, features}, 13);
  Tensor target = sample({batch, 1}, 14);

  auto loss_of = [&](const Tensor& x) {
    TensorArray hs(DType::Float32, steps, Shape{batch, units});
    auto r = ops::while_loop(
        [&](const std::vector<Tensor>& v) { return ops::less(v[0], i32(static_cast<int32_t>(steps))); },
        [&](const std::vector<Tensor>& v) -> std::vector<Tensor> {
          Tensor xt = ops::gather(x, v[0]);
          Tensor h = ops::tanh(ops::matmul(v[1], w_hh) + ops::matmul(xt, w_xh));
          return {v[0] + i32(1), h, TensorArray(v[2]).write(v[0], h).stack()};
        },
        {i32(0), ops::zeros({batch, units}), hs.stack()});
    Tensor last = TensorArray(r[2]).read(steps - 1);
    return ops::reduce_mean(ops::square(ops::matmul(last, w_out) - target));
  };
  // The first step's gradients are eager's bits.
  std::vector<Tensor> eager_grads;
  {
    GradientTape tape;
    eager_grads = tape.gradient(loss_of(xs), vars);
  }
  optimizers::SGD sgd({.learning_rate = 0.1});
  std::vector<Tensor> first_grads;
  auto train_step = ember::function([&](const Tensor& x) {
    GradientTape tape;
    Tensor loss = loss_of(x);
    std::vector<Tensor> grads = tape.gradient(loss, vars);
    sgd.apply(grads, vars);
    return std::tuple<Tensor, Tensor, Tensor, Tensor>{loss, grads[0], grads[1], grads[2]};
  });
  auto [loss0, g0, g1, g2] = train_step(xs);
  CHECK(same_bits(g0, eager_grads[0]));
  CHECK(same_bits(g1, eager_grads[1]));
  CHECK(same_bits(g2, eager_grads[2]));
  float last = 0;
  for (int i = 0; i < 30; ++i) last = std::get<0>(train_step(xs)).item<float>();
  CHECK(train_step.tracing_count() == 1);
  CHECK(last < 0.5f * loss0.item<float>());
}

TEST_CASE("an optimizer update in a branch runs only on the calls that take it", "[control_flow]") {
  Variable w(Tensor::from_vector<float>({1, 2}), {.name = "w"});
  std::vector<Variable> vars{w};
  optimizers::SGD sgd({.learning_rate = 0.5});
  // Loss scaling's pattern: apply the gradients only when they are finite.
  auto step = ember::function([&](const Tensor& x) {
    GradientTape tape;
    Tensor loss = ops::reduce_sum(w.read_value() * x);
    std::vector<Tensor> grads = tape.gradient(loss, vars);
    Tensor finite = ops::reduce_all(ops::is_finite(grads[0]));
    ops::cond(finite, [&] { sgd.apply(grads, vars); }, [] {});
    return loss;
  });
  const float nan = std::nanf("");
  step(Tensor::from_vector<float>({nan, 1}));  // traced; skips the update
  CHECK(w.value().to_vector<float>() == std::vector<float>{1, 2});
  step(Tensor::from_vector<float>({2, 4}));
  CHECK(w.value().to_vector<float>() == std::vector<float>{0, 0});
  step(Tensor::from_vector<float>({1, nan}));
  CHECK(w.value().to_vector<float>() == std::vector<float>{0, 0});
  CHECK(sgd.iterations().value().item<int64_t>() == 1);
}

TEST_CASE("cond and while_loop nest", "[control_flow]") {
  // Collatz steps of n: while n != 1: n = n even ? n / 2 : 3n + 1.
  auto collatz = [](const Tensor& n) {
    return ops::while_loop([](const std::vector<Tensor>& v) { return ops::not_equal(v[1], i32(1)); },
                           [](const std::vector<Tensor>& v) -> std::vector<Tensor> {
                             Tensor even = ops::equal(ops::mod(v[1], i32(2)), i32(0));
                             Tensor next = ops::cond(even, [&] { return ops::floordiv(v[1], i32(2)); },
                                                     [&] { return v[1] * i32(3) + i32(1); });
                             return {v[0] + i32(1), next};
                           },
                           {i32(0), n})[0];
  };
  auto f = ember::function(collatz);
  CHECK(f(i32(6)).item<int32_t>() == 8);
  CHECK(f(i32(27)).item<int32_t>() == 111);
  CHECK(f(i32(1)).item<int32_t>() == 0);
  CHECK(collatz(i32(27)).item<int32_t>() == 111);
  CHECK(f.tracing_count() == 1);
}

TEST_CASE("a dry trace leaves what a cond or loop assigns, updates or prints", "[control_flow]") {
  Variable v(f32(0), {.name = "v"});
  std::ostringstream printed;
  auto f = ember::function([&](const Tensor& n) {
    ops::cond(ops::greater_equal(n, i32(0)), [&] {
      v.assign_add(f32(1));
      ops::print({std::string("branch ran")}, {.output_stream = &printed});
    }, [] {});
    return ops::while_loop([](const std::vector<Tensor>& a) { return ops::less(a[0], i32(3)); },
                           [&](const std::vector<Tensor>& a) {
                             v.assign_add(f32(10));
                             return std::vector<Tensor>{a[0] + i32(1)};
                           },
                           {n})[0];
  });
  f.get_concrete_function(TensorSpec({}, DType::Int32));
  CHECK(v.value().item<float>() == 0.0f);
  CHECK(printed.str().empty());
  CHECK(f(i32(0)).item<int32_t>() == 3);
  CHECK(v.value().item<float>() == 31.0f);
  CHECK(printed.str() == "branch ran\n");
}

TEST_CASE("an update guarded by a cond runs once per step, probes of an unknown batch size included",
          "[control_flow]") {
  std::vector<std::pair<int64_t, std::vector<float>>> runs;
  for (bool traced : {false, true}) {
    Variable w(Tensor::from_vector<float>({1, 2, 3}, {3, 1}), {.name = "w"});
    std::vector<Variable> vars{w};
    optimizers::Adam adam({.learning_rate = 0.1});
    auto step_fn = [&](const Tensor& x, const Tensor& y) {
      GradientTape tape;
      Tensor loss = ops::reduce_mean(ops::square(ops::matmul(x, w.read_value()) - y));
      std::vector<Tensor> grads = tape.gradient(loss, vars);
      ops::cond(ops::reduce_all(ops::is_finite(grads[0])), [&] { adam.apply(grads, vars); }, [] {});
      return loss;
    };
    auto step = ember::function(step_fn, {.unknown_batch_dimension = true});
    for (int64_t n : {4, 4, 3}) {  // the batch of 3: a new size, probed by dry traces
      const Tensor x = ops::ones({n, 3}), y = ops::ones({n, 1}) * 10.0f;
      if (traced)
        step(x, y);
      else
        step_fn(x, y);
    }
    runs.emplace_back(adam.iterations().value().item<int64_t>(), w.value().to_vector<float>());
  }
  CHECK(runs[0].first == 3);
  CHECK(runs[1] == runs[0]);
}

TEST_CASE("a variable assigned by control flow inside a branch or loop is read after it on every run",
          "[control_flow]") {
  Variable v(f32(1), {.name = "v"});
  auto check = [&](const std::function<Tensor(const Tensor&)>& body) {
    auto f = ember::function(body);
    v.assign(f32(1));
    const float eager = body(i32(4)).item<float>();
    v.assign(f32(1));
    CHECK(f(i32(4)).item<float>() == eager);  // traced
    v.assign(f32(1));
    CHECK(f(i32(4)).item<float>() == eager);  // replayed
  };
  auto below = [](const Tensor& n) { return [n](const std::vector<Tensor>& s) { return ops::less(s[0], n); }; };
  // A read after a nested cond that assigns, in a branch.
  check([&](const Tensor& n) {
    const Tensor p = ops::greater(n, i32(0));
    return ops::cond(
        p,
        [&] {
          ops::cond(p, [&] { v.assign(f32(10)); }, [] {});
          return v.read_value();
        },
        [&] { return f32(-1); });
  });
  // A loop body reading what a cond inside it assigns on the pass before.
  check([&](const Tensor& n) {
    return ops::while_loop(below(n),
                           [&](const std::vector<Tensor>& s) {
                             Tensor acc = s[1] + v.read_value();
                             ops::cond(ops::greater_equal(s[0], i32(0)), [&] { v.assign_add(f32(1)); }, [] {});
                             return std::vector<Tensor>{s[0] + i32(1), acc};
                           },
                           {i32(0), f32(0)})[1];
  });
  // A loop's cond reading what its body assigns: it stops (traced, it read the value before the loop: forever).
  check([&](const Tensor&) {
    return ops::cast(ops::while_loop([&](const std::vector<Tensor>&) { return ops::less(v.read_value(), f32(4)); },
                                     [&](const std::vector<Tensor>& s) {
                                       v.assign_add(f32(1));
                                       return std::vector<Tensor>{s[0] + i32(1)};
                                     },
                                     {i32(0)}, {.maximum_iterations = 10})[0],
                     DType::Float32);
  });
}

TEST_CASE("a TensorArray written or read at a traced index out of range fails on every call", "[control_flow]") {
  auto write = ember::function([](const Tensor& i) {
    return TensorArray(DType::Float32, 3, Shape{}).write(i, f32(7)).stack();
  });
  CHECK(write(i32(1)).to_vector<float>() == std::vector<float>{0, 7, 0});
  for (int32_t bad : {5, -1})
    CHECK_THROWS_WITH(write(i32(bad)), Catch::StartsWith("TensorArray.write: the index is not in [0, 3)") &&
                                           Catch::Contains(std::to_string(bad)));
  auto read = ember::function([](const Tensor& i) {
    return TensorArray(DType::Float32, 3, Shape{}).write(0, f32(7)).read(i);
  });
  CHECK(read(i32(0)).item<float>() == 7.0f);
  CHECK_THROWS_WITH(read(i32(3)), Catch::StartsWith("TensorArray.read: the index is not in [0, 3)"));
  CHECK(write.tracing_count() == 1);
}
