// LSTM and GRU on their whole-sequence ops (ops::lstm_sequence, ops::gru_sequence): which calls take them (Keras's
// cuDNN conditions), and that they give the per-step path's numbers (forward and every gradient) in each mode:
// return_sequences, return_state, go_backwards, initial and stateful states, input dropout, graph mode and mixed
// precision. unroll=True takes the per-step path (as Keras's does), so an unrolled twin with the same weights is the
// reference. The [cuda] cases run both paths on a GPU (cuDNN's kernels) and skip without one.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/ops/recurrent.h"
#include "tests/support/rnn_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("LSTM and GRU take the whole-sequence op where Keras takes cuDNN, else the per-step path",
          "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({2, 4, 3}, 1);
  auto runs = [&](Layer& l) { return fused_runs([&] { l(x, true); }); };
  layers::LSTM lstm(4);
  layers::GRU gru(4), gru_before(4, {.reset_after = false});
  CHECK(runs(lstm) == 1);
  CHECK(runs(gru) == 1);
  CHECK(runs(gru_before) == 1);  // the CPU runs both GRU forms; a GPU only cuDNN's (reset_after)
  layers::LSTM dropped(4, {.dropout = 0.5});  // input dropout applies before the op
  CHECK(runs(dropped) == 1);
  // Keras's conditions: no recurrent dropout, tanh, sigmoid gates, a bias, no unroll.
  layers::LSTM recurrent_dropout(4, {.recurrent_dropout = 0.2}), relu(4, {.activation = "relu"}),
      hard(4, {.recurrent_activation = "hard_sigmoid"}), no_bias(4, {.use_bias = false}), unrolled(4, {.unroll = true});
  for (layers::LSTM* l : {&recurrent_dropout, &relu, &hard, &no_bias, &unrolled}) CHECK(runs(*l) == 0);
  layers::GRU gru_relu(4, {.activation = "relu"});
  CHECK(runs(gru_relu) == 0);
  // Not inside RNN over a cell, even LSTM's own.
  layers::RNN over_cell(layers::LSTMCell(4));
  CHECK(runs(over_cell) == 0);
  // A mask: right-padded, the op with each sequence's length; else the per-step path, which skips the masked steps
  // (tests/layers/test_rnn_fused_mask.cpp).
  auto mask = [](std::vector<double> m) { return ops::cast(make(m, {2, 4}, DType::Float32), DType::Bool); };
  CHECK(fused_runs([&] { lstm.call_masked({x}, {mask({1, 1, 1, 0, 1, 1, 0, 0})}, true); }) == 1);
  CHECK(fused_runs([&] { lstm.call_masked({x}, {mask({1, 0, 1, 0, 1, 1, 1, 1})}, true); }) == 0);
}

TEST_CASE("fused LSTM and GRU give the per-step path's outputs and gradients", "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({3, 6, 4}, 2);
  const std::vector<Mode> modes = {{},
                                   {.return_sequences = true},
                                   {.return_state = true},
                                   {.return_sequences = true, .return_state = true, .go_backwards = true},
                                   {.go_backwards = true}};
  for (Kind k : {Kind::Lstm, Kind::GruAfter, Kind::GruBefore})
    for (const Mode& m : modes) {
      INFO(kind_name(k) << ", return_sequences " << m.return_sequences << ", return_state " << m.return_state
                        << ", go_backwards " << m.go_backwards);
      auto [fused, generic] = twins(k, m, x);
      // From zero states, and from given initial states (whose gradients are checked too).
      check_close(outputs_and_grads(*fused, x, {}), outputs_and_grads(*generic, x, {}), 2e-5);
      std::vector<Tensor> states;
      for (int64_t i = 0; i < n_states(k); ++i) states.push_back(seq_input({3, 5}, 10 + static_cast<uint32_t>(i)));
      int fused_ops = 0;
      std::vector<Tensor> got;
      fused_ops = fused_runs([&] { got = outputs_and_grads(*fused, x, states); });
      CHECK(fused_ops == 1);
      check_close(got, outputs_and_grads(*generic, x, states), 2e-5);
    }
}

