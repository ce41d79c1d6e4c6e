// The recurrent layers (SimpleRNN, LSTM, GRU, RNN over a cell, and the cells on their own): conformance,
// Keras's weight names and shapes, time order, states (initial, returned, stateful), dropout and errors.
// Keras's numbers themselves are checked by tests/layers/test_keras_parity.cpp's fixtures.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

// A user's cell: h = tanh(x @ w + h_prev) with one weight, as in Keras's "writing your own cell" example.
struct MinimalCell : layers::RNNCell {
  EMBER_LAYER(MinimalCell)
  explicit MinimalCell(int64_t units, const std::string& name = "") : RNNCell("minimal_cell", {.name = name}), units_(units) {}
  static LayerPtr from_config(const nlohmann::json& c) {
    return std::make_shared<MinimalCell>(c.at("units").get<int64_t>(), c.at("name").get<std::string>());
  }
  nlohmann::json get_config() const override {
    nlohmann::json c = base_config();
    c["units"] = units_;
    return c;
  }
  void build(const Shape& s) override { w_ = add_weight("kernel", {s[1], units_}, "glorot_uniform"); }
  std::vector<int64_t> state_size() const override { return {units_}; }
  std::vector<Tensor> step(const Tensor& x, const std::vector<Tensor>& states, bool) override {
    Tensor h = ops::tanh(ops::matmul(x, read(w_)) + states[0]);
    return {h, h};
  }
  int64_t units_;
  Variable w_;
};

EMBER_REGISTER_LAYER(MinimalCell);

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

Tensor seq_input(const Shape& shape, uint32_t seed) { return make(uniform_in(shape.num_elements(), -1, 1, seed), shape, DType::Float32); }

// The time slice t of a (batch, time, features) tensor, as (batch, features).
Tensor at_time(const Tensor& x, int64_t t) {
  const Shape& s = x.shape();
  return ops::reshape(ops::slice(x, {0, t, 0}, {s[0], 1, s[2]}), {s[0], s[2]});
}

}  // namespace

TEST_CASE("recurrent layers pass the layer conformance check", "[layers][rnn]") {
  const Shape seq{2, 4, 3};
  run_layer_test({.what = "SimpleRNN(5)", .make = [] { return std::make_shared<layers::SimpleRNN>(5); },
                  .input_shapes = {seq}, .trainable_weights = 3, .weight_shapes = {{3, 5}, {5, 5}, {5}}});
  run_layer_test({.what = "SimpleRNN(4, relu, return_sequences, no bias)",
                  .make = [] {
                    return std::make_shared<layers::SimpleRNN>(
                        4, layers::SimpleRNNOptions{.activation = "relu", .use_bias = false, .return_sequences = true});
                  },
                  .input_shapes = {seq}, .trainable_weights = 2, .weight_shapes = {{3, 4}, {4, 4}}});
  run_layer_test({.what = "LSTM(4)", .make = [] { return std::make_shared<layers::LSTM>(4); }, .input_shapes = {seq},
                  .trainable_weights = 3, .weight_shapes = {{3, 16}, {4, 16}, {16}}});
  run_layer_test({.what = "LSTM(3, return_sequences, go_backwards)",
                  .make = [] {
                    return std::make_shared<layers::LSTM>(3, layers::LSTMOptions{.return_sequences = true, .go_backwards = true});
                  },
                  .input_shapes = {seq}, .trainable_weights = 3, .weight_shapes = {{3, 12}, {3, 12}, {12}}});
  run_layer_test({.what = "GRU(4) reset_after", .make = [] { return std::make_shared<layers::GRU>(4); },
                  .input_shapes = {seq}, .trainable_weights = 3, .weight_shapes = {{3, 12}, {4, 12}, {2, 12}}});
  run_layer_test({.what = "GRU(4) reset_after=false, return_sequences",
                  .make = [] {
                    return std::make_shared<layers::GRU>(4, layers::GRUOptions{.reset_after = false, .return_sequences = true});
                  },
                  .input_shapes = {seq}, .trainable_weights = 3, .weight_shapes = {{3, 12}, {4, 12}, {12}}});
  run_layer_test({.what = "RNN(MinimalCell(3))",
                  .make = [] { return std::make_shared<layers::RNN>(MinimalCell(3)); }, .input_shapes = {seq},
                  .trainable_weights = 1, .weight_shapes = {{3, 3}}});
  // Initial states as further inputs: their gradients are checked too.
  run_layer_test({.what = "LSTM(3) from initial states",
                  .make = [] { return std::make_shared<layers::LSTM>(3); }, .input_shapes = {seq, {2, 3}, {2, 3}},
                  .trainable_weights = 3});
  run_layer_test({.what = "GRU(3) from an initial state",
                  .make = [] { return std::make_shared<layers::GRU>(3); }, .input_shapes = {seq, {2, 3}},
                  .trainable_weights = 3});
  // The cells on their own: {input, states...} -> output.
  run_layer_test({.what = "SimpleRNNCell(4)", .make = [] { return std::make_shared<layers::SimpleRNNCell>(4); },
                  .input_shapes = {{2, 3}, {2, 4}}, .trainable_weights = 3});
  run_layer_test({.what = "LSTMCell(4)", .make = [] { return std::make_shared<layers::LSTMCell>(4); },
                  .input_shapes = {{2, 3}, {2, 4}, {2, 4}}, .trainable_weights = 3});
  run_layer_test({.what = "GRUCell(4)", .make = [] { return std::make_shared<layers::GRUCell>(4); },
                  .input_shapes = {{2, 3}, {2, 4}}, .trainable_weights = 3});
  run_layer_test({.what = "GRUCell(4) reset_after=false, from zero states",
                  .make = [] { return std::make_shared<layers::GRUCell>(4, layers::GRUCellOptions{.reset_after = false}); },
                  .input_shapes = {{2, 3}}, .trainable_weights = 3});
}

