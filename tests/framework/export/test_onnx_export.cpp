// onnx::export_model: models Ember exports pass ONNX's checker, and ONNX Runtime's outputs for them (recorded by
// tests/fixtures/onnx/make_onnx_fixtures.py) match Ember's predictions; a layer without an ONNX form is
// Unimplemented naming it, and a failed export leaves no file behind.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include <onnx/checker.h>

#include "framework/ember.h"
#include "framework/export/onnx.h"
#include "tests/support/fixtures.h"
#include "tests/support/json_fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// Every weight set to fixed values (a smooth function of its position), so that the fixture script's run of
// the exported file and this test's model hold the same weights without sharing a random generator.
void fill_weights(Model& model) {
  int k = 0;
  for (Variable v : model.weights()) {
    const bool variance = v.name().find("moving_variance") != std::string::npos;
    std::vector<float> values(static_cast<size_t>(v.shape().num_elements()));
    for (size_t i = 0; i < values.size(); ++i) {
      const double s = std::sin(0.37 * static_cast<double>(i) + 1.1 * k);
      values[i] = static_cast<float>(variance ? 0.6 + 0.4 * s : 0.5 * s);
    }
    v.assign(ops::cast(Tensor::from_vector<float>(values, v.shape()), v.dtype()));
    ++k;
  }
}

// The models the fixtures cover, by name.
Model mlp() {
  return Sequential({layers::Input({8}), layers::Dense(16, {.activation = "relu"}), layers::Dropout(0.5),
                     layers::Dense(4, {.activation = "softmax"})});
}

Model cnn() {
  return Sequential({layers::Input({8, 8, 3}), layers::Conv2D(4, 3, {.padding = "same", .activation = "relu"}),
                     layers::BatchNormalization(), layers::MaxPooling2D(2),
                     layers::DepthwiseConv2D(3, {.padding = "same", .depth_multiplier = 2}),
                     layers::BatchNormalization(), layers::ReLU(),
                     layers::AveragePooling2D(3, {.strides = 2, .padding = "same"}), layers::Conv2D(3, 2),
                     layers::GlobalAveragePooling2D(), layers::Dense(5)});
}

Model merges() {
  Tensor a = layers::Input({6}, {.name = "a"});
  Tensor b = layers::Input({6}, {.name = "b"});
  Tensor ha = layers::Dense(6, {.activation = "tanh"})(a);
  Tensor hb = layers::Dense(6, {.activation = "sigmoid"})(b);
  Tensor merged = layers::Concatenate()({layers::Add()({ha, hb}), layers::Subtract()({ha, hb}),
                                          layers::Multiply()({ha, hb}), layers::Average()({ha, hb}),
                                          layers::Maximum()({ha, hb}), layers::Minimum()({ha, hb})});
  Tensor out1 = layers::Dense(3, {.name = "scores"})(merged);
  Tensor out2 = layers::Dense(2, {.activation = "gelu", .name = "extra"})(layers::Concatenate()({ha, hb}));
  return Model(std::vector<Tensor>{a, b}, std::vector<Tensor>{out1, out2});
}

Model embedding() {
  return Sequential({layers::Input({5}, {.dtype = DType::Int32}), layers::Embedding(12, 4),
                     layers::LayerNormalization(), layers::Flatten(), layers::Dense(3)});
}

Model misc() {
  return Sequential({layers::Input({6, 6, 2}), layers::Rescaling(0.5, {.offset = 0.1}), layers::ZeroPadding2D(1),
                     layers::SeparableConv2D(3, 3, {.activation = "swish"}), layers::Cropping2D(1),
                     layers::Reshape({16, 3}), layers::Conv1D(4, 3, {.padding = "causal", .activation = "elu"}),
                     layers::Permute({2, 1}), layers::Flatten(), layers::Dense(6), layers::LeakyReLU(),
                     layers::PReLU(), layers::ReLU({.max_value = 0.5}), layers::Softmax()});
}

