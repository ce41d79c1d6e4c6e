// The preprocessing and augmentation layers (Keras's layers/preprocessing): conformance, configs, model
// files, Normalization.adapt, the random layers' invariants (identity at inference, seeded sequences, what each
// transform does), use inside Dataset::map and ember::function, and their errors. Numeric parity with Keras is
// in test_keras_parity.cpp (fixtures from tests/fixtures/make_layer_fixtures.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "data/dataset.h"
#include "framework/ember.h"
#include "tests/support/layer_testing.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using namespace ember::testing;
using Catch::Matchers::Contains;

namespace {

// A batch of images with distinct values in [0, 1).
Tensor images(const Shape& s, uint32_t seed = 11) {
  std::vector<double> v = uniform_in(s.num_elements(), 0, 1, seed);
  return make(v, s, DType::Float32);
}

// Image b of a batch (N, H, W, C).
Tensor image(const Tensor& batch, int64_t b) {
  const Shape& s = batch.shape();
  return ops::slice(batch, {b, 0, 0, 0}, {1, s[1], s[2], s[3]});
}

Tensor reversed(const Tensor& x, int64_t axis) {
  const int64_t n = x.shape()[axis];
  std::vector<int32_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int32_t>(n - 1 - i);
  return ops::gather(x, Tensor::from_vector<int32_t>(idx, Shape{n}), {.axis = axis});
}

std::vector<LayerPtr> random_layers(std::optional<uint64_t> seed) {
  using namespace layers;
  return {std::make_shared<RandomFlip>("horizontal_and_vertical", RandomFlipOptions{.seed = seed}),
          std::make_shared<RandomRotation>(0.3, RandomRotationOptions{.seed = seed}),
          std::make_shared<RandomZoom>(0.3, RandomZoomOptions{.seed = seed}),
          std::make_shared<RandomTranslation>(0.2, 0.3, RandomTranslationOptions{.seed = seed}),
          std::make_shared<RandomCrop>(3, 4, RandomCropOptions{.seed = seed}),
          std::make_shared<RandomContrast>(0.5, RandomContrastOptions{.value_range = {0, 1}, .seed = seed}),
          std::make_shared<RandomBrightness>(0.4, RandomBrightnessOptions{.value_range = {0, 1}, .seed = seed})};
}

}  // namespace

