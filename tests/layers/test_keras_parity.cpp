// Numeric parity with Keras: replays every fixture in tests/fixtures/layers/*.json, written by real
// Keras 3 (tests/fixtures/make_layer_fixtures.py). A fixture's "layer" may be a small Sequential model (masks
// from Masking or Embedding(mask_zero) through recurrent layers). Each fixture's layer is rebuilt from the Keras-written
// config with deserialize_layer (so from_config is tested on Keras's own configs), built by a call, given
// Keras's weights, and its outputs (and for BatchNormalization the training call's output and moving
// statistics) must match within 1e-5 absolute + 1e-5 relative. So must the gradients of sum(output * dy),
// for the fixture's cotangent dy, with respect to every floating-point input and every trainable weight,
// computed by Ember's GradientTape (for BatchNormalization also those of the training call; Embedding's
// integer indices have none, so only its table's gradient is checked). A gradient Ember's tape does not give
// (no path, or an op without a backward formula) fails the case, as does a fixture without gradients
// (written by an older script: regenerate it).
//
// Attention fixtures may carry further call arguments (masks, use_causal_mask: "call_kwargs"), replayed through the
// layers' attend().
//
// One Catch2 test case per layer class ("Keras parity: Conv2D"), registered at start-up from the files
// found, so ctest names the failing layer. A fixture whose class is not registered fails (not skips),
// naming the class. New fixture files need a rebuild for ctest to list them (test discovery runs at
// build time); running the test binary directly always sees every file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/ember.h"
#include "tests/support/json_fixtures.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path fixtures_dir() { return ember::testing::fixture_path("layers"); }

// Outputs and gradients alike: a gradient sums more products than its output (a conv kernel's over every
// position), yet the largest gradient error on these fixtures is below 2e-6, so one tolerance serves both.
constexpr double kAbsTol = 1e-5;
constexpr double kRelTol = 1e-5;

// Fixture files grouped by the Keras class they hold, read once (the class is needed at registration).
const std::map<std::string, std::vector<fs::path>>& fixtures_by_class() {
  static const std::map<std::string, std::vector<fs::path>> by_class = [] {
    std::map<std::string, std::vector<fs::path>> out;
    std::error_code ec;
    if (!fs::is_directory(fixtures_dir(), ec)) return out;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(fixtures_dir()))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      std::string cls = "(unreadable fixture)";
      try {
        cls = ember::testing::read_json_file(f).at("layer").at("class_name").get<std::string>();
      } catch (const std::exception&) {
        // Reported by the test case of that name, with the parse error.
      }
      out[cls].push_back(f);
    }
    return out;
  }();
  return by_class;
}

// Whether an Ember weight name is Keras's path of the weight whose last component the fixture records:
// "<layer>/kernel", or "<layer>/<cell>/kernel" for a weight of a sublayer (an RNN's cell). A model's weights
// are named after its layers ("lstm/lstm_cell/kernel"), not after the model.
bool matches_keras_name(const std::string& name, const Layer& layer, const std::string& leaf) {
  const std::string head = dynamic_cast<const Model*>(&layer) ? "" : layer.name() + "/", tail = "/" + leaf;
  return name.size() >= head.size() + leaf.size() && name.compare(0, head.size(), head) == 0 &&
         name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
}

// One assertion per tensor (not per element), listing the first mismatches and the largest error.
void check_close(const Tensor& got, const json& expected, const std::string& what) {
  if (!got.defined()) {
    FAIL_CHECK(what << ": Ember gave no value (for a gradient: the tape found no path to this source, or an op on "
                       "the way has no backward formula)");
    return;
  }
  const Shape shape(expected.at("shape").get<std::vector<int64_t>>());
  if (got.shape() != shape || got.dtype() != DType::Float32) {
    FAIL_CHECK(what << ": got shape " << got.shape() << " " << dtype_name(got.dtype()) << ", Keras " << shape << " "
                    << expected.at("dtype").get<std::string>());
    return;
  }
  const std::vector<double> g = testing::values_as_double(got);
  const std::vector<double> e = expected.at("values").get<std::vector<double>>();
  REQUIRE(g.size() == e.size());
  size_t bad = 0;
  double worst = 0;
  std::ostringstream first;
  first << std::setprecision(9);
  for (size_t i = 0; i < g.size(); ++i) {
    const double err = std::abs(g[i] - e[i]);
    if (!(err <= kAbsTol + kRelTol * std::abs(e[i]))) {  // NaN counts as a mismatch
      if (bad < 5) first << "\n  [" << i << "] got " << g[i] << ", Keras " << e[i];
      ++bad;
      worst = std::isnan(err) ? err : std::max(worst, err);
    }
  }
  if (bad > 0)
    FAIL_CHECK(what << ": " << bad << " of " << g.size() << " values differ from Keras by more than " << kAbsTol
                    << " + " << kRelTol << "*|x| (largest error " << worst << "):" << first.str());
  else
    SUCCEED(what);
}

