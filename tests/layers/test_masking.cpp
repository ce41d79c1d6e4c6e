// Masks (Keras 3 semantics): Masking and Embedding(mask_zero) make them, they travel beside the tensors through
// eager calls, Sequential and functional models (and traced training), recurrent layers skip masked steps,
// GlobalAveragePooling1D averages the valid ones, merge layers combine them, pass-through layers keep them, and
// the compiled loss weighs by the output's mask. Keras's numbers are checked by test_keras_parity's fixtures.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using namespace ember::testing;

namespace {

std::vector<bool> bools(const Tensor& t) {
  REQUIRE(t.defined());
  REQUIRE(t.dtype() == DType::Bool);
  return t.to_vector<bool>();
}

// Padded token ids: sample 0 has 2 tokens, sample 1 has 4, sample 2 has 1 (0 is padding).
Tensor padded_ids() {
  return Tensor::from_vector<int32_t>({3, 5, 0, 0, 0, 1, 2, 7, 4, 0, 6, 0, 0, 0, 0}, Shape{3, 5});
}
const std::vector<std::vector<int32_t>> kUnpadded = {{3, 5}, {1, 2, 7, 4}, {6}};

// Sample i of x (batch axis kept).
Tensor row(const Tensor& x, int64_t i) {
  std::vector<int64_t> begin(static_cast<size_t>(x.rank()), 0), size(x.shape().begin(), x.shape().end());
  begin[0] = i;
  size[0] = 1;
  return ops::slice(x, begin, size);
}

}  // namespace

TEST_CASE("Masking zeroes and masks the steps whose features all equal mask_value", "[layers][masking]") {
  layers::Masking masking({.mask_value = 0.5});
  Tensor x = Tensor::from_vector<float>({1, 2, 0.5f, 0.5f, 0.5f, 3,  //
                                         0.5f, 0.5f, 4, 5, 6, 7},
                                        Shape{2, 3, 2});
  Tensor y = masking(x);
  check_tensor(y, DType::Float32, {2, 3, 2}, {1, 2, 0, 0, 0.5, 3, 0, 0, 4, 5, 6, 7});
  CHECK(bools(backend::get_keras_mask(y)) == std::vector<bool>{true, false, true, false, true, true});
  // The input keeps no mask; the output's is (batch, timesteps).
  CHECK_FALSE(backend::get_keras_mask(x).defined());
  CHECK(backend::get_keras_mask(y).shape() == Shape{2, 3});
  CHECK(masking.supports_masking());

  nlohmann::json c = masking.get_config();
  CHECK(c["mask_value"] == 0.5);
  auto back = std::dynamic_pointer_cast<layers::Masking>(deserialize_layer(serialize_layer(masking)));
  REQUIRE(back);
  CHECK(back->mask_value() == 0.5);
  CHECK(back->get_config() == c);
  run_layer_test({.what = "Masking", .make = [] { return std::make_shared<layers::Masking>(); },
                  .input_shapes = {{2, 3, 4}}, .check_training_step = false, .check_bad_input_shape = false});
}

TEST_CASE("Embedding(mask_zero) masks the padding index 0; without it there is no mask", "[layers][masking]") {
  layers::Embedding with(8, 3, {.mask_zero = true});
  layers::Embedding without(8, 3);
  CHECK(with.supports_masking());
  CHECK_FALSE(without.supports_masking());
  Tensor ids = padded_ids();
  CHECK(bools(backend::get_keras_mask(with(ids))) ==
        std::vector<bool>{true, true, false, false, false, true, true, true, true, false, true, false, false, false, false});
  CHECK_FALSE(backend::get_keras_mask(without(ids)).defined());
}

