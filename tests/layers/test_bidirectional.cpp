// Bidirectional: Keras's forward_/backward_ layers and weight names, every merge mode, return_sequences and
// return_state, a given backward_layer, configs, save/load in every format, masks to both directions, and
// float64 gradients. Keras's numbers are checked by test_keras_parity's fixtures.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using namespace ember::testing;

namespace {

Tensor seq_input(const Shape& shape, uint32_t seed) {
  return make(uniform_in(shape.num_elements(), -1, 1, seed), shape, DType::Float32);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("Bidirectional passes the layer conformance check", "[layers][bidirectional]") {
  run_layer_test({.what = "Bidirectional(LSTM(3))", .make = [] { return std::make_shared<layers::Bidirectional>(layers::LSTM(3)); },
                  .input_shapes = {{2, 4, 3}}, .trainable_weights = 6,
                  .weight_shapes = {{3, 12}, {3, 12}, {12}, {3, 12}, {3, 12}, {12}}});
  run_layer_test({.what = "Bidirectional(GRU(2, return_sequences), sum)",
                  .make = [] {
                    return std::make_shared<layers::Bidirectional>(layers::GRU(2, {.return_sequences = true}),
                                                                   layers::BidirectionalOptions{.merge_mode = "sum"});
                  },
                  .input_shapes = {{2, 4, 3}}, .trainable_weights = 6});
}

TEST_CASE("Bidirectional names its layers and weights as Keras", "[layers][bidirectional]") {
  backend::clear_session();
  layers::Bidirectional b(layers::LSTM(2));
  b(seq_input({1, 3, 4}, 1));
  CHECK(b.name() == "bidirectional");
  CHECK(b.forward_layer()->name() == "forward_lstm");
  CHECK(b.backward_layer()->name() == "backward_lstm");
  CHECK(b.backward_layer()->rnn_options().go_backwards);
  std::vector<std::string> names;
  for (const Variable& v : b.weights()) names.push_back(v.name());
  CHECK(names == std::vector<std::string>{
                     "bidirectional/forward_lstm/lstm_cell/kernel", "bidirectional/forward_lstm/lstm_cell/recurrent_kernel",
                     "bidirectional/forward_lstm/lstm_cell/bias", "bidirectional/backward_lstm/lstm_cell/kernel",
                     "bidirectional/backward_lstm/lstm_cell/recurrent_kernel", "bidirectional/backward_lstm/lstm_cell/bias"});
}

TEST_CASE("Bidirectional merges the two directions by merge_mode", "[layers][bidirectional]") {
  Tensor x = seq_input({2, 5, 3}, 2);
  for (bool sequences : {false, true}) {
    INFO("return_sequences " << sequences);
    layers::Bidirectional none(layers::SimpleRNN(3, {.return_sequences = sequences}), {.merge_mode = std::nullopt});
    std::vector<Tensor> both = none.call_outputs({x});
    REQUIRE(both.size() == 2);
    // The backward direction run by hand: its sequence output comes back in time order.
    layers::SimpleRNN forward(3, {.return_sequences = sequences});
    layers::SimpleRNN backward(3, {.return_sequences = sequences, .go_backwards = true});
    forward(x);
    backward(x);
    forward.set_weights(none.forward_layer()->get_weights());
    backward.set_weights(none.backward_layer()->get_weights());
    CHECK(max_abs_diff(both[0], forward(x)) == 0);
    Tensor b = backward(x);
    if (sequences) {
      std::vector<Tensor> steps = ops::split(b, 5, 1);
      b = ops::concat(std::vector<Tensor>(steps.rbegin(), steps.rend()), 1);
    }
    CHECK(max_abs_diff(both[1], b) == 0);
    for (const char* mode : {"concat", "sum", "mul", "ave"}) {
      INFO(mode);
      layers::Bidirectional merged(layers::SimpleRNN(3, {.return_sequences = sequences}), {.merge_mode = mode});
      merged(x);
      merged.set_weights(none.get_weights());
      Tensor y = merged(x);
      const std::string m = mode;
      Tensor want = m == "concat" ? ops::concat({both[0], both[1]}, -1)
                    : m == "sum"  ? ops::add(both[0], both[1])
                    : m == "mul"  ? ops::mul(both[0], both[1])
                                  : ops::mul(ops::add(both[0], both[1]), Tensor::scalar<float>(0.5f));
      CHECK(max_abs_diff(y, want) < 1e-7);
      Shape s = y.shape();
      s[0] = -1;
      CHECK(merged.compute_output_shape(Shape{-1, 5, 3}) == s);
    }
  }
  CHECK(message_of([] { layers::Bidirectional(layers::LSTM(2), {.merge_mode = "max"}); }).find("merge_mode") !=
        std::string::npos);
}

TEST_CASE("Bidirectional return_state gives the forward then the backward states", "[layers][bidirectional]") {
  Tensor x = seq_input({2, 4, 3}, 3);
  layers::Bidirectional b(layers::LSTM(2, {.return_state = true}));
  std::vector<Tensor> out = b.call_outputs({x});
  REQUIRE(out.size() == 5);
  CHECK(out[0].shape() == Shape{2, 4});
  std::vector<Tensor> f = b.forward_layer()->call_outputs({x}), r = b.backward_layer()->call_outputs({x});
  CHECK(max_abs_diff(out[1], f[1]) == 0);
  CHECK(max_abs_diff(out[2], f[2]) == 0);
  CHECK(max_abs_diff(out[3], r[1]) == 0);
  CHECK(max_abs_diff(out[4], r[2]) == 0);
  // Initial states: the forward layer's, then the backward layer's.
  std::vector<Tensor> again = b.call_outputs({x, out[1], out[2], out[3], out[4]});
  CHECK(max_abs_diff(again[1], f[1]) > 1e-4);
  CHECK(b.compute_output_shapes({Shape{-1, 4, 3}}).size() == 5);
}

TEST_CASE("Bidirectional with a given backward layer checks that the two fit together", "[layers][bidirectional]") {
  auto backward = std::make_shared<layers::GRU>(2, layers::GRUOptions{.go_backwards = true, .name = "my_backward"});
  layers::Bidirectional b(layers::GRU(2), {.backward_layer = backward});
  CHECK(b.backward_layer() == backward);
  b(seq_input({1, 3, 2}, 4));
  CHECK(b.weights().size() == 6);
  auto same_direction = std::make_shared<layers::GRU>(2);
  CHECK(message_of([&] { layers::Bidirectional(layers::GRU(2), {.backward_layer = same_direction}); })
            .find("go_backwards") != std::string::npos);
  auto other = std::make_shared<layers::GRU>(2, layers::GRUOptions{.return_sequences = true, .go_backwards = true});
  CHECK(message_of([&] { layers::Bidirectional(layers::GRU(2), {.backward_layer = other}); })
            .find("return_sequences") != std::string::npos);
}

TEST_CASE("Bidirectional writes Keras's config and reads it back", "[layers][bidirectional]") {
  backend::clear_session();
  layers::Bidirectional b(layers::LSTM(3, {.return_sequences = true}), {.merge_mode = "ave"});
  nlohmann::json c = b.get_config();
  CHECK(c["merge_mode"] == "ave");
  CHECK(c["layer"]["class_name"] == "LSTM");
  CHECK(c["layer"]["config"]["name"] == "forward_lstm");
  CHECK(c["layer"]["config"]["zero_output_for_mask"] == true);  // Keras forces it with return_sequences
  CHECK(c["backward_layer"]["config"]["name"] == "backward_lstm");
  CHECK(c["backward_layer"]["config"]["go_backwards"] == true);
  auto back = std::dynamic_pointer_cast<layers::Bidirectional>(deserialize_layer(serialize_layer(b)));
  REQUIRE(back);
  CHECK(back->get_config() == c);
  CHECK(back->forward_layer()->name() == "forward_lstm");
  nlohmann::json none = layers::Bidirectional(layers::GRU(2), {.merge_mode = std::nullopt}).get_config();
  CHECK(none["merge_mode"].is_null());
  CHECK_FALSE(std::dynamic_pointer_cast<layers::Bidirectional>(deserialize_layer(
                  {{"class_name", "Bidirectional"}, {"config", none}}))->merge_mode().has_value());
  // tf-keras's form: the wrapped layer's own config, no backward_layer.
  auto old = deserialize_layer(nlohmann::json::parse(R"({"class_name": "Bidirectional", "config": {
      "name": "bidirectional_7", "trainable": true, "dtype": "float32", "merge_mode": "concat",
      "layer": {"class_name": "GRU", "config": {"name": "gru", "units": 2, "return_sequences": false}}}})"));
  CHECK(std::static_pointer_cast<layers::Bidirectional>(old)->backward_layer()->name() == "backward_gru");
  CHECK_THROWS_AS(deserialize_layer(nlohmann::json::parse(R"({"class_name": "Bidirectional", "config": {
      "name": "b", "layer": {"class_name": "Dense", "config": {"name": "d", "units": 2}}}})")), InvalidArgument);
}

TEST_CASE("a model with Bidirectional saves and loads in every format", "[layers][bidirectional]") {
  backend::clear_session();
  Sequential model({layers::Input({4, 3}), layers::Bidirectional(layers::GRU(2, {.return_sequences = true})),
                    layers::Bidirectional(layers::LSTM(2), {.merge_mode = "sum"}), layers::Dense(1)});
  Tensor x = seq_input({2, 4, 3}, 5);
  const Tensor y = model(x);
  TempDir dir("bidirectional");
  for (const std::string file : {"m.keras", "m.h5"}) {
    INFO(file);
    model.save(dir.file(file));
    Model loaded = models::load_model(dir.file(file));
    CHECK(max_abs_diff(loaded(x), y) < 1e-6);
  }
  for (const std::string file : {"w.weights.h5", "w.h5"}) {
    INFO(file);
    model.save_weights(dir.file(file));
    auto fresh = models::clone_model(model);
    CHECK(max_abs_diff((*fresh)(x), y) > 1e-4);
    fresh->load_weights(dir.file(file));
    CHECK(max_abs_diff((*fresh)(x), y) < 1e-6);
  }
}

TEST_CASE("Bidirectional passes a mask to both directions", "[layers][bidirectional]") {
  // A padded batch gives each sequence's own outputs, in both directions.
  Tensor x = seq_input({2, 5, 3}, 6);
  Tensor mask = Tensor::from_vector<bool>({true, true, true, false, false, true, true, true, true, true}, Shape{2, 5});
  for (bool sequences : {false, true}) {
    INFO("return_sequences " << sequences);
    layers::Bidirectional b(layers::LSTM(2, {.return_sequences = sequences}));
    Tensor padded = x;
    backend::set_keras_mask(padded, mask);
    Tensor y = b(padded);
    Tensor alone = b(ops::slice(x, {0, 0, 0}, {1, 3, 3}));
    if (sequences) {
      CHECK(max_abs_diff(ops::slice(y, {0, 0, 0}, {1, 3, 4}), alone) < 1e-6);
      // Keras: both directions give zeros at masked steps, and the mask goes on.
      CHECK(max_abs_diff(ops::slice(y, {0, 3, 0}, {1, 2, 4}), ops::zeros({1, 2, 4})) == 0);
      CHECK(backend::get_keras_mask(y).defined());
    } else {
      CHECK(max_abs_diff(ops::slice(y, {0, 0}, {1, 4}), alone) < 1e-6);
      CHECK_FALSE(backend::get_keras_mask(y).defined());
    }
    backend::set_keras_mask(x, Tensor());
  }
  // Gradients through both masked directions, against float64 central differences.
  layers::Bidirectional b(layers::GRU(2, {.return_sequences = true, .dtype = "float64"}),
                          {.merge_mode = "mul", .dtype = "float64"});
  Tensor x64 = rand64({2, 5, 3}, 7);
  b(x64);
  check_gradients("masked Bidirectional(GRU) inputs", [&](const std::vector<Tensor>& xs) {
    Tensor in = xs[0];
    backend::set_keras_mask(in, mask);
    return b(in);
  }, {x64}, {.h = 1e-6, .rtol = 1e-5, .atol = 1e-7});
  backend::set_keras_mask(x64, mask);
  LayerTestSpec spec{.what = "masked Bidirectional(GRU) weights"};
  spec.grad = {.h = 1e-6, .rtol = 1e-5, .atol = 1e-7, .seed = 8};
  detail_layer_test::check_weight_gradients(spec, b, {x64});
}
