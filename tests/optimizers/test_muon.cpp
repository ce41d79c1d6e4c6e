// Muon beyond the golden steps (test_optimizer_golden.cpp): its config as Keras writes it, optimizers::get and
// deserialize, what Keras accepts, the routing of a model's variables and the slot layout, and float64
// (training through fit and the checkpoint round trip: test_every_optimizer.cpp).
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/optimizers/optimizer_fixtures.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using namespace ember::testing;
using namespace ember::optimizers;
using nlohmann::json;

namespace {

std::vector<std::string> names(const std::vector<Variable>& vars) {
  std::vector<std::string> out;
  for (const Variable& v : vars) out.push_back(v.name());
  return out;
}

}  // namespace

TEST_CASE("Muon: the default config is Keras's", "[optimizers]") {
  backend::clear_session();
  // optimizer.get_config() of Keras 3.15.1's defaults.
  const json muon = json::parse(R"({"name": "muon", "learning_rate": 0.0010000000474974513, "weight_decay": 0.004,
      "clipnorm": null, "global_clipnorm": null, "clipvalue": null, "use_ema": false, "ema_momentum": 0.99,
      "ema_overwrite_frequency": null, "loss_scale_factor": null, "gradient_accumulation_steps": null,
      "adam_beta_1": 0.9, "adam_beta_2": 0.999, "epsilon": 1e-07, "exclude_layers": [], "muon_a": 3.4445,
      "muon_b": -4.775, "muon_c": 2.0315, "adam_lr_ratio": 1, "momentum": 0.95, "ns_steps": 5, "nesterov": true,
      "exclude_embeddings": true, "adam_weight_decay": 0.004, "rms_rate": 0.2})");
  CHECK(Muon().get_config() == muon);
  CHECK(Muon().name() == "muon_1");
}

TEST_CASE("optimizers::get and deserialize know Muon", "[optimizers]") {
  for (const std::string id : {"muon", "MUON", "Muon"}) {
    INFO(id);
    CHECK(get(id)->class_name() == "Muon");
  }
  // keras.saving.serialize_keras_object as Keras 3.15.1 writes it (every option changed).
  const json muon = json::parse(R"({"module": "keras.optimizers", "class_name": "Muon", "config": {"name": "muon_7",
      "learning_rate": 0.019999999552965164, "weight_decay": 0.1, "clipnorm": 1.0, "global_clipnorm": null,
      "clipvalue": null, "use_ema": false, "ema_momentum": 0.99, "ema_overwrite_frequency": null,
      "loss_scale_factor": null, "gradient_accumulation_steps": null, "adam_beta_1": 0.85, "adam_beta_2": 0.999,
      "epsilon": 1e-06, "exclude_layers": ["output", "head"], "muon_a": 3.0, "muon_b": -4.0, "muon_c": 2.0,
      "adam_lr_ratio": 0.1, "momentum": 0.9, "ns_steps": 6, "nesterov": false, "exclude_embeddings": false,
      "adam_weight_decay": null, "rms_rate": null}, "registered_name": null})");
  OptimizerPtr opt = deserialize(muon);
  CHECK(opt->class_name() == "Muon");
  CHECK(opt->get_config() == muon["config"]);
  CHECK(serialize(*opt) == muon);
  CHECK(deserialize(serialize(*opt))->get_config() == muon["config"]);

  // Keys left out take the class defaults; a null exclude_layers is an empty list (Keras: `or []`); a null
  // rms_rate, adam_weight_decay or weight_decay stays null.
  const json partial =
      deserialize({{"class_name", "Muon"}, {"config", {{"exclude_layers", nullptr}, {"rms_rate", nullptr}}}})
          ->get_config();
  CHECK(partial["exclude_layers"] == json::array());
  CHECK(partial["rms_rate"].is_null());
  CHECK(partial["adam_weight_decay"] == 0.004);
  CHECK(partial["weight_decay"] == 0.004);
  CHECK(deserialize({{"class_name", "Muon"}, {"config", {{"weight_decay", nullptr}}}})->get_config()["weight_decay"]
            .is_null());

  json bad = muon;
  bad["config"]["beta_1"] = 0.9;  // Adam's name, not Muon's
  CHECK_THROWS_WITH(deserialize(bad), Catch::Contains("Muon.from_config: unknown config key \"beta_1\""));
  bad = muon;
  bad["config"]["exclude_layers"] = "output";
  CHECK_THROWS_WITH(deserialize(bad), Catch::Contains("'exclude_layers' must be a list of strings"));
  bad = muon;
  bad["config"]["ns_steps"] = 2.5;  // Keras's range(ns_steps) refuses it too
  CHECK_THROWS_WITH(deserialize(bad), Catch::Contains("'ns_steps' must be a whole number"));
}