TEST_CASE("a padded batch through Embedding(mask_zero) and LSTM gives each unpadded sequence's own outputs",
          "[layers][masking]") {
  auto embedding = std::make_shared<layers::Embedding>(8, 4, layers::EmbeddingOptions{.mask_zero = true});
  auto lstm = std::make_shared<layers::LSTM>(3);
  auto lstm_seq = std::make_shared<layers::GRU>(2, layers::GRUOptions{.return_sequences = true});
  Sequential model({layers::Input({5}, {.dtype = DType::Int32}), embedding, lstm});
  Tensor padded = model(padded_ids());
  REQUIRE(padded.shape() == Shape{3, 3});
  // The same layers called eagerly, on each sequence alone (no padding, so no mask).
  Tensor emb_padded = (*embedding)(padded_ids());
  Tensor seq_padded = (*lstm_seq)(emb_padded);
  for (size_t i = 0; i < kUnpadded.size(); ++i) {
    INFO("sample " << i);
    const auto& ids = kUnpadded[i];
    const int64_t n = static_cast<int64_t>(ids.size());
    Tensor alone = Tensor::from_vector<int32_t>(ids, Shape{1, n});
    CHECK(max_abs_diff(row(padded, static_cast<int64_t>(i)), (*lstm)((*embedding)(alone))) < 1e-6);
    // return_sequences: the valid steps match, and each padded step repeats the last valid output (Keras).
    Tensor own = (*lstm_seq)((*embedding)(alone));
    Tensor mine = row(seq_padded, static_cast<int64_t>(i));
    CHECK(max_abs_diff(ops::slice(mine, {0, 0, 0}, {1, n, 2}), own) < 1e-6);
    for (int64_t t = n; t < 5; ++t)
      CHECK(max_abs_diff(ops::slice(mine, {0, t, 0}, {1, 1, 2}), ops::slice(own, {0, n - 1, 0}, {1, 1, 2})) == 0);
  }
  // The sequence output carries the mask on; the last-step output carries none (Keras's RNN.compute_mask).
  CHECK(bools(backend::get_keras_mask(seq_padded)) == bools(backend::get_keras_mask(emb_padded)));
  CHECK_FALSE(backend::get_keras_mask(padded).defined());
}

TEST_CASE("masked steps keep the states; zero_output_for_mask gives zeros there", "[layers][masking]") {
  Tensor x = make(uniform_in(2 * 4 * 3, -1, 1, 3), {2, 4, 3}, DType::Float32);
  Tensor mask = Tensor::from_vector<bool>({true, false, true, false, false, true, true, false}, Shape{2, 4});
  for (bool backwards : {false, true}) {
    INFO("go_backwards " << backwards);
    layers::SimpleRNN plain(2, {.return_sequences = true, .return_state = true, .go_backwards = backwards});
    layers::SimpleRNN zeros(2, {.return_sequences = true, .go_backwards = backwards, .zero_output_for_mask = true});
    plain(x);
    zeros(x);
    zeros.set_weights(plain.get_weights());
    backend::set_keras_mask(x, mask);
    std::vector<Tensor> out = plain.call_outputs({x});
    Tensor z = zeros(x);
    backend::set_keras_mask(x, Tensor());
    // Sample 0 keeps steps 0 and 2: its final state is that of the two steps alone.
    Tensor kept = ops::concat({ops::slice(x, {0, 0, 0}, {1, 1, 3}), ops::slice(x, {0, 2, 0}, {1, 1, 3})}, 1);
    std::vector<Tensor> alone = plain.call_outputs({kept});
    CHECK(max_abs_diff(row(out[1], 0), alone[1]) < 1e-6);
    const std::vector<double> y = values_as_double(out[0]), yz = values_as_double(z);
    const std::vector<bool> m = mask.to_vector<bool>();
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t k = 0; k < 4; ++k) {
        // Outputs come in processing order; the step processed k-th is t.
        const int64_t t = backwards ? 3 - k : k;
        for (int64_t u = 0; u < 2; ++u) {
          const size_t i = static_cast<size_t>((b * 4 + k) * 2 + u);
          if (m[static_cast<size_t>(b * 4 + t)]) {
            CHECK(yz[i] == y[i]);
          } else {
            CHECK(yz[i] == 0);
            // The plain output repeats the previous one (zeros before the first valid step).
            CHECK(y[i] == (k == 0 ? 0.0 : y[i - 2]));
          }
        }
      }
  }
  CHECK(layers::SimpleRNN(2, {.zero_output_for_mask = true}).get_config()["zero_output_for_mask"] == true);
  auto back = std::dynamic_pointer_cast<layers::LSTM>(
      deserialize_layer(serialize_layer(layers::LSTM(2, {.zero_output_for_mask = true}))));
  REQUIRE(back);
  CHECK(back->rnn_options().zero_output_for_mask);
}