Model activations() {
  std::vector<SequentialEntry> entries{layers::Input({4})};
  for (const char* a : {"gelu", "mish", "softplus", "softsign", "selu", "elu", "relu6", "hard_silu", "log_sigmoid",
                        "tanh_shrink", "exponential", "leaky_relu", "hard_tanh", "celu", "silu", "log_softmax"})
    entries.push_back(layers::Dense(4, {.activation = a}));
  return Sequential(std::move(entries));
}

// A Sequential inside a functional model, after two convolutions that share their transposes.
Model nested() {
  auto head = std::make_shared<Sequential>(
      std::vector<SequentialEntry>{layers::Input({3, 3, 4}), layers::Flatten(), layers::Dense(3)},
      ModelOptions{.name = "head"});
  Tensor x = layers::Input({6, 6, 2});
  Tensor h = layers::Conv2D(3, 2, {.activation = "relu"})(x);
  h = layers::Conv2D(4, 2, {.activation = "tanh"})(h);
  h = layers::MaxPooling2D(2, {.strides = 1})(h);
  return Model(x, (*head)(h));
}

// A model Python Keras saved (tests/fixtures/checkpoints/), with its own weights.
std::function<Model()> saved_by_keras(const std::string& file) {
  return [file] { return models::load_model(testing::fixture_path("checkpoints/" + file).string(), {.compile = false}); };
}

struct ExportCase {
  std::string name;
  std::function<Model()> make;
  bool fixed_weights = true;  // false: keep the weights the model comes with
};

const std::vector<ExportCase>& export_cases() {
  static const std::vector<ExportCase> all = {
      {"mlp", mlp}, {"cnn", cnn}, {"merges", merges}, {"embedding", embedding}, {"misc", misc},
      {"activations", activations}, {"nested", nested}, {"keras_cnn", saved_by_keras("cnn.keras"), false},
      {"keras_functional", saved_by_keras("functional.keras"), false}};
  return all;
}

}  // namespace

TEST_CASE("exported models give ONNX Runtime's outputs", "[onnx]") {
  testing::TempDir dir("onnx");
  // make_onnx_fixtures.py runs ONNX Runtime on the files this test writes into EMBER_ONNX_FIXTURE_DIR.
  const char* keep = std::getenv("EMBER_ONNX_FIXTURE_DIR");
  const nlohmann::json fixtures = keep ? nlohmann::json() : testing::load_json_fixture("onnx/onnx_runtime.json");
  for (const ExportCase& c : export_cases()) {
    const std::string& name = c.name;
    SECTION(name) {
      backend::clear_session();
      Model model = c.make();
      if (c.fixed_weights) fill_weights(model);
      const std::string path = dir.file(name + ".onnx");
      ember::onnx::export_model(model, path, {.opset = 17});
      ::onnx::checker::check_model(path);  // the file as written
      if (keep) {
        fs::copy_file(path, fs::path(keep) / (name + ".onnx"), fs::copy_options::overwrite_existing);
        continue;
      }
      const nlohmann::json& f = fixtures.at(name);
      std::vector<Tensor> x;
      for (const nlohmann::json& t : f.at("inputs")) x.push_back(testing::tensor_from_json(t));
      const std::vector<Tensor> got = model.predict_outputs(x);
      REQUIRE(got.size() == f.at("outputs").size());
      for (size_t i = 0; i < got.size(); ++i) {
        const Tensor want = testing::tensor_from_json(f["outputs"][i]);
        REQUIRE(got[i].shape() == want.shape());
        const std::vector<float> g = got[i].to_vector<float>(), w = want.to_vector<float>();
        for (size_t j = 0; j < g.size(); ++j) {
          INFO(name << " output " << i << " element " << j);
          CHECK(std::abs(g[j] - w[j]) <= 1e-5f * std::max(1.0f, std::abs(w[j])));
        }
      }
    }
  }
}

