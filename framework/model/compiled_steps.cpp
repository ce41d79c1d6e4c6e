// The steps fit, evaluate, predict and the *_on_batch calls run (Keras 3: make_train_function and friends in
// keras/src/backend/tensorflow/trainer.py): as traced functions unless compile asked to run eagerly, several
// in one function with compile's steps_per_execution, and the training step on the thread count that has been
// faster. The epoch loops are in fit.cpp.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/config.h"
#include "framework/core/cpu_policy.h"
#include "framework/core/parallel.h"
#include "framework/graph/function.h"
#include "framework/model/model.h"
#include "framework/model/trainer_state.h"
#include "optimizers/optimizer.h"

namespace ember {
namespace detail {

// The steps as traced functions (Keras: make_train_function and friends). The model is an argument, not a
// capture, so that a model moved after compile still finds its steps; the metric names a step returns are
// recorded while it is traced, one list per trace, and the step returns which (its last output).
struct CompiledSteps {
  // The last argument, the model's structure (structure_key), retraces a step after a layer is frozen or
  // unfrozen, added or removed.
  using Step = std::function<std::vector<Tensor>(Model&, const data::Element&, uint64_t)>;
  explicit CompiledSteps(bool jit_compile) : jit(jit_compile) {}
  const bool jit;  // compile's jit_compile, resolved
  std::vector<std::vector<std::string>> train_names, test_names;
  Function<Step> train{
      [this](Model& m, const data::Element& b, uint64_t) { return values(replica_train_step(m, b), train_names); },
      {.jit_compile = jit, .unknown_batch_dimension = true, .name = "train_step"}};
  Function<Step> test{
      [this](Model& m, const data::Element& b, uint64_t) { return values(replica_test_step(m, b), test_names); },
      {.jit_compile = jit, .unknown_batch_dimension = true, .name = "test_step"}};
  Function<Step> predict{[](Model& m, const data::Element& b, uint64_t) { return m.predict_step(b); },
                         {.jit_compile = jit, .unknown_batch_dimension = true, .name = "predict_step"}};

  // Several steps in one function (compile's steps_per_execution; Keras: multi_step_on_iterator): their
  // batches flattened into one list, and the number of steps, so that a shorter last group traces once more.
  using Steps = std::function<std::vector<Tensor>(Model&, const std::vector<Tensor>&, int64_t, uint64_t)>;
  Function<Steps> train_steps{[this](Model& m, const std::vector<Tensor>& flat, int64_t n, uint64_t) {
                                MetricResults results;
                                for (const data::Element& b : split(flat, n)) results = replica_train_step(m, b);
                                return values(results, train_names);
                              },
                              {.jit_compile = jit, .name = "train_steps"}};
  Function<Steps> test_steps{[this](Model& m, const std::vector<Tensor>& flat, int64_t n, uint64_t) {
                               MetricResults results;
                               for (const data::Element& b : split(flat, n)) results = replica_test_step(m, b);
                               return values(results, test_names);
                             },
                             {.jit_compile = jit, .name = "test_steps"}};
  // Every step's outputs, one after the other.
  Function<Steps> predict_steps{[](Model& m, const std::vector<Tensor>& flat, int64_t n, uint64_t) {
                                  std::vector<Tensor> out;
                                  for (const data::Element& b : split(flat, n)) {
                                    std::vector<Tensor> o = m.predict_step(b);
                                    out.insert(out.end(), o.begin(), o.end());
                                  }
                                  return out;
                                },
                                {.jit_compile = jit, .name = "predict_steps"}};

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

  // FNV-1a over the trainable variables' identities and every layer's uid and trainable flag: a step traced for
  // another structure (a layer frozen, one without weights added or popped) is not replayed.
  static uint64_t structure_key(const Model& m) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t x) {
      h ^= x;
      h *= 1099511628211ull;
    };
    for (const Variable& v : m.trainable_weights()) mix(reinterpret_cast<uintptr_t>(v.handle()));
    std::function<void(const Layer&)> layer = [&](const Layer& l) {
      mix(l.uid());
      mix(l.trainable() ? 1 : 2);
      for (const LayerPtr& s : l.sublayers()) layer(*s);
    };
    for (const LayerPtr& l : m.layers()) layer(*l);
    return h;
  }

