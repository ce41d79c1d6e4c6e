// Model configs (framework/io/model_config.h, Model::get_config/from_config, compile configs): Ember's
// own round trips, and configs written by real Keras 3.15 and tf-keras 2.21
// (tests/fixtures/checkpoints/configs/*.json, made by tests/fixtures/checkpoints/make_config_fixtures.py).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "framework/ember.h"
#include "framework/io/model_config.h"
#include "tests/support/fixtures.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

json read_fixture(const std::string& name) {
  const fs::path path = testing::fixture_path("checkpoints/configs/" + name + ".json");
  INFO("fixture " << path.string() << " (regenerate with python3 tests/fixtures/checkpoints/make_config_fixtures.py)");
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

Tensor rand_input(const Shape& shape, uint64_t seed) { return random::uniform(shape, {.minval = -1, .maxval = 1, .seed = seed}); }

std::vector<double> values(const Tensor& t) { return ember::testing::values_as_double(t); }

// Rebuilds m from its config, checks the rebuilt model has the same config, then copies the weights
// over and checks it computes the same outputs.
std::shared_ptr<Model> round_trip(Model& m, const std::vector<Tensor>& xs) {
  const json config = io::serialize_model(m);
  std::shared_ptr<Model> back = models::model_from_json(m.to_json());
  CHECK(io::serialize_model(*back) == config);
  CHECK(back->count_params() == m.count_params());
  REQUIRE(back->num_outputs() == m.num_outputs());
  back->set_weights(m.get_weights());
  std::vector<Tensor> want = m.call_outputs(xs), got = back->call_outputs(xs);
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(got[i].shape() == want[i].shape());
    CHECK(values(got[i]) == values(want[i]));
  }
  return back;
}

// [name, class_name, params] of model.layers, as the fixtures' summaries list them.
json layer_summary(const Model& m) {
  json out = json::array();
  for (const LayerPtr& l : m.layers()) out.push_back({l->name(), l->class_name(), l->count_params()});
  return out;
}

json output_shapes(const Model& m) {
  json out = json::array();
  for (const Tensor& t : m.outputs()) {
    json s = json::array();
    for (int64_t d : t.shape()) s.push_back(d < 0 ? json(nullptr) : json(d));
    out.push_back(s);
  }
  return out;
}

void check_summary(const Model& m, const json& summary) {
  CHECK(m.count_params() == summary["total_params"].get<int64_t>());
  int64_t trainable = 0;
  for (const Variable& v : m.trainable_weights()) trainable += v.shape().num_elements();
  CHECK(trainable == summary["trainable_params"].get<int64_t>());
  CHECK(output_shapes(m) == summary["output_shapes"]);
  CHECK(layer_summary(m) == summary["layers"]);
}

}  // namespace

TEST_CASE("Sequential config round trip in Keras 3's form", "[config]") {
  backend::clear_session();
  Sequential m({layers::Input({6}), layers::Dense(5, {.activation = "relu", .kernel_regularizer = regularizers::L2(0.01)}),
                layers::Dropout(0.25), layers::Dense(2)},
               {.name = "seq"});
  const json s = io::serialize_model(m);
  CHECK(s["module"] == "keras");
  CHECK(s["class_name"] == "Sequential");
  CHECK(s["registered_name"].is_null());
  CHECK(s["build_config"] == json{{"input_shape", {nullptr, 6}}});
  CHECK(s["compile_config"] == json::object());
  const json& ls = s["config"]["layers"];
  REQUIRE(ls.size() == 4);
  CHECK(ls[0]["class_name"] == "InputLayer");
  CHECK_FALSE(ls[0].contains("build_config"));  // Keras: InputLayer and Dropout have no build step
  CHECK_FALSE(ls[2].contains("build_config"));
  CHECK(ls[1]["module"] == "keras.layers");
  CHECK(ls[1]["build_config"] == json{{"input_shape", {nullptr, 6}}});
  CHECK(ls[3]["build_config"] == json{{"input_shape", {nullptr, 5}}});
  // Objects inside layer configs are in Keras 3's form too.
  CHECK(ls[1]["config"]["kernel_initializer"]["module"] == "keras.initializers");
  CHECK(ls[1]["config"]["kernel_initializer"]["class_name"] == "GlorotUniform");
  CHECK(ls[1]["config"]["kernel_initializer"]["registered_name"].is_null());
  CHECK(ls[1]["config"]["kernel_regularizer"]["module"] == "keras.regularizers");
  CHECK(ls[1]["config"]["dtype"]["module"] == "keras");
  CHECK(ls[1]["config"]["dtype"]["class_name"] == "DTypePolicy");
  CHECK(s["config"]["build_input_shape"] == json{nullptr, 6});
  round_trip(m, {rand_input({3, 6}, 1)});
}

