// The applications (applications/) against real Keras 3, without weight files: each fixture in
// tests/fixtures/applications/ (tests/fixtures/make_application_fixtures.py) was written by
// keras.applications.<Model>(weights=None, ...). Ember's model must have Keras's name, parameter counts and
// input/output shapes; where the fixture lists them, the same layers in the same order with the same
// classes, configs and connections (Keras 3's saved config), the same weights (paths and shapes, in order)
// and the same .weights.h5 layout; and where it has an output, given the fixture's deterministic weights and
// input, the same output within float32 tolerance. Those models then save as .keras, .weights.h5 and legacy
// .h5 and load back (and through the builders' weights argument) to bit-identical outputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/ember.h"
#include "framework/io/hdf5_file.h"
#include "framework/io/model_config.h"
#include "tests/support/json_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using nlohmann::json;

namespace {

json app_fixture(const std::string& name) {
  INFO("regenerate with python3 tests/fixtures/make_application_fixtures.py");
  return ember::testing::load_json_fixture("applications/" + name + ".json");
}

// Keras's (h, w, c) with null for None; Ember's -1.
Shape shape_from_json(const json& j) {
  std::vector<int64_t> dims;
  for (const json& d : j) dims.push_back(d.is_null() ? -1 : d.get<int64_t>());
  return Shape(dims);
}

json shape_to_json(const Shape& s, int64_t from = 0) {
  json out = json::array();
  for (int64_t i = from; i < s.rank(); ++i) out.push_back(s[i] < 0 ? json(nullptr) : json(s[i]));
  return out;
}

std::string string_arg(const json& args, const char* key, const std::string& fallback) {
  if (!args.contains(key)) return fallback;
  return args[key].is_null() ? "" : args[key].get<std::string>();
}

// The fixture's builder call, with its arguments (Keras's defaults where the fixture gives none).
Model build(const json& f, const std::string& weights = "") {
  backend::clear_session();
  const json& a = f["args"];
  const Shape input_shape = a.contains("input_shape") && !a["input_shape"].is_null() ? shape_from_json(a["input_shape"])
                                                                                      : Shape{};
  const bool include_top = a.value("include_top", true);
  const std::string pooling = string_arg(a, "pooling", "");
  const int64_t classes = a.value("classes", int64_t{1000});
  const std::string activation = string_arg(a, "classifier_activation", "softmax");
  const std::string model = f["model"];
  if (model == "MobileNetV2")
    return applications::MobileNetV2({.input_shape = input_shape,
                                      .alpha = a.value("alpha", 1.0),
                                      .include_top = include_top,
                                      .weights = weights,
                                      .pooling = pooling,
                                      .classes = classes,
                                      .classifier_activation = activation});
  const applications::ApplicationOptions o{.include_top = include_top,
                                           .weights = weights,
                                           .input_shape = input_shape,
                                           .pooling = pooling,
                                           .classes = classes,
                                           .classifier_activation = activation};
  if (model == "EfficientNetB0") return applications::EfficientNetB0(o);
  if (model == "EfficientNetB1") return applications::EfficientNetB1(o);
  if (model == "EfficientNetB2") return applications::EfficientNetB2(o);
  if (model == "EfficientNetB3") return applications::EfficientNetB3(o);
  if (model == "EfficientNetB4") return applications::EfficientNetB4(o);
  if (model == "EfficientNetB5") return applications::EfficientNetB5(o);
  if (model == "EfficientNetB6") return applications::EfficientNetB6(o);
  if (model == "EfficientNetB7") return applications::EfficientNetB7(o);
  if (model == "ResNet50") return applications::ResNet50(o);
  if (model == "ResNet101") return applications::ResNet101(o);
  if (model == "ResNet152") return applications::ResNet152(o);
  REQUIRE(model == "VGG16");
  return applications::VGG16(o);
}

// The fixture's deterministic values (make_application_fixtures.py): element i of weight k, in float32 (cast to
// the weight's dtype by the caller).
Tensor det_values(const Shape& shape, int64_t k, double scale, double offset) {
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    const double u = static_cast<double>((i * 7919 + k * 104729) % 2003) / 1001.0 - 1.0;
    v[static_cast<size_t>(i)] = static_cast<float>(offset + scale * u);
  }
  return Tensor::from_vector<float>(v, shape);
}

Tensor det_input(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(static_cast<double>((i * 37) % 101) / 50.0 - 1.0);
  return Tensor::from_vector<float>(v, shape);
}

std::vector<float> floats(const Tensor& t) { return ops::cast(t, DType::Float32).to_vector<float>(); }