TEST_CASE("recurrent layers name and shape their weights as Keras does", "[layers][rnn]") {
  backend::clear_session();
  layers::LSTM lstm(4);
  layers::GRU gru(2, {.reset_after = false});
  layers::SimpleRNN simple(3);
  Tensor x = seq_input({2, 5, 3}, 1);
  lstm(x);
  gru(x);
  simple(x);
  auto names = [](const Layer& l) {
    std::vector<std::string> out;
    for (const Variable& v : l.weights()) out.push_back(v.name());
    return out;
  };
  CHECK(names(lstm) == std::vector<std::string>{"lstm/lstm_cell/kernel", "lstm/lstm_cell/recurrent_kernel", "lstm/lstm_cell/bias"});
  CHECK(names(gru) == std::vector<std::string>{"gru/gru_cell/kernel", "gru/gru_cell/recurrent_kernel", "gru/gru_cell/bias"});
  CHECK(names(simple) ==
        std::vector<std::string>{"simple_rnn/simple_rnn_cell/kernel", "simple_rnn/simple_rnn_cell/recurrent_kernel",
                                 "simple_rnn/simple_rnn_cell/bias"});
  CHECK(gru.weights()[2].shape() == Shape{6});
  CHECK(lstm.count_params() == 3 * 16 + 4 * 16 + 16);
  // unit_forget_bias: the forget gate's slice (the second of i, f, c, o) starts at one, the others at zero.
  std::vector<double> b = values_as_double(lstm.lstm_cell().bias());
  for (int i = 0; i < 16; ++i) CHECK(b[i] == (i >= 4 && i < 8 ? 1.0 : 0.0));
  // The orthogonal recurrent kernel of a SimpleRNN: R^T R = I.
  Tensor r = simple.simple_rnn_cell().recurrent_kernel();
  check_tensor(ops::matmul(ops::transpose(r), r), DType::Float32, {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}, 1e-5);
  // A user's cell inside RNN takes the RNN's scope too.
  layers::RNN rnn(MinimalCell(2));
  rnn(x);
  CHECK(names(rnn) == std::vector<std::string>{"rnn/minimal_cell/kernel"});
}

TEST_CASE("an LSTM computes Keras's gates step by step", "[layers][rnn]") {
  // A hand-written LSTM (i, f, c, o) over the layer's own weights.
  layers::LSTM lstm(3, {.return_sequences = true});
  Tensor x = seq_input({2, 4, 5}, 3);
  Tensor y = lstm(x);
  const Tensor k = lstm.lstm_cell().kernel(), r = lstm.lstm_cell().recurrent_kernel();
  Variable(lstm.lstm_cell().bias()).assign(seq_input({12}, 4));
  y = lstm(x);
  Tensor h = ops::zeros({2, 3}), c = ops::zeros({2, 3});
  for (int64_t t = 0; t < 4; ++t) {
    Tensor z = ops::matmul(at_time(x, t), k) + ops::matmul(h, r) + lstm.lstm_cell().bias().value();
    std::vector<Tensor> g = ops::split(z, 4, 1);
    c = ops::sigmoid(g[1]) * c + ops::sigmoid(g[0]) * ops::tanh(g[2]);
    h = ops::sigmoid(g[3]) * ops::tanh(c);
    CHECK(max_abs_diff(at_time(y, t), h) < 1e-6);
  }
}

