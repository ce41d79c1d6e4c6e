// Compile configs (Keras 3: Trainer.get_compile_config / compile_from_config; the legacy .h5
// training_config of legacy/saving/saving_utils.py model_metadata and compile_args_from_training_config,
// and tf-keras 2.x's variant of it).
#include <map>

#include "framework/core/error.h"
#include "framework/io/model_config.h"
#include "framework/model/model.h"
#include "framework/model/trainer_state.h"
#include "losses/loss.h"
#include "optimizers/loss_scale_optimizer.h"
#include "optimizers/registry.h"

namespace ember {

using json = nlohmann::json;

namespace {

// serialize_keras_object of a built-in loss or metric object.
json ccfg_keras3(const json& legacy, const char* module) {
  return {{"module", module}, {"class_name", legacy.at("class_name")}, {"config", legacy.at("config")},
          {"registered_name", nullptr}};
}

json ccfg_loss(const LossArg& a) { return a.ptr ? ccfg_keras3(losses::serialize(*a.ptr), "keras.losses") : json(a.name); }
json ccfg_metric(const MetricArg& a) {
  return a.ptr ? ccfg_keras3(metrics::serialize(*a.ptr), "keras.metrics") : json(a.name);
}

json ccfg_metric_list(const std::vector<MetricArg>& ms) {
  if (ms.empty()) return nullptr;
  json out = json::array();
  for (const MetricArg& m : ms) out.push_back(ccfg_metric(m));
  return out;
}

// {"module", ...} or {"class_name", "config"} objects; strings stay names.
LossArg ccfg_loss_arg(const json& j, const std::string& who) {
  if (j.is_string()) return LossArg(j.get<std::string>());
  EMBER_CHECK(j.is_object() && j.contains("class_name"), InvalidArgument)
      << who << ": a loss must be a name or {\"class_name\", \"config\"}, got " << j.dump().substr(0, 200);
  return LossArg(losses::deserialize(j));
}

MetricArg ccfg_metric_arg(const json& j, const std::string& who) {
  if (j.is_string()) return MetricArg(j.get<std::string>());
  EMBER_CHECK(j.is_object() && j.contains("class_name"), InvalidArgument)
      << who << ": a metric must be a name or {\"class_name\", \"config\"}, got " << j.dump().substr(0, 200);
  return MetricArg(metrics::deserialize(j));
}

std::vector<std::string> ccfg_output_names(const Model& model) {
  std::vector<std::string> names;
  if (!model.is_graph_model()) return {model.name() + "_output"};
  for (const Tensor& out : model.outputs()) names.push_back(out.keras_history()->node->layer->name());
  return names;
}

// A per-output structure (a dict keyed by output name) as a list in output order.
json ccfg_by_output(const json& j, const Model& model, const std::string& who) {
  if (!j.is_object() || j.contains("class_name")) return j;
  json out = json::array();
  for (const std::string& n : ccfg_output_names(model)) {
    EMBER_CHECK(j.contains(n), InvalidArgument) << who << ": the dict has no entry for output '" << n << "'; keys: " << j.dump();
    out.push_back(j[n]);
  }
  return out;
}

// Metrics for every output. Keras also takes one list per output; Ember applies one list to every
// output, so per-output lists must agree.
std::vector<MetricArg> ccfg_metrics(const json& j, const Model& model, const std::string& who) {
  std::vector<MetricArg> out;
  if (j.is_null()) return out;
  json list = ccfg_by_output(j, model, who);
  EMBER_CHECK(list.is_array(), InvalidArgument) << who << ": expected a list of metrics, got " << list.dump().substr(0, 200);
  if (!list.empty() && list[0].is_array()) {
    for (const json& per_output : list)
      EMBER_CHECK(per_output == list[0], Unimplemented)
          << who << ": different metrics per output are not supported (Ember applies one list to every output), got "
          << list.dump().substr(0, 300);
    list = list[0];
  }
  for (const json& m : list) out.push_back(ccfg_metric_arg(m, who));
  return out;
}

}  // namespace

namespace detail {

json compile_args_config(const CompileOptions& o) {
  json c = json::object();
  const auto& given = o.loss.per_output;
  if (given.empty()) {
    c["loss"] = nullptr;
  } else if (o.loss.is_list) {
    c["loss"] = json::array();
    for (const LossArg& a : given) c["loss"].push_back(ccfg_loss(a));
  } else {
    c["loss"] = ccfg_loss(given[0]);
  }
  c["loss_weights"] = o.loss_weights.empty() ? json(nullptr) : json(o.loss_weights);
  c["metrics"] = ccfg_metric_list(o.metrics);
  c["weighted_metrics"] = ccfg_metric_list(o.weighted_metrics);
  return c;
}

}  // namespace detail

json Model::get_compile_config() const {
  if (!compiled_) return json::object();
  json c = compiled_->compile_args;
  // Keras keeps compile's own argument: the optimizer it was given, not the loss-scale wrapper it added.
  const optimizers::Optimizer& opt =
      compiled_->auto_scaled ? *static_cast<const optimizers::LossScaleOptimizer&>(*compiled_->optimizer).inner_optimizer()
                             : *compiled_->optimizer;
  c["optimizer"] = optimizers::serialize(opt);
  // Ember has no graph compilation or multi-step execution: these are Keras's defaults as it resolves them.
  c["run_eagerly"] = false;
  c["steps_per_execution"] = 1;
  c["jit_compile"] = false;
  return c;
}

void Model::compile_from_config(const json& c) {
  if (c.is_null() || (c.is_object() && c.empty())) return;
  const std::string who = "Model '" + name() + "'.compile_from_config";
  EMBER_CHECK(c.is_object(), InvalidArgument) << who << ": expected an object, got " << c.dump().substr(0, 200);
  CompileOptions o;
  if (c.contains("optimizer") && !c["optimizer"].is_null()) {
    const json& opt = c["optimizer"];
    if (opt.is_string()) {
      o.optimizer = opt.get<std::string>();
    } else {
      o.optimizer = OptimizerArg(optimizers::deserialize(opt));
    }
  }
  if (c.contains("loss") && !c["loss"].is_null()) {
    json loss = ccfg_by_output(c["loss"], *this, who);
    if (loss.is_array()) {
      for (const json& l : loss) {
        EMBER_CHECK(!l.is_null(), Unimplemented) << who << ": an output without a loss (null in the loss list) is not supported";
        o.loss.per_output.push_back(ccfg_loss_arg(l, who));
      }
      o.loss.is_list = true;
    } else {
      o.loss.per_output.push_back(ccfg_loss_arg(loss, who));
    }
  }
  if (c.contains("loss_weights") && !c["loss_weights"].is_null()) {
    json w = ccfg_by_output(c["loss_weights"], *this, who);
    EMBER_CHECK(w.is_array(), InvalidArgument) << who << ": loss_weights must be a list or a dict by output, got " << w.dump();
    for (const json& x : w) {
      EMBER_CHECK(x.is_number(), InvalidArgument) << who << ": loss_weights must be numbers, got " << w.dump();
      o.loss_weights.push_back(x.get<double>());
    }
  }
  if (c.contains("metrics")) o.metrics = ccfg_metrics(c["metrics"], *this, who + " (metrics)");
  if (c.contains("weighted_metrics")) o.weighted_metrics = ccfg_metrics(c["weighted_metrics"], *this, who + " (weighted_metrics)");
  compile(std::move(o));
}

namespace io {

json legacy_training_config(const Model& model) {
  EMBER_CHECK(model.compiled(), FailedPrecondition)
      << "legacy_training_config: model '" << model.name() << "' is not compiled, so it has no training config";
  json c = model.get_compile_config();
  c.erase("optimizer");
  // Keras 3's legacy writer serializes objects without module/registered_name.
  auto strip = [](json& j) {
    if (j.is_object()) {
      j.erase("module");
      j.erase("registered_name");
    }
  };
  for (const char* k : {"loss", "metrics", "weighted_metrics"}) {
    if (c[k].is_array()) {
      for (json& e : c[k]) strip(e);
    } else {
      strip(c[k]);
    }
  }
  const optimizers::Optimizer& opt = model.optimizer();
  c["optimizer_config"] = {{"class_name", opt.class_name()}, {"config", opt.get_config()}};
  return c;
}

namespace {

// tf-keras loss configs carry "fn" and the old "auto" reduction.
json ccfg_modern_loss(json j) {
  if (!j.is_object() || !j.contains("config") || !j["config"].is_object()) return j;
  json& c = j["config"];
  c.erase("fn");
  if (c.value("reduction", json()).is_string() && c["reduction"] == "auto") c["reduction"] = "sum_over_batch_size";
  return j;
}

// tf-keras writes compiled metrics, per output, prefixed with the output name: "accuracy" becomes a
// MeanMetricWrapper "<output>_accuracy" of whatever accuracy it picked; Keras 3 resolves those names
// again at compile, so they go back to names; other wrapped functions become their metric.
json ccfg_modern_metric(json j, const std::vector<std::string>& outputs, size_t output) {
  if (!j.is_object() || !j.contains("config") || !j["config"].is_object()) return j;
  json& c = j["config"];
  std::string n = c.value("name", std::string());
  if (outputs.size() > 1 && output < outputs.size() && n.rfind(outputs[output] + "_", 0) == 0) {
    n = n.substr(outputs[output].size() + 1);
    c["name"] = n;
  }
  if (j["class_name"] == "MeanMetricWrapper") {
    // The name is what compile was given ("accuracy", "mae") when Ember knows it; else the function.
    try {
      metrics::get(n);
      return n;
    } catch (const InvalidArgument&) {
      return c.value("fn", n);
    }
  }
  return j;
}

}  // namespace

void compile_from_training_config(Model& model, const json& tc) {
  const std::string who = "compile_from_training_config (model '" + model.name() + "')";
  EMBER_CHECK(tc.is_object() && tc.contains("optimizer_config") && tc["optimizer_config"].is_object(), InvalidArgument)
      << who << ": expected {\"optimizer_config\": {\"class_name\", \"config\"}, \"loss\", ...}, got " << tc.dump().substr(0, 200);
  json opt = tc["optimizer_config"];
  std::string cls = opt.value("class_name", std::string());
  if (cls.rfind("Custom>", 0) == 0) opt["class_name"] = cls.substr(7);  // tf-keras's registered name
  if (opt.contains("config") && opt["config"].is_object()) {
    // tf-keras-only keys that say nothing about the update: how TF compiles it, which optimizer base.
    opt["config"].erase("jit_compile");
    opt["config"].erase("is_legacy_optimizer");
  }
  json c = {{"optimizer", opt}};
  if (tc.contains("loss")) {
    const json& l = tc["loss"];
    if (l.is_array()) {
      c["loss"] = json::array();
      for (const json& e : l) c["loss"].push_back(ccfg_modern_loss(e));
    } else if (l.is_object() && !l.contains("class_name")) {
      c["loss"] = json::object();
      for (const auto& [k, v] : l.items()) c["loss"][k] = ccfg_modern_loss(v);
    } else {
      c["loss"] = ccfg_modern_loss(l);
    }
  }
  const std::vector<std::string> outputs = ccfg_output_names(model);
  for (const char* k : {"metrics", "weighted_metrics"}) {
    if (!tc.contains(k) || tc[k].is_null()) continue;
    json list = ccfg_by_output(tc[k], model, who);
    EMBER_CHECK(list.is_array(), InvalidArgument) << who << ": " << k << " must be a list, got " << list.dump().substr(0, 200);
    json fixed = json::array();
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i].is_array()) {  // one list per output
        json per_output = json::array();
        for (const json& m : list[i]) per_output.push_back(ccfg_modern_metric(m, outputs, i));
        fixed.push_back(per_output);
      } else {
        fixed.push_back(ccfg_modern_metric(list[i], outputs, 0));
      }
    }
    c[k] = fixed;
  }
  if (tc.contains("loss_weights")) c["loss_weights"] = tc["loss_weights"];
  model.compile_from_config(c);
}

}  // namespace io

}  // namespace ember
