// Model::compile and the per-step training logic (Keras 3: keras/src/trainers/trainer.py and the
// TensorFlow backend's train_step/test_step/predict_step, compile_utils.CompileLoss). The epoch loops of
// fit/evaluate/predict are in fit.cpp.
#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/distribute/replica_loss.h"
#include "framework/model/model.h"
#include "framework/graph/trace.h"
#include "framework/model/trainer_state.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "losses/loss.h"
#include "optimizers/loss_scale_optimizer.h"
#include "optimizers/optimizer.h"
#include "optimizers/registry.h"

namespace ember {

using detail::CompiledState;

size_t Model::num_inputs() const { return is_graph_model() ? inputs_.size() : 1; }
size_t Model::num_outputs() const { return is_graph_model() ? outputs_.size() : 1; }

namespace {

std::vector<std::string> output_names_of(const Model& model) {
  std::vector<std::string> names;
  if (!model.is_graph_model()) return {model.name() + "_output"};
  for (const Tensor& out : model.outputs()) names.push_back(out.keras_history()->node->layer->name());
  return names;
}

// The metrics of each output, from compile's `metrics` or `weighted_metrics` (`what`), as Keras 3.15's
// CompileMetrics._build_metrics_set matches them (see MetricsSpec).
std::vector<std::vector<MetricArg>> metrics_per_output(const MetricsSpec& spec, const std::vector<std::string>& outputs,
                                                       const std::string& who, const char* what) {
  const size_t n_out = outputs.size();
  std::vector<std::vector<MetricArg>> per_output(n_out);
  auto output_list = [&] {
    std::string names;
    for (const std::string& n : outputs) names += (names.empty() ? "'" : ", '") + n + "'";
    return names;
  };
  if (spec.is_map) {
    for (const auto& [name, list] : spec.by_output) {
      const auto it = std::find(outputs.begin(), outputs.end(), name);
      // Keras 3.15 ignores the keys with one output; a key naming no output is surely a mistake, so refuse it.
      EMBER_CHECK(it != outputs.end(), InvalidArgument)
          << who << ": `" << what << "` names output '" << name << "', but the model's outputs are " << output_list();
      auto& dst = per_output[n_out == 1 ? 0 : static_cast<size_t>(it - outputs.begin())];
      dst.insert(dst.end(), list.metrics.begin(), list.metrics.end());
    }
    return per_output;
  }
  if (n_out == 1) {  // every metric, however nested, goes to the one output
    for (const MetricList& entry : spec.entries) per_output[0].insert(per_output[0].end(), entry.metrics.begin(), entry.metrics.end());
    return per_output;
  }
  if (spec.entries.empty()) return per_output;
  // Keras 3.15 reads a flat list on a model with several outputs as one entry per output, so "accuracy"
  // for every output (tf-keras) must be spelled per output.
  EMBER_CHECK(spec.entries.size() == n_out, InvalidArgument)
      << who << ": `" << what << "` has " << spec.entries.size() << " entr" << (spec.entries.size() == 1 ? "y" : "ies")
      << " but the model has " << n_out << " outputs (" << output_list()
      << "); with several outputs give one entry per output, in output order, each a metric or a list of them "
         "(e.g. {{}, {\"accuracy\"}} for none on the first), or a MetricsByOutput map from output name to metrics";
  for (size_t i = 0; i < n_out; ++i) per_output[i] = spec.entries[i].metrics;
  return per_output;
}

losses::LossPtr resolve_loss(const LossArg& arg) {
  if (arg.ptr) return arg.ptr->clone();
  return losses::get(arg.name);
}

}  // namespace

void Model::compile(CompileOptions options) { compile_impl(std::move(options), false); }

void Model::compile_impl(CompileOptions options, bool defer_metric_errors) {
  const std::string who = "Model '" + name() + "'.compile";
  EMBER_CHECK(options.steps_per_execution >= 1, InvalidArgument)
      << who << ": steps_per_execution must be at least 1, got " << options.steps_per_execution;
  const JitCompile& jit = options.jit_compile;
  EMBER_CHECK(jit.value || jit.name == "auto", InvalidArgument)
      << who << ": jit_compile must be true, false or \"auto\", got \"" << jit.name << "\"";
  auto state = std::make_shared<CompiledState>();
  state->compile_args = detail::compile_args_config(options);  // for get_compile_config
  state->run_eagerly = options.run_eagerly;
  // "auto" is false, as Keras resolves it on a machine without an accelerator (fused kernels are CPU-only).
  state->jit_compile = jit.value.value_or(false);
  state->steps_per_execution = options.steps_per_execution;
  state->strategy = distribute::get_strategy();
  const size_t n_out = num_outputs();
  state->output_names = output_names_of(*this);

  state->optimizer = options.optimizer.ptr;
  if (!state->optimizer) state->optimizer = optimizers::get(options.optimizer.name.empty() ? "rmsprop" : options.optimizer.name);
  if (options.auto_scale_loss && dtype_policy().name() == "mixed_float16" &&
      !dynamic_cast<optimizers::LossScaleOptimizer*>(state->optimizer.get())) {
    // Keras names the wrapper "loss_scale_optimizer" without a uniquifying suffix.
    state->optimizer = std::make_shared<optimizers::LossScaleOptimizer>(
        state->optimizer, optimizers::LossScaleOptimizerOptions{.name = "loss_scale_optimizer"});
    state->auto_scaled = true;
  }

  const auto& given = options.loss.per_output;
  if (given.empty()) {
    state->losses.assign(n_out, nullptr);  // Keras allows it: the model's add_loss terms must then be the loss
  } else if (options.loss.is_list) {
    EMBER_CHECK(given.size() == n_out, InvalidArgument)
        << "Model '" << name() << "'.compile: got " << given.size() << " losses for a model with " << n_out
        << " output" << (n_out == 1 ? "" : "s") << "; pass one loss for every output, or one per output in output order";
    for (const LossArg& arg : given) state->losses.push_back(resolve_loss(arg));
  } else {
    for (size_t i = 0; i < n_out; ++i) state->losses.push_back(resolve_loss(given[0]));
  }

  state->loss_weights = options.loss_weights;
  if (state->loss_weights.empty()) state->loss_weights.assign(n_out, 1.0);
  if (!given.empty() && !options.loss.is_list) {
    // Keras 3: one loss has one weight, which then weighs every output's loss.
    EMBER_CHECK(state->loss_weights.size() == 1 || options.loss_weights.empty(), InvalidArgument)
        << "Model '" << name() << "'.compile: `loss_weights` must match the number of losses, got 1 losses and "
        << options.loss_weights.size() << " weights; give one loss per output, or one weight";
    state->loss_weights.assign(n_out, state->loss_weights.front());
  }
  EMBER_CHECK(state->loss_weights.size() == n_out, InvalidArgument)
      << "Model '" << name() << "'.compile: got " << options.loss_weights.size() << " loss_weights for a model with "
      << n_out << " outputs; pass one per output";

  state->loss_tracker = std::make_shared<metrics::Mean>(metrics::MetricOptions{.name = "loss"});
  size_t n_losses = 0;
  for (const auto& l : state->losses) n_losses += l != nullptr;
  if (n_out > 1 && n_losses > 1)
    for (size_t i = 0; i < n_out; ++i)
      state->output_loss_trackers.push_back(
          std::make_shared<metrics::Mean>(metrics::MetricOptions{.name = state->output_names[i] + "_loss"}));

  // Keras 3 CompileMetrics names: "<output>_<name>" with several outputs; a repeated name gets "_<k>"; a
  // weighted metric whose name is taken becomes "weighted_<name>".
  std::map<std::string, int> taken;
  auto make = [&](const MetricArg& arg, size_t output, bool weighted) {
    metrics::MetricPtr m = arg.ptr ? arg.ptr : metrics::get(arg.name, state->losses[output].get());
    const std::string prefix = n_out > 1 ? state->output_names[output] + "_" : "";
    std::string name = prefix + m->name();
    if (taken.count(name) && weighted) name = prefix + "weighted_" + m->name();
    if (int& k = taken[name]; k++ > 0) name += "_" + std::to_string(k - 1);
    m->set_name(name);
    return m;
  };
  state->output_metrics.resize(n_out);
  state->output_weighted_metrics.resize(n_out);
  try {
    const auto plain = metrics_per_output(options.metrics, state->output_names, who, "metrics");
    const auto weighted = metrics_per_output(options.weighted_metrics, state->output_names, who, "weighted_metrics");
    for (size_t i = 0; i < n_out; ++i)
      for (const MetricArg& arg : plain[i]) state->output_metrics[i].push_back(make(arg, i, false));
    for (size_t i = 0; i < n_out; ++i)
      for (const MetricArg& arg : weighted[i]) state->output_weighted_metrics[i].push_back(make(arg, i, true));
  } catch (const InvalidArgument& e) {
    // Keras 3 compiles a saved config whatever its metrics and raises at the first step that updates them.
    if (!defer_metric_errors) throw;
    state->output_metrics.assign(n_out, {});
    state->output_weighted_metrics.assign(n_out, {});
    state->metrics_error = e.what();
  }
  compiled_ = std::move(state);
}

optimizers::Optimizer& Model::optimizer() const {
  EMBER_CHECK(compiled_, FailedPrecondition) << "Model '" << name() << "' has no optimizer: call compile() first";
  return *compiled_->optimizer;
}

std::vector<metrics::MetricPtr> Model::metrics() const {
  std::vector<metrics::MetricPtr> out;
  if (!compiled_) return out;
  out.push_back(compiled_->loss_tracker);
  for (const auto& t : compiled_->output_loss_trackers) out.push_back(t);
  for (const auto& per_output : compiled_->output_metrics)
    for (const auto& m : per_output) out.push_back(m);
  for (const auto& per_output : compiled_->output_weighted_metrics)
    for (const auto& m : per_output) out.push_back(m);
  return out;
}

void Model::reset_metrics() {
  for (const auto& m : metrics()) m->reset_state();
}

MetricResults Model::get_metrics_result() const {
  MetricResults results;
  for (const auto& m : metrics()) results.emplace_back(m->name(), m->result());
  return results;
}

void Model::unpack_batch(const data::Element& batch, std::vector<Tensor>& x, std::vector<Tensor>& y,
                         Tensor& sample_weight) const {
  const size_t n_in = num_inputs(), n_out = num_outputs();
  EMBER_CHECK(batch.size() == n_in || batch.size() == n_in + n_out || batch.size() == n_in + n_out + 1,
              InvalidArgument)
      << "Model '" << name() << "': a batch holds " << batch.size() << " tensors, but the model takes " << n_in
      << " input" << (n_in == 1 ? "" : "s") << " and has " << n_out << " output" << (n_out == 1 ? "" : "s")
      << "; give (x..., y..., [sample_weight]): " << n_in << ", " << n_in + n_out << " or " << n_in + n_out + 1
      << " tensors";
  x.assign(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(n_in));
  y.clear();
  sample_weight = Tensor();
  if (batch.size() >= n_in + n_out)
    y.assign(batch.begin() + static_cast<std::ptrdiff_t>(n_in), batch.begin() + static_cast<std::ptrdiff_t>(n_in + n_out));
  if (batch.size() == n_in + n_out + 1) sample_weight = batch.back();
}

Tensor Model::compute_loss(const std::vector<Tensor>& y, const std::vector<Tensor>& y_pred, const Tensor& sample_weight) {
  EMBER_CHECK(compiled_, InvalidArgument) << "Model '" << name() << "': call compile() before training or evaluating";
  const CompiledState& s = *compiled_;
  std::vector<Tensor> terms;
  bool has_compiled_loss = false;
  for (const auto& l : s.losses) has_compiled_loss |= l != nullptr;
  if (has_compiled_loss) {
    EMBER_CHECK(y.size() == s.losses.size() && y_pred.size() == s.losses.size(), InvalidArgument)
        << "Model '" << name() << "': the model has " << s.losses.size() << " outputs and " << y_pred.size()
        << " predictions, but " << y.size() << " targets were given; pass one target per output";
    Tensor total;
    for (size_t i = 0; i < s.losses.size(); ++i) {
      if (!s.losses[i]) continue;
      const Shape &ts = y[i].shape(), &ps = y_pred[i].shape();
      EMBER_CHECK(ts.rank() > 0 && ps.rank() > 0 && ts[0] == ps[0], InvalidArgument)
          << "Model '" << name() << "': targets for output '" << s.output_names[i] << "' have shape " << ts
          << " but the output has shape " << ps << "; give one target per sample (the same first dimension)";
      // A failure gets the shapes per batch (the batch dimension None: a replay's batch may not be the traced
      // one's) and what differs, since equal shapes with different dtypes would otherwise read as
      // "(None, 10) vs (None, 10)". The message is made only on a failure.
      auto context = [model = name(), loss = s.losses[i]->name(), output = s.output_names[i], t_shape = ts,
                      p_shape = ps, td = y[i].dtype(), pd = y_pred[i].dtype()](const InvalidArgument& e) {
        Shape per_batch_t = t_shape, per_batch_p = p_shape;
        per_batch_t[0] = per_batch_p[0] = -1;
        const std::string t_text = per_batch_t.to_keras_string(), p_text = per_batch_p.to_keras_string();
        std::string differs;
        if (per_batch_t != per_batch_p) differs = "their shapes differ";
        if (td != pd)
          differs += std::string(differs.empty() ? "" : " and ") + "their dtypes differ (" + dtype_name(td) +
                     " vs " + dtype_name(pd) + ")";
        if (differs.empty()) differs = "shapes and dtypes agree, so the loss expects another form of target";
        std::ostringstream os;
        os << "Model '" << model << "': loss '" << loss << "' for output '" << output
           << "' failed on a batch: its targets have shape " << t_text << " and dtype " << dtype_name(td)
           << ", the output has shape " << p_text << " and dtype " << dtype_name(pd) << " (None: the batch size); "
           << differs << ". Make the targets match what this loss expects: "
           << e.what();
        throw InvalidArgument(os.str());
      };
      Tensor value = with_error_context<InvalidArgument>(
          std::move(context),
          [&] { return (*s.losses[i])(y[i], y_pred[i], sample_weight); });
      if (!s.output_loss_trackers.empty())
        s.output_loss_trackers[i]->update_state(value, Tensor::scalar(static_cast<float>(ps[0])));
      if (s.loss_weights[i] != 1.0) value = value * static_cast<float>(s.loss_weights[i]);
      total = total.defined() ? total + value : value;
    }
    terms.push_back(total);
  }
  for (const Tensor& extra : losses()) terms.push_back(ops::cast(ops::reduce_sum(extra), DType::Float32));
  EMBER_CHECK(!terms.empty(), InvalidArgument)
      << "Model '" << name() << "': no loss to compute; pass a loss to compile()";
  Tensor total = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) total = total + terms[i];
  return total;
}