TEST_CASE("masked recurrent layers' gradients match float64 central differences", "[layers][masking]") {
  Tensor mask = Tensor::from_vector<bool>({true, true, false, false, true, false, true, true}, Shape{2, 4});
  auto check = [&](const std::string& what, const LayerPtr& layer) {
    Tensor x = rand64({2, 4, 3}, 11);
    (*layer)(x);
    // Inputs: the masked steps get no gradient; every step's is checked.
    check_gradients(what + " (inputs)", [&](const std::vector<Tensor>& xs) {
      Tensor in = xs[0];
      backend::set_keras_mask(in, mask);
      return (*layer)(in);
    }, {x}, {.h = 1e-6, .rtol = 1e-5, .atol = 1e-7});
    backend::set_keras_mask(x, mask);
    LayerTestSpec spec{.what = what};
    spec.grad = {.h = 1e-6, .rtol = 1e-5, .atol = 1e-7, .seed = 5};
    detail_layer_test::check_weight_gradients(spec, *layer, {x});
  };
  check("LSTM", std::make_shared<layers::LSTM>(3, layers::LSTMOptions{.dtype = "float64"}));
  check("GRU return_sequences go_backwards",
        std::make_shared<layers::GRU>(2, layers::GRUOptions{.return_sequences = true, .go_backwards = true,
                                                            .dtype = "float64"}));
  check("SimpleRNN zero_output_for_mask",
        std::make_shared<layers::SimpleRNN>(
            2, layers::SimpleRNNOptions{.return_sequences = true, .zero_output_for_mask = true, .dtype = "float64"}));
  check("GlobalAveragePooling1D", std::make_shared<layers::GlobalAveragePooling1D>(
                                      layers::GlobalAveragePooling1DOptions{.dtype = "float64"}));
}

TEST_CASE("GlobalAveragePooling1D averages the unmasked steps; GlobalMaxPooling1D ignores the mask, as Keras",
          "[layers][masking]") {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 2, 2});
  Tensor mask = Tensor::from_vector<bool>({true, false, true, true}, Shape{2, 2});
  backend::set_keras_mask(x, mask);
  Tensor avg = layers::GlobalAveragePooling1D()(x);
  check_tensor(avg, DType::Float32, {2, 2}, {1, 2, 6, 7});
  CHECK_FALSE(backend::get_keras_mask(avg).defined());
  Tensor kept = layers::GlobalAveragePooling1D({.keepdims = true})(x);
  check_tensor(kept, DType::Float32, {2, 1, 2}, {1, 2, 6, 7});
  check_tensor(layers::GlobalMaxPooling1D()(x), DType::Float32, {2, 2}, {3, 4, 7, 8});
  Tensor bad = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 2, 2});
  backend::set_keras_mask(bad, Tensor::from_vector<bool>({true, false, true}, Shape{1, 3}));
  CHECK_THROWS_AS(layers::GlobalAveragePooling1D()(bad), InvalidArgument);
}

TEST_CASE("pass-through layers keep the mask; merge layers combine masks as Keras", "[layers][masking]") {
  Tensor x = make(uniform_in(2 * 3 * 4, -1, 1, 9), {2, 3, 4}, DType::Float32);
  Tensor m1 = Tensor::from_vector<bool>({true, true, false, true, false, false}, Shape{2, 3});
  Tensor m2 = Tensor::from_vector<bool>({false, true, true, true, false, false}, Shape{2, 3});
  backend::set_keras_mask(x, m1);
  for (const LayerPtr& l : std::vector<LayerPtr>{
           std::make_shared<layers::Dense>(5), std::make_shared<layers::Activation>("relu"),
           std::make_shared<layers::Dropout>(0.5), std::make_shared<layers::LayerNormalization>(),
           std::make_shared<layers::ReLU>(), std::make_shared<layers::Identity>()}) {
    INFO(l->class_name());
    CHECK(bools(backend::get_keras_mask((*l)(x, true))) == bools(m1));
  }
  // A layer that does not support masking stops it (Keras: Flatten, Conv1D, ...).
  CHECK_FALSE(backend::get_keras_mask(layers::Flatten()(x)).defined());

  Tensor y = make(uniform_in(2 * 3 * 4, -1, 1, 10), {2, 3, 4}, DType::Float32);
  Tensor z = make(uniform_in(2 * 3 * 4, -1, 1, 11), {2, 3, 4}, DType::Float32);
  backend::set_keras_mask(y, m2);
  // Keras 3's Merge.compute_mask: the masks or-ed; none when an input has none.
  CHECK(bools(backend::get_keras_mask(layers::Add()({x, y}))) ==
        std::vector<bool>{true, true, true, true, false, false});
  CHECK_FALSE(backend::get_keras_mask(layers::Add()({x, z})).defined());
  // Multiply: a masked entry counts as 1, and steps neither mask keeps are 0 (Keras's Multiply).
  Tensor prod = layers::Multiply()({x, y});
  CHECK(bools(backend::get_keras_mask(prod)) == std::vector<bool>{true, true, true, true, false, false});
  {
    const std::vector<double> p = values_as_double(prod), a = values_as_double(x), b = values_as_double(y);
    const std::vector<bool> ma = bools(m1), mb = bools(m2);
    for (size_t i = 0; i < p.size(); ++i) {
      const size_t step = i / 4;
      const double want = ma[step] && mb[step] ? a[i] * b[i] : ma[step] ? a[i] : mb[step] ? b[i] : 0.0;
      CHECK(std::abs(p[i] - want) < 1e-6);
    }
  }
  // Concatenate: an input without a mask counts as all valid.
  CHECK(bools(backend::get_keras_mask(layers::Concatenate()({x, z}))) ==
        std::vector<bool>{true, true, true, true, true, true});
  CHECK(bools(backend::get_keras_mask(layers::Concatenate(1)({x, y}))) ==
        std::vector<bool>{true, true, false, false, true, true, true, false, false, true, false, false});
}

