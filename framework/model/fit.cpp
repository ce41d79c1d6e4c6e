// The epoch loops of Model::fit / evaluate / predict and the *_on_batch calls (Keras 3:
// keras/src/backend/tensorflow/trainer.py): validation, class weights and the callbacks' hooks. The
// batches come from batch_source.h.
#include <cmath>
#include <optional>

#include "framework/core/config.h"
#include "framework/core/cpu_policy.h"
#include "framework/core/error.h"
#include "framework/core/parallel.h"
#include "framework/graph/function.h"
#include "framework/model/batch_source.h"
#include "framework/model/model.h"
#include "framework/model/trainer_state.h"
#include "framework/ops/array.h"
#include "optimizers/optimizer.h"

namespace ember {

using detail::BatchSource;
using detail::EpochIterator;

namespace detail {

// The steps as traced functions (Keras: make_train_function and friends). The model is an argument, not a
// capture, so that a model moved after compile still finds its steps; the metric names a step returns are
// recorded while it is traced.
struct CompiledSteps {
  // The last argument, which weights are trainable, retraces a step after a layer is frozen or unfrozen.
  using Step = std::function<std::vector<Tensor>(Model&, const data::Element&, uint64_t)>;
  std::vector<std::string> train_names, test_names;
  Function<Step> train{
      [this](Model& m, const data::Element& b, uint64_t) { return values(m.train_step(b), train_names); },
      {.name = "train_step"}};
  Function<Step> test{
      [this](Model& m, const data::Element& b, uint64_t) { return values(m.test_step(b), test_names); },
      {.name = "test_step"}};
  Function<Step> predict{[](Model& m, const data::Element& b, uint64_t) { return m.predict_step(b); },
                         {.name = "predict_step"}};

  // Several steps in one function (compile's steps_per_execution; Keras: multi_step_on_iterator): their
  // batches flattened into one list, and the number of steps, so that a shorter last group traces once more.
  using Steps = std::function<std::vector<Tensor>(Model&, const std::vector<Tensor>&, int64_t, uint64_t)>;
  Function<Steps> train_steps{[this](Model& m, const std::vector<Tensor>& flat, int64_t n, uint64_t) {
                                MetricResults results;
                                for (const data::Element& b : split(flat, n)) results = m.train_step(b);
                                return values(results, train_names);
                              },
                              {.name = "train_steps"}};
  Function<Steps> test_steps{[this](Model& m, const std::vector<Tensor>& flat, int64_t n, uint64_t) {
                               MetricResults results;
                               for (const data::Element& b : split(flat, n)) results = m.test_step(b);
                               return values(results, test_names);
                             },
                             {.name = "test_steps"}};
  // Every step's outputs, one after the other.
  Function<Steps> predict_steps{[](Model& m, const std::vector<Tensor>& flat, int64_t n, uint64_t) {
                                  std::vector<Tensor> out;
                                  for (const data::Element& b : split(flat, n)) {
                                    std::vector<Tensor> o = m.predict_step(b);
                                    out.insert(out.end(), o.begin(), o.end());
                                  }
                                  return out;
                                },
                                {.name = "predict_steps"}};

  static std::vector<Tensor> flatten(const std::vector<data::Element>& batches) {
    std::vector<Tensor> flat;
    for (const data::Element& b : batches) flat.insert(flat.end(), b.begin(), b.end());
    return flat;
  }
  // `flat` cut into n equal parts (n batches, or n steps' outputs).
  static std::vector<std::vector<Tensor>> split(const std::vector<Tensor>& flat, int64_t n) {
    const auto k = static_cast<std::ptrdiff_t>(flat.size() / static_cast<size_t>(n));
    std::vector<std::vector<Tensor>> parts;
    for (int64_t i = 0; i < n; ++i) parts.emplace_back(flat.begin() + i * k, flat.begin() + (i + 1) * k);
    return parts;
  }

  static uint64_t trainable_key(const Model& m) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the trainable variables' identities
    for (const Variable& v : m.trainable_weights()) {
      h ^= reinterpret_cast<uintptr_t>(v.handle());
      h *= 1099511628211ull;
    }
    return h;
  }