TEST_CASE("Functional MLP config: Keras 3 nodes, flat single input/output, round trip", "[config]") {
  backend::clear_session();
  Tensor x = layers::Input({8}, {.name = "features"});
  Tensor h = layers::Dense(4, {.activation = "relu", .name = "hidden"})(x);
  Model m(x, layers::Dense(3, {.name = "logits"})(h), {.name = "mlp"});
  const json s = io::serialize_model(m);
  CHECK(s["module"] == "keras.src.models.functional");
  CHECK(s["class_name"] == "Functional");
  CHECK(s["registered_name"] == "Functional");
  CHECK(s["build_config"] == json{{"input_shape", nullptr}});
  const json& c = s["config"];
  CHECK(c["input_layers"] == json{"features", 0, 0});
  CHECK(c["output_layers"] == json{"logits", 0, 0});
  CHECK(c["layers"][0]["inbound_nodes"] == json::array());
  const json want_node = {{"args", {{{"class_name", "__keras_tensor__"},
                                     {"config", {{"shape", {nullptr, 8}}, {"dtype", "float32"}, {"keras_history", {"features", 0, 0}}}}}}},
                          {"kwargs", json::object()}};
  CHECK(c["layers"][1]["inbound_nodes"] == json::array({want_node}));
  CHECK(c["layers"][1]["name"] == "hidden");
  CHECK(json::parse(m.to_json()) == s);
  round_trip(m, {rand_input({2, 8}, 2)});
  // from_config of the bare config (Keras: Model.from_config(model.get_config()))
  auto back = std::dynamic_pointer_cast<Model>(Model::from_config(m.get_config()));
  REQUIRE(back);
  CHECK(back->get_config() == m.get_config());
}

TEST_CASE("Two-input functional model with Add and Concatenate round-trips", "[config]") {
  backend::clear_session();
  Tensor a = layers::Input({6}, {.name = "in_a"});
  Tensor b = layers::Input({6}, {.name = "in_b"});
  Tensor s = layers::Add()({layers::Dense(8)(a), layers::Dense(8)(b)});
  Tensor c = layers::Concatenate()({s, a});
  Model m({a, b}, {layers::Dense(3)(c)}, {.name = "two"});
  const json cfg = m.get_config();
  CHECK(cfg["input_layers"] == json{{"in_a", 0, 0}, {"in_b", 0, 0}});
  // A merge layer's node holds its inputs as one list argument; its build shape lists both.
  const json& add = cfg["layers"][4];
  REQUIRE(add["class_name"] == "Add");
  CHECK(add["inbound_nodes"][0]["args"].size() == 1);
  CHECK(add["inbound_nodes"][0]["args"][0].size() == 2);
  CHECK(add["build_config"] == json{{"input_shape", {{nullptr, 8}, {nullptr, 8}}}});
  round_trip(m, {rand_input({2, 6}, 3), rand_input({2, 6}, 4)});
}

TEST_CASE("A shared layer keeps one set of weights and numbers its calls", "[config]") {
  backend::clear_session();
  Tensor a = layers::Input({5}, {.name = "left"});
  Tensor b = layers::Input({5}, {.name = "right"});
  auto shared = std::make_shared<layers::Dense>(4, layers::DenseOptions{.name = "shared_dense"});
  Tensor m1 = (*shared)(a), m2 = (*shared)(b);
  Model m({a, b}, {layers::Dense(2, {.name = "out"})(layers::Concatenate()({m1, m2}))}, {.name = "shared"});
  const json cfg = m.get_config();
  const json& sd = cfg["layers"][2];
  REQUIRE(sd["name"] == "shared_dense");
  REQUIRE(sd["inbound_nodes"].size() == 2);
  const json& concat = cfg["layers"][3]["inbound_nodes"][0]["args"][0];
  CHECK(concat[0]["config"]["keras_history"] == json{"shared_dense", 0, 0});
  CHECK(concat[1]["config"]["keras_history"] == json{"shared_dense", 1, 0});
  auto back = round_trip(m, {rand_input({2, 5}, 5), rand_input({2, 5}, 6)});
  CHECK(back->count_params() == 4 * 5 + 4 + 8 * 2 + 2);
}

