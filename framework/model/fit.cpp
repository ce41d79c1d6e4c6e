// The epoch loops of Model::fit / evaluate / predict and the *_on_batch calls (Keras 3:
// keras/src/backend/tensorflow/trainer.py): validation, class weights, steps_per_execution's grouping and
// the callbacks' hooks. The batches come from batch_source.h, the steps from compiled_steps.cpp.
#include <algorithm>
#include <cmath>
#include <optional>

#include "framework/core/error.h"
#include "framework/core/profiler.h"
#include "framework/distribute/strategy.h"
#include "framework/model/batch_source.h"
#include "framework/model/model.h"
#include "framework/model/trainer_state.h"
#include "framework/ops/array.h"
#include "optimizers/optimizer.h"

namespace ember {

using detail::BatchSource;
using detail::EpochIterator;

namespace {

using StrategyOpt = std::optional<distribute::Strategy>;

// The strategy compile attached the model to (none before compile, or outside every scope).
StrategyOpt strategy_of(const std::shared_ptr<detail::CompiledState>& compiled) {
  return compiled ? compiled->strategy : std::nullopt;
}

bool multi_replica(const StrategyOpt& strategy) { return strategy && strategy->num_replicas_in_sync() > 1; }

// The metrics over every replica's batches (TF reads a metric's state variables summed over the replicas):
// every worker then logs the same numbers. Each worker's own state is kept, so the sums are not summed again.
// A step whose results are not the metrics' (a model's own step returning other values; Keras's
// _get_metrics_result_or_logs) logs its results, the floating ones averaged over the workers (TF's MEAN of the
// replicas' step outputs).
MetricResults synced_results(Model& model, const StrategyOpt& strategy, MetricResults results) {
  if (!multi_replica(strategy)) return results;
  std::vector<std::string> names, metric_names;
  for (const auto& [name, value] : results) names.push_back(name);
  for (const auto& m : model.metrics()) metric_names.push_back(m->name());
  std::sort(names.begin(), names.end());
  std::sort(metric_names.begin(), metric_names.end());
  if (names != metric_names) {
    std::vector<Tensor> values;
    for (const auto& [name, value] : results)
      values.push_back(value.defined() && (value.dtype() == DType::Float32 || value.dtype() == DType::Float64) ? value
                                                                                                              : Tensor());
    values = strategy->all_reduce(distribute::ReduceOp::MEAN, values);
    for (size_t i = 0; i < results.size(); ++i)
      if (values[i].defined()) results[i].second = values[i];
    return results;
  }
  std::vector<Variable> vars;
  for (const auto& m : model.metrics())
    for (const Variable& v : m->variables()) vars.push_back(v);
  const std::vector<Tensor> local = strategy->sum_variables(vars, "Model '" + model.name() + "': the metrics");
  MetricResults summed = model.get_metrics_result();
  for (size_t i = 0; i < vars.size(); ++i) vars[i].assign(local[i]);
  return summed;
}

// Whether some worker reads every batch's metrics (a callback with batch hooks, such as the progress bar): the
// metrics are then synced after every step on all workers, else only when read at the end. One decision for the
// job, since every worker must call the same collectives.
bool any_worker(const StrategyOpt& strategy, bool mine) {
  if (!multi_replica(strategy)) return mine;
  const Tensor flag = Tensor::scalar<float>(mine ? 1.0f : 0.0f);
  return strategy->all_reduce(distribute::ReduceOp::SUM, {flag})[0].item<float>() > 0;
}

// The batches of the next execution (compile's steps_per_execution): `n`, or those left in the epoch; none
// at its end. Keras 3 calls a batch hook once per execution: begin with the index of its first step, end with
// that of its last (Keras writes first + n - 1 there also when the epoch's last execution runs fewer steps:
// here it is the last step run, so that a hook never sees a step that did not run).
std::vector<data::Element> next_execution(EpochIterator& it, int n) {
  std::vector<data::Element> batches;
  while (static_cast<int>(batches.size()) < n) {
    std::optional<data::Element> batch = it.next();
    if (!batch) break;
    batches.push_back(std::move(*batch));
  }
  return batches;
}

// The evaluation loop: shared by evaluate and fit's validation.
Logs run_test(Model& model, EpochIterator& it, callbacks::CallbackList& cbs, const StrategyOpt& strategy) {
  model.reset_metrics();
  cbs.on_test_begin();
  it.begin_epoch();
  // The batch hooks, and each batch's logs, only for callbacks that use them (Keras's CallbackList).
  const bool batch_hooks = cbs.implements_test_batch_hooks();
  const bool sync_batches = any_worker(strategy, batch_hooks);
  const int per_execution = detail::steps_per_execution(model);
  MetricResults results;
  int64_t step = 0;
  for (auto batches = next_execution(it, per_execution); !batches.empty();
       batches = next_execution(it, per_execution)) {
    const auto n = static_cast<int64_t>(batches.size());
    if (strategy && !model.built()) {
      // Built by its first batch (no Input): every worker evaluates the chief's weights, as fit trains them.
      const std::string who = "Model '" + model.name() + "'.evaluate";
      model.predict_step(strategy->replica_parts(batches[0], who)[0]);
      strategy->mirror_variables(who, model.weights());
    }
    if (batch_hooks) cbs.on_test_batch_begin(step);
    {
      profiler::Trace trace("test", step);
      results = detail::run_test_steps(model, batches);
      if (sync_batches) results = synced_results(model, strategy, std::move(results));
    }
    if (batch_hooks) cbs.on_test_batch_end(step + n - 1, detail::to_logs(results));
    step += n;
  }
  Logs logs = detail::to_logs(synced_results(model, strategy, results.empty() ? model.get_metrics_result() : results));
  cbs.on_test_end(logs);
  return logs;
}

}  // namespace

History Model::fit(const Tensor& x, const Tensor& y, FitOptions options) {
  return fit(std::vector<Tensor>{x}, std::vector<Tensor>{y}, std::move(options));
}

namespace {

struct FitData {
  std::unique_ptr<BatchSource> train;
  std::unique_ptr<BatchSource> validation;  // null: no validation
};

History run_fit(Model& model, FitData data, const FitOptions& options, const StrategyOpt& strategy) {
  const std::string who = "Model '" + model.name() + "'.fit";
  EMBER_CHECK(model.compiled(), InvalidArgument) << who << ": call compile() before fit()";
  EMBER_CHECK(options.epochs >= 0 && options.initial_epoch >= 0, InvalidArgument)
      << who << ": epochs and initial_epoch must not be negative, got " << options.epochs << " and "
      << options.initial_epoch;
  EMBER_CHECK(options.validation_freq > 0, InvalidArgument)
      << who << ": validation_freq must be positive, got " << options.validation_freq;
  if (!options.class_weight.empty())
    data.train = detail::with_class_weights(std::move(data.train), model, options.class_weight);
  // Under a strategy: each replica's rows of every global batch, and the variables fit creates (the weights when
  // the first batch builds the model, the optimizer's slots) are the strategy's, mirrored before the first step.
  std::optional<distribute::StrategyScope> scope;
  if (strategy) {
    scope.emplace(strategy->scope());
    data.train = detail::replica_batches(std::move(data.train), *strategy, who);
    if (data.validation) data.validation = detail::replica_batches(std::move(data.validation), *strategy, who);
  }
  bool mirrored = !strategy;
  EpochIterator train(std::move(data.train), options.steps_per_epoch);
  std::optional<EpochIterator> validation;
  if (data.validation) validation.emplace(std::move(data.validation), options.validation_steps);

  auto history = std::make_shared<History>();
  callbacks::CallbackList cbs = detail::make_callbacks(options.callbacks, options.verbose, history);
  cbs.set_model(&model);
  cbs.set_params({.verbose = options.verbose, .epochs = options.epochs, .steps = train.steps()});

  model.stop_training = false;
  model.initial_epoch_override.reset();
  model.training_data_state_override.reset();
  model.training_data_state = train.get_state();
  cbs.on_train_begin();
  const int initial_epoch = model.initial_epoch_override.value_or(options.initial_epoch);
  model.initial_epoch_override.reset();
  if (model.training_data_state_override) {
    train.set_state(*model.training_data_state_override);
    model.training_data_state_override.reset();
  }
  // Before the first epoch draws its shuffle.
  if (multi_replica(strategy)) strategy->sync_random_state(who);
  Logs training_logs;
  const bool sync_batches = any_worker(strategy, cbs.implements_train_batch_hooks());
  for (int epoch = initial_epoch; epoch < options.epochs; ++epoch) {
    model.reset_metrics();
    cbs.on_epoch_begin(epoch);
    train.begin_epoch();
    // The batch hooks, and each batch's logs, only for callbacks that use them (Keras's CallbackList):
    // otherwise the last batch's metrics become the epoch's logs.
    const bool batch_hooks = cbs.implements_train_batch_hooks();
    const int per_execution = detail::steps_per_execution(model);
    MetricResults results;
    int64_t step = 0;
    for (auto batches = next_execution(train, per_execution); !batches.empty();
         batches = next_execution(train, per_execution)) {
      const auto n = static_cast<int64_t>(batches.size());
      // Keras builds the model before the first step, so a custom train_step finds its weights.
      if (!model.built()) model.predict_step(strategy ? strategy->replica_parts(batches[0], who)[0] : batches[0]);
      if (!mirrored) {
        if (!model.optimizer().built()) model.optimizer().build(model.trainable_weights());
        std::vector<Variable> vars = model.weights();
        for (const Variable& v : model.optimizer().variables()) vars.push_back(v);
        strategy->mirror_variables(who, vars);
        mirrored = true;
      }
      if (batch_hooks) cbs.on_train_batch_begin(step);
      {
        profiler::Trace trace("train", step);  // a training step on the profiler's timeline, as TF marks it
        results = detail::tuned_train_steps(model, batches, step == 0);
        if (sync_batches) results = synced_results(model, strategy, std::move(results));
      }
      if (batch_hooks) cbs.on_train_batch_end(step + n - 1, detail::to_logs(results));
      step += n;
      if (model.stop_training) break;
    }
    EMBER_CHECK(step > 0 || epoch > initial_epoch, InvalidArgument)
        << who << ": the training data gave no batch; give at least one sample (or a dataset with elements)";
    Logs epoch_logs =
        detail::to_logs(synced_results(model, strategy, results.empty() ? model.get_metrics_result() : results));
    if (validation && (epoch + 1) % options.validation_freq == 0) {
      Logs val_logs = run_test(model, *validation, cbs, strategy);
      for (const auto& [k, v] : val_logs) epoch_logs["val_" + k] = v;
    }
    model.training_data_state = train.get_state();
    cbs.on_epoch_end(epoch, epoch_logs);
    training_logs = epoch_logs;
    if (model.stop_training) break;
  }
  model.optimizer().finalize_variable_values(model.trainable_weights());
  cbs.on_train_end(training_logs);
  return *history;
}

}  // namespace

History Model::fit(const std::vector<Tensor>& x, const std::vector<Tensor>& y, FitOptions options) {
  const std::string who = "Model '" + name() + "'.fit";
  EMBER_CHECK(options.validation_split >= 0 && options.validation_split < 1, InvalidArgument)
      << who << ": validation_split must be in [0, 1), got " << options.validation_split;
  EMBER_CHECK(options.class_weight.empty() || !options.sample_weight.defined(), InvalidArgument)
      << who << ": give class_weight or sample_weight, not both";
  std::vector<Tensor> train_x = x, train_y = y;
  Tensor train_sw = options.sample_weight;
  FitData data;
  if (options.validation_split > 0 && options.validation_data.empty()) {
    // Keras: the last fraction of the samples, taken before any shuffling; validation_data overrides it.
    EMBER_CHECK(!x.empty(), InvalidArgument) << who << ": no input arrays";
    const int64_t n = detail::first_dim(x[0]);
    const int64_t split_at = static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - options.validation_split)));
    EMBER_CHECK(split_at > 0 && split_at < n, InvalidArgument)
        << who << ": validation_split " << options.validation_split << " of " << n
        << " samples leaves an empty training or validation set; use more data or another split";
    auto head = [&](const Tensor& t) {
      std::vector<int64_t> b(static_cast<size_t>(t.shape().rank()), 0), s(b.size(), -1);
      s[0] = split_at;
      return ops::slice(t, b, s);
    };
    auto tail = [&](const Tensor& t) {
      std::vector<int64_t> b(static_cast<size_t>(t.shape().rank()), 0), s(b.size(), -1);
      b[0] = split_at;
      return ops::slice(t, b, s);
    };
    std::vector<Tensor> val_x, val_y;
    for (auto& t : train_x) val_x.push_back(tail(t)), t = head(t);
    for (auto& t : train_y) val_y.push_back(tail(t)), t = head(t);
    Tensor val_sw;
    if (train_sw.defined()) val_sw = tail(train_sw), train_sw = head(train_sw);
    data.validation = detail::tensor_source(
        *this, "fit", val_x, val_y, val_sw,
        options.validation_batch_size ? options.validation_batch_size : options.batch_size, options.validation_steps,
        false);
  }
  data.train = detail::tensor_source(*this, "fit", train_x, train_y, train_sw, options.batch_size,
                                     options.steps_per_epoch, options.shuffle);
  if (!options.validation_data.empty())
    data.validation = detail::validation_source(*this, options.validation_data, options.validation_batch_size,
                                                options.batch_size, options.validation_steps);
  return run_fit(*this, std::move(data), options, strategy_of(compiled_));
}