  // A step's results as its outputs: the values, then (a constant) the index of their names in `names`.
  static std::vector<Tensor> values(const MetricResults& results, std::vector<std::vector<std::string>>& names) {
    std::vector<std::string> these;
    std::vector<Tensor> out;
    for (const auto& [name, value] : results) {
      these.push_back(name);
      out.push_back(value);
    }
    auto it = std::find(names.begin(), names.end(), these);
    if (it == names.end()) it = names.insert(names.end(), std::move(these));
    out.push_back(Tensor::scalar<int64_t>(it - names.begin(), Device::cpu()));  // read on the host
    return out;
  }
  static MetricResults named(const std::vector<std::vector<std::string>>& names, const std::vector<Tensor>& values) {
    const auto which = static_cast<size_t>(values.back().item<int64_t>());
    EMBER_CHECK(which < names.size() && names[which].size() + 1 == values.size(), Internal)
        << "a compiled step returned " << values.size() - 1 << " results without their names";
    MetricResults out;
    for (size_t i = 0; i + 1 < values.size(); ++i) out.emplace_back(names[which][i], values[i]);
    return out;
  }
  // Whether the batches hold as many tensors each (else a group of steps runs them one at a time: the steps'
  // function takes them flattened and cuts equal parts).
  static bool same_arity(const std::vector<data::Element>& batches) {
    return std::all_of(batches.begin(), batches.end(),
                       [&](const data::Element& b) { return b.size() == batches[0].size(); });
  }
  // The results of the batches' steps (the last's): `one` for a single batch or batches of different arities,
  // else `group` on them all.
  static MetricResults run(Function<Step>& one, Function<Steps>& group,
                           const std::vector<std::vector<std::string>>& names, Model& m,
                           const std::vector<data::Element>& batches, uint64_t key) {
    if (batches.size() > 1 && same_arity(batches))
      return named(names, group(m, flatten(batches), static_cast<int64_t>(batches.size()), key));
    MetricResults results;
    for (const data::Element& b : batches) results = named(names, one(m, b, key));
    return results;
  }
};

namespace {
CompiledSteps* compiled_steps(CompiledState* state) {
  if (!state || state->run_eagerly) return nullptr;
  if (!state->steps) state->steps = std::make_shared<CompiledSteps>(state->jit_compile);
  return state->steps.get();
}
}  // namespace

int steps_per_execution(const Model& model) { return model.compiled_ ? model.compiled_->steps_per_execution : 1; }

MetricResults run_test_steps(Model& model, const std::vector<data::Element>& batches) {
  CompiledSteps* steps = compiled_steps(model.compiled_.get());
  if (!steps) {
    MetricResults results;
    for (const data::Element& b : batches) results = replica_test_step(model, b);
    return results;
  }
  return CompiledSteps::run(steps->test, steps->test_steps, steps->test_names, model, batches,
                            CompiledSteps::structure_key(model));
}

MetricResults run_test_step(Model& model, const data::Element& batch) { return run_test_steps(model, {batch}); }

std::vector<std::vector<Tensor>> run_predict_steps(Model& model, const std::vector<data::Element>& batches) {
  CompiledSteps* steps = compiled_steps(model.compiled_.get());
  std::vector<std::vector<Tensor>> out;
  if (!steps || batches.size() == 1 || !CompiledSteps::same_arity(batches)) {
    const uint64_t key = steps ? CompiledSteps::structure_key(model) : 0;
    for (const data::Element& b : batches) out.push_back(steps ? steps->predict(model, b, key) : model.predict_step(b));
    return out;
  }
  const auto n = static_cast<int64_t>(batches.size());
  return CompiledSteps::split(
      steps->predict_steps(model, CompiledSteps::flatten(batches), n, CompiledSteps::structure_key(model)), n);
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
    for (const data::Element& b : batches) results = detail::replica_train_step(model, b);
    return results;
  }
  // Keras builds the model and its optimizer before tracing the first step (_symbolic_build): the trace then
  // reads the optimizer's state (the loss scale) from its variables.
  if (!model.built()) model.predict_step(batches[0]);
  if (!state->optimizer->built()) state->optimizer->build(model.trainable_weights());
  return detail::CompiledSteps::run(steps->train, steps->train_steps, steps->train_names, model, batches,
                                    detail::CompiledSteps::structure_key(model));
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

}  // namespace ember