TEST_CASE("preprocessing layers conformance", "[layers][preprocessing]") {
  using namespace layers;
  run_layer_test({.what = "Rescaling(0.5, offset 1)",
                  .make = [] { return std::make_shared<Rescaling>(0.5, RescalingOptions{.offset = 1.0}); },
                  .input_shapes = {{2, 3, 4}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "Normalization() (adapt weights)",
                  .make = [] { return std::make_shared<Normalization>(); },
                  .input_shapes = {{3, 4}},
                  .non_trainable_weights = 3,
                  .weight_shapes = {{4}, {4}, {}}});
  run_layer_test({.what = "Normalization(axis (1, 2), given mean and variance)",
                  .make = [] {
                    return std::make_shared<Normalization>(NormalizationOptions{
                        .axis = {1, 2}, .mean = std::vector<double>{0.5}, .variance = std::vector<double>{4.0}});
                  },
                  .input_shapes = {{2, 3, 2}}});
  run_layer_test({.what = "Resizing(3, 5)",
                  .make = [] { return std::make_shared<Resizing>(3, 5); },
                  .input_shapes = {{2, 4, 3, 2}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "Resizing(5, 2, nearest)",
                  .make = [] { return std::make_shared<Resizing>(5, 2, ResizingOptions{.interpolation = "nearest"}); },
                  .input_shapes = {{2, 4, 3, 2}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "CenterCrop(2, 3)",
                  .make = [] { return std::make_shared<CenterCrop>(2, 3); },
                  .input_shapes = {{2, 4, 5, 2}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "CenterCrop(5, 3) (smart resize)",
                  .make = [] { return std::make_shared<CenterCrop>(5, 3); },
                  .input_shapes = {{2, 4, 5, 2}},
                  .check_bad_input_shape = false});
  // The random layers at inference: the identity.
  for (size_t k = 0; k < random_layers(3).size(); ++k) {
    const std::string cls = random_layers(3)[k]->class_name();
    if (cls == "RandomCrop") continue;  // its output shape changes only in training
    run_layer_test({.what = cls + " (inference)",
                    .make = [k] { return random_layers(3)[k]; },
                    .input_shapes = {{2, 4, 5, 2}},
                    .check_bad_input_shape = false});
  }
  // RandomCrop while training, at its input's size: the deterministic centred path (the identity).
  run_layer_test({.what = "RandomCrop(4, 5) training",
                  .make = [] { return std::make_shared<RandomCrop>(4, 5, RandomCropOptions{.seed = 1}); },
                  .input_shapes = {{2, 4, 5, 2}},
                  .training = true,
                  .check_bad_input_shape = false});
}

TEST_CASE("preprocessing configs use Keras's keys and round-trip", "[layers][preprocessing]") {
  using namespace layers;
  const nlohmann::json r = Rescaling(1.0 / 255).get_config();
  CHECK(r.at("scale") == 1.0 / 255);
  CHECK(r.at("offset") == 0.0);
  const nlohmann::json n = Normalization().get_config();
  CHECK(n.at("axis") == nlohmann::json::array({-1}));
  CHECK(n.at("mean").is_null());
  CHECK(n.at("variance").is_null());
  CHECK(n.at("invert") == false);
  const nlohmann::json rz = Resizing(3, 4).get_config();
  for (const char* key : {"height", "width", "interpolation", "crop_to_aspect_ratio", "pad_to_aspect_ratio",
                          "fill_mode", "fill_value", "antialias", "data_format"})
    CHECK(rz.contains(key));
  CHECK(rz.at("interpolation") == "bilinear");
  const nlohmann::json rot = RandomRotation(0.2, {.seed = 4}).get_config();
  CHECK(rot.at("factor") == nlohmann::json::array({-0.2, 0.2}));
  CHECK(rot.at("fill_mode") == "reflect");
  CHECK(rot.at("interpolation") == "bilinear");
  CHECK(rot.at("seed") == 4);
  CHECK(rot.at("data_format") == "channels_last");
  const nlohmann::json zoom = RandomZoom(0.2).get_config();
  CHECK(zoom.at("height_factor") == 0.2);
  CHECK(zoom.at("width_factor").is_null());
  // Keras's RandomContrast keeps (max(-f, 0), f): a contrast factor in [1, 1 + f].
  CHECK(RandomContrast(0.5).get_config().at("factor") == nlohmann::json::array({0.0, 0.5}));
  CHECK(RandomBrightness(0.5).get_config().at("value_range") == nlohmann::json::array({0.0, 255.0}));
  CHECK(RandomFlip().get_config().at("mode") == "horizontal_and_vertical");
  for (const LayerPtr& l : random_layers(std::nullopt)) {
    INFO(l->class_name());
    const nlohmann::json c = l->get_config();
    CHECK(c.at("seed").is_null());
    CHECK(deserialize_layer(serialize_layer(*l))->get_config() == c);
  }
}

TEST_CASE("a model with preprocessing layers saves and loads (.keras, .h5), adapted statistics included",
          "[layers][preprocessing]") {
  TempDir dir("preprocessing_model");
  backend::clear_session();
  random::set_seed(5);
  auto norm = std::make_shared<layers::Normalization>();
  const Tensor data = images({16, 6, 6, 3}, 3) * 4.0 + 1.0;
  norm->adapt(data);
  Sequential model({layers::Input({6, 6, 3}), layers::Rescaling(2.0, {.offset = -1.0}), norm,
                    layers::RandomFlip("horizontal", {.seed = 2}), layers::RandomRotation(0.1),
                    layers::Resizing(4, 4), layers::CenterCrop(3, 3), layers::Flatten(), layers::Dense(2)});
  model.compile({.optimizer = optimizers::SGD(), .loss = "mse"});
  model.train_on_batch(data, ops::zeros({16, 2}));  // the random layers run in training
  const Tensor expected = model.predict(data, {.verbose = 0});
  for (const std::string file : {"m.keras", "m.h5"}) {
    INFO(file);
    model.save(dir.file(file));
    Model back = models::load_model(dir.file(file));
    CHECK(back.to_json() == model.to_json());
    CHECK(max_abs_diff(back.predict(data, {.verbose = 0}), expected) == 0);
    const std::vector<Variable> w = back.layers()[1]->weights();
    REQUIRE(w.size() == 3);
    CHECK(max_abs_diff(w[0].value(), norm->weights()[0].value()) == 0);
    CHECK(max_abs_diff(w[1].value(), norm->weights()[1].value()) == 0);
    CHECK(w[2].dtype() == DType::Int64);
  }
}

TEST_CASE("Normalization.adapt matches NumPy's mean and variance, from a tensor or a dataset",
          "[layers][preprocessing]") {
  const Shape s{37, 3, 2};
  const std::vector<double> v = uniform_in(s.num_elements(), -3, 5, 21);
  const Tensor x = make(v, s, DType::Float32);
  // NumPy: mean and (population) variance over axes 0 and 1, per position of the last axis.
  std::vector<double> mean(2, 0), var(2, 0);
  const int64_t per = 37 * 3;
  for (size_t i = 0; i < v.size(); ++i) mean[i % 2] += v[i] / per;
  for (size_t i = 0; i < v.size(); ++i) var[i % 2] += (v[i] - mean[i % 2]) * (v[i] - mean[i % 2]) / per;
  auto check_stats = [&](layers::Normalization& l) {
    const std::vector<Variable> w = l.weights();
    REQUIRE(w.size() == 3);
    const std::vector<double> m = values_as_double(w[0].value()), va = values_as_double(w[1].value());
    for (int k = 0; k < 2; ++k) {
      CHECK(m[k] == Approx(mean[k]).margin(1e-5));
      CHECK(va[k] == Approx(var[k]).epsilon(1e-5));
    }
    CHECK(values_as_double(w[2].value())[0] == 0);  // Keras's adapt leaves count as it was
    const Tensor y = l(x);
    const std::vector<double> out = values_as_double(y);
    CHECK(out[0] == Approx((v[0] - mean[0]) / std::sqrt(var[0])).margin(1e-4));
  };
  {
    layers::Normalization l;
    l.adapt(x);
    check_stats(l);
  }
  for (int64_t batch : {1, 5, 37, 64}) {
    INFO("dataset batched by " << batch);
    layers::Normalization l;
    l.adapt(data::Dataset::from_tensor_slices(x).batch(batch));
    check_stats(l);
  }
  {
    // Elements of rank 1 (unbatched features) are batched by Keras first: one statistic per feature.
    const Tensor feats = make(uniform_in(40, 0, 1, 3), {20, 2}, DType::Float32);
    layers::Normalization a, b;
    a.adapt(feats);
    b.adapt(data::Dataset::from_tensor_slices(feats));
    CHECK(max_abs_diff(a.weights()[0].value(), b.weights()[0].value()) < 1e-6);
    CHECK(max_abs_diff(a.weights()[1].value(), b.weights()[1].value()) < 1e-6);
  }
  {
    // invert undoes the normalization.
    layers::Normalization fwd, inv({.invert = true});
    fwd.adapt(x);
    inv.adapt(x);
    CHECK(max_abs_diff(inv(fwd(x)), x) < 1e-5);
  }
  // Errors.
  layers::Normalization l;
  l.adapt(x);
  CHECK_THROWS_AS(l.adapt(ops::zeros({4, 3, 5})), InvalidArgument);
  CHECK_THROWS_AS(l.adapt(data::Dataset::from_tensor_slices(x).take(0).batch(4)), InvalidArgument);
  layers::Normalization given({.mean = std::vector<double>{1.0}, .variance = std::vector<double>{1.0}});
  CHECK_THROWS_AS(given.adapt(x), FailedPrecondition);
  CHECK_THROWS_AS(layers::Normalization({.mean = std::vector<double>{1.0}}), InvalidArgument);
  layers::Normalization bad_axis({.axis = {3}});
  CHECK_THROWS_AS(bad_axis(x), InvalidArgument);
}

TEST_CASE("Rescaling, Resizing and CenterCrop on integer images", "[layers][preprocessing]") {
  const Tensor u8 = Tensor::from_vector<uint8_t>({0, 51, 102, 255}, {1, 2, 2, 1});
  const Tensor r = layers::Rescaling(1.0 / 255)(u8);
  CHECK(r.dtype() == DType::Float32);
  CHECK(values_as_double(r)[1] == Approx(0.2));
  // Resizing keeps an integer image's dtype (Keras rounds the bilinear values back).
  const Tensor big = layers::Resizing(4, 4)(u8);
  CHECK(big.dtype() == DType::UInt8);
  CHECK(big.shape() == Shape{1, 4, 4, 1});
  CHECK(values_as_double(big)[0] == 0);
  CHECK(values_as_double(big)[15] == 255);
  const Tensor cc = layers::CenterCrop(1, 1)(u8);
  CHECK(cc.dtype() == DType::Float32);
  // pad_to_aspect_ratio: a 2x4 image in a 4x4 box (one row of fill_value above and below), at the box's size.
  const Tensor padded = layers::Resizing(4, 4, {.pad_to_aspect_ratio = true, .fill_value = -1})(ops::ones({1, 2, 4, 1}));
  const std::vector<double> pv = values_as_double(padded);
  for (int i = 0; i < 16; ++i) CHECK(pv[i] == (i < 4 || i >= 12 ? -1 : 1));
  // A single image (rank 3) works as well as a batch.
  CHECK(layers::Resizing(3, 3)(ops::zeros({2, 2, 1})).shape() == Shape{3, 3, 1});
  CHECK(layers::CenterCrop(1, 2)(ops::zeros({3, 3, 2})).shape() == Shape{1, 2, 2});
}

TEST_CASE("random layers are the identity at inference and draw seeded sequences in training",
          "[layers][preprocessing]") {
  const Tensor x = images({3, 5, 6, 2});
  for (size_t k = 0; k < random_layers(1).size(); ++k) {
    LayerPtr a = random_layers(7)[k], b = random_layers(7)[k], c = random_layers(8)[k];
    INFO(a->class_name());
    CHECK(max_abs_diff((*a)(x, false), x) == 0);
    std::vector<Tensor> seq_a, seq_b, seq_c;
    for (int i = 0; i < 4; ++i) {
      seq_a.push_back((*a)(x, true));
      seq_b.push_back((*b)(x, true));
      seq_c.push_back((*c)(x, true));
    }
    // Inference does not advance the sequence.
    (*b)(x, false);
    CHECK(max_abs_diff((*a)(x, true), (*b)(x, true)) == 0);
    bool changes = false, other_seed_differs = false;
    for (int i = 0; i < 4; ++i) {
      CHECK(max_abs_diff(seq_a[i], seq_b[i]) == 0);
      if (i > 0 && max_abs_diff(seq_a[i], seq_a[0]) > 0) changes = true;
      if (max_abs_diff(seq_a[i], seq_c[i]) > 0) other_seed_differs = true;
    }
    CHECK(changes);
    CHECK(other_seed_differs);
  }
}

TEST_CASE("what each random transform does", "[layers][preprocessing]") {
  const Tensor x = images({8, 5, 6, 2});
  SECTION("RandomFlip flips each image or leaves it, both ways for horizontal_and_vertical") {
    for (const std::string mode : {"horizontal", "vertical", "horizontal_and_vertical"}) {
      INFO(mode);
      layers::RandomFlip f(mode, {.seed = 1});
      int flipped = 0;
      for (int call = 0; call < 4; ++call) {
        const Tensor y = f(x, true);
        for (int64_t b = 0; b < 8; ++b) {
          const Tensor in = image(x, b), out = image(y, b);
          Tensor flip = in;
          if (mode != "vertical") flip = reversed(flip, 2);
          if (mode != "horizontal") flip = reversed(flip, 1);
          const bool same = max_abs_diff(out, in) == 0, is_flip = max_abs_diff(out, flip) == 0;
          CHECK((same || is_flip));
          flipped += is_flip;
        }
      }
      CHECK(flipped > 4);
      CHECK(flipped < 28);
    }
  }
  SECTION("factor 0 gives the identity: rotation, zoom, translation, contrast, brightness") {
    CHECK(max_abs_diff(layers::RandomRotation(0.0)(x, true), x) == 0);
    CHECK(max_abs_diff(layers::RandomZoom(0.0)(x, true), x) == 0);
    CHECK(max_abs_diff(layers::RandomTranslation(0.0, 0.0)(x, true), x) == 0);
    CHECK(max_abs_diff(layers::RandomContrast(0.0, {.value_range = {0, 1}})(x, true), x) < 1e-6);
    CHECK(max_abs_diff(layers::RandomBrightness(0.0, {.value_range = {0, 1}})(x, true), x) == 0);
  }
  SECTION("RandomRotation by half a turn reverses both axes") {
    const Tensor y = layers::RandomRotation({0.5, 0.5})(x, true);
    CHECK(max_abs_diff(y, reversed(reversed(x, 1), 2)) < 1e-4);
  }
  SECTION("RandomTranslation by a whole pixel shifts, filling with fill_value") {
    // Height 5 by 0.2: one row down.
    const Tensor y = layers::RandomTranslation({0.2, 0.2}, 0.0, {.fill_mode = "constant", .fill_value = -1})(x, true);
    CHECK(max_abs_diff(ops::slice(y, {0, 1, 0, 0}, {8, 4, 6, 2}), ops::slice(x, {0, 0, 0, 0}, {8, 4, 6, 2})) < 1e-6);
    for (double v : values_as_double(ops::slice(y, {0, 0, 0, 0}, {8, 1, 6, 2}))) CHECK(v == -1);
  }
  SECTION("RandomZoom by (1 + z) about the centre: zooming out by 2 reads every other pixel") {
    const Tensor in = images({2, 5, 5, 1});
    const Tensor y = layers::RandomZoom({1.0, 1.0}, {.fill_mode = "constant", .interpolation = "nearest"})(in, true);
    // Output (y, x) reads input (2y - 2, 2x - 2): the centre stays, (1, 1) reads (0, 0).
    CHECK(max_abs_diff(ops::slice(y, {0, 2, 2, 0}, {2, 1, 1, 1}), ops::slice(in, {0, 2, 2, 0}, {2, 1, 1, 1})) == 0);
    CHECK(max_abs_diff(ops::slice(y, {0, 1, 1, 0}, {2, 1, 1, 1}), ops::slice(in, {0, 0, 0, 0}, {2, 1, 1, 1})) == 0);
    CHECK(values_as_double(ops::slice(y, {0, 0, 0, 0}, {1, 1, 1, 1}))[0] == 0);
  }
  SECTION("RandomCrop takes a window of the input") {
    layers::RandomCrop crop(3, 4, {.seed = 2});
    std::set<std::pair<int64_t, int64_t>> starts;
    for (int call = 0; call < 12; ++call) {
      const Tensor y = crop(x, true);
      REQUIRE(y.shape() == Shape{8, 3, 4, 2});
      bool found = false;
      for (int64_t top = 0; top <= 2 && !found; ++top)
        for (int64_t left = 0; left <= 2 && !found; ++left)
          if (max_abs_diff(y, ops::slice(x, {0, top, left, 0}, {8, 3, 4, 2})) == 0) {
            found = true;
            starts.insert({top, left});
          }
      CHECK(found);
    }
    CHECK(starts.size() > 1);
    CHECK(crop(x, false).shape() == x.shape());  // Keras 3: inference returns the input
  }
  SECTION("RandomBrightness adds one delta per image and stays within value_range") {
    layers::RandomBrightness br(0.5, {.value_range = {0, 1}, .seed = 3});
    for (int call = 0; call < 3; ++call) {
      const Tensor y = br(x, true);
      for (double v : values_as_double(y)) CHECK((v >= 0 && v <= 1));
      for (int64_t b = 0; b < 8; ++b) {
        const std::vector<double> in = values_as_double(image(x, b)), out = values_as_double(image(y, b));
        double delta = std::nan("");
        for (size_t i = 0; i < in.size(); ++i) {
          if (out[i] <= 0 || out[i] >= 1) continue;  // clipped
          if (std::isnan(delta)) delta = out[i] - in[i];
          CHECK(out[i] - in[i] == Approx(delta).margin(1e-6));
        }
        if (!std::isnan(delta)) CHECK(std::abs(delta) <= 0.5 + 1e-6);
      }
    }
  }
  SECTION("RandomContrast keeps each channel's mean and scales by a factor in [1, 1 + f]") {
    layers::RandomContrast ct(0.5, {.value_range = {-100, 100}, .seed = 4});
    const Tensor y = ct(x, true);
    const Tensor mx = ops::reduce_mean(x, {1, 2}), my = ops::reduce_mean(y, {1, 2});
    CHECK(max_abs_diff(mx, my) < 1e-5);
    for (int64_t b = 0; b < 8; ++b) {
      const std::vector<double> dx = values_as_double(image(x, b) - ops::reduce_mean(image(x, b), {1, 2}, true));
      const std::vector<double> dy = values_as_double(image(y, b) - ops::reduce_mean(image(y, b), {1, 2}, true));
      size_t k = 0;  // the pixel farthest from the mean: the ratio is well conditioned there
      for (size_t i = 1; i < dx.size(); ++i)
        if (std::abs(dx[i]) > std::abs(dx[k])) k = i;
      const double factor = dy[k] / dx[k];
      CHECK(factor >= 1 - 1e-4);
      CHECK(factor <= 1.5 + 1e-4);
    }
  }
  SECTION("a single image (rank 3) is augmented as a batch of one") {
    for (const LayerPtr& l : random_layers(5)) {
      INFO(l->class_name());
      const Tensor y = (*l)(ops::squeeze(image(x, 0), {0}), true);
      CHECK(y.rank() == 3);
    }
  }
}

TEST_CASE("preprocessing layers inside Dataset::map, on single examples and on batches", "[layers][preprocessing]") {
  const Tensor xs = ops::cast(images({10, 6, 6, 3}) * 255.0, DType::UInt8);
  const Tensor ys = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10});
  layers::Rescaling rescale(1.0 / 255);
  layers::RandomFlip flip("horizontal", {.seed = 1});
  layers::RandomRotation rotate(0.1, {.seed = 2});
  layers::RandomCrop crop(4, 4, {.seed = 3});
  // Per example, then batched.
  auto ds = data::Dataset::from_tensor_slices({xs, ys})
                .map([&](const Tensor& x, const Tensor& y) {
                  return data::Element{crop(rotate(flip(rescale(x), true), true), true), y};
                })
                .batch(4);
  int64_t n = 0;
  for (const data::Element& e : ds) {
    CHECK(e[0].shape() == Shape{e[0].shape()[0], 4, 4, 3});
    CHECK(e[0].dtype() == DType::Float32);
    for (double v : values_as_double(e[0])) CHECK((v >= -1e-6 && v <= 1 + 1e-6));
    n += e[0].shape()[0];
  }
  CHECK(n == 10);
  // Batched first, then augmented in parallel workers (unseeded: the global sequence; built before the workers
  // start, as a model's layers are).
  layers::RandomBrightness bright(0.2, {.value_range = {0, 1}});
  bright(rescale(xs), false);
  auto batched = data::Dataset::from_tensor_slices({xs, ys})
                     .batch(5)
                     .map([&](const Tensor& x, const Tensor& y) { return data::Element{bright(rescale(x), true), y}; },
                          {.num_parallel_calls = 2});
  n = 0;
  for (const data::Element& e : batched) {
    CHECK(e[0].shape() == Shape{5, 6, 6, 3});
    n += 5;
  }
  CHECK(n == 10);
}

TEST_CASE("random layers traced by ember::function draw fresh numbers on every replay", "[layers][preprocessing]") {
  const Tensor x = images({4, 5, 6, 2});
  for (const LayerPtr& l : random_layers(9)) {
    INFO(l->class_name());
    LayerPtr eager = deserialize_layer(serialize_layer(*l));
    auto step = ember::function([&](const Tensor& in) { return (*l)(in, true); });
    std::vector<Tensor> traced;
    for (int i = 0; i < 4; ++i) traced.push_back(step(x));
    CHECK(step.tracing_count() == 1);
    double moved = 0;
    for (int i = 1; i < 4; ++i) moved = std::max(moved, max_abs_diff(traced[i], traced[i - 1]));
    CHECK(moved > 0);
    // The same sequence as an eager layer with the same seed.
    for (int i = 0; i < 4; ++i) CHECK(max_abs_diff(traced[i], (*eager)(x, true)) < 1e-6);
  }
}

TEST_CASE("preprocessing layers reject bad arguments and inputs with clear errors", "[layers][preprocessing]") {
  using namespace layers;
  CHECK_THROWS_WITH(RandomFlip("diagonal"), Contains("RandomFlip") && Contains("diagonal"));
  CHECK_THROWS_WITH(RandomRotation(1.5), Contains("RandomRotation") && Contains("[-1, 1]"));
  CHECK_THROWS_AS(RandomRotation(0.1, {.fill_mode = "mirror"}), InvalidArgument);
  CHECK_THROWS_AS(RandomZoom(0.1, {.interpolation = "bicubic"}), InvalidArgument);
  CHECK_THROWS_AS(RandomZoom(-1.0), InvalidArgument);
  CHECK_THROWS_AS(RandomTranslation(0.1, {0.2, 0.3, 0.4}), InvalidArgument);
  CHECK_THROWS_AS(RandomContrast(-0.1), InvalidArgument);
  CHECK_THROWS_AS(RandomBrightness(0.1, {.value_range = {1, 0}}), InvalidArgument);
  CHECK_THROWS_AS(RandomCrop(0, 3), InvalidArgument);
  CHECK_THROWS_WITH(Resizing(3, 3, {.interpolation = "bicubic"}), Contains("Resizing") && Contains("bicubic"));
  CHECK_THROWS_AS(Resizing(3, 3, {.interpolation = "bicubic"}), Unimplemented);
  CHECK_THROWS_AS(Resizing(3, 3, {.crop_to_aspect_ratio = true, .pad_to_aspect_ratio = true}), InvalidArgument);
  CHECK_THROWS_AS(Resizing(3, 3, {.pad_to_aspect_ratio = true, .fill_mode = "reflect"}), InvalidArgument);
  CHECK_THROWS_AS(Resizing(3, 3, {.antialias = true}), Unimplemented);
  CHECK_THROWS_AS(CenterCrop(3, 3, {.data_format = "channels_first"}), Unimplemented);
  CHECK_THROWS_AS(RandomFlip("horizontal", {.data_format = "channels_first"}), Unimplemented);
  CHECK_THROWS_AS(CenterCrop(3, 3, {.data_format = "nchw"}), InvalidArgument);
  CHECK_THROWS_WITH(RandomFlip()(ops::zeros({4, 5}), true), Contains("RandomFlip") && Contains("(4, 5)"));
  CHECK_THROWS_AS(Resizing(2, 2)(ops::zeros({4, 5})), InvalidArgument);
  CHECK_THROWS_AS(CenterCrop(2, 2)(ops::zeros({1, 2, 4, 5, 3})), InvalidArgument);
  const nlohmann::json bad = nlohmann::json::parse(R"({"class_name": "RandomRotation", "config": {"name": "r",
      "factor": "big"}})");
  CHECK_THROWS_WITH(deserialize_layer(bad), Contains("RandomRotation 'r'") && Contains("factor"));
}