TEST_CASE("go_backwards reads the sequence last step first and returns outputs in that order", "[layers][rnn]") {
  for (bool sequences : {false, true}) {
    INFO("return_sequences " << sequences);
    layers::GRU forward(3, {.return_sequences = sequences});
    layers::GRU backward(3, {.return_sequences = sequences, .go_backwards = true});
    Tensor x = seq_input({2, 5, 4}, 5);
    forward(x);
    backward(x);
    backward.set_weights(forward.get_weights());
    // Reversing the input by hand gives the same outputs, in the same (processing) order, as Keras does.
    std::vector<Tensor> steps;
    for (int64_t t = 4; t >= 0; --t) steps.push_back(ops::reshape(at_time(x, t), {2, 1, 4}));
    Tensor reversed = ops::concat(steps, 1);
    CHECK(max_abs_diff(backward(x), forward(reversed)) == 0);
    CHECK(max_abs_diff(backward(x), forward(x)) > 1e-3);
  }
}

TEST_CASE("initial states and return_state continue a sequence", "[layers][rnn]") {
  Tensor x = seq_input({2, 6, 3}, 7);
  Tensor first = ops::slice(x, {0, 0, 0}, {2, 3, 3}), second = ops::slice(x, {0, 3, 0}, {2, 3, 3});
  layers::LSTM lstm(4, {.return_state = true});
  std::vector<Tensor> whole = lstm.call_outputs({x});
  REQUIRE(whole.size() == 3);  // output, h, c
  CHECK(whole[0].shape() == Shape{2, 4});
  CHECK(max_abs_diff(whole[0], whole[1]) == 0);  // an LSTM's output is its h
  // operator() returns the first output alone.
  CHECK(max_abs_diff(lstm(x), whole[0]) == 0);
  // The first half's final states, passed as the second half's initial states, give the whole run's.
  std::vector<Tensor> half = lstm.call_outputs({first});
  std::vector<Tensor> rest = lstm.call_outputs({second, half[1], half[2]});
  for (int i = 0; i < 3; ++i) CHECK(max_abs_diff(rest[i], whole[i]) < 1e-6);
  // Zero initial states are the default.
  CHECK(max_abs_diff(lstm({x, ops::zeros({2, 4}), ops::zeros({2, 4})}), whole[0]) == 0);

  layers::SimpleRNN simple(2, {.return_sequences = true, .return_state = true});
  std::vector<Tensor> s = simple.call_outputs({x});
  REQUIRE(s.size() == 2);
  CHECK(s[0].shape() == Shape{2, 6, 2});
  CHECK(max_abs_diff(at_time(s[0], 5), s[1]) == 0);
}

TEST_CASE("a stateful RNN carries its states across batches until reset_states", "[layers][rnn]") {
  Tensor x = seq_input({3, 8, 2}, 9);
  Tensor first = ops::slice(x, {0, 0, 0}, {3, 4, 2}), second = ops::slice(x, {0, 4, 0}, {3, 4, 2});
  for (const char* kind : {"SimpleRNN", "LSTM", "GRU"}) {
    INFO(kind);
    auto make = [&](bool stateful) -> std::shared_ptr<layers::RNN> {
      if (std::string(kind) == "SimpleRNN") return std::make_shared<layers::SimpleRNN>(3, layers::SimpleRNNOptions{.stateful = stateful});
      if (std::string(kind) == "LSTM") return std::make_shared<layers::LSTM>(3, layers::LSTMOptions{.stateful = stateful});
      return std::make_shared<layers::GRU>(3, layers::GRUOptions{.stateful = stateful});
    };
    auto plain = make(false), stateful = make(true);
    Tensor whole = (*plain)(x);
    (*stateful)(first);
    stateful->set_weights(plain->get_weights());
    stateful->reset_states();
    CHECK(max_abs_diff((*stateful)(first), (*plain)(first)) == 0);
    // The second batch continues from the first one's final states: the same as one call on the whole.
    CHECK(max_abs_diff((*stateful)(second), whole) < 1e-6);
    CHECK(stateful->states().size() == (std::string(kind) == "LSTM" ? 2u : 1u));
    CHECK(stateful->weights().size() == 3);  // the states are not weights
    stateful->reset_states();
    CHECK(max_abs_diff((*stateful)(second), (*plain)(second)) == 0);
    // The batch size is fixed by the first call.
    std::string msg = message_of([&] { (*stateful)(seq_input({2, 4, 2}, 1)); });
    CHECK_THAT(msg, Catch::Contains(stateful->name()) && Catch::Contains("(2, 4, 2)") && Catch::Contains("batch size 3"));
  }
}