History Model::fit(const data::Dataset& dataset, FitOptions options) {
  const std::string who = "Model '" + name() + "'.fit";
  EMBER_CHECK(options.validation_split == 0 || !options.validation_data.empty(), InvalidArgument)
      << who << ": validation_split needs tensors; with a dataset, pass validation_data";
  EMBER_CHECK(!options.sample_weight.defined(), InvalidArgument)
      << who << ": sample_weight needs tensors; with a dataset, make each element (x, y, sample_weight)";
  FitData data;
  data.train = detail::dataset_source(*this, "fit", dataset, options.batch_size);
  if (!options.validation_data.empty())
    data.validation = detail::validation_source(*this, options.validation_data, options.validation_batch_size,
                                                std::nullopt, options.validation_steps);
  return run_fit(*this, std::move(data), options, strategy_of(compiled_));
}

namespace {

Logs run_evaluate(Model& model, std::unique_ptr<BatchSource> source, const EvaluateOptions& options,
                  const StrategyOpt& strategy) {
  EMBER_CHECK(model.compiled(), InvalidArgument) << "Model '" << model.name() << "'.evaluate: call compile() first";
  if (strategy) {
    const std::string who = "Model '" + model.name() + "'.evaluate";
    source = detail::replica_batches(std::move(source), *strategy, who);
    // Every worker evaluates the chief's weights (those made in the scope are mirrored at their first use).
    if (model.built()) strategy->mirror_variables(who, model.weights());
  }
  EpochIterator it(std::move(source), options.steps);
  callbacks::CallbackList cbs = detail::make_callbacks(options.callbacks, options.verbose, nullptr);
  cbs.set_model(&model);
  cbs.set_params({.verbose = options.verbose, .epochs = 1, .steps = it.steps()});
  return run_test(model, it, cbs, strategy);
}

std::vector<Tensor> run_predict(Model& model, std::unique_ptr<BatchSource> source, const PredictOptions& options) {
  EpochIterator it(std::move(source), options.steps);
  callbacks::CallbackList cbs = detail::make_callbacks(options.callbacks, options.verbose, nullptr);
  cbs.set_model(&model);
  cbs.set_params({.verbose = options.verbose, .epochs = 1, .steps = it.steps()});
  cbs.on_predict_begin();
  it.begin_epoch();
  const int per_execution = detail::steps_per_execution(model);
  std::vector<std::vector<Tensor>> pieces;
  int64_t step = 0;
  for (auto batches = next_execution(it, per_execution); !batches.empty();
       batches = next_execution(it, per_execution)) {
    const auto n = static_cast<int64_t>(batches.size());
    cbs.on_predict_batch_begin(step);
    std::vector<std::vector<Tensor>> outputs;
    {
      profiler::Trace trace("predict", step);
      outputs = detail::run_predict_steps(model, batches);
    }
    for (const std::vector<Tensor>& out : outputs) {
      if (pieces.empty()) pieces.resize(out.size());
      for (size_t i = 0; i < out.size(); ++i) pieces[i].push_back(out[i]);
    }
    cbs.on_predict_batch_end(step + n - 1);
    step += n;
  }
  cbs.on_predict_end();
  EMBER_CHECK(!pieces.empty(), InvalidArgument)
      << "Model '" << model.name() << "'.predict: the input gave no batch; give at least one sample";
  std::vector<Tensor> outputs;
  for (auto& p : pieces) outputs.push_back(p.size() == 1 ? p[0] : ops::concat(p, 0));
  return outputs;
}

// predict() returns one tensor: checked before any work is done.
void check_single_output(const Model& model) {
  EMBER_CHECK(model.num_outputs() == 1, InvalidArgument)
      << "Model '" << model.name() << "'.predict: the model has " << model.num_outputs()
      << " outputs; use predict_outputs() to get all of them";
}

}  // namespace