TEST_CASE("an exported file names the model's inputs and outputs", "[onnx]") {
  testing::TempDir dir("onnx");
  backend::clear_session();
  Model model = merges();
  ember::onnx::export_model(model, dir.file("m.onnx"));
  ::onnx::ModelProto proto;
  std::ifstream in(dir.file("m.onnx"), std::ios::binary);
  REQUIRE(proto.ParseFromIstream(&in));
  REQUIRE(proto.graph().input_size() == 2);
  CHECK(proto.graph().input(0).name() == "a");
  CHECK(proto.graph().input(0).type().tensor_type().shape().dim(0).dim_param() == "N");
  CHECK(proto.graph().input(0).type().tensor_type().shape().dim(1).dim_value() == 6);
  REQUIRE(proto.graph().output_size() == 2);
  CHECK(proto.graph().output(0).name() == "scores");
  CHECK(proto.graph().output(1).name() == "extra");
  CHECK(proto.opset_import(0).version() == 17);
  // Dropout and the like leave nothing behind in an inference graph.
  backend::clear_session();
  Model m = mlp();
  ember::onnx::export_model(m, dir.file("mlp.onnx"));
  ::onnx::ModelProto p2;
  std::ifstream in2(dir.file("mlp.onnx"), std::ios::binary);
  REQUIRE(p2.ParseFromIstream(&in2));
  for (const ::onnx::NodeProto& n : p2.graph().node()) CHECK(n.op_type() != "Dropout");
  // Consecutive convolutions and pooling stay in NCHW: one transpose in, one out.
  backend::clear_session();
  Model convs = nested();
  ember::onnx::export_model(convs, dir.file("nested.onnx"));
  ::onnx::ModelProto p3;
  std::ifstream in3(dir.file("nested.onnx"), std::ios::binary);
  REQUIRE(p3.ParseFromIstream(&in3));
  int transposes = 0;
  for (const ::onnx::NodeProto& n : p3.graph().node()) transposes += n.op_type() == "Transpose";
  CHECK(transposes == 2);
}

TEST_CASE("a layer without an ONNX form is Unimplemented and leaves no file", "[onnx]") {
  testing::TempDir dir("onnx");
  backend::clear_session();
  Sequential model({layers::Input({4, 3}), layers::LSTM(2, {.name = "my_lstm"}), layers::Dense(1)});
  const std::string path = dir.file("lstm.onnx");
  CHECK_THROWS_AS(ember::onnx::export_model(model, path), Unimplemented);
  CHECK_THROWS_WITH(ember::onnx::export_model(model, path), Contains("'my_lstm' (LSTM)"));
  CHECK(fs::is_empty(dir.path()));
  // A failed export leaves an existing file as it was.
  { std::ofstream(path) << "old"; }
  CHECK_THROWS_AS(ember::onnx::export_model(model, path), Unimplemented);
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "old");
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
}

TEST_CASE("export_model checks its options", "[onnx]") {
  testing::TempDir dir("onnx");
  backend::clear_session();
  Model model = mlp();
  CHECK_THROWS_AS(ember::onnx::export_model(model, dir.file("a.onnx"), {.opset = 12}), InvalidArgument);
  ember::onnx::export_model(model, dir.file("a.onnx"));
  CHECK_THROWS_AS(ember::onnx::export_model(model, dir.file("a.onnx"), {.overwrite = false}), FailedPrecondition);
  ember::onnx::export_model(model, dir.file("a.onnx"), {.opset = 13});  // Softmax on one axis is opset 13's
  ::onnx::checker::check_model(dir.file("a.onnx"));
  backend::clear_session();
  Model norm = embedding();
  CHECK_THROWS_WITH(ember::onnx::export_model(norm, dir.file("n.onnx"), {.opset = 16}), Contains("opset 17"));
  // A model without a graph has nothing to export.
  Sequential empty({layers::Dense(2)});
  CHECK_THROWS_AS(ember::onnx::export_model(empty, dir.file("e.onnx")), Unimplemented);
}