TEST_CASE("ops::image::affine_transform: shapes, fill modes and errors", "[ops][image]") {
  const Tensor x = images({2, 4, 5, 3});
  const Tensor identity = Tensor::from_vector<float>({1, 0, 0, 0, 1, 0, 0, 0}, {8});
  CHECK(max_abs_diff(ops::image::affine_transform(x, identity), x) == 0);
  // One image (rank 3) and one transform.
  CHECK(max_abs_diff(ops::image::affine_transform(ops::squeeze(image(x, 1), {0}), identity),
                     ops::squeeze(image(x, 1), {0})) == 0);
  // A shift right by one pixel: output x reads input x - 1; the first column is the fill (constant) or the
  // edge (nearest).
  const Tensor shift = Tensor::from_vector<float>({1, 0, -1, 0, 1, 0, 0, 0}, {1, 8});
  const Tensor c = ops::image::affine_transform(x, shift, {.fill_mode = "constant", .fill_value = 7});
  CHECK(max_abs_diff(ops::slice(c, {0, 0, 1, 0}, {2, 4, 4, 3}), ops::slice(x, {0, 0, 0, 0}, {2, 4, 4, 3})) == 0);
  for (double v : values_as_double(ops::slice(c, {0, 0, 0, 0}, {2, 4, 1, 3}))) CHECK(v == 7);
  const Tensor nn = ops::image::affine_transform(x, shift, {.interpolation = "nearest", .fill_mode = "nearest"});
  CHECK(max_abs_diff(ops::slice(nn, {0, 0, 0, 0}, {2, 4, 1, 3}), ops::slice(x, {0, 0, 0, 0}, {2, 4, 1, 3})) == 0);
  // float64 and half images.
  for (DType dt : {DType::Float64, DType::Float16, DType::BFloat16}) {
    const Tensor y = ops::image::affine_transform(ops::cast(x, dt), shift);
    CHECK(y.dtype() == dt);
    CHECK(max_abs_diff(ops::cast(y, DType::Float32), ops::image::affine_transform(x, shift)) < 1e-2);
  }
  CHECK_THROWS_WITH(ops::image::affine_transform(x, Tensor::from_vector<float>({1, 0, 0}, {3})),
                    Contains("affine_transform") && Contains("(8,)"));
  CHECK_THROWS_AS(ops::image::affine_transform(x, ops::zeros({3, 8})), InvalidArgument);
  CHECK_THROWS_AS(ops::image::affine_transform(ops::zeros({4, 5}), identity), InvalidArgument);
  CHECK_THROWS_AS(ops::image::affine_transform(x, identity, {.interpolation = "cubic"}), InvalidArgument);
  CHECK_THROWS_AS(ops::image::affine_transform(x, identity, {.fill_mode = "mirror"}), InvalidArgument);
  CHECK_THROWS_AS(ops::image::affine_transform(x, identity, {.data_format = "channels_first"}), Unimplemented);
  CHECK_THROWS_AS(ops::image::affine_transform(ops::cast(x, DType::Int32), identity), InvalidArgument);
}