Logs Model::evaluate(const Tensor& x, const Tensor& y, EvaluateOptions options) {
  return evaluate(std::vector<Tensor>{x}, std::vector<Tensor>{y}, std::move(options));
}

Logs Model::evaluate(const std::vector<Tensor>& x, const std::vector<Tensor>& y, EvaluateOptions options) {
  return run_evaluate(*this, detail::tensor_source(*this, "evaluate", x, y, options.sample_weight, options.batch_size,
                                                   options.steps, false),
                      options, strategy_of(compiled_));
}

Logs Model::evaluate(const data::Dataset& dataset, EvaluateOptions options) {
  EMBER_CHECK(!options.sample_weight.defined(), InvalidArgument)
      << "Model '" << name() << "'.evaluate: sample_weight needs tensors; with a dataset, make each element (x, y, sample_weight)";
  return run_evaluate(*this, detail::dataset_source(*this, "evaluate", dataset, options.batch_size), options,
                      strategy_of(compiled_));
}

Tensor Model::predict(const Tensor& x, PredictOptions options) {
  check_single_output(*this);
  return predict_outputs(std::vector<Tensor>{x}, std::move(options))[0];
}

Tensor Model::predict(const data::Dataset& dataset, PredictOptions options) {
  check_single_output(*this);
  return predict_outputs(dataset, std::move(options))[0];
}

