#pragma once
// Helpers of the tests of LSTM and GRU on their whole-sequence ops (tests/layers/test_rnn_fused*.cpp): counting
// the ops a call runs, the layers in each mode, and a fused layer against its unrolled (per-step) twin.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

namespace ember::testing {

inline int g_fused_runs = 0;
inline void count_fused(const OpRecord& r) { g_fused_runs += r.op == OpId::lstm_sequence || r.op == OpId::gru_sequence; }

// How many whole-sequence ops f ran.
template <class F>
int fused_runs(F&& f) {
  g_fused_runs = 0;
  const int hook = add_op_hook(&count_fused);
  f();
  remove_op_hook(hook);
  return g_fused_runs;
}

inline Tensor seq_input(const Shape& shape, uint32_t seed, DType dt = DType::Float32) {
  return make(uniform_in(shape.num_elements(), -1, 1, seed), shape, dt);
}

enum class Kind { Lstm, GruAfter, GruBefore };
inline const char* kind_name(Kind k) { return k == Kind::Lstm ? "LSTM" : k == Kind::GruAfter ? "GRU reset_after" : "GRU reset_before"; }

struct Mode {
  bool return_sequences = false, return_state = false, go_backwards = false, stateful = false;
  bool zero_output_for_mask = false;
  double dropout = 0;
  std::string dtype{};
};

inline std::shared_ptr<layers::RNN> make_layer(Kind k, const Mode& m, bool unroll) {
  if (k == Kind::Lstm)
    return std::make_shared<layers::LSTM>(
        5, layers::LSTMOptions{.bias_initializer = "random_normal", .dropout = m.dropout, .seed = 3,
                               .return_sequences = m.return_sequences, .return_state = m.return_state,
                               .go_backwards = m.go_backwards, .stateful = m.stateful, .unroll = unroll,
                               .zero_output_for_mask = m.zero_output_for_mask, .dtype = m.dtype});
  return std::make_shared<layers::GRU>(
      5, layers::GRUOptions{.bias_initializer = "random_normal", .dropout = m.dropout, .reset_after = k == Kind::GruAfter,
                            .seed = 3, .return_sequences = m.return_sequences, .return_state = m.return_state,
                            .go_backwards = m.go_backwards, .stateful = m.stateful, .unroll = unroll,
                            .zero_output_for_mask = m.zero_output_for_mask, .dtype = m.dtype});
}

// The outputs of layer({x, states...}) (with x's mask when given) and the gradients of sum(outputs * w) with
// respect to x, the initial states and the weights (kernel, recurrent_kernel, bias).
inline std::vector<Tensor> outputs_and_grads(Layer& layer, const Tensor& x, const std::vector<Tensor>& states,
                                             bool training = true, const Tensor& mask = Tensor()) {
  GradientTape tape;
  tape.watch(x);
  for (const Tensor& s : states) tape.watch(s);
  std::vector<Tensor> inputs{x};
  inputs.insert(inputs.end(), states.begin(), states.end());
  std::vector<Tensor> out = mask.defined() ? layer.call_masked(inputs, {mask}, training) : layer.call_outputs(inputs, training);
  Tensor target = Tensor::scalar_of(0, out[0].dtype());
  for (size_t i = 0; i < out.size(); ++i)
    target = target + ops::reduce_sum(out[i] * seq_input(out[i].shape(), 90 + static_cast<uint32_t>(i), out[i].dtype()));
  std::vector<Tensor> sources = inputs;
  for (const Variable& v : layer.trainable_weights()) sources.push_back(v.value());
  std::vector<Tensor> result = out;
  for (const Tensor& g : tape.gradient(target, sources)) result.push_back(g);
  return result;
}

inline void check_close(const std::vector<Tensor>& fused, const std::vector<Tensor>& generic, double tol) {
  REQUIRE(fused.size() == generic.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    INFO("tensor " << i << " (the outputs, then the gradients of x, the initial states and the weights)");
    REQUIRE(fused[i].defined());
    CHECK(fused[i].shape() == generic[i].shape());
    CHECK(max_abs_diff(fused[i], generic[i]) < tol);
  }
}

// A fused layer and its unrolled (per-step) twin with the same weights, built on x.
inline std::pair<std::shared_ptr<layers::RNN>, std::shared_ptr<layers::RNN>> twins(Kind k, const Mode& m, const Tensor& x) {
  auto fused = make_layer(k, m, false), generic = make_layer(k, m, true);
  (*fused)(x);
  (*generic)(x);
  generic->set_weights(fused->get_weights());
  if (m.stateful) {
    fused->reset_states();
    generic->reset_states();
  }
  return {fused, generic};
}

inline int64_t n_states(Kind k) { return k == Kind::Lstm ? 2 : 1; }

// What f's InvalidArgument says, or "(no InvalidArgument)".
inline std::string invalid_argument_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}


}  // namespace ember::testing