// Keras's config less the keys Keras 3.15 added that Ember's layers do not write yet (Keras reads configs
// without them, filling in the same null defaults): a variance-scaling initializer's input_axes and
// output_axes, Dense's quantization_config; each only when null, so a real value still fails the check.
json without_newer_keras_keys(json config) {
  for (auto& [key, value] : config.items()) {
    if (!value.is_object() || !value.contains("config") || !value["config"].is_object()) continue;
    for (const char* axes : {"input_axes", "output_axes"})
      if (value["config"].contains(axes) && value["config"][axes].is_null()) value["config"].erase(axes);
  }
  if (config.contains("quantization_config") && config["quantization_config"].is_null())
    config.erase("quantization_config");
  return config;
}

// Keras 3's saved layer list, compacted as the fixture has it: [name, class, config without its name,
// [inbound layer names]].
void check_layers(const Model& m, const json& f) {
  const json ours = io::serialize_model(m)["config"]["layers"];
  const json& keras = f["layers"];
  REQUIRE(ours.size() == keras.size());
  for (size_t i = 0; i < keras.size(); ++i) {
    const json& k = keras[i];
    const json& o = ours[i];
    INFO("layer " << i << " " << k[0] << " " << k[1]);
    CHECK(o["name"] == k[0]);
    CHECK(o["class_name"] == k[1]);
    json config = o["config"];
    config.erase("name");
    const json want = without_newer_keras_keys(f["layer_configs"][k[2].get<size_t>()]);
    for (const auto& [key, value] : want.items()) {
      INFO("config key " << key);
      CHECK(config.value(key, json("(missing)")) == value);
    }
    for (const auto& [key, value] : config.items()) {
      INFO("config key " << key);
      CHECK(want.contains(key));
    }
    json inbound = json::array();
    for (const json& node : o["inbound_nodes"]) {
      const json& arg = node["args"][0];
      for (const json& t : arg.is_array() ? arg : json::array({arg})) {
        const json& history = t["config"]["keras_history"];
        CHECK(history[1] == 0);
        CHECK(history[2] == 0);
        inbound.push_back(history[0]);
      }
    }
    CHECK(inbound == k[3]);
  }
}

// Every dataset of a .weights.h5 file grouped as the fixture has them: [group, [shapes of "0", "1", ...]].
void h5_datasets(const io::H5Group& g, const std::string& prefix, json& out) {
  for (const std::string& c : g.children(io::H5Order::Name)) {
    const std::string path = prefix.empty() ? c : prefix + "/" + c;
    if (g.has_group(c)) {
      h5_datasets(g.group(c), path, out);
      continue;
    }
    if (out.empty() || out.back()[0] != prefix) out.push_back({prefix, json::array()});
    CHECK(c == std::to_string(out.back()[1].size()));
    out.back()[1].push_back(shape_to_json(g.dataset_shape(c)));
  }
}

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(double(got[i]) - want[i]) / (1e-5 + 1e-4 * std::abs(double(want[i])));
    if (err > worst) worst = err, worst_at = i;
  }
  INFO("worst element " << worst_at << ": got " << got[worst_at] << ", Keras " << want[worst_at]
                        << " (error / tolerance " << worst << ")");
  CHECK(worst <= 1.0);
}

const char* const kCases[] = {"resnet50_top",        "resnet50_default",    "resnet50_notop",
                              "resnet101_avg",       "resnet152_max",       "vgg16_avg",
                              "vgg16_top",           "mobilenetv2_035_max", "mobilenetv2_050_top",
                              "mobilenetv2_default", "mobilenetv2_140_notop", "efficientnetb0_avg",
                              "efficientnetb0_top",  "efficientnetb0_default", "efficientnetb0_max",
                              "efficientnetb1_notop", "efficientnetb2_default", "efficientnetb3_default",
                              "efficientnetb4_avg",  "efficientnetb5_default", "efficientnetb6_default",
                              "efficientnetb7_default"};

}  // namespace