  static std::vector<Tensor> values(const MetricResults& results, std::vector<std::string>& names) {
    names.clear();
    std::vector<Tensor> out;
    for (const auto& [name, value] : results) {
      names.push_back(name);
      out.push_back(value);
    }
    return out;
  }
  static MetricResults named(const std::vector<std::string>& names, const std::vector<Tensor>& values) {
    MetricResults out;
    for (size_t i = 0; i < values.size(); ++i) out.emplace_back(names[i], values[i]);
    return out;
  }
};

namespace {
CompiledSteps* compiled_steps(CompiledState* state) {
  if (!state || state->run_eagerly) return nullptr;
  if (!state->steps) state->steps = std::make_shared<CompiledSteps>();
  return state->steps.get();
}
}  // namespace

int steps_per_execution(const Model& model) { return model.compiled_ ? model.compiled_->steps_per_execution : 1; }

MetricResults run_test_steps(Model& model, const std::vector<data::Element>& batches) {
  CompiledSteps* steps = compiled_steps(model.compiled_.get());
  if (!steps) {
    MetricResults results;
    for (const data::Element& b : batches) results = model.test_step(b);
    return results;
  }
  const uint64_t key = CompiledSteps::trainable_key(model);
  std::vector<Tensor> values =
      batches.size() == 1
          ? steps->test(model, batches[0], key)
          : steps->test_steps(model, CompiledSteps::flatten(batches), static_cast<int64_t>(batches.size()), key);
  return CompiledSteps::named(steps->test_names, values);
}

MetricResults run_test_step(Model& model, const data::Element& batch) { return run_test_steps(model, {batch}); }

std::vector<std::vector<Tensor>> run_predict_steps(Model& model, const std::vector<data::Element>& batches) {
  CompiledSteps* steps = compiled_steps(model.compiled_.get());
  std::vector<std::vector<Tensor>> out;
  if (!steps || batches.size() == 1) {
    const uint64_t key = steps ? CompiledSteps::trainable_key(model) : 0;
    for (const data::Element& b : batches) out.push_back(steps ? steps->predict(model, b, key) : model.predict_step(b));
    return out;
  }
  const auto n = static_cast<int64_t>(batches.size());
  return CompiledSteps::split(
      steps->predict_steps(model, CompiledSteps::flatten(batches), n, CompiledSteps::trainable_key(model)), n);
}

std::vector<Tensor> run_predict_step(Model& model, const data::Element& batch) {
  return run_predict_steps(model, {batch})[0];
}

std::vector<std::shared_ptr<ConcreteFunction>> traced_train_functions(const Model& model) {
  const CompiledState* state = model.compiled_.get();
  if (!state || state->run_eagerly || !state->steps) return {};
  // With steps_per_execution, the function that runs a full group of steps first.
  std::vector<std::shared_ptr<ConcreteFunction>> out = state->steps->train_steps.concrete_functions();
  for (auto& cf : state->steps->train.concrete_functions()) out.push_back(std::move(cf));
  return out;
}

}  // namespace detail

namespace {
MetricResults train_steps_once(Model& model, const std::vector<data::Element>& batches, detail::CompiledState* state) {
  detail::CompiledSteps* steps = detail::compiled_steps(state);
  if (!steps) {
    MetricResults results;
    for (const data::Element& b : batches) results = model.train_step(b);
    return results;
  }
  // Keras builds the model and its optimizer before tracing the first step (_symbolic_build): the trace then
  // reads the optimizer's state (the loss scale) from its variables.
  if (!model.built()) model.predict_step(batches[0]);
  if (!state->optimizer->built()) state->optimizer->build(model.trainable_weights());
  const uint64_t key = detail::CompiledSteps::trainable_key(model);
  std::vector<Tensor> values =
      batches.size() == 1 ? steps->train(model, batches[0], key)
                          : steps->train_steps(model, detail::CompiledSteps::flatten(batches),
                                               static_cast<int64_t>(batches.size()), key);
  return detail::CompiledSteps::named(steps->train_names, values);
}
}  // namespace

// The training step's thread count is chosen by timing the steps (framework/core/mode_tuner.h): mode false
// runs them on the pool, mode true on the training thread alone. There parallel_for runs its chunks in turn
// (ScopedThreadLimit: the same split, so the same bits), and oneDNN and Eigen run on this thread too, so that
// no pool worker spins on a core that another process needs (on a machine busy with other work, a step on
// the pool waits at every parallel region for a worker the scheduler has set aside). Their own split then
// follows one thread, which can change the last bits of their larger products; under op determinism they
// keep the pool, and its bits. The tuner's settings, and why, are the CPU policy's
// (framework/core/cpu_policy.h).
// With steps_per_execution, a cycle is one execution, all its steps.
MetricResults detail::tuned_train_steps(Model& model, const std::vector<data::Element>& batches, bool start_cycle) {
  if (intra_op_threads() < 2) return train_steps_once(model, batches, model.compiled_.get());
  CompiledState& state = *model.compiled_;
  if (!state.step_tuner)
    state.step_tuner = std::make_unique<ModeTuner>(kCpuPolicy.step_threads.tuner, nullptr);
  ModeTuner& tuner = *state.step_tuner;
  if (start_cycle) tuner.start_cycle();
  MetricResults results;
  {
    const bool one_thread = tuner.mode();
    ScopedThreadLimit limit(one_thread ? 1 : 0);
    std::optional<ScopedOpenMPThreads> libraries;
    if (one_thread && !config::is_op_determinism_enabled()) libraries.emplace(1);
    results = train_steps_once(model, batches, &state);
  }
  tuner.cycle_done();
  return results;
}

MetricResults detail::tuned_train_step(Model& model, const data::Element& batch, bool start_cycle) {
  return tuned_train_steps(model, {batch}, start_cycle);
}

