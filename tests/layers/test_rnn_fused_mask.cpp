// LSTM and GRU with a mask on their whole-sequence ops: a strictly right-padded mask with no empty sequence is
// each sequence's length (Keras's cuDNN condition), any other mask takes the per-step path. On the CPU the fused
// path gives the per-step path's numbers (Keras's step loop: padded steps repeat the last valid output), so an
// unrolled twin with the same options is the reference; on a GPU it is Keras's cuDNN path (padded steps are
// zeros), whose reference is the twin with zero_output_for_mask. The ops' lengths themselves are checked against
// shorter sequences, and their bad lengths are refused by name.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "framework/ember.h"
#include "framework/ops/recurrent.h"
#include "tests/support/rnn_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

// A (batch, steps) bool mask whose row b is lengths[b] ones, then zeros.
Tensor right_padded(const std::vector<int64_t>& lengths, int64_t steps) {
  std::vector<double> m;
  for (int64_t n : lengths)
    for (int64_t t = 0; t < steps; ++t) m.push_back(t < n ? 1.0 : 0.0);
  return ops::cast(make(m, {static_cast<int64_t>(lengths.size()), steps}, DType::Float32), DType::Bool);
}

Tensor lengths_of(const std::vector<int32_t>& l) {
  return Tensor::from_vector<int32_t>(l, {static_cast<int64_t>(l.size())});
}

}  // namespace

TEST_CASE("a right-padded mask takes the whole-sequence op, other masks the per-step path", "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({3, 6, 4}, 21);
  for (Kind k : {Kind::Lstm, Kind::GruAfter, Kind::GruBefore}) {
    INFO(kind_name(k));
    auto layer = make_layer(k, {}, false);
    (*layer)(x);  // builds
    auto runs = [&](const Tensor& mask) { return fused_runs([&] { layer->call_masked({x}, {mask}, true); }); };
    CHECK(runs(right_padded({6, 3, 1}, 6)) == 1);
    CHECK(runs(right_padded({6, 6, 6}, 6)) == 1);
    // A gap inside a sequence, and an empty sequence (cuDNN refuses those, so Keras steps).
    const Tensor gap =
        ops::cast(make({1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0}, {3, 6}, DType::Float32), DType::Bool);
    CHECK(runs(gap) == 0);
    CHECK(runs(right_padded({6, 3, 0}, 6)) == 0);
  }
}

TEST_CASE("fused LSTM and GRU with a right-padded mask give the per-step path's outputs and gradients",
          "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({3, 6, 4}, 22);
  const Tensor mask = right_padded({6, 3, 1}, 6);
  const std::vector<Mode> modes = {{},
                                   {.return_sequences = true},
                                   {.return_state = true},
                                   {.return_sequences = true, .return_state = true, .go_backwards = true},
                                   {.go_backwards = true},
                                   {.return_sequences = true, .go_backwards = true},
                                   {.return_sequences = true, .return_state = true, .zero_output_for_mask = true},
                                   {.return_sequences = true, .go_backwards = true, .zero_output_for_mask = true}};
  for (Kind k : {Kind::Lstm, Kind::GruAfter, Kind::GruBefore})
    for (Mode m : modes) {
      INFO(kind_name(k) << ", return_sequences " << m.return_sequences << ", return_state " << m.return_state
                        << ", go_backwards " << m.go_backwards << ", zero_output_for_mask " << m.zero_output_for_mask);
      auto fused = make_layer(k, m, false), generic = make_layer(k, m, true);
      (*fused)(x);
      (*generic)(x);
      generic->set_weights(fused->get_weights());
      std::vector<Tensor> states;
      for (int64_t i = 0; i < n_states(k); ++i) states.push_back(seq_input({3, 5}, 30 + static_cast<uint32_t>(i)));
      for (const std::vector<Tensor>& initial : {std::vector<Tensor>{}, states}) {
        std::vector<Tensor> got;
        CHECK(fused_runs([&] { got = outputs_and_grads(*fused, x, initial, true, mask); }) == 1);
        check_close(got, outputs_and_grads(*generic, x, initial, true, mask), 2e-5);
      }
    }
}

