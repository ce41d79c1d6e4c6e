// The deployment chain: an Ember `.keras` file loads in Python Keras, which exports a SavedModel
// (model.export) and a TFLite model (tf.lite.TFLiteConverter.from_saved_model); their outputs must match
// Ember's. tests/fixtures/deploy/ holds what each side made: the hidden test case below writes the models
// (an MLP and a small CNN with fixed weights) as Ember `.keras` files with their inputs (.npy), and
// export_and_run.py runs them through Keras, the SavedModel and the TFLite interpreter into outputs.json.
// The checks here rebuild the same models and compare, so a change in Ember's numerics or in the `.keras`
// files it writes that would break the chain fails here (regenerate with the steps in docs/deploying.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/ember.h"
#include "framework/io/npy.h"
#include "framework/io/zip_archive.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path deploy_fixture(const std::string& name) { return testing::fixture_path("deploy/" + name); }

// Every weight set from a fixed formula (moving variances kept positive), so the model is the same whatever
// the initializers do.
void set_fixed_weights(Model& model) {
  std::vector<Tensor> values;
  const std::vector<Variable> weights = model.weights();
  for (size_t k = 0; k < weights.size(); ++k) {
    const Tensor w = weights[k].value();
    const bool variance = weights[k].name().ends_with("moving_variance");
    std::vector<float> v(static_cast<size_t>(w.num_elements()));
    for (size_t i = 0; i < v.size(); ++i) {
      const double s = std::sin(0.7 * double(i) + 1.3 * double(k) + 0.1);
      v[i] = static_cast<float>(variance ? 1.0 + 0.5 * s : 0.5 * s);
    }
    values.push_back(Tensor::from_vector<float>(v, w.shape()));
  }
  model.set_weights(values);
}

Sequential make_mlp() {
  Sequential model({layers::Input({4}, {.name = "features"}),
                    layers::Dense(8, {.activation = "relu", .name = "hidden"}),
                    layers::Dense(3, {.activation = "softmax", .name = "probs"})},
                   {.name = "deploy_mlp"});
  set_fixed_weights(model);
  return model;
}

Sequential make_cnn() {
  Sequential model({layers::Input({8, 8, 1}, {.name = "image"}),
                    layers::Conv2D(4, 3, {.activation = "relu", .name = "conv"}),
                    layers::BatchNormalization({.name = "bn"}), layers::MaxPooling2D(2, {.name = "pool"}),
                    layers::Flatten({.name = "flatten"}), layers::Dense(2, {.name = "logits"})},
                   {.name = "deploy_cnn"});
  set_fixed_weights(model);
  return model;
}

// A fixed input batch of this shape.
Tensor make_input(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * double(i) + 0.2) * 1.5);
  return Tensor::from_vector<float>(v, shape);
}

struct DeployCase {
  std::string name;
  std::function<Sequential()> make;
  Shape input_shape;
};

const std::vector<DeployCase>& deploy_cases() {
  static const std::vector<DeployCase> cases = {{"mlp", make_mlp, Shape{5, 4}}, {"cnn", make_cnn, Shape{3, 8, 8, 1}}};
  return cases;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - double(b[i])));
  return d;
}

json config_of(const std::string& keras_path) { return json::parse(io::read_zip(keras_path).at("config.json")); }

}  // namespace

// Writes tests/fixtures/deploy/<name>.keras and <name>_input.npy (run it by its tag, then export_and_run.py).
TEST_CASE("deploy chain: write the Ember side of the fixtures", "[.deploy_fixture]") {
  for (const DeployCase& c : deploy_cases()) {
    Sequential model = c.make();
    model.save(deploy_fixture(c.name + ".keras").string());
    io::write_npy(deploy_fixture(c.name + "_input.npy").string(), make_input(c.input_shape));
  }
}

TEST_CASE("deploy chain: Ember's predictions match Keras, the exported SavedModel and TFLite", "[io][deploy][keras]") {
  std::ifstream in(deploy_fixture("outputs.json"));
  REQUIRE(in.good());
  const json outputs = json::parse(in);
  for (const DeployCase& c : deploy_cases()) {
    INFO(c.name);
    const Tensor x = io::read_npy(deploy_fixture(c.name + "_input.npy").string());
    REQUIRE(x.shape() == c.input_shape);
    CHECK(x.to_vector<float>() == make_input(c.input_shape).to_vector<float>());
    Sequential model = c.make();
    const std::vector<float> y = model.predict(x, {.verbose = 0}).to_vector<float>();
    const json& out = outputs.at(c.name);
    // Keras runs the same float32 kernels (1e-5); TFLite's converter folds batch normalization into the
    // convolution and uses its own kernels, so it rounds differently (1e-4).
    CHECK(max_abs_diff(y, out.at("keras").get<std::vector<float>>()) < 1e-5);
    CHECK(max_abs_diff(y, out.at("saved_model").get<std::vector<float>>()) < 1e-5);
    CHECK(max_abs_diff(y, out.at("tflite").get<std::vector<float>>()) < 1e-4);
    // The committed file Python loaded is what this Ember reads back to the same predictions...
    Model loaded = models::load_model(deploy_fixture(c.name + ".keras").string());
    CHECK(loaded.predict(x, {.verbose = 0}).to_vector<float>() == y);
    // ...and what this Ember would write now (the same config.json), so the chain still starts from it.
    testing::TempDir dir("deploy_chain");
    const std::string fresh = dir.file(c.name + ".keras");
    model.save(fresh);
    CHECK(config_of(fresh) == config_of(deploy_fixture(c.name + ".keras").string()));
  }
}