namespace {

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
Logs run_test(Model& model, EpochIterator& it, callbacks::CallbackList& cbs) {
  model.reset_metrics();
  cbs.on_test_begin();
  it.begin_epoch();
  // The batch hooks, and each batch's logs, only for callbacks that use them (Keras's CallbackList).
  const bool batch_hooks = cbs.implements_test_batch_hooks();
  const int per_execution = detail::steps_per_execution(model);
  MetricResults results;
  int64_t step = 0;
  for (auto batches = next_execution(it, per_execution); !batches.empty();
       batches = next_execution(it, per_execution)) {
    const auto n = static_cast<int64_t>(batches.size());
    if (batch_hooks) cbs.on_test_batch_begin(step);
    results = detail::run_test_steps(model, batches);
    if (batch_hooks) cbs.on_test_batch_end(step + n - 1, detail::to_logs(results));
    step += n;
  }
  Logs logs = detail::to_logs(results.empty() ? model.get_metrics_result() : results);
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

History run_fit(Model& model, FitData data, const FitOptions& options) {
  const std::string who = "Model '" + model.name() + "'.fit";
  EMBER_CHECK(model.compiled(), InvalidArgument) << who << ": call compile() before fit()";
  EMBER_CHECK(options.epochs >= 0 && options.initial_epoch >= 0, InvalidArgument)
      << who << ": epochs and initial_epoch must not be negative, got " << options.epochs << " and "
      << options.initial_epoch;
  EMBER_CHECK(options.validation_freq > 0, InvalidArgument)
      << who << ": validation_freq must be positive, got " << options.validation_freq;
  if (!options.class_weight.empty())
    data.train = detail::with_class_weights(std::move(data.train), model, options.class_weight);
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
  Logs training_logs;
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
      if (!model.built()) model.predict_step(batches[0]);
      if (batch_hooks) cbs.on_train_batch_begin(step);
      results = detail::tuned_train_steps(model, batches, step == 0);
      if (batch_hooks) cbs.on_train_batch_end(step + n - 1, detail::to_logs(results));
      step += n;
      if (model.stop_training) break;
    }
    EMBER_CHECK(step > 0 || epoch > initial_epoch, InvalidArgument)
        << who << ": the training data gave no batch; give at least one sample (or a dataset with elements)";
    Logs epoch_logs = detail::to_logs(results.empty() ? model.get_metrics_result() : results);
    if (validation && (epoch + 1) % options.validation_freq == 0) {
      Logs val_logs = run_test(model, *validation, cbs);
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
  return run_fit(*this, std::move(data), options);
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
  return run_fit(*this, std::move(data), options);
}

namespace {

Logs run_evaluate(Model& model, std::unique_ptr<BatchSource> source, const EvaluateOptions& options) {
  EMBER_CHECK(model.compiled(), InvalidArgument) << "Model '" << model.name() << "'.evaluate: call compile() first";
  EpochIterator it(std::move(source), options.steps);
  callbacks::CallbackList cbs = detail::make_callbacks(options.callbacks, options.verbose, nullptr);
  cbs.set_model(&model);
  cbs.set_params({.verbose = options.verbose, .epochs = 1, .steps = it.steps()});
  return run_test(model, it, cbs);
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
  for (auto batches = next_execution(it, per_execution); !batches.empty(); batches = next_execution(it, per_execution)) {
    const auto n = static_cast<int64_t>(batches.size());
    cbs.on_predict_batch_begin(step);
    for (const std::vector<Tensor>& out : detail::run_predict_steps(model, batches)) {
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
                      options);
}

Logs Model::evaluate(const data::Dataset& dataset, EvaluateOptions options) {
  EMBER_CHECK(!options.sample_weight.defined(), InvalidArgument)
      << "Model '" << name() << "'.evaluate: sample_weight needs tensors; with a dataset, make each element (x, y, sample_weight)";
  return run_evaluate(*this, detail::dataset_source(*this, "evaluate", dataset, options.batch_size), options);
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
                               const std::vector<Tensor>& y, const OnBatchOptions& options) {
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
  return batch;
}

}  // namespace

Logs Model::train_on_batch(const Tensor& x, const Tensor& y, OnBatchOptions options) {
  return train_on_batch(std::vector<Tensor>{x}, std::vector<Tensor>{y}, std::move(options));
}

Logs Model::train_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y, OnBatchOptions options) {
  data::Element batch = on_batch_element(*this, "train_on_batch", x, y, options);
  reset_metrics();
  return detail::to_logs(detail::tuned_train_step(*this, batch));
}

Logs Model::test_on_batch(const Tensor& x, const Tensor& y, OnBatchOptions options) {
  return test_on_batch(std::vector<Tensor>{x}, std::vector<Tensor>{y}, std::move(options));
}

Logs Model::test_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y, OnBatchOptions options) {
  data::Element batch = on_batch_element(*this, "test_on_batch", x, y, options);
  reset_metrics();
  return detail::to_logs(detail::run_test_step(*this, batch));
}

Tensor Model::predict_on_batch(const Tensor& x) {
  check_single_output(*this);
  return detail::run_predict_step(*this, {x})[0];
}

}  // namespace ember