TEST_CASE("Multi-output models and a fixed training flag round-trip", "[config]") {
  backend::clear_session();
  Tensor x = layers::Input({7}, {.name = "features"});
  Tensor h = layers::Dense(6, {.activation = "relu"})(x);
  Model m({x}, {layers::Dense(3, {.name = "cls"})(h), layers::Dense(1, {.name = "reg"})(h)}, {.name = "two_heads"});
  CHECK(m.get_config()["output_layers"] == json{{"cls", 0, 0}, {"reg", 0, 0}});
  round_trip(m, {rand_input({4, 7}, 7)});

  // Keras's Dropout(...)(h, training=True) writes "kwargs": {"training": true}; the call then always
  // drops, whatever the model's training flag.
  json cfg = m.get_config();
  json drop = {{"module", "keras.layers"},
               {"class_name", "Dropout"},
               {"config", {{"name", "mc_dropout"}, {"trainable", true}, {"dtype", "float32"}, {"rate", 0.5}, {"seed", nullptr}, {"noise_shape", nullptr}}},
               {"registered_name", nullptr},
               {"name", "mc_dropout"},
               {"inbound_nodes", {{{"args", {{{"class_name", "__keras_tensor__"},
                                              {"config", {{"shape", {nullptr, 7}}, {"dtype", "float32"}, {"keras_history", {"features", 0, 0}}}}}}},
                                   {"kwargs", {{"training", true}}}}}}};
  cfg["layers"].push_back(drop);
  cfg["output_layers"].push_back({"mc_dropout", 0, 0});
  auto mc = std::dynamic_pointer_cast<Model>(Model::from_config(cfg));
  REQUIRE(mc);
  CHECK(mc->get_config()["layers"].back()["inbound_nodes"][0]["kwargs"] == json{{"training", true}});
  Tensor ones = ops::ones({64, 7});
  std::vector<double> y = values(mc->call_outputs({ones}, /*training=*/false)[2]);
  size_t zeros = std::count(y.begin(), y.end(), 0.0);
  CHECK(zeros > 64 * 7 / 5);  // about half are dropped although training is false
  CHECK(zeros < 64 * 7 * 4 / 5);
  // clone_model keeps the flag.
  auto clone = models::clone_model(*mc);
  CHECK(clone->get_config()["layers"].back()["inbound_nodes"][0]["kwargs"] == json{{"training", true}});
}

TEST_CASE("A functional model nested in another round-trips", "[config]") {
  backend::clear_session();
  Tensor i = layers::Input({4}, {.name = "inner_in"});
  auto inner = std::make_shared<Model>(i, layers::Dense(3, {.name = "inner_dense"})(i), ModelOptions{.name = "inner"});
  Tensor x = layers::Input({4}, {.name = "outer_in"});
  Tensor y = layers::Dense(2, {.name = "head"})((*inner)(x));
  Model m(x, y, {.name = "outer"});
  const json cfg = m.get_config();
  REQUIRE(cfg["layers"][1]["class_name"] == "Functional");
  CHECK(cfg["layers"][1]["registered_name"] == "Functional");
  CHECK(cfg["layers"][1]["compile_config"] == json::object());
  round_trip(m, {rand_input({2, 4}, 8)});
  // Keras counts the nested model's creation as its node 0 in input/output_layers.
  Model m2(x, (*inner)(x), {.name = "outer2"});
  CHECK(m2.get_config()["output_layers"] == json{"inner", 1, 0});
  round_trip(m2, {rand_input({2, 4}, 9)});
  // A Sequential is no Functional in Keras 3: its calls count from 0.
  auto seq = std::make_shared<Sequential>(std::vector<SequentialEntry>{layers::Input({4}), layers::Dense(2, {.name = "sd"})},
                                          ModelOptions{.name = "seq"});
  Model m3(x, (*seq)(x), {.name = "outer3"});
  const json c3 = m3.get_config();
  CHECK(c3["output_layers"] == json{"seq", 0, 0});
  CHECK(c3["layers"][1]["module"] == "keras");
  CHECK(c3["layers"][1]["build_config"] == json{{"input_shape", {nullptr, 4}}});
  round_trip(m3, {rand_input({2, 4}, 10)});
}