TEST_CASE("recurrent dropout is active only when training, seeded, and fixed across time steps", "[layers][rnn]") {
  // Linear SimpleRNN without recurrence: each step's output is (x_t * mask) @ kernel. With the same input at
  // every step, one mask per sequence gives the same output at every step.
  Tensor row = seq_input({4, 1, 6}, 11);
  Tensor x = ops::concat({row, row, row, row, row}, 1);  // (4, 5, 6)
  layers::SimpleRNNOptions o{.activation = "linear", .use_bias = false, .recurrent_initializer = "zeros",
                             .dropout = 0.5, .seed = 3, .return_sequences = true};
  layers::SimpleRNN a(6, o), b(6, o);
  a(x);
  b(x);
  std::vector<double> eye(36, 0.0);
  for (int i = 0; i < 6; ++i) eye[i * 7] = 1;
  for (layers::SimpleRNN* l : {&a, &b}) Variable(l->simple_rnn_cell().kernel()).assign(make(eye, {6, 6}, DType::Float32));
  Tensor clean = a(x, false);
  CHECK(max_abs_diff(clean, x) == 0);  // inference: no dropout
  Tensor ya = a(x, true), yb = b(x, true);
  CHECK(max_abs_diff(ya, yb) == 0);  // the same seed draws the same masks
  CHECK(max_abs_diff(ya, x) > 0.1);
  for (int64_t t = 1; t < 5; ++t) CHECK(max_abs_diff(at_time(ya, t), at_time(ya, 0)) == 0);
  // Kept values are scaled by 1 / (1 - rate), dropped ones are zero.
  std::vector<double> got = values_as_double(ya), in = values_as_double(x);
  int dropped = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = got[i] == 0 || std::abs(got[i] - 2 * in[i]) < 1e-6;
    CHECK(ok);
    dropped += got[i] == 0 ? 1 : 0;
  }
  CHECK(dropped > 0);
  // The next call draws new masks.
  CHECK(max_abs_diff(a(x, true), ya) > 0);

  // LSTM and GRU with both dropouts (Keras's per-gate masks): seeded runs agree, and training differs from inference.
  Tensor s = seq_input({3, 4, 5}, 12);
  layers::LSTM l1(4, {.dropout = 0.3, .recurrent_dropout = 0.3, .seed = 5}), l2(4, {.dropout = 0.3, .recurrent_dropout = 0.3, .seed = 5});
  l1(s);
  l2(s);
  l2.set_weights(l1.get_weights());
  CHECK(max_abs_diff(l1(s, true), l2(s, true)) == 0);
  CHECK(max_abs_diff(l1(s, true), l1(s, false)) > 0);
  layers::GRU g1(4, {.dropout = 0.2, .recurrent_dropout = 0.4, .seed = 8}), g2(4, {.dropout = 0.2, .recurrent_dropout = 0.4, .seed = 8});
  g1(s);
  g2(s);
  g2.set_weights(g1.get_weights());
  CHECK(max_abs_diff(g1(s, true), g2(s, true)) == 0);
  CHECK(max_abs_diff(g1(s, true), g1(s, false)) > 0);
}

TEST_CASE("unroll is accepted and gives the same numbers", "[layers][rnn]") {
  // Unrolled, the GRU runs step by step; rolled, it runs its whole-sequence op (tests/layers/test_rnn_fused.cpp).
  Tensor x = seq_input({2, 3, 4}, 13);
  layers::GRU rolled(3), unrolled(3, {.unroll = true});
  rolled(x);
  unrolled(x);
  unrolled.set_weights(rolled.get_weights());
  CHECK(max_abs_diff(rolled(x), unrolled(x)) < 1e-6);
  CHECK(unrolled.get_config()["unroll"] == true);
}