TEST_CASE("on the CPU the fused path's padded steps repeat each sequence's last valid output",
          "[layers][rnn][rnn_fused]") {
  // Keras on a CPU runs its step loop, whose masked steps carry the last valid output over (zeros with
  // zero_output_for_mask); cuDNN's zeros are the GPU's alone.
  const Tensor x = seq_input({2, 5, 3}, 23);
  const Tensor mask = right_padded({5, 2}, 5);
  for (Kind k : {Kind::Lstm, Kind::GruAfter, Kind::GruBefore})
    for (bool zero : {false, true}) {
      INFO(kind_name(k) << ", zero_output_for_mask " << zero);
      auto [fused, generic] =
          twins(k, {.return_sequences = true, .return_state = true, .zero_output_for_mask = zero}, x);
      std::vector<Tensor> a, b = generic->call_masked({x}, {mask}, false);
      CHECK(fused_runs([&] { a = fused->call_masked({x}, {mask}, false); }) == 1);
      const Tensor padded = ops::slice(a[0], {1, 2, 0}, {1, 3, 5});
      const Tensor last = ops::slice(a[0], {1, 1, 0}, {1, 1, 5});
      CHECK(max_abs_diff(padded, zero ? ops::zeros_like(padded) : ops::broadcast_to(last, {1, 3, 5})) == 0);
      CHECK(max_abs_diff(ops::reshape(last, {1, 5}), ops::slice(a[1], {1, 0}, {1, 5})) == 0);  // the final h
      for (size_t i = 0; i < a.size(); ++i) CHECK(max_abs_diff(a[i], b[i]) < 1e-5);
    }
}

TEST_CASE("a mask that is not right-padded gives the per-step path's numbers", "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({2, 5, 3}, 24);
  const Tensor gap = ops::cast(make({1, 0, 1, 1, 0, 1, 1, 1, 1, 1}, {2, 5}, DType::Float32), DType::Bool);
  for (Kind k : {Kind::Lstm, Kind::GruAfter}) {
    INFO(kind_name(k));
    auto [fused, generic] = twins(k, {.return_sequences = true, .return_state = true}, x);
    std::vector<Tensor> got;
    CHECK(fused_runs([&] { got = outputs_and_grads(*fused, x, {}, true, gap); }) == 0);
    check_close(got, outputs_and_grads(*generic, x, {}, true, gap), 1e-12);
  }
}

TEST_CASE("Embedding(mask_zero) into LSTM takes the fused op with the padded lengths", "[layers][rnn][rnn_fused]") {
  // Token ids, 0 the padding at the end of each sequence: lengths 6, 4, 2.
  const Tensor ids = Tensor::from_vector<int32_t>({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 0, 0, 5, 8, 0, 0, 0, 0}, {3, 6});
  for (bool zero : {false, true}) {
    INFO("zero_output_for_mask " << zero);
    auto model = [zero](bool unroll) {
      return std::make_shared<Sequential>(std::vector<SequentialEntry>{
          layers::Input({6}, {.dtype = DType::Int32}), layers::Embedding(10, 4, {.mask_zero = true}),
          layers::LSTM(5, {.return_sequences = true, .unroll = unroll, .zero_output_for_mask = zero}),
          layers::LSTM(3, {.return_sequences = true, .unroll = unroll})});
    };
    auto fused = model(false), generic = model(true);
    generic->set_weights(fused->get_weights());
    Tensor y;
    // Both LSTMs: the second one's input carries the first's mask (return_sequences).
    CHECK(fused_runs([&] { y = (*fused)(ids); }) == 2);
    CHECK(y.shape() == Shape{3, 6, 3});
    CHECK(max_abs_diff(y, (*generic)(ids)) < 1e-5);
  }
}

TEST_CASE("Bidirectional LSTM with a right-padded mask: fused matches per-step", "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({3, 6, 4}, 25);
  const Tensor mask = right_padded({6, 4, 2}, 6);
  for (bool sequences : {true, false}) {
    INFO("return_sequences " << sequences);
    auto make_bi = [&](bool unroll) {
      return layers::Bidirectional(layers::LSTM(5, {.bias_initializer = "random_normal",
                                                    .return_sequences = sequences, .unroll = unroll}));
    };
    layers::Bidirectional fused = make_bi(false), generic = make_bi(true);
    fused(x);
    generic(x);
    generic.set_weights(fused.get_weights());
    std::vector<Tensor> got;
    CHECK(fused_runs([&] { got = outputs_and_grads(fused, x, {}, true, mask); }) == 2);
    check_close(got, outputs_and_grads(generic, x, {}, true, mask), 2e-5);
  }
}