TEST_CASE("applications: Keras's names, shapes, layers, weights and outputs", "[applications]") {
  for (const char* name : kCases) {
    DYNAMIC_SECTION(name) {
      const json f = app_fixture(name);
      Model m = build(f);
      CHECK(m.name() == f["name"]);
      CHECK(m.count_params() == f["count_params"].get<int64_t>());
      int64_t trainable = 0;
      for (const Variable& v : m.trainable_weights()) trainable += v.shape().num_elements();
      CHECK(trainable == f["trainable_params"].get<int64_t>());
      REQUIRE(m.inputs().size() == 1);
      CHECK(shape_to_json(m.inputs()[0].shape(), 1) == f["input_shape"]);
      CHECK(shape_to_json(m.outputs()[0].shape(), 1) == f["output_shape"]);
      const std::string summary = m.summary_string();
      CHECK_THAT(summary, Catch::Contains("Total params: " + std::to_string(f["count_params"].get<int64_t>())));
      CHECK_THAT(summary, Catch::Contains("Trainable params: " + std::to_string(trainable)));
      if (!f.contains("layers")) continue;

      check_layers(m, f);
      const std::vector<Variable> weights = m.weights();
      REQUIRE(weights.size() == f["weights"].size());
      std::vector<Tensor> values;
      for (size_t k = 0; k < weights.size(); ++k) {
        const json& w = f["weights"][k];
        INFO("weight " << k);
        CHECK(weights[k].name() == w[0]);
        REQUIRE(shape_to_json(weights[k].shape()) == w[1]);
        // Normalization's count is int64 (its values, all 0, cast exactly).
        values.push_back(ops::cast(det_values(weights[k].shape(), static_cast<int64_t>(k), w[2], w[3]), weights[k].dtype()));
      }
      m.set_weights(values);

      ember::testing::TempDir dir("applications");
      if (f.contains("weights_h5")) {
        m.save_weights(dir.file("layout.weights.h5"));
        json ours = json::array();
        h5_datasets(io::H5File::open_read(dir.file("layout.weights.h5")).root(), "", ours);
        CHECK(ours == f["weights_h5"]);
      }
      if (!f.contains("output")) continue;

      Shape batch_shape = shape_from_json(f["input_shape"]);
      std::vector<int64_t> dims{f["batch"].get<int64_t>()};
      for (int64_t d : batch_shape) dims.push_back(d);
      const Tensor x = det_input(Shape(dims));
      const Tensor y = m.call_outputs({x})[0];
      check_close(floats(y), f["output"].get<std::vector<float>>());

      // Round trips: every format gives back exactly this model's output.
      const std::vector<float> want = floats(y);
      m.save(dir.file("m.keras"));
      m.save(dir.file("m.h5"));
      m.save_weights(dir.file("m.weights.h5"));
      for (const char* file : {"m.keras", "m.h5"}) {
        INFO(file);
        Model back = models::load_model(dir.file(file), {.compile = false});
        CHECK(back.name() == m.name());
        CHECK(floats(back.call_outputs({x})[0]) == want);
      }
      {
        Model fresh = build(f);
        fresh.load_weights(dir.file("m.weights.h5"));
        CHECK(floats(fresh.call_outputs({x})[0]) == want);
      }
      // The builders' weights argument loads a file too.
      CHECK(floats(build(f, dir.file("m.weights.h5")).call_outputs({x})[0]) == want);
      CHECK(floats(build(f, dir.file("m.h5")).call_outputs({x})[0]) == want);
    }
  }
}

TEST_CASE("applications: a frozen model is the base of a bigger one whose head trains", "[applications]") {
  backend::clear_session();
  // Held by a shared_ptr, as any model a functional model calls.
  auto base = std::make_shared<Model>(
      applications::MobileNetV2({.input_shape = {32, 32, 3}, .alpha = 0.35, .include_top = false, .pooling = "avg"}));
  base->set_trainable(false);
  Tensor inputs = layers::Input({32, 32, 3});
  Tensor h = (*base)(inputs);
  Tensor outputs = layers::Dense(2)(h);
  Model model(inputs, outputs);
  CHECK(model.trainable_weights().size() == 2);
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.05}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const Tensor x = random::uniform({8, 32, 32, 3}, {.minval = -1, .maxval = 1, .seed = 3});
  // Unbalanced labels: the frozen base (its BatchNormalization in inference mode, with fresh moving statistics)
  // may give nearly the same features for every image, and the head must still have something to learn.
  const Tensor y = Tensor::from_vector<int64_t>({0, 1, 0, 0, 0, 1, 0, 0}, {8});
  const std::vector<Tensor> base_before = base->get_weights();
  const double first = model.train_on_batch(x, y).at("loss");
  double last = first;
  for (int i = 0; i < 5; ++i) last = model.train_on_batch(x, y).at("loss");
  CHECK(last < first);
  // Nothing in the frozen base moved: neither its kernels nor its batch norms' moving statistics.
  const std::vector<Tensor> base_after = base->get_weights();
  REQUIRE(base_after.size() == base_before.size());
  size_t changed = 0;
  for (size_t i = 0; i < base_after.size(); ++i)
    changed += !ops::reduce_all(ops::equal(base_before[i], base_after[i])).item<bool>();
  CHECK(changed == 0);
}