// Calls the layer under a tape and checks the gradients of sum(output * dy) with respect to the floating-point
// inputs and the trainable weights against Keras's (`expected`: {inputs: [tensor or null], weights: [tensor]}).
// Returns the output, for the forward checks of the same call.
Tensor check_gradients(Layer& layer, const std::function<Tensor(bool)>& call, const std::vector<Tensor>& xs,
                       const Tensor& dy, bool training, const json& expected) {
  const std::string when = training ? " (training=True)" : " (training=False)";
  const json& ej = expected.at("inputs");
  const json& wj = expected.at("weights");
  REQUIRE(ej.size() == xs.size());
  GradientTape tape;  // watches the trainable weights the call reads
  std::vector<Tensor> sources;
  std::vector<std::string> what;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!is_floating(xs[i].dtype())) {
      // Keras has none for integer inputs (Embedding's indices) either.
      CHECK(ej[i].is_null());
      continue;
    }
    tape.watch(xs[i]);
    sources.push_back(xs[i]);
    what.push_back("gradient of input " + std::to_string(i) + when);
  }
  const Tensor y = call(training);
  const std::vector<Variable> trainable = layer.trainable_weights();
  {
    INFO("Ember's trainable weights: " << trainable.size() << "; Keras's: " << wj.size());
    REQUIRE(trainable.size() == wj.size());
  }
  for (size_t i = 0; i < trainable.size(); ++i) {
    INFO("Ember weight " << trainable[i].name() << ", Keras weight .../" << wj[i].at("name").get<std::string>());
    CHECK(matches_keras_name(trainable[i].name(), layer, wj[i].at("name").get<std::string>()));
    sources.push_back(trainable[i].value());
    what.push_back("gradient of weight " + trainable[i].name() + when);
  }
  const std::vector<Tensor> grads = tape.gradient(y, sources, {.output_gradients = {dy}});
  size_t k = 0;
  for (size_t i = 0; i < xs.size(); ++i)
    if (is_floating(xs[i].dtype())) {
      check_close(grads[k], ej[i], what[k]);
      ++k;
    }
  for (size_t i = 0; i < wj.size(); ++i, ++k) check_close(grads[k], wj[i], what[k]);
  return y;
}

// An attention layer's call with the fixture's further call arguments (masks, use_causal_mask), as Keras made it.
Tensor call_with_kwargs(Layer& layer, const std::vector<Tensor>& xs, const json& kw, bool training) {
  auto mask_of = [](const json& t) -> std::optional<Tensor> {
    if (t.is_null()) return std::nullopt;
    return ember::testing::tensor_from_json(t);
  };
  if (auto* mha = dynamic_cast<layers::MultiHeadAttention*>(&layer)) {
    layers::AttentionCallOptions o{.training = training};
    if (xs.size() > 2) o.key = xs[2];
    for (const auto& [k, v] : kw.items()) {
      if (k == "attention_mask") o.attention_mask = mask_of(v);
      else if (k == "query_mask") o.query_mask = mask_of(v);
      else if (k == "value_mask") o.value_mask = mask_of(v);
      else if (k == "key_mask") o.key_mask = mask_of(v);
      else if (k == "use_causal_mask") o.use_causal_mask = v.get<bool>();
      else FAIL("unknown MultiHeadAttention call argument in the fixture: " << k);
    }
    return mha->attend(xs.at(0), xs.at(1), o);
  }
  if (auto* att = dynamic_cast<layers::Attention*>(&layer)) {
    layers::AttentionMaskOptions o{.training = training};
    for (const auto& [k, v] : kw.items()) {
      if (k == "mask") {
        o.query_mask = mask_of(v.at(0));
        o.value_mask = mask_of(v.at(1));
      } else if (k == "use_causal_mask") {
        o.use_causal_mask = v.get<bool>();
      } else {
        FAIL("unknown Attention call argument in the fixture: " << k);
      }
    }
    return att->attend(xs, o);
  }
  FAIL("fixture call_kwargs are only understood for the attention layers, not " << layer.class_name());
  return {};
}