MetricResults Model::compute_metrics(const std::vector<Tensor>& y, const std::vector<Tensor>& y_pred,
                                     const Tensor& sample_weight, const Tensor& loss) {
  EMBER_CHECK(compiled_, InvalidArgument) << "Model '" << name() << "': call compile() before computing metrics";
  if (loss.defined()) {
    const int64_t batch = y_pred.empty() || y_pred[0].shape().rank() == 0 ? 1 : y_pred[0].shape()[0];
    compiled_->loss_tracker->update_state(loss, Tensor::scalar(static_cast<float>(batch)));
  }
  EMBER_CHECK(compiled_->metrics_error.empty(), InvalidArgument)
      << compiled_->metrics_error << " (in the compile config this model was loaded with; compile it again)";
  // Keras: `metrics` ignore the sample weights, `weighted_metrics` use them.
  for (size_t i = 0; i < compiled_->output_metrics.size() && i < y.size() && i < y_pred.size(); ++i) {
    for (const auto& m : compiled_->output_metrics[i]) m->update_state(y[i], y_pred[i]);
    for (const auto& m : compiled_->output_weighted_metrics[i]) m->update_state(y[i], y_pred[i], sample_weight);
  }
  return get_metrics_result();
}

namespace {

// The batch's parts, one per replica of this process (MirroredStrategy's devices; fit's replica_batches made
// them): the batch itself without such a strategy.
std::vector<data::Element> replica_parts(const std::shared_ptr<CompiledState>& compiled, const data::Element& batch,
                                         const std::string& who) {
  if (!compiled || !compiled->strategy || compiled->strategy->num_replicas_in_process() == 1) return {batch};
  return compiled->strategy->replica_parts(batch, who);
}

// A replica's model with the model's values (TF's mirrored variables: each device's copy), its batch part on its
// device: the replica's work runs there (a DeviceScope while it lives).
struct Replica {
  Model* model;
  Device device;
  data::Element part;
};

std::vector<Replica> mirrored_replicas(Model& model, const std::vector<Model*>& models,
                                       const distribute::Strategy& strategy, const std::vector<data::Element>& parts) {
  const std::vector<Variable> primary = model.weights();
  for (const Variable& v : primary)
    EMBER_CHECK(v.device() == strategy.devices()[0], InvalidArgument)
        << "Model '" << model.name() << "': MirroredStrategy's first replica is the model itself, on "
        << strategy.devices()[0] << ", but its variable '" << v.name() << "' is on " << v.device()
        << "; build the model under DeviceScope(" << strategy.devices()[0] << ") or list " << v.device()
        << " first in .devices";
  std::vector<Replica> out;
  for (size_t r = 0; r < parts.size(); ++r) {
    const Device device = strategy.devices()[r];
    if (r > 0) {
      const std::vector<Variable> mine = models[r]->weights();
      for (size_t i = 0; i < mine.size(); ++i) Variable(mine[i]).assign(primary[i].value().to(mine[i].device()));
    }
    data::Element part;
    for (const Tensor& t : parts[r]) part.push_back(t.defined() ? t.to(device) : t);
    out.push_back({models[r], device, std::move(part)});
  }
  return out;
}

// Several replicas in this process (TF: MirroredStrategy's replicas, one per device): each computes its part's
// gradients with the model's values, the sum of theirs (each of a loss scaled by 1/n: their mean) is applied once,
// and every part is added to the metrics
// (TF sums the replicas' metric states). A variable the forward pass assigns (BatchNormalization's moving
// statistics) becomes the mean of the replicas' values (Keras's MEAN aggregation of such variables).
MetricResults train_replicas(Model& model, const distribute::Strategy& strategy, const std::vector<Replica>& replicas) {
  optimizers::Optimizer& opt = model.optimizer();
  const std::vector<Variable> vars = model.trainable_weights();
  std::vector<Variable> state = model.non_trainable_weights();
  std::vector<uint64_t> versions;
  for (const Variable& v : state) versions.push_back(v.version());
  std::vector<std::vector<Tensor>> grads, ys, y_preds;
  std::vector<Tensor> sample_weights, losses;
  for (const Replica& replica : replicas) {
    DeviceScope on_device(replica.device);
    std::vector<Tensor> x, y;
    Tensor sample_weight;
    model.unpack_batch(replica.part, x, y, sample_weight);
    GradientTape tape;
    y_preds.push_back(replica.model->call_outputs(x, /*training=*/true));
    losses.push_back(replica.model->compute_loss(y, y_preds.back(), sample_weight));
    if (!vars.empty())
      grads.push_back(tape.gradient(
          distribute::scale_loss_for_distribution(opt.scale_loss(losses.back()), strategy.num_replicas_in_sync()),
          replica.model->trainable_weights()));
    ys.push_back(std::move(y));
    sample_weights.push_back(sample_weight);
  }
  // Integer state (a seed generator's counter) stays replica 0's.
  std::vector<std::vector<Variable>> replica_state;
  for (const Replica& replica : replicas) replica_state.push_back(replica.model->non_trainable_weights());
  for (size_t i = 0; i < state.size(); ++i) {
    if (state[i].version() == versions[i] || !is_floating(state[i].dtype())) continue;
    Tensor sum = state[i].value();
    for (size_t r = 1; r < replicas.size(); ++r) sum = sum + replica_state[r][i].value().to(sum.device());
    state[i].assign(sum * Tensor::scalar_of(1.0 / static_cast<double>(replicas.size()), sum.dtype(), sum.device()));
  }
  if (!vars.empty()) opt.apply(strategy.combine_replica_gradients(distribute::ReduceOp::SUM, grads), vars);
  MetricResults results;
  const Device here = vars.empty() ? default_device() : vars[0].device();
  auto to_here = [&](std::vector<Tensor> ts) {
    for (Tensor& t : ts) t = t.defined() ? t.to(here) : t;
    return ts;
  };
  for (size_t r = 0; r < replicas.size(); ++r)
    results = model.compute_metrics(to_here(ys[r]), to_here(y_preds[r]), to_here({sample_weights[r]})[0],
                                    losses[r].to(here));
  return results;
}

// The models of the replicas of this process: `model`, then copies on the other replicas' devices, made at the
// first call (outside any trace, as a layer's build is); `compile_copy` gives a copy its compiled state.
std::vector<Model*> replica_models(Model& model, const std::shared_ptr<CompiledState>& compiled, size_t n,
                                   const std::function<void(Model&, std::shared_ptr<CompiledState>)>& compile_copy) {
  if (compiled->replicas.size() + 1 < n) {
    graph::SuspendTracing outside_the_trace;
    for (size_t r = compiled->replicas.size() + 1; r < n; ++r) {
      DeviceScope on_device(compiled->strategy->devices()[r]);
      std::shared_ptr<Model> copy;
      try {
        copy = models::clone_model(model);
      } catch (const Unimplemented& e) {
        throw Unimplemented("Model '" + model.name() + "': MirroredStrategy runs each replica after the first on a " +
                            "copy of the model, and " + e.what());
      }
      // The same losses and metrics: every replica's part adds to them.
      auto state = std::make_shared<CompiledState>();
      const CompiledState& s = *compiled;
      state->optimizer = s.optimizer;
      state->losses = s.losses;
      state->loss_weights = s.loss_weights;
      state->output_names = s.output_names;
      state->loss_tracker = s.loss_tracker;
      state->output_loss_trackers = s.output_loss_trackers;
      state->output_metrics = s.output_metrics;
      state->output_weighted_metrics = s.output_weighted_metrics;
      compile_copy(*copy, std::move(state));
      compiled->replicas.push_back(std::move(copy));
    }
  }
  std::vector<Model*> out{&model};
  for (size_t r = 1; r < n; ++r) out.push_back(compiled->replicas[r - 1].get());
  return out;
}

// One step's results from the replicas of this process (replica_train_step's comment in model.h): a metric's is
// the last replica's, any other entry the mean over the replicas that returned it with that shape and dtype.
MetricResults combine_replica_results(const Model& model, const std::vector<MetricResults>& per_replica) {
  MetricResults out = per_replica.back();
  if (per_replica.size() == 1) return out;
  const std::vector<std::shared_ptr<metrics::Metric>> metrics = model.metrics();
  for (auto& [name, value] : out) {
    const bool metric = std::any_of(metrics.begin(), metrics.end(), [&](const auto& m) { return m->name() == name; });
    if (metric || !value.defined() || !is_floating(value.dtype())) continue;
    Tensor sum;
    int n = 0;
    for (const MetricResults& results : per_replica)
      for (const auto& [other_name, other] : results)
        if (other_name == name && other.defined() && other.dtype() == value.dtype() && other.shape() == value.shape()) {
          sum = sum.defined() ? sum + other.to(value.device()) : other.to(value.device());
          ++n;
        }
    value = sum * Tensor::scalar_of(1.0 / n, sum.dtype(), sum.device());
  }
  return out;
}

// model.*step once per replica of this process in its replica context, the results combined.
MetricResults run_per_replica(Model& model, const std::shared_ptr<CompiledState>& compiled, const data::Element& batch,
                              MetricResults (Model::*step)(const data::Element&)) {
  if (!compiled || !compiled->strategy) return (model.*step)(batch);
  return combine_replica_results(
      model, compiled->strategy->run_replica_parts([&](const data::Element& part) { return (model.*step)(part); }, batch));
}

}  // namespace