TEST_CASE("fused layers carry stateful states across batches as the per-step path does", "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({2, 8, 3}, 4);
  const Tensor first = ops::slice(x, {0, 0, 0}, {2, 4, 3}), second = ops::slice(x, {0, 4, 0}, {2, 4, 3});
  for (Kind k : {Kind::Lstm, Kind::GruAfter, Kind::GruBefore}) {
    INFO(kind_name(k));
    auto [fused, generic] = twins(k, {.return_sequences = true, .stateful = true}, first);
    for (const Tensor& batch : {first, second, first}) CHECK(max_abs_diff((*fused)(batch), (*generic)(batch)) < 1e-5);
    REQUIRE(fused->states().size() == generic->states().size());
    for (size_t i = 0; i < fused->states().size(); ++i)
      CHECK(max_abs_diff(fused->states()[i].value(), generic->states()[i].value()) < 1e-5);
    fused->reset_states();
    generic->reset_states();
    CHECK(max_abs_diff((*fused)(second), (*generic)(second)) < 1e-5);
  }
}

TEST_CASE("fused layers apply input dropout with the per-step path's seeded mask", "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({3, 5, 4}, 5);
  for (Kind k : {Kind::Lstm, Kind::GruAfter}) {
    INFO(kind_name(k));
    auto [fused, generic] = twins(k, {.return_sequences = true, .dropout = 0.4}, x);
    const std::vector<Tensor> a = outputs_and_grads(*fused, x, {}, true), b = outputs_and_grads(*generic, x, {}, true);
    check_close(a, b, 2e-5);
    CHECK(max_abs_diff(a[0], (*fused)(x, false)) > 1e-3);  // training dropped some inputs
  }
}

TEST_CASE("a traced fused LSTM training step gives eager's bits", "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({4, 5, 3}, 6);
  layers::LSTM lstm(6, {.return_sequences = true});
  lstm(x);
  auto grads = [&](const Tensor& in) {
    GradientTape tape;
    Tensor y = lstm(in, true);
    Tensor loss = ops::reduce_mean(y * y);
    std::vector<Tensor> out{loss};
    for (const Tensor& g : tape.gradient(loss, lstm.trainable_weights())) out.push_back(g);
    return out;
  };
  const std::vector<Tensor> eager = grads(x);
  auto step = ember::function([&](const Tensor& in) { return grads(in); });
  int fused = 0;
  std::vector<Tensor> traced;
  for (int i = 0; i < 2; ++i) fused += fused_runs([&] { traced = step(x); });
  CHECK(fused >= 1);
  CHECK(step.tracing_count() == 1);
  REQUIRE(traced.size() == eager.size());
  for (size_t i = 0; i < eager.size(); ++i) CHECK(max_abs_diff(traced[i], eager[i]) == 0);
}

TEST_CASE("fused layers compute in float32 under mixed precision", "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({2, 5, 3}, 7);
  for (const char* policy : {"mixed_bfloat16", "mixed_float16"})
    for (Kind k : {Kind::Lstm, Kind::GruAfter}) {
      INFO(policy << ", " << kind_name(k));
      auto mixed = make_layer(k, {.return_sequences = true, .dtype = policy}, false);
      auto full = make_layer(k, {.return_sequences = true}, false);
      (*mixed)(x);
      (*full)(x);
      mixed->set_weights(full->get_weights());
      Tensor y;
      CHECK(fused_runs([&] { y = (*mixed)(x); }) == 1);
      CHECK(y.dtype() == (std::string(policy) == "mixed_bfloat16" ? DType::BFloat16 : DType::Float16));
      CHECK(max_abs_diff(y, (*full)(x)) < 3e-2);
      // The gradients reach the float32 weights.
      GradientTape tape;
      Tensor loss = ops::reduce_sum(ops::cast((*mixed)(x, true), DType::Float32));
      for (const Tensor& g : tape.gradient(loss, mixed->trainable_weights())) {
        REQUIRE(g.defined());
        CHECK(g.dtype() == DType::Float32);
      }
    }
}