void replay_fixture(const fs::path& path) {
  const json fx = ember::testing::read_json_file(path);
  const std::string cls = fx.at("layer").at("class_name").get<std::string>();
  const std::vector<std::string> known = registered_layers();
  if (std::find(known.begin(), known.end(), cls) == known.end()) {
    FAIL_CHECK("layer class \"" << cls << "\" is not registered (EMBER_REGISTER_LAYER), so fixture "
                                << path.filename().string() << " cannot be replayed");
    return;
  }
  LayerPtr layer = deserialize_layer(fx.at("layer"));

  std::vector<Tensor> xs;
  for (const json& t : fx.at("inputs")) xs.push_back(ember::testing::tensor_from_json(t));
  const bool as_list = fx.at("inputs_as_list").get<bool>();
  auto call = [&](bool training) {
    if (fx.contains("call_kwargs")) return call_with_kwargs(*layer, xs, fx.at("call_kwargs"), training);
    return as_list ? (*layer)(xs, training) : (*layer)(xs.at(0), training);
  };

  call(false);  // builds the layer, as Keras did before set_weights
  const json& wj = fx.at("weights");
  const std::vector<Variable> vars = layer->weights();
  {
    std::ostringstream names;
    for (const Variable& v : vars) names << " " << v.name();
    INFO("Ember weights:" << names.str() << "; Keras weights: " << wj.size());
    REQUIRE(vars.size() == wj.size());
  }
  std::vector<Tensor> values;
  for (size_t i = 0; i < wj.size(); ++i) {
    // Weight names match Keras's ("<layer>/kernel"): checkpoints rely on them.
    INFO("Ember weight " << vars[i].name() << ", Keras weight .../" << wj[i].at("name").get<std::string>());
    CHECK(matches_keras_name(vars[i].name(), *layer, wj[i].at("name").get<std::string>()));
    values.push_back(ember::testing::tensor_from_json(wj[i]));
  }
  layer->set_weights(values);

  check_close(call(false), fx.at("output"), "output (training=False)");
  if (!fx.contains("gradients")) {
    FAIL_CHECK("fixture has no gradients (written by an older make_layer_fixtures.py): regenerate it");
    return;
  }
  const Tensor dy = ember::testing::tensor_from_json(fx.at("dy"));
  check_gradients(*layer, call, xs, dy, false, fx.at("gradients"));
  if (fx.contains("training")) {
    const json& tr = fx.at("training");
    // The one training call runs under the tape, as Keras's did: it also updates the moving statistics.
    check_close(check_gradients(*layer, call, xs, dy, true, tr.at("gradients")), tr.at("output"),
                "output (training=True)");
    const std::vector<Tensor> after = layer->get_weights();
    const json& tw = tr.at("weights");
    REQUIRE(after.size() == tw.size());
    for (size_t i = 0; i < after.size(); ++i)
      check_close(after[i], tw[i], "weight " + tw[i].at("name").get<std::string>() + " after the training call");
    check_close(call(false), tr.at("output_after"), "output (training=False) after the training call");
  }
}

void run_class(const std::string& cls) {
  backend::clear_session();
  for (const fs::path& path : fixtures_by_class().at(cls)) {
    INFO("fixture " << path.filename().string() << " (" << path.string() << ")");
    try {
      replay_fixture(path);
    } catch (const std::exception& e) {
      FAIL_CHECK("threw: " << e.what());
    }
  }
}

// Catch2 v2's own registration path (what REGISTER_TEST_CASE expands to), with the class as state.
struct ClassInvoker : Catch::ITestInvoker {
  explicit ClassInvoker(std::string c) : cls(std::move(c)) {}
  void invoke() const override { run_class(cls); }
  std::string cls;
};

const bool registered = [] {
  for (const auto& [cls, files] : fixtures_by_class()) {
    const std::string name = "Keras parity: " + cls;
    Catch::AutoReg(new ClassInvoker(cls), CATCH_INTERNAL_LINEINFO, Catch::StringRef(),
                   Catch::NameAndTags{name, "[layers][keras_parity]"});
  }
  return true;
}();

}  // namespace

TEST_CASE("Keras parity fixtures are present", "[layers][keras_parity]") {
  INFO("fixtures directory: " << fixtures_dir().string()
                              << " (regenerate with python3 tests/fixtures/make_layer_fixtures.py)");
  size_t n = 0;
  for (const auto& [cls, files] : fixtures_by_class()) n += files.size();
  CHECK(n > 0);
  CHECK(registered);
}

// keras.ops.image.affine_transform (TF's ImageProjectiveTransformV3) at two fixed transforms, a rotation with
// scaling and a projective one, for every fill mode and interpolation: ops::image::affine_transform gives the same.
TEST_CASE("Keras parity: affine_transform op", "[ops][keras_parity]") {
  const json fx = ember::testing::load_json_fixture("image_ops/affine_transform.json");
  const Tensor images = ember::testing::tensor_from_json(fx.at("images"));
  const Tensor transforms = ember::testing::tensor_from_json(fx.at("transforms"));
  REQUIRE(fx.at("cases").size() == 8);
  for (const json& c : fx.at("cases")) {
    const std::string what = c.at("interpolation").get<std::string>() + ", fill_mode " +
                             c.at("fill_mode").get<std::string>();
    const Tensor y = ops::image::affine_transform(images, transforms,
                                                  {.interpolation = c.at("interpolation").get<std::string>(),
                                                   .fill_mode = c.at("fill_mode").get<std::string>(),
                                                   .fill_value = c.at("fill_value").get<double>()});
    check_close(y, c.at("output"), what);
  }
}