TEST_CASE("a functional model carries masks along its graph, and traced training matches eager training",
          "[layers][masking]") {
  auto build = [] {
    backend::clear_session();
    Tensor in = layers::Input({4, 3});
    Tensor h = layers::Masking()(in);
    Tensor d = layers::Dense(5, {.activation = "tanh"})(h);
    Tensor s = layers::LSTM(4, {.return_sequences = true})(d);
    Tensor out = layers::TimeDistributed(layers::Dense(2))(s);
    return std::make_shared<Model>(in, out);
  };
  Tensor x = make(uniform_in(6 * 4 * 3, -1, 1, 21), {6, 4, 3}, DType::Float32);
  // Pad: sample k keeps its first 1 + k % 4 steps.
  std::vector<float> xv = x.to_vector<float>();
  for (int64_t k = 0; k < 6; ++k)
    for (int64_t t = 1 + k % 4; t < 4; ++t)
      for (int64_t f = 0; f < 3; ++f) xv[static_cast<size_t>((k * 4 + t) * 3 + f)] = 0;
  x = Tensor::from_vector<float>(xv, Shape{6, 4, 3});
  Tensor y = make(uniform_in(6 * 4 * 2, -1, 1, 22), {6, 4, 2}, DType::Float32);

  auto eager = build();
  auto traced = build();
  traced->set_weights(eager->get_weights());
  Tensor out = eager->call_outputs({x})[0];
  const std::vector<bool> mask = bools(backend::get_keras_mask(out));
  CHECK(mask == std::vector<bool>{true,  false, false, false, true, true,  false, false, true, true, true,  false,
                                  true,  true,  true,  true,  true, false, false, false, true, true, false, false});
  // The loss weighs by the output's mask (Keras): padded steps' targets do not matter.
  eager->compile({.optimizer = "sgd", .loss = "mse", .metrics = {"mae"}, .run_eagerly = true});
  traced->compile({.optimizer = "sgd", .loss = "mse", .metrics = {"mae"}});
  std::vector<float> yv = y.to_vector<float>();
  for (size_t i = 0; i < mask.size(); ++i)
    if (!mask[i]) yv[2 * i] += 100, yv[2 * i + 1] -= 100;
  Tensor y_noisy = Tensor::from_vector<float>(yv, y.shape());
  const Logs clean = eager->evaluate(x, y, {.verbose = 0}), noisy = eager->evaluate(x, y_noisy, {.verbose = 0});
  CHECK(std::abs(noisy.at("loss") - clean.at("loss")) < 1e-6);
  // So do the metrics (Keras's MeanMetricWrapper).
  CHECK(std::abs(noisy.at("mae") - clean.at("mae")) < 1e-6);
  CHECK(std::abs(traced->evaluate(x, y_noisy, {.verbose = 0}).at("loss") - clean.at("loss")) < 1e-6);
  auto he = eager->fit(x, y_noisy, {.batch_size = 3, .epochs = 3, .verbose = 0, .shuffle = false});
  auto ht = traced->fit(x, y_noisy, {.batch_size = 3, .epochs = 3, .verbose = 0, .shuffle = false});
  const std::vector<Tensor> we = eager->get_weights(), wt = traced->get_weights();
  REQUIRE(we.size() == wt.size());
  for (size_t i = 0; i < we.size(); ++i) CHECK(max_abs_diff(we[i], wt[i]) < 1e-5);
  CHECK(std::abs(he.history.at("loss").back() - ht.history.at("loss").back()) < 1e-5);
  CHECK(he.history.at("loss").back() < 5.0);  // the ±100 on padded steps never reached the loss

  // Saved and loaded, the model masks the same way.
  TempDir dir("masking");
  eager->save(dir.file("m.keras"));
  Model loaded = models::load_model(dir.file("m.keras"));
  CHECK(max_abs_diff(loaded.predict(x, {.verbose = 0}), eager->predict(x, {.verbose = 0})) < 1e-6);
}
