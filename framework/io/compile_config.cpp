// Compile configs (Keras 3: Trainer.get_compile_config / compile_from_config; the legacy .h5
// training_config of legacy/saving/saving_utils.py model_metadata and compile_args_from_training_config,
// and tf-keras 2.x's variant of it).
#include <algorithm>
#include <functional>
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

json ccfg_metric_entry(const MetricList& entry) {
  if (!entry.is_list && entry.metrics.size() == 1) return ccfg_metric(entry.metrics[0]);
  json out = json::array();
  for (const MetricArg& m : entry.metrics) out.push_back(ccfg_metric(m));
  return out;
}

// compile's metrics as Keras 3 keeps them: null, a list (of metrics or per-output lists) or a dict by output.
json ccfg_metric_spec(const MetricsSpec& spec) {
  if (spec.empty()) return nullptr;
  json out = spec.is_map ? json::object() : json::array();
  if (spec.is_map) {
    for (const auto& [name, entry] : spec.by_output) out[name] = ccfg_metric_entry(entry);
  } else {
    for (const MetricList& entry : spec.entries) out.push_back(ccfg_metric_entry(entry));
  }
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

// compile's metrics from their config: a list whose entries are metrics, lists of metrics or null (none
// for that output), or a dict from output name to such entries. Matching them to the outputs is compile's.
MetricList ccfg_metric_entry_arg(const json& j, const std::string& who) {
  MetricList entry;
  if (j.is_null()) return entry;
  if (!j.is_array()) return MetricList(ccfg_metric_arg(j, who));
  for (const json& m : j) entry.metrics.push_back(ccfg_metric_arg(m, who));
  return entry;
}

MetricsSpec ccfg_metrics(const json& j, const std::string& who) {
  if (j.is_null()) return {};
  if (j.is_object() && !j.contains("class_name")) {
    MetricsByOutput by_output;
    for (const auto& [name, entry] : j.items()) by_output[name] = ccfg_metric_entry_arg(entry, who);
    return by_output;
  }
  if (!j.is_array()) return std::vector<MetricList>{ccfg_metric_entry_arg(j, who)};
  std::vector<MetricList> entries;
  for (const json& entry : j) entries.push_back(ccfg_metric_entry_arg(entry, who));
  return entries;
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
  c["metrics"] = ccfg_metric_spec(o.metrics);
  c["weighted_metrics"] = ccfg_metric_spec(o.weighted_metrics);
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
  c["run_eagerly"] = compiled_->run_eagerly;
  c["steps_per_execution"] = compiled_->steps_per_execution;
  // Keras saves jit_compile as compile resolved it ("auto": false, without an accelerator).
  c["jit_compile"] = compiled_->jit_compile;
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
  if (c.contains("metrics")) o.metrics = ccfg_metrics(c["metrics"], who + " (metrics)");
  if (c.contains("weighted_metrics")) o.weighted_metrics = ccfg_metrics(c["weighted_metrics"], who + " (weighted_metrics)");
  if (c.contains("run_eagerly") && c["run_eagerly"].is_boolean()) o.run_eagerly = c["run_eagerly"].get<bool>();
  if (c.contains("steps_per_execution") && !c["steps_per_execution"].is_null()) {
    const json& spe = c["steps_per_execution"];
    EMBER_CHECK(spe.is_number_integer(), InvalidArgument)
        << who << ": steps_per_execution must be an integer, got " << spe.dump();
    o.steps_per_execution = spe.get<int>();
  }
  if (c.contains("jit_compile")) {
    const json& jit = c["jit_compile"];
    EMBER_CHECK(jit.is_boolean() || jit == "auto", InvalidArgument)
        << who << ": jit_compile must be true, false or \"auto\", got " << jit.dump();
    if (jit.is_boolean()) o.jit_compile = jit.get<bool>();
  }
  compile_impl(std::move(o), /*defer_metric_errors=*/true);
}

namespace io {

json legacy_training_config(const Model& model) {
  EMBER_CHECK(model.compiled(), FailedPrecondition)
      << "legacy_training_config: model '" << model.name() << "' is not compiled, so it has no training config";
  json c = model.get_compile_config();
  c.erase("optimizer");
  // Keras 3's legacy writer serializes objects without module/registered_name, at any depth (per-output
  // lists and dicts).
  std::function<void(json&)> strip = [&](json& j) {
    if (j.is_object() && j.contains("class_name")) {
      j.erase("module");
      j.erase("registered_name");
    } else if (j.is_structured()) {
      for (json& e : j) strip(e);
    }
  };
  for (const char* k : {"loss", "metrics", "weighted_metrics"}) strip(c[k]);
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
    const json& given = tc[k];
    // One output's entry: a metric or a list of them.
    auto fix_entry = [&](const json& entry, size_t output) {
      if (!entry.is_array()) return ccfg_modern_metric(entry, outputs, output);
      json per_output = json::array();
      for (const json& m : entry) per_output.push_back(ccfg_modern_metric(m, outputs, output));
      return per_output;
    };
    if (given.is_object() && !given.contains("class_name")) {  // by output name
      json fixed = json::object();
      for (const auto& [name, entry] : given.items()) {
        const size_t output = static_cast<size_t>(std::find(outputs.begin(), outputs.end(), name) - outputs.begin());
        fixed[name] = fix_entry(entry, output);
      }
      c[k] = fixed;
      continue;
    }
    EMBER_CHECK(given.is_array(), InvalidArgument) << who << ": " << k << " must be a list, got " << given.dump().substr(0, 200);
    json fixed = json::array();
    for (size_t i = 0; i < given.size(); ++i) fixed.push_back(given[i].is_array() ? fix_entry(given[i], i) : fix_entry(given[i], 0));
    // tf-keras writes one list per output, also for a model with one: that is the plain list.
    if (outputs.size() == 1 && fixed.size() == 1 && fixed[0].is_array()) fixed = json(fixed[0]);
    c[k] = fixed;
  }
  if (tc.contains("loss_weights")) c["loss_weights"] = tc["loss_weights"];
  model.compile_from_config(c);
}

}  // namespace io

}  // namespace ember