TEST_CASE("Configs written by Keras 3.15 and tf-keras 2.21 rebuild the same models", "[config]") {
  for (const char* name : {"mlp", "cnn", "two_input", "shared", "multi_output"}) {
    for (const char* dialect : {"k3", "k2"}) {
      const json f = read_fixture(std::string(dialect) + "_" + name);
      std::vector<const char*> keys = {"to_json", "h5_model_config"};
      if (std::string(dialect) == "k3") keys.push_back("keras_config");
      for (const char* key : keys) {
        DYNAMIC_SECTION(dialect << "_" << name << " " << key) {
          backend::clear_session();
          std::shared_ptr<Model> m = models::model_from_json(f[key].dump());
          check_summary(*m, f["summary"]);
          // Keras 3's .keras config carries the compile config: the model comes back compiled, and
          // gives the same compile config back.
          if (std::string(key) == "keras_config") {
            REQUIRE(m->compiled());
            CHECK(m->get_compile_config() == f[key]["compile_config"]);
          }
          // What Ember writes for it parses back to the same model.
          std::shared_ptr<Model> again = models::model_from_json(m->to_json());
          CHECK(again->get_config() == m->get_config());
        }
      }
    }
  }
}

TEST_CASE("Ember writes Keras 3's config structure for Keras's models", "[config]") {
  // Layer wrappers, nodes and input/output references must match Keras exactly; the layers' own
  // configs are the layer classes' business (tests/layers), so only InputLayer's is compared here.
  for (const char* name : {"mlp", "cnn", "two_input", "shared", "multi_output"}) {
    DYNAMIC_SECTION(name) {
      backend::clear_session();
      const json keras = read_fixture(std::string("k3_") + name)["keras_config"];
      std::shared_ptr<Model> m = models::model_from_config(keras);
      const json ours = io::serialize_model(*m);
      for (const char* k : {"module", "class_name", "registered_name", "build_config"}) CHECK(ours[k] == keras[k]);
      const json& kc = keras["config"];
      const json& oc = ours["config"];
      REQUIRE(oc["layers"].size() == kc["layers"].size());
      for (size_t i = 0; i < kc["layers"].size(); ++i) {
        json kl = kc["layers"][i], ol = oc["layers"][i];
        INFO("layer " << i << " " << kl.value("name", json()).dump());
        if (kl["class_name"] != "InputLayer") {
          kl.erase("config");
          ol.erase("config");
        }
        CHECK(ol == kl);
      }
      for (const char* k : {"name", "trainable", "input_layers", "output_layers", "build_input_shape"})
        CHECK(oc.value(k, json()) == kc.value(k, json()));
      // The legacy .h5 form drops the Keras 3 wrapper keys the same way.
      json legacy = io::legacy_model_config(*m);
      const json kh5 = read_fixture(std::string("k3_") + name)["h5_model_config"];
      CHECK(legacy["class_name"] == kh5["class_name"]);
      for (size_t i = 0; i < kh5["config"]["layers"].size(); ++i) {
        json kl = kh5["config"]["layers"][i], ol = legacy["config"]["layers"][i];
        kl.erase("config");
        ol.erase("config");
        CHECK(ol == kl);
      }
    }
  }
}