MetricResults detail::replica_train_step(Model& model, const data::Element& batch) {
  return run_per_replica(model, model.compiled_, batch, &Model::train_step);
}

MetricResults detail::replica_test_step(Model& model, const data::Element& batch) {
  return run_per_replica(model, model.compiled_, batch, &Model::test_step);
}

MetricResults Model::train_step(const data::Element& batch) {
  const std::string who = "Model '" + name() + "'.train_step";
  std::vector<data::Element> parts;
  // In fit's replica contexts (replica_train_step) each replica of this process hands in its part, and the last
  // one trains on them all; its gradients are combined here, not by the optimizer (a cross-replica scope).
  const std::optional<distribute::ReplicaContext> context = distribute::get_replica_context();
  if (context && compiled_ && compiled_->strategy && compiled_->strategy->num_replicas_in_process() > 1) {
    std::vector<data::Element>& pending = compiled_->replica_parts;
    if (context->replica_in_process() == 0) pending.clear();
    pending.push_back(batch);
    if (context->replica_in_process() + 1 < compiled_->strategy->num_replicas_in_process()) return {};
    parts = std::move(pending);
    pending.clear();
  } else {
    parts = replica_parts(compiled_, batch, who);
  }
  distribute::CrossReplicaScope combined_here;
  if (parts.size() > 1) {
    const auto compile_copy = [](Model& copy, std::shared_ptr<CompiledState> state) { copy.compiled_ = std::move(state); };
    const std::vector<Model*> models = replica_models(*this, compiled_, parts.size(), compile_copy);
    return train_replicas(*this, *compiled_->strategy, mirrored_replicas(*this, models, *compiled_->strategy, parts));
  }
  std::vector<Tensor> x, y;
  Tensor sample_weight;
  unpack_batch(batch, x, y, sample_weight);
  optimizers::Optimizer& opt = optimizer();
  std::vector<Variable> vars;
  std::vector<Tensor> y_pred;
  std::vector<Tensor> grads;
  Tensor loss;
  // Several workers, one replica each: a variable the forward pass assigns (BatchNormalization's moving
  // statistics) becomes the mean of the workers' values, as with several replicas in one process (train_replicas).
  const bool across_workers = compiled_->strategy && compiled_->strategy->num_replicas_in_sync() > 1;
  std::vector<Variable> state;
  std::vector<uint64_t> versions;
  if (across_workers)
    for (const Variable& v : non_trainable_weights())
      if (is_floating(v.dtype())) {
        state.push_back(v);
        versions.push_back(v.version());
      }
  {
    GradientTape tape;
    y_pred = call_outputs(x, /*training=*/true);
    vars = trainable_weights();  // after the call: a model's first call builds its weights
    loss = compute_loss(y, y_pred, sample_weight);
    // Scaled for mixed precision, and under a strategy of n replicas by 1/n (TF's fit: Keras's
    // scale_loss_for_distribution), since the replicas' gradients are summed.
    const Tensor scaled = distribute::scale_loss_for_distribution(
        opt.scale_loss(loss), compiled_->strategy ? compiled_->strategy->num_replicas_in_sync() : 1);
    // Keras's tape.gradient then optimizer.apply. Traced (fit's default), the graph compiler hands a small
    // batch's Dense kernel gradients to the update as their factors (framework/graph/fold_kernel_gradients.cpp).
    // Under a strategy every replica applies the sum of the replicas' gradients of their scaled losses, their mean
    // (TF: the optimizer's all-reduce under MultiWorkerMirroredStrategy), so the weights stay identical; their
    // all-reduces overlap the backward pass. One replica passes them through.
    if (!vars.empty())
      grads = compiled_->strategy ? compiled_->strategy->reduced_gradients(distribute::ReduceOp::SUM, tape, scaled, vars)
                                  : tape.gradient(scaled, vars);
  }
  if (!vars.empty()) opt.apply(grads, vars);
  std::vector<Variable> assigned;
  std::vector<Tensor> values;
  for (size_t i = 0; i < state.size(); ++i)
    if (state[i].version() != versions[i]) {
      assigned.push_back(state[i]);
      const Tensor& value = state[i].value();  // the all-reduce takes float32 and float64
      values.push_back(value.dtype() == DType::Float64 ? value : ops::cast(value, DType::Float32));
    }
  if (!assigned.empty()) {
    const std::vector<Tensor> means = compiled_->strategy->all_reduce(distribute::ReduceOp::MEAN, values);
    for (size_t i = 0; i < assigned.size(); ++i)
      assigned[i].assign(means[i].dtype() == assigned[i].dtype() ? means[i] : ops::cast(means[i], assigned[i].dtype()));
  }
  return compute_metrics(y, y_pred, sample_weight, loss);
}