TEST_CASE("the sequence ops reject bad shapes and dtypes naming the op and what they got", "[ops][rnn_fused]") {
  const Tensor x = seq_input({2, 3, 4}, 8), h = seq_input({2, 5}, 9), k = seq_input({4, 20}, 10),
               r = seq_input({5, 20}, 11), b = seq_input({20}, 12);
  CHECK(ops::lstm_sequence(x, h, h, k, r, b)[0].shape() == Shape{2, 3, 5});
  CHECK_THAT(invalid_argument_message([&] { ops::lstm_sequence(x, h, h, k, r, seq_input({16}, 1)); }),
             Catch::Contains("lstm_sequence") && Catch::Contains("bias (16,)") && Catch::Contains("bias (20,)"));
  CHECK_THAT(invalid_argument_message([&] { ops::lstm_sequence(seq_input({2, 0, 4}, 1), h, h, k, r, b); }),
             Catch::Contains("steps > 0"));
  CHECK_THAT(invalid_argument_message([&] { ops::lstm_sequence(ops::cast(x, DType::Float16), h, h, k, r, b); }),
             Catch::Contains("float32 or float64") && Catch::Contains("float16"));
  CHECK_THAT(invalid_argument_message([&] {
               ops::gru_sequence(x, h, seq_input({4, 15}, 1), seq_input({5, 15}, 2), seq_input({15}, 3), true);
             }),
             Catch::Contains("gru_sequence") && Catch::Contains("bias (2, 15)") && Catch::Contains("bias (15,)"));
  CHECK(ops::gru_sequence(x, h, seq_input({4, 15}, 1), seq_input({5, 15}, 2), seq_input({15}, 3), false)[1].shape() ==
        Shape{2, 5});
  // No second derivatives through the fused backward: refused, not silently wrong.
  const Tensor x64 = ops::cast(x, DType::Float64);
  GradientTape outer;
  outer.watch(x64);
  Tensor dx;
  {
    GradientTape inner;
    inner.watch(x64);
    auto c = [](const Tensor& t) { return ops::cast(t, DType::Float64); };
    Tensor y = ops::lstm_sequence(x64, c(h), c(h), c(k), c(r), c(b))[1];
    CHECK_THROWS_AS(dx = inner.gradient(ops::reduce_sum(y), x64), Unimplemented);
  }
}

// [cuda]: cuDNN's kernels against the per-step path on the GPU, and against the CPU's fused op.
TEST_CASE("on a GPU, LSTM and GRU(reset_after) take cuDNN and match the per-step path", "[layers][rnn][rnn_fused][cuda]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no GPU: skipped");
    return;
  }
  DeviceScope on(Device::cuda(0));
  const Tensor x = seq_input({3, 7, 4}, 13).to(Device::cuda(0));
  for (Kind k : {Kind::Lstm, Kind::GruAfter})
    for (const Mode& m : {Mode{}, Mode{.return_sequences = true, .return_state = true, .go_backwards = true}}) {
      INFO(kind_name(k) << ", return_sequences " << m.return_sequences);
      auto [fused, generic] = twins(k, m, x);
      std::vector<Tensor> got;
      CHECK(fused_runs([&] { got = outputs_and_grads(*fused, x, {}); }) == 1);
      check_close(got, outputs_and_grads(*generic, x, {}), 1e-3);  // TF32 products on the GPU
    }
  // GRU without reset_after is not cuDNN's: the per-step path on a GPU.
  layers::GRU before(4, {.reset_after = false});
  CHECK(fused_runs([&] { before(x); }) == 0);
}