TEST_CASE("Muon accepts what Keras accepts, and checks the base options", "[optimizers][errors]") {
  // Keras validates none of Muon's own hyperparameters.
  CHECK_NOTHROW(Muon({.epsilon = -1.0, .momentum = 2.0, .ns_steps = -3, .rms_rate = -1.0}));
  CHECK_THROWS_WITH(Muon({.clipnorm = 1.0, .clipvalue = 1.0}), Catch::Contains("Muon: Only one of `clipnorm`"));
  // Keras compiles exclude_layers' patterns when it first routes a variable (re.error there): so here, at build.
  Muon bad_pattern({.exclude_layers = {"("}});
  Variable k(ops::ones({2, 2}), {.name = "dense/kernel"});
  CHECK_THROWS_AS(bad_pattern.build({k}), InvalidArgument);
}

TEST_CASE("Muon routes a model's variables as Keras does, and lays out its slots likewise", "[optimizers]") {
  backend::clear_session();
  // Keras 3.15.1, Muon().build on Sequential([Input((3,), int32), Embedding(10, 4), Flatten(), Dense(2, name="out")])
  // gives [iteration, learning_rate, sequential_embedding_embeddings_{momentum, velocity},
  // sequential_out_kernel_momentum, sequential_out_bias_{momentum, velocity}]: the same, less Keras's model prefix.
  auto model = std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({3}, {.dtype = DType::Int32}), layers::Embedding(10, 4), layers::Flatten(),
      layers::Dense(2, {.name = "out"})});
  Muon opt({.name = "muon"});
  opt.build(model->trainable_weights());
  CHECK(names(opt.variables()) ==
        std::vector<std::string>{"muon/iteration", "muon/learning_rate", "muon/embedding_embeddings_momentum",
                                 "muon/embedding_embeddings_velocity", "muon/out_kernel_momentum",
                                 "muon/out_bias_momentum", "muon/out_bias_velocity"});
  const std::vector<Variable> vars = model->trainable_weights();
  CHECK(opt.should_use_adamw(vars[0]));        // embeddings
  CHECK_FALSE(opt.should_use_adamw(vars[1]));  // a 2-D kernel
  CHECK(opt.should_use_adamw(vars[2]));        // rank 1

  // exclude_embeddings off, and exclude_layers searched in the path.
  Muon keep({.exclude_layers = {"^out/"}, .exclude_embeddings = false});
  CHECK_FALSE(keep.should_use_adamw(vars[0]));
  CHECK(keep.should_use_adamw(vars[1]));
  Variable embedding_like(ops::ones({3, 3}), {.name = "MyEmbeddingTable/w"});
  CHECK(Muon().should_use_adamw(embedding_like));  // case-insensitive, anywhere in the path
  Variable rank3(ops::ones({2, 2, 2}), {.name = "conv/kernel"});
  CHECK(Muon().should_use_adamw(rank3));
}

TEST_CASE("Muon runs its Newton-Schulz path in float64, which Keras's TF backend cannot", "[optimizers]") {
  auto run = [](DType dt) {
    Variable k(make({0.3, -0.2, 0.5, 0.1, 0.4, -0.6}, {3, 2}, dt), {.name = "dense/kernel"});
    Muon opt({.learning_rate = 0.1});
    opt.apply({make({0.2, 0.1, -0.3, 0.4, 0.05, -0.1}, {3, 2}, dt)}, {k});
    CHECK(k.dtype() == dt);
    CHECK(opt.variables()[2].dtype() == dt);
    return values_as_double(k.value());
  };
  const std::vector<double> f32 = run(DType::Float32), f64 = run(DType::Float64);
  check_close(f64, f32, "float64 against float32", 1e-5);
  CHECK(f64 != std::vector<double>{0.3, -0.2, 0.5, 0.1, 0.4, -0.6});
}