MetricResults Model::test_step(const data::Element& batch) {
  // In a replica context (replica_test_step) the batch is the replica's part; called outside one, every part in
  // turn. Each on this model: evaluation changes no variable, so the replicas' copies are not needed, and every
  // part adds to the same metrics. The loss tracker takes each part's mean loss, not the replica's share of the
  // global batch's that a Loss gives in a replica context (Keras 3 unscales it for the tracker): a cross-replica
  // scope.
  const std::vector<data::Element> parts = distribute::get_replica_context()
                                               ? std::vector<data::Element>{batch}
                                               : replica_parts(compiled_, batch, "Model '" + name() + "'.test_step");
  distribute::CrossReplicaScope whole_part;
  MetricResults results;
  for (const data::Element& part : parts) {
    std::vector<Tensor> x, y;
    Tensor sample_weight;
    unpack_batch(part, x, y, sample_weight);
    std::vector<Tensor> y_pred = call_outputs(x, /*training=*/false);
    Tensor loss = compute_loss(y, y_pred, sample_weight);
    results = compute_metrics(y, y_pred, sample_weight, loss);
  }
  return results;
}

std::vector<Tensor> Model::predict_step(const data::Element& batch) {
  std::vector<Tensor> x, y;
  Tensor sample_weight;
  unpack_batch(batch, x, y, sample_weight);
  return call_outputs(x, /*training=*/false);
}

}  // namespace ember