TEST_CASE("recurrent layers reject bad inputs naming the layer, the shape got and the shape expected", "[layers][rnn]") {
  backend::clear_session();
  layers::LSTM lstm(4);
  std::string msg = message_of([&] { lstm(seq_input({2, 3}, 1)); });
  CHECK_THAT(msg, Catch::Contains("LSTM 'lstm'") && Catch::Contains("(None, 3)") &&
                      Catch::Contains("(batch, timesteps, features)"));
  lstm(seq_input({2, 5, 3}, 1));
  msg = message_of([&] { lstm(seq_input({2, 5, 4}, 1)); });
  CHECK_THAT(msg, Catch::Contains("LSTM 'lstm'") && Catch::Contains("(2, 5, 4)") && Catch::Contains("(batch, timesteps, 3)"));
  // Any number of time steps is fine.
  CHECK(lstm(seq_input({2, 9, 3}, 1)).shape() == Shape{2, 4});
  // Initial states: the count and each shape.
  msg = message_of([&] { lstm({seq_input({2, 5, 3}, 1), ops::zeros({2, 4})}); });
  CHECK_THAT(msg, Catch::Contains("LSTM 'lstm'") && Catch::Contains("2 initial states"));
  msg = message_of([&] { lstm({seq_input({2, 5, 3}, 1), ops::zeros({2, 4}), ops::zeros({2, 5})}); });
  CHECK_THAT(msg, Catch::Contains("LSTM 'lstm'") && Catch::Contains("(2, 5)") && Catch::Contains("(2, 4)"));
  msg = message_of([&] { layers::GRU(2)(seq_input({2, 0, 3}, 1)); });
  CHECK_THAT(msg, Catch::Contains("GRU 'gru") && Catch::Contains("(2, 0, 3)"));
  // Cells: the input and the states.
  layers::LSTMCell cell(3);
  msg = message_of([&] { cell({seq_input({2, 5}, 1), ops::zeros({2, 3})}); });
  CHECK_THAT(msg, Catch::Contains("LSTMCell 'lstm_cell") && Catch::Contains("2 state tensors"));
  msg = message_of([&] { cell({seq_input({2, 5}, 1), ops::zeros({2, 3}), ops::zeros({2, 2})}); });
  CHECK_THAT(msg, Catch::Contains("(2, 2)") && Catch::Contains("(2, 3)"));
  msg = message_of([&] { cell(seq_input({2, 5, 1}, 1)); });
  CHECK_THAT(msg, Catch::Contains("LSTMCell 'lstm_cell") && Catch::Contains("(2, 5, 1)") && Catch::Contains("(batch, 5)"));
  // Options.
  CHECK_THROWS_AS(layers::LSTM(0), InvalidArgument);
  CHECK_THROWS_AS(layers::GRU(2, {.dropout = 1.5}), InvalidArgument);
  CHECK_THROWS_AS(layers::SimpleRNN(2, {.activation = "no_such"}), InvalidArgument);
}

TEST_CASE("recurrent layers write Keras's configs and read them back", "[layers][rnn]") {
  layers::LSTM lstm(8, {.dropout = 0.25, .seed = 4, .return_sequences = true, .go_backwards = true, .name = "enc"});
  nlohmann::json c = lstm.get_config();
  CHECK(c["units"] == 8);
  CHECK(c["activation"] == "tanh");
  CHECK(c["recurrent_activation"] == "sigmoid");
  CHECK(c["unit_forget_bias"] == true);
  CHECK(c["kernel_initializer"]["class_name"] == "GlorotUniform");
  CHECK(c["recurrent_initializer"]["class_name"] == "Orthogonal");
  CHECK(c["bias_initializer"]["class_name"] == "Zeros");
  CHECK(c["dropout"] == 0.25);
  CHECK(c["seed"] == 4);
  CHECK(c["return_sequences"] == true);
  CHECK(c["go_backwards"] == true);
  CHECK(c["zero_output_for_mask"] == false);
  CHECK_FALSE(c.contains("cell"));  // Keras's LSTM config flattens the cell's keys
  CHECK(layers::GRU(2).get_config()["reset_after"] == true);
  CHECK_FALSE(layers::SimpleRNN(2).get_config().contains("seed"));  // as Keras 3's SimpleRNN.get_config
  LayerPtr back = deserialize_layer(serialize_layer(lstm));
  CHECK(back->class_name() == "LSTM");
  CHECK(back->get_config() == c);

  layers::RNN rnn(layers::GRUCell(3, {.reset_after = false}), {.return_state = true});
  nlohmann::json rc = rnn.get_config();
  CHECK(rc["cell"]["class_name"] == "GRUCell");
  CHECK(rc["cell"]["config"]["reset_after"] == false);
  LayerPtr rback = deserialize_layer(serialize_layer(rnn));
  CHECK(rback->get_config() == rc);
  // A cell config that is not a cell.
  nlohmann::json bad = rc;
  bad["cell"] = {{"class_name", "Dense"}, {"config", {{"units", 2}}}};
  CHECK_THROWS_AS(deserialize_layer({{"class_name", "RNN"}, {"config", bad}}), InvalidArgument);
}