TEST_CASE("Compile configs: names stay names, objects are serialized, both forms round-trip", "[config]") {
  backend::clear_session();
  auto make = [] {
    Tensor x = layers::Input({4}, {.name = "x"});
    return std::make_shared<Model>(x, layers::Dense(3, {.name = "out"})(x), ModelOptions{.name = "m"});
  };
  auto m = make();
  CHECK(m->get_compile_config() == json::object());
  CHECK_THROWS_AS(io::legacy_training_config(*m), FailedPrecondition);
  m->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
              .loss = "sparse_categorical_crossentropy",
              .metrics = {"accuracy", metrics::SparseTopKCategoricalAccuracy({.k = 2})},
              .loss_weights = {0.5}});
  const json cc = m->get_compile_config();
  CHECK(cc["loss"] == "sparse_categorical_crossentropy");
  CHECK(cc["metrics"][0] == "accuracy");
  CHECK(cc["metrics"][1]["module"] == "keras.metrics");
  CHECK(cc["metrics"][1]["class_name"] == "SparseTopKCategoricalAccuracy");
  CHECK(cc["optimizer"]["class_name"] == "Adam");
  CHECK(cc["loss_weights"] == json{0.5});
  CHECK(cc["weighted_metrics"].is_null());
  for (const char* k : {"run_eagerly", "steps_per_execution", "jit_compile"}) CHECK(cc.contains(k));

  auto m2 = make();
  m2->compile_from_config(cc);
  CHECK(m2->get_compile_config() == cc);
  CHECK(m2->optimizer().class_name() == "Adam");

  // The legacy training_config (what .h5 files hold) has optimizer_config and plain objects.
  const json tc = io::legacy_training_config(*m);
  CHECK_FALSE(tc.contains("optimizer"));
  CHECK(tc["optimizer_config"]["class_name"] == "Adam");
  CHECK_FALSE(tc["optimizer_config"].contains("module"));
  CHECK_FALSE(tc["metrics"][1].contains("module"));
  auto m3 = make();
  io::compile_from_training_config(*m3, tc);
  CHECK(m3->get_compile_config() == cc);

  // A loss object comes back as an object with its options.
  auto m4 = make();
  m4->compile({.optimizer = "sgd", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const json lc = m4->get_compile_config()["loss"];
  CHECK(lc["module"] == "keras.losses");
  CHECK(lc["config"]["from_logits"] == true);
  auto m5 = make();
  m5->compile_from_config(m4->get_compile_config());
  CHECK(m5->get_compile_config() == m4->get_compile_config());
}

TEST_CASE("training_config written by Keras 3 and tf-keras compiles the model", "[config]") {
  for (const char* name : {"mlp", "cnn", "multi_output"}) {
    for (const char* dialect : {"k3", "k2"}) {
      DYNAMIC_SECTION(dialect << "_" << name) {
        backend::clear_session();
        const json f = read_fixture(std::string(dialect) + "_" + name);
        std::shared_ptr<Model> m = models::model_from_config(f["h5_model_config"]);
        REQUIRE_FALSE(m->compiled());
        io::compile_from_training_config(*m, f["h5_training_config"]);
        REQUIRE(m->compiled());
        const json cc = m->get_compile_config();
        const json& tc = f["h5_training_config"];
        CHECK(m->optimizer().get_config()["learning_rate"] == tc["optimizer_config"]["config"]["learning_rate"]);
        CHECK(cc["loss_weights"] == tc["loss_weights"]);
        if (std::string(name) == "cnn") {
          CHECK(cc["loss"]["config"]["from_logits"] == true);
          CHECK(cc["metrics"][0] == "accuracy");  // tf-keras's MeanMetricWrapper "accuracy" is a name again
          CHECK(cc["metrics"][1]["config"]["k"] == 3);
        } else if (std::string(name) == "multi_output") {
          CHECK(cc["loss"] == json{"sparse_categorical_crossentropy", "mse"});
          // Keras 3 keeps the list it was given (it fails only at the first step: one entry for two
          // outputs); tf-keras wrote one list per output, which now stays per output.
          CHECK(cc["metrics"] == (std::string(dialect) == "k3" ? json{"accuracy"} : json::parse(R"([["accuracy"], ["accuracy"]])")));
        } else {
          CHECK(cc["loss"] == "mse");
          CHECK(cc["metrics"] == json{"mae"});
        }
        if (std::string(dialect) == "k3") CHECK(io::legacy_training_config(*m) == tc);
      }
    }
  }
}

TEST_CASE("Keras 2 configs: nested-list nodes, batch_input_shape, Policy dtypes, class Model", "[config]") {
  backend::clear_session();
  // An old Keras 2 Sequential: no InputLayer entry, the first layer carries batch_input_shape.
  const json seq = {{"class_name", "Sequential"},
                    {"config", {{"name", "old"},
                                {"layers", {{{"class_name", "Dense"},
                                             {"config", {{"name", "d1"}, {"units", 3}, {"batch_input_shape", {nullptr, 5}},
                                                         {"dtype", {{"class_name", "Policy"}, {"config", {{"name", "float32"}}}}}}}},
                                            {{"class_name", "Dense"}, {"config", {{"name", "d2"}, {"units", 2}, {"dtype", "float32"}}}}}}}}};
  auto s = models::model_from_config(seq);
  CHECK(s->count_params() == 5 * 3 + 3 + 3 * 2 + 2);
  CHECK(s->outputs()[0].shape() == Shape{-1, 2});
  // A Keras 2 functional model named class "Model" with nested-list nodes and a nested model whose
  // creation counts as its node 0.
  const json inner = {{"name", "inner"},
                      {"layers", {{{"class_name", "InputLayer"}, {"config", {{"batch_input_shape", {nullptr, 4}}, {"name", "ii"}}}, {"name", "ii"}, {"inbound_nodes", json::array()}},
                                  {{"class_name", "Dense"}, {"config", {{"name", "di"}, {"units", 3}}}, {"name", "di"},
                                   {"inbound_nodes", {{{"ii", 0, 0, json::object()}}}}}}},
                      {"input_layers", {{"ii", 0, 0}}},
                      {"output_layers", {{"di", 0, 0}}}};
  const json outer = {{"class_name", "Model"},
                      {"config", {{"name", "outer"},
                                  {"layers", {{{"class_name", "InputLayer"}, {"config", {{"batch_input_shape", {nullptr, 4}}, {"name", "x"}}}, {"name", "x"}, {"inbound_nodes", json::array()}},
                                              {{"class_name", "Functional"}, {"config", inner}, {"name", "inner"},
                                               {"inbound_nodes", {{{"x", 0, 0, json::object()}}}}},
                                              {{"class_name", "Dense"}, {"config", {{"name", "head"}, {"units", 2}}}, {"name", "head"},
                                               {"inbound_nodes", {{{"inner", 1, 0, {{"training", false}}}}}}}}},
                                  {"input_layers", {{"x", 0, 0}}},
                                  {"output_layers", {{"head", 0, 0}, {"inner", 1, 0}}}}}};
  auto m = models::model_from_config(outer);
  CHECK(m->num_outputs() == 2);
  CHECK(m->count_params() == 4 * 3 + 3 + 3 * 2 + 2);
  CHECK(m->get_config()["layers"][2]["inbound_nodes"][0]["kwargs"] == json{{"training", false}});
}

TEST_CASE("Bad configs are clear errors", "[config]") {
  backend::clear_session();
  // Unknown layer class: names it and lists the supported ones.
  json cfg = read_fixture("k3_mlp")["to_json"];
  cfg["config"]["layers"][1]["class_name"] = "FancyAttention";
  try {
    models::model_from_config(cfg);
    FAIL("no exception");
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    CHECK(msg.find("FancyAttention") != std::string::npos);
    CHECK(msg.find("Dense") != std::string::npos);
    CHECK(msg.find("Conv2D") != std::string::npos);
  }
  // An inbound node naming a layer that is not in the config.
  json f = read_fixture("k3_two_input")["to_json"];
  f["config"]["layers"][2]["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] = "ghost";
  try {
    models::model_from_config(f);
    FAIL("no exception");
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find("'ghost'") != std::string::npos);
  }
  json k2 = read_fixture("k2_two_input")["to_json"];
  k2["config"]["layers"][2]["inbound_nodes"][0][0][0] = "ghost";
  CHECK_THROWS_AS(models::model_from_config(k2), InvalidArgument);
  // A node on a call that never happens (node index too high).
  CHECK_NOTHROW(Model::from_config(read_fixture("k3_two_input")["get_config"]));
  json two = read_fixture("k3_two_input")["get_config"];
  two["layers"][2]["inbound_nodes"][0]["args"][0]["config"]["keras_history"][1] = 3;
  CHECK_THROWS_AS(Model::from_config(two), InvalidArgument);
  // Malformed nodes and references.
  json bad = read_fixture("k3_two_input")["get_config"];
  bad["layers"][2]["inbound_nodes"][0] = "in_a";
  CHECK_THROWS_AS(Model::from_config(bad), InvalidArgument);
  json no_out = read_fixture("k3_two_input")["get_config"];
  no_out.erase("output_layers");
  CHECK_THROWS_AS(Model::from_config(no_out), InvalidArgument);
  CHECK_THROWS_AS(models::model_from_json("{not json"), InvalidArgument);
  // A layer is not a model.
  CHECK_THROWS_AS(models::model_from_config({{"class_name", "Dense"}, {"config", {{"units", 2}}}}), InvalidArgument);
  // Subclassed models have no config (Keras: NotImplementedError).
  struct Sub : Model {
    layers::Dense d{2};
    Tensor call(const Tensor& x, bool training) override { return d(x); }
  } sub;
  sub(ops::ones({1, 3}));
  CHECK_THROWS_AS(sub.get_config(), Unimplemented);
  CHECK_THROWS_AS(sub.to_json(), Unimplemented);
  CHECK_THROWS_AS(io::serialize_model(sub), Unimplemented);
}