TEST_CASE("a traced masked LSTM takes the path each call's mask permits, with eager's numbers",
          "[layers][rnn][rnn_fused]") {
  const Tensor x = seq_input({3, 5, 3}, 26);
  const Tensor padded = right_padded({5, 3, 1}, 5);
  const Tensor gap = ops::cast(make({1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {3, 5}, DType::Float32), DType::Bool);
  for (bool backwards : {true, false}) {
    INFO("go_backwards " << backwards);
    layers::LSTM lstm(4, {.return_sequences = true, .go_backwards = backwards});
    layers::LSTM per_step(4, {.return_sequences = true, .go_backwards = backwards, .unroll = true});
    lstm(x);
    per_step(x);
    per_step.set_weights(lstm.get_weights());
    auto grads = [&](const Tensor& in, const Tensor& mask) {
      GradientTape tape;
      Tensor y = lstm.call_masked({in}, {mask}, true).at(0);
      Tensor loss = ops::reduce_mean(y * y);
      std::vector<Tensor> out{y, loss};
      for (const Tensor& g : tape.gradient(loss, lstm.trainable_weights())) out.push_back(g);
      return out;
    };
    auto step = ember::function([&](const Tensor& in, const Tensor& mask) { return grads(in, mask); });
    // The first call traces (both branches); the later ones replay the graph, running the branch the mask takes.
    bool traced_once = false;
    for (const auto& [mask, fused_ops] : std::vector<std::pair<Tensor, int>>{{padded, 1}, {gap, 0}, {padded, 1}}) {
      const std::vector<Tensor> eager = grads(x, mask);
      std::vector<Tensor> traced;
      const int ran = fused_runs([&] { traced = step(x, mask); });
      if (traced_once) CHECK(ran == fused_ops);
      traced_once = true;
      REQUIRE(traced.size() == eager.size());
      for (size_t i = 0; i < eager.size(); ++i) CHECK(max_abs_diff(traced[i], eager[i]) < 1e-6);
      CHECK(max_abs_diff(traced[0], per_step.call_masked({x}, {mask}, true).at(0)) < 1e-5);
    }
    CHECK(step.tracing_count() == 1);
  }
}

TEST_CASE("sequence ops with lengths run each sequence over its own steps", "[ops][rnn_fused]") {
  // float64: each sequence against the op run on that sequence alone, cut to its length.
  const int64_t steps = 5;
  const std::vector<int32_t> lengths = {5, 2, 0};
  auto in = [](const Shape& s, uint32_t seed) { return seq_input(s, seed, DType::Float64); };
  const Tensor x = in({3, steps, 4}, 40), h0 = in({3, 5}, 41), c0 = in({3, 5}, 42);
  struct Case {
    const char* name;
    int gates;
    bool lstm, reset_after;
  };
  for (const Case& c : {Case{"LSTM", 4, true, false}, Case{"GRU reset_after", 3, false, true},
                        Case{"GRU reset_before", 3, false, false}}) {
    INFO(c.name);
    const Tensor k = in({4, c.gates * 5}, 43), r = in({5, c.gates * 5}, 44);
    const Tensor b = c.reset_after ? in({2, c.gates * 5}, 45) : in({c.gates * 5}, 45);
    auto run = [&](const Tensor& xs, const Tensor& h, const Tensor& cc, const Tensor& l) {
      std::vector<Tensor> out = c.lstm ? ops::lstm_sequence(xs, h, cc, k, r, b, l)
                                       : ops::gru_sequence(xs, h, k, r, b, c.reset_after, l);
      out.pop_back();  // the saved state
      return out;
    };
    const std::vector<Tensor> all = run(x, h0, c0, lengths_of(lengths));
    for (int64_t s = 0; s < 3; ++s) {
      INFO("sequence " << s);
      const int64_t n = lengths[static_cast<size_t>(s)];
      const Tensor hs = ops::slice(h0, {s, 0}, {1, 5}), cs = ops::slice(c0, {s, 0}, {1, 5});
      std::vector<Tensor> want{ops::zeros({1, steps, 5}, DType::Float64), hs, cs};
      if (n > 0) {
        const std::vector<Tensor> alone = run(ops::slice(x, {s, 0, 0}, {1, n, 4}), hs, cs, Tensor());
        want[0] = ops::pad(alone[0], {{0, 0}, {0, steps - n}, {0, 0}});
        for (size_t i = 1; i < alone.size(); ++i) want[i] = alone[i];
      }
      CHECK(max_abs_diff(ops::slice(all[0], {s, 0, 0}, {1, steps, 5}), want[0]) < 1e-12);
      for (size_t i = 1; i < all.size(); ++i) CHECK(max_abs_diff(ops::slice(all[i], {s, 0}, {1, 5}), want[i]) < 1e-12);
    }
  }
}

TEST_CASE("bad sequence_lengths are InvalidArgument naming the op", "[ops][rnn_fused]") {
  const Tensor x = seq_input({2, 3, 4}, 50), h = seq_input({2, 5}, 51), k = seq_input({4, 20}, 52),
               r = seq_input({5, 20}, 53), b = seq_input({20}, 54);
  const Tensor kg = seq_input({4, 15}, 55), rg = seq_input({5, 15}, 56), bg = seq_input({2, 15}, 57);
  auto lstm = [&](const Tensor& l) { return [&, l] { ops::lstm_sequence(x, h, h, k, r, b, l); }; };
  auto gru = [&](const Tensor& l) { return [&, l] { ops::gru_sequence(x, h, kg, rg, bg, true, l); }; };
  CHECK_THAT(invalid_argument_message(lstm(lengths_of({3, -1}))),
             Catch::Contains("lstm_sequence") && Catch::Contains("[0, 3]") && Catch::Contains("got -1"));
  CHECK_THAT(invalid_argument_message(gru(lengths_of({4, 1}))),
             Catch::Contains("gru_sequence") && Catch::Contains("[0, 3]") && Catch::Contains("got 4"));
  CHECK_THAT(invalid_argument_message(lstm(Tensor::from_vector<int64_t>({3, 1}, {2}))),
             Catch::Contains("lstm_sequence") && Catch::Contains("int32") && Catch::Contains("int64"));
  CHECK_THAT(invalid_argument_message(gru(lengths_of({3, 1, 2}))),
             Catch::Contains("gru_sequence") && Catch::Contains("(2,)") && Catch::Contains("(3,)"));
  CHECK_THAT(invalid_argument_message(lstm(Tensor::from_vector<int32_t>({3, 1}, {2, 1}))),
             Catch::Contains("lstm_sequence") && Catch::Contains("(2,)") && Catch::Contains("(2, 1)"));
  CHECK_THAT(invalid_argument_message(gru(Tensor::from_vector<float>({3, 1}, {2}))),
             Catch::Contains("gru_sequence") && Catch::Contains("int32") && Catch::Contains("float32"));
  // The backward checks them too.
  const std::vector<Tensor> f = ops::lstm_sequence(x, h, h, k, r, b, lengths_of({3, 1}));
  CHECK_THAT(invalid_argument_message([&] {
               ops::lstm_sequence_grad(x, h, h, k, r, b, f[0], f[3], f[0], h, h, lengths_of({3, 7}));
             }),
             Catch::Contains("lstm_sequence_grad") && Catch::Contains("got 7"));
  const std::vector<Tensor> g = ops::gru_sequence(x, h, kg, rg, bg, true, lengths_of({3, 1}));
  CHECK_THAT(invalid_argument_message([&] {
               ops::gru_sequence_grad(x, h, kg, rg, bg, g[0], g[2], g[0], h, true, lengths_of({3}));
             }),
             Catch::Contains("gru_sequence_grad") && Catch::Contains("(1,)"));
}

// [cuda]: cuDNN's kernels with sequence lengths against the per-step path on the GPU. As Keras's cuDNN path, the
// padded steps of a forward return_sequences output are zeros: the per-step path's zero_output_for_mask.
TEST_CASE("on a GPU, a right-padded mask takes cuDNN with sequence lengths and matches the per-step path",
          "[layers][rnn][rnn_fused][cuda]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no GPU: skipped");
    return;
  }
  DeviceScope on(Device::cuda(0));
  const Tensor x = seq_input({3, 7, 4}, 27).to(Device::cuda(0));
  const Tensor mask = right_padded({7, 4, 1}, 7).to(Device::cuda(0));
  for (Kind k : {Kind::Lstm, Kind::GruAfter})
    for (Mode m : {Mode{}, Mode{.return_sequences = true, .return_state = true, .go_backwards = true},
                   Mode{.return_sequences = true}}) {
      INFO(kind_name(k) << ", return_sequences " << m.return_sequences << ", go_backwards " << m.go_backwards);
      auto fused = make_layer(k, m, false);
      m.zero_output_for_mask = m.return_sequences;
      auto generic = make_layer(k, m, true);
      (*fused)(x);
      (*generic)(x);
      generic->set_weights(fused->get_weights());
      std::vector<Tensor> got;
      CHECK(fused_runs([&] { got = outputs_and_grads(*fused, x, {}, true, mask); }) == 1);
      check_close(got, outputs_and_grads(*generic, x, {}, true, mask), 1e-3);  // TF32 products on the GPU
      if (m.return_sequences && !m.go_backwards) {  // sequence 2 (length 1): its steps 1 to 6 are zeros
        const Tensor padded = ops::slice(got[0], {2, 1, 0}, {1, 6, 5});
        CHECK(max_abs_diff(padded, ops::zeros_like(padded)) == 0);
      }
    }
}