TEST_CASE("recurrent layers compute in float16 under mixed precision and train in a model", "[layers][rnn]") {
  layers::LSTM lstm(3, {.dtype = "mixed_float16"});
  Tensor y = lstm(seq_input({2, 4, 3}, 2));
  CHECK(y.dtype() == DType::Float16);
  CHECK(lstm.weights()[0].dtype() == DType::Float32);

  // Sequential({Input(timesteps, features), LSTM, Dense}): fit lowers the loss.
  random::set_seed(5);
  Sequential model({layers::Input({6, 4}), layers::LSTM(8), layers::Dense(2)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}), .loss = "sparse_categorical_crossentropy"});
  Tensor x = seq_input({32, 6, 4}, 21);
  // The label: whether the first feature sums positive over time.
  std::vector<double> xs = values_as_double(x), labels;
  for (int i = 0; i < 32; ++i) {
    double s = 0;
    for (int t = 0; t < 6; ++t) s += xs[(i * 6 + t) * 4];
    labels.push_back(s > 0 ? 1 : 0);
  }
  Tensor yl = make(labels, {32}, DType::Int32);
  History h = model.fit(x, yl, {.batch_size = 8, .epochs = 8, .verbose = 0});
  CHECK(h.history["loss"].back() < h.history["loss"].front());
}

TEST_CASE("return_state in a functional model: the states are outputs other layers take, and configs keep them",
          "[layers][rnn]") {
  // Keras's encoder-decoder: the encoder's final states start the decoder.
  backend::clear_session();
  Tensor enc_in = layers::Input({5, 3}), dec_in = layers::Input({4, 2});
  std::vector<Tensor> enc = layers::LSTM(6, {.return_state = true}).call_outputs({enc_in});
  REQUIRE(enc.size() == 3);
  CHECK(enc[0].shape() == Shape{-1, 6});
  CHECK(enc[2].shape() == Shape{-1, 6});
  Tensor dec = layers::LSTM(6, {.return_sequences = true})({dec_in, enc[1], enc[2]});
  Model model({enc_in, dec_in}, {layers::Dense(2)(dec), enc[2]});

  Tensor x = seq_input({2, 5, 3}, 31), y = seq_input({2, 4, 2}, 32);
  std::vector<Tensor> got = model.call_outputs({x, y});
  std::vector<Tensor> e = model.get_layer("lstm").call_outputs({x});
  Tensor d = model.get_layer("lstm_1")({y, e[1], e[2]});
  CHECK(max_abs_diff(got[0], model.get_layer("dense")(d)) == 0);
  CHECK(max_abs_diff(got[1], e[2]) == 0);
  CHECK(max_abs_diff(got[1], e[1]) > 0);  // c, not h

  // summary() lists every output's shape, and which output each layer takes, as tf-keras prints them (the
  // list wraps inside its column: "[(None, 6)," then "(None, 6),", "(None, 6)]").
  const std::string summary = model.summary_string();
  INFO(summary);
  CHECK_THAT(summary, Catch::Contains("[(None, 6),") && Catch::Contains("(None, 6)]") &&
                          Catch::Contains("'lstm[0][1]'") && Catch::Contains("'lstm[0][2]'"));

  // The config names the state outputs by index (Keras's [layer, node, tensor]) and rebuilds the same graph.
  const std::string json = model.to_json();
  CHECK(json.find("\"keras_history\":[\"lstm\",0,2]") != std::string::npos);
  std::shared_ptr<Model> again = models::model_from_json(json);
  again->set_weights(model.get_weights());
  std::vector<Tensor> back = again->call_outputs({x, y});
  REQUIRE(back.size() == 2);
  CHECK(max_abs_diff(back[0], got[0]) == 0);
  CHECK(max_abs_diff(back[1], got[1]) == 0);
  // A reference past a layer's outputs is an error naming it.
  const std::string ref = "\"keras_history\":[\"lstm\",0,2]";
  std::string bad = json;
  bad.replace(bad.find(ref), ref.size(), "\"keras_history\":[\"lstm\",0,3]");
  CHECK_THROWS_WITH(models::model_from_json(bad), Catch::Contains("output 3 of layer 'lstm'"));
}