std::vector<Tensor> Model::predict_outputs(const std::vector<Tensor>& x, PredictOptions options) {
  return run_predict(*this, detail::tensor_source(*this, "predict", x, {}, Tensor(), options.batch_size, options.steps,
                                                  false), options);
}

std::vector<Tensor> Model::predict_outputs(const data::Dataset& dataset, PredictOptions options) {
  return run_predict(*this, detail::dataset_source(*this, "predict", dataset, options.batch_size), options);
}

namespace {

data::Element on_batch_element(const Model& model, const char* who, const std::vector<Tensor>& x,
                               const std::vector<Tensor>& y, const OnBatchOptions& options, const StrategyOpt& strategy) {
  EMBER_CHECK(model.compiled(), InvalidArgument) << "Model '" << model.name() << "'." << who << ": call compile() first";
  EMBER_CHECK(options.class_weight.empty() || !options.sample_weight.defined(), InvalidArgument)
      << "Model '" << model.name() << "'." << who << ": give class_weight or sample_weight, not both";
  data::Element batch = x;
  batch.insert(batch.end(), y.begin(), y.end());
  if (options.sample_weight.defined()) batch.push_back(options.sample_weight);
  if (!options.class_weight.empty()) {
    EMBER_CHECK(y.size() == 1, InvalidArgument)
        << "Model '" << model.name() << "'." << who << ": class_weight needs a model with one output";
    batch.push_back(detail::class_weights_for(y[0], options.class_weight));
  }
  detail::check_samples("Model '" + model.name() + "'." + who, batch,
                detail::roles_of(x.size(), y.size(), batch.size() > x.size() + y.size()));
  // Several replicas in this process share the batch (a worker of several passes its own batch).
  if (strategy && strategy->num_replicas_in_process() > 1)
    return strategy->replica_batches(batch, "Model '" + model.name() + "'." + who);
  return batch;
}

}  // namespace

Logs Model::train_on_batch(const Tensor& x, const Tensor& y, OnBatchOptions options) {
  return train_on_batch(std::vector<Tensor>{x}, std::vector<Tensor>{y}, std::move(options));
}

Logs Model::train_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y, OnBatchOptions options) {
  data::Element batch = on_batch_element(*this, "train_on_batch", x, y, options, strategy_of(compiled_));
  reset_metrics();
  return detail::to_logs(detail::tuned_train_step(*this, batch));
}

Logs Model::test_on_batch(const Tensor& x, const Tensor& y, OnBatchOptions options) {
  return test_on_batch(std::vector<Tensor>{x}, std::vector<Tensor>{y}, std::move(options));
}

Logs Model::test_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y, OnBatchOptions options) {
  data::Element batch = on_batch_element(*this, "test_on_batch", x, y, options, strategy_of(compiled_));
  reset_metrics();
  return detail::to_logs(detail::run_test_step(*this, batch));
}

Tensor Model::predict_on_batch(const Tensor& x) {
  check_single_output(*this);
  return detail::run_predict_step(*this, {x})[0];
}

}  // namespace ember
