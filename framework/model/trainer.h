#pragma once
// The options of Model::compile, fit, evaluate and predict (Keras: Model.compile / fit / evaluate /
// predict keyword arguments), as aggregates for designated initializers.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "data/dataset.h"
#include "framework/core/tensor.h"
#include "framework/model/callbacks/callback.h"

namespace ember {
namespace losses {
class Loss;
}
namespace optimizers {
class Optimizer;
}
namespace metrics {
class Metric;
}

// compile's optimizer: an optimizer temporary (moved in), a shared one, or a Keras name ("adam").
struct OptimizerArg {
  OptimizerArg() = default;
  template <class O>
    requires std::is_base_of_v<optimizers::Optimizer, std::remove_cvref_t<O>> && (!std::is_lvalue_reference_v<O>)
  OptimizerArg(O&& optimizer) : ptr(std::move(optimizer).move_to_shared()) {}
  template <class O>
    requires std::is_base_of_v<optimizers::Optimizer, O>
  OptimizerArg(std::shared_ptr<O> optimizer) : ptr(std::move(optimizer)) {}
  OptimizerArg(const char* name) : name(name) {}
  OptimizerArg(std::string name) : name(std::move(name)) {}
  std::shared_ptr<optimizers::Optimizer> ptr;
  std::string name;  // used when ptr is null; empty: "rmsprop", Keras's default
};

// One loss: a loss object (copied), a shared one, or a Keras name ("mse", "sparse_categorical_crossentropy").
struct LossArg {
  template <class L>
    requires std::is_base_of_v<losses::Loss, std::remove_cvref_t<L>>
  LossArg(const L& loss) : ptr(loss.clone()) {}
  template <class L>
    requires std::is_base_of_v<losses::Loss, L>
  LossArg(std::shared_ptr<L> loss) : ptr(std::move(loss)) {}
  LossArg(const char* name) : name(name) {}
  LossArg(std::string name) : name(std::move(name)) {}
  std::shared_ptr<losses::Loss> ptr;
  std::string name;
};

// compile's loss: one for every output, or a braced list with one per output ({"mse", "mae"}).
struct LossSpec {
  LossSpec() = default;
  template <class L>
    requires std::is_constructible_v<LossArg, L&&>
  LossSpec(L&& loss) : per_output{LossArg(std::forward<L>(loss))} {}
  LossSpec(std::initializer_list<LossArg> losses) : per_output(losses), is_list(true) {}
  std::vector<LossArg> per_output;
  bool is_list = false;
};

// One metric: a Keras name ("accuracy", "mae", "auc", ...) or a metric object (moved in, or shared).
struct MetricArg {
  template <class M>
    requires std::is_base_of_v<metrics::Metric, std::remove_cvref_t<M>> && (!std::is_lvalue_reference_v<M>)
  MetricArg(M&& metric) : ptr(std::make_shared<std::remove_cvref_t<M>>(std::move(metric))) {}
  template <class M>
    requires std::is_base_of_v<metrics::Metric, M>
  MetricArg(std::shared_ptr<M> metric) : ptr(std::move(metric)) {}
  MetricArg(const char* name) : name(name) {}
  MetricArg(std::string name) : name(std::move(name)) {}
  std::shared_ptr<metrics::Metric> ptr;
  std::string name;
};

// One entry of compile's metrics: one metric, or a braced list of them ({} or {"mae", "mse"}).
struct MetricList {
  MetricList() = default;
  template <class M>
    requires std::is_constructible_v<MetricArg, M&&>
  MetricList(M&& metric) : metrics{MetricArg(std::forward<M>(metric))}, is_list(false) {}
  MetricList(std::initializer_list<MetricArg> metrics) : metrics(metrics) {}
  MetricList(std::vector<MetricArg> metrics) : metrics(std::move(metrics)) {}
  std::vector<MetricArg> metrics;
  bool is_list = true;  // given as a list (how the compile config writes it)
};

// compile's metrics by output name (Keras: metrics={"cls": ["accuracy"], "reg": "mae"}); outputs not
// named get none.
using MetricsByOutput = std::map<std::string, MetricList>;

// compile's metrics, as Keras 3.15's CompileMetrics reads them:
// - a model with one output takes every metric given, whatever the nesting: {"accuracy", "mae"};
// - a model with several outputs takes a list with exactly one entry per output, in output order, each
//   entry a metric or a list of them ({{}, {"accuracy"}}: none for the first output), or a
//   MetricsByOutput map. A flat list is such a list too: {"mae", "accuracy"} on two outputs gives the
//   first output mae and the second accuracy; a list of any other length (even {"accuracy"} meant for
//   every output, which tf-keras took) is an InvalidArgument, where Keras 3.15 raises a ValueError.
// Logged as "<metric>" with one output and "<output>_<metric>" with several (Keras 3's names).
struct MetricsSpec {
  MetricsSpec() = default;
  MetricsSpec(std::initializer_list<MetricList> entries) : entries(entries) {}
  MetricsSpec(const std::vector<MetricArg>& metrics) : entries(metrics.begin(), metrics.end()) {}
  MetricsSpec(std::vector<MetricList> entries) : entries(std::move(entries)) {}
  MetricsSpec(MetricsByOutput by_output) : by_output(std::move(by_output)), is_map(true) {}
  bool empty() const { return is_map ? by_output.empty() : entries.empty(); }
  std::vector<MetricList> entries;  // the list form
  MetricsByOutput by_output;        // the map form
  bool is_map = false;
};

// compile's jit_compile, as Keras spells it: true, false or "auto" (the default). "auto" resolves to false, as
// Keras resolves it on a machine without an accelerator (Ember's fused kernels are the CPU's).
struct JitCompile {
  JitCompile(bool on) : value(on) {}
  JitCompile(const char* name) : name(name) {}
  JitCompile(std::string name) : name(std::move(name)) {}
  std::optional<bool> value{};  // set: given as a bool
  std::string name;             // otherwise: "auto" (anything else is an InvalidArgument at compile)
};

struct CompileOptions {
  OptimizerArg optimizer = "rmsprop";
  LossSpec loss{};
  // See MetricsSpec for how they are matched to outputs; they ignore sample weights (and class weights),
  // as Keras's `metrics` do.
  MetricsSpec metrics{};
  // Like metrics, but weighted by the sample weights; a name already taken becomes "weighted_<name>".
  MetricsSpec weighted_metrics{};
  // One per output (one loss per output), or one for the one loss given for every output (Keras 3); the
  // total loss is the weighted sum of the outputs' losses. Empty: all 1.
  std::vector<double> loss_weights{};
  // Under the "mixed_float16" policy, wrap the optimizer in a LossScaleOptimizer (Keras 3 does; never
  // under bfloat16, whose range needs no scaling).
  bool auto_scale_loss = true;
  // Fuse the traced steps' elementwise chains into one pass over the data each (Keras: XLA), with the unfused
  // ops' bits. "auto" and false run the traced graph as it is.
  JitCompile jit_compile = "auto";
  // Run train_step, test_step and predict_step eagerly, op by op (to debug them). false: fit, evaluate and
  // predict run each as an ember::function, traced once with the batch dimension unknown and then replayed, as
  // Keras on TensorFlow runs them as tf.functions; a model's own train_step override is traced too.
  bool run_eagerly = false;
  // Batches per execution (Keras 3): fit, evaluate and predict run this many steps in one call of one traced
  // function, and call the batch hooks of the callbacks once per call: on_*_batch_begin with the first
  // step's index, on_*_batch_end with the last one's and the metrics after it. An epoch's last call runs
  // the steps left. The steps, and so the History and the weights, are those of 1. With run_eagerly the
  // steps run one by one, the hooks grouped the same way. Must be at least 1.
  int steps_per_execution = 1;
};

// fit's validation data: a dataset, or tensors {x, y} / {x, y, sample_weight} (one input and output).
struct ValidationData {
  ValidationData() = default;
  ValidationData(data::Dataset dataset) : dataset(std::move(dataset)) {}
  ValidationData(std::initializer_list<Tensor> tensors) : tensors(tensors) {}
  ValidationData(std::vector<Tensor> tensors) : tensors(std::move(tensors)) {}
  bool empty() const { return !dataset && tensors.empty(); }
  std::optional<data::Dataset> dataset;
  std::vector<Tensor> tensors;
};

struct FitOptions {
  std::optional<int64_t> batch_size{};  // tensors: default 32 (ceil(samples / steps_per_epoch) with those); a
                                      // dataset is already batched
  int epochs = 1;
  int verbose = 1;  // 0 silent, 1 progress bar, 2 one line per epoch
  std::vector<callbacks::CallbackArg> callbacks{};
  double validation_split = 0.0;  // the last fraction of the tensors, taken before shuffling, unless
                                  // validation_data is given
  ValidationData validation_data{};
  bool shuffle = true;  // tensors only: a new order each epoch
  std::map<int64_t, double> class_weight{};
  Tensor sample_weight{};  // tensors only: one weight per sample
  int initial_epoch = 0;
  std::optional<int64_t> steps_per_epoch{};
  std::optional<int64_t> validation_steps{};
  std::optional<int64_t> validation_batch_size{};
  int validation_freq = 1;
};

struct EvaluateOptions {
  std::optional<int64_t> batch_size{};  // tensors: default 32 (ceil(samples / steps) with steps)
  int verbose = 1;
  Tensor sample_weight{};
  std::optional<int64_t> steps{};
  std::vector<callbacks::CallbackArg> callbacks{};
};

struct PredictOptions {
  std::optional<int64_t> batch_size{};  // tensors: default 32 (ceil(samples / steps) with steps)
  int verbose = 1;
  std::optional<int64_t> steps{};
  std::vector<callbacks::CallbackArg> callbacks{};
};

// train_on_batch / test_on_batch options.
struct OnBatchOptions {
  Tensor sample_weight{};
  std::map<int64_t, double> class_weight{};
};

}  // namespace ember