TEST_CASE("applications: ResNet50 trains a batch of 2 at 64x64 on the CPU, in float32 and mixed_float16", "[applications]") {
  for (const char* policy : {"float32", "mixed_float16"}) {
    INFO(policy);
    backend::clear_session();
    random::set_seed(1);
    DeviceScope on(Device::cpu());
    mixed_precision::set_global_policy(policy);
    Model model = applications::ResNet50({.input_shape = {64, 64, 3}, .classes = 10});
    mixed_precision::set_global_policy("float32");
    model.compile({.optimizer = optimizers::Adam(), .loss = losses::SparseCategoricalCrossentropy()});
    const Tensor x = random::uniform({2, 64, 64, 3}, {.seed = 2});
    const Tensor y = Tensor::from_vector<int64_t>({3, 7}, Device::cpu());
    const double loss = model.train_on_batch(x, y).at("loss");
    CHECK(std::isfinite(loss));
    CHECK(loss > 0);
    CHECK(model.predict(x, {.verbose = 0}).shape() == Shape{2, 10});
  }
}

TEST_CASE("applications: EfficientNetB0 trains at 32x32, its drop connect active only while training", "[applications]") {
  backend::clear_session();
  random::set_seed(1);
  Model model = applications::EfficientNetB0({.input_shape = {32, 32, 3}, .classes = 3});
  const Tensor x = random::uniform({4, 32, 32, 3}, {.minval = 0, .maxval = 255, .seed = 2});
  const Tensor y = Tensor::from_vector<int64_t>({0, 1, 2, 1}, {4});
  // Inference is deterministic; training draws fresh Dropout masks each call (the top's and the blocks'
  // per-sample ones), while its batch statistics are the same for the same batch.
  CHECK(floats(model(x, false)) == floats(model(x, false)));
  CHECK(floats(model(x, true)) != floats(model(x, true)));
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.01}), .loss = losses::SparseCategoricalCrossentropy()});
  const std::vector<Tensor> before = model.get_weights();
  const double loss = model.train_on_batch(x, y).at("loss");
  CHECK(std::isfinite(loss));
  CHECK(loss > 0);
  // The kernels moved; the Normalization's mean, variance and count (weights 0 to 2, not trainable) did not.
  const std::vector<Tensor> after = model.get_weights();
  for (size_t i = 0; i < 3; ++i) CHECK(ops::reduce_all(ops::equal(before[i], after[i])).item<bool>());
  CHECK(!ops::reduce_all(ops::equal(before[3], after[3])).item<bool>());
}

TEST_CASE("applications: bad arguments are clear errors", "[applications]") {
  using applications::ApplicationOptions;
  ember::testing::TempDir dir("applications_errors");
  CHECK_THROWS_AS(applications::ResNet50({.weights = "imagenet"}), Unimplemented);
  CHECK_THROWS_WITH(applications::VGG16({.weights = dir.file("missing.weights.h5")}),
                    Catch::Contains("VGG16") && Catch::Contains("missing.weights.h5"));
  CHECK_THROWS_AS(applications::VGG16({.weights = dir.file("missing.weights.h5")}), InvalidArgument);
  CHECK_THROWS_WITH(applications::ResNet50({.include_top = false, .input_shape = {16, 64, 3}}),
                    Catch::Contains("at least 32x32"));
  CHECK_THROWS_AS(applications::ResNet50({.include_top = false, .input_shape = {32, 32}}), InvalidArgument);
  CHECK_THROWS_AS(applications::ResNet50({.include_top = false, .input_shape = {32, 32, -1}}), InvalidArgument);
  CHECK_THROWS_WITH(applications::VGG16({.include_top = true, .input_shape = {-1, -1, 3}}), Catch::Contains("static"));
  CHECK_THROWS_WITH(applications::VGG16({.include_top = false, .pooling = "mean"}), Catch::Contains("'mean'"));
  CHECK_THROWS_AS(applications::VGG16({.classes = 0}), InvalidArgument);
  CHECK_THROWS_AS(applications::MobileNetV2({.alpha = 0}), InvalidArgument);
  CHECK_THROWS_WITH(applications::EfficientNetB0({.weights = "imagenet"}), Catch::Contains("EfficientNetB0"));
  CHECK_THROWS_AS(applications::EfficientNetB7({.weights = "imagenet"}), Unimplemented);
  CHECK_THROWS_WITH(applications::EfficientNetB0({.include_top = false, .input_shape = {31, 64, 3}}),
                    Catch::Contains("at least 32x32"));
  CHECK_THROWS_WITH(applications::EfficientNetB0({.include_top = false, .pooling = "sum"}), Catch::Contains("'sum'"));
  CHECK_THROWS_AS(applications::MobileNetV2({.input_shape = {32, 32, 3}, .alpha = 0.35, .classifier_activation = "no_such"}),
                  InvalidArgument);
  // With a weights file, the top's activation must be softmax or none (Keras's validate_activation).
  backend::clear_session();
  Model small = applications::MobileNetV2({.input_shape = {32, 32, 3}, .alpha = 0.35, .classes = 3});
  small.save_weights(dir.file("small.weights.h5"));
  CHECK_THROWS_WITH(applications::MobileNetV2({.input_shape = {32, 32, 3},
                                               .alpha = 0.35,
                                               .weights = dir.file("small.weights.h5"),
                                               .classes = 3,
                                               .classifier_activation = "sigmoid"}),
                    Catch::Contains("classifier_activation"));
  // A weights file of another model is the loader's error.
  CHECK_THROWS_AS(applications::MobileNetV2({.input_shape = {32, 32, 3}, .alpha = 0.5, .weights = dir.file("small.weights.h5"),
                                             .classes = 3}),
                  Error);
}

TEST_CASE("applications: preprocess_input matches Keras", "[applications]") {
  const json f = app_fixture("preprocess");
  const Tensor x = ember::testing::tensor_from_json({{"shape", f["input"]["shape"]}, {"dtype", "float32"},
                                                     {"values", f["input"]["values"]}});
  // The same float32 operations as Keras: bit-identical.
  CHECK(floats(applications::resnet50::preprocess_input(x)) == f["resnet50"].get<std::vector<float>>());
  CHECK(floats(applications::resnet::preprocess_input(x)) == f["resnet50_tensor"].get<std::vector<float>>());
  CHECK(floats(applications::vgg16::preprocess_input(x)) == f["vgg16"].get<std::vector<float>>());
  CHECK(floats(applications::mobilenet_v2::preprocess_input(x)) == f["mobilenet_v2"].get<std::vector<float>>());
  CHECK(floats(applications::mobilenet_v2::preprocess_input(x)) == f["mobilenet_v2_tensor"].get<std::vector<float>>());
  // EfficientNet preprocesses inside the model: its preprocess_input passes the images through.
  CHECK(floats(applications::efficientnet::preprocess_input(x)) == f["efficientnet"].get<std::vector<float>>());
  // One image (3-D) and integer pixels (made float32) work too.
  const Tensor image = ops::slice(x, {0, 0, 0, 0}, {1, 2, 2, 3});
  const Tensor pixels = ops::cast(image, DType::UInt8);
  CHECK(applications::vgg16::preprocess_input(pixels).dtype() == DType::Float32);
  CHECK(floats(applications::vgg16::preprocess_input(ops::reshape(pixels, {2, 2, 3}))) ==
        floats(applications::vgg16::preprocess_input(image)));
  CHECK(applications::mobilenet_v2::preprocess_input(ops::cast(x, DType::Float64)).dtype() == DType::Float64);
  // torch mode: x / 255, minus ImageNet's mean, over its standard deviation.
  const std::vector<float> torch = floats(applications::imagenet_utils::preprocess_input(image, "torch"));
  const std::vector<float> raw = floats(image);
  const double mean[3] = {0.485, 0.456, 0.406}, std[3] = {0.229, 0.224, 0.225};
  for (size_t i = 0; i < raw.size(); ++i) CHECK(torch[i] == Approx((raw[i] / 255.0 - mean[i % 3]) / std[i % 3]).epsilon(1e-5));

  CHECK_THROWS_WITH(applications::resnet::preprocess_input(Tensor::from_vector<float>({1, 2}, {1, 2})),
                    Catch::Contains("3 channels"));
  CHECK_THROWS_WITH(applications::imagenet_utils::preprocess_input(x, "keras"), Catch::Contains("'keras'"));
}

TEST_CASE("applications: correct_pad pads as TF's same padding of a strided convolution", "[applications]") {
  using applications::imagenet_utils::correct_pad;
  using Pad = std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>>;
  CHECK(correct_pad({-1, 32, 32, 8}, 3) == Pad{{0, 1}, {0, 1}});
  CHECK(correct_pad({-1, 33, 40, 8}, 3) == Pad{{1, 1}, {0, 1}});
  CHECK(correct_pad({-1, -1, -1, 8}, 3) == Pad{{0, 1}, {0, 1}});
  CHECK(correct_pad({-1, 7, 7, 8}, 5) == Pad{{2, 2}, {2, 2}});
}
