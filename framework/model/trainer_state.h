#pragma once
// What Model::compile sets up (internal to framework/model: trainer.cpp, compiled_steps.cpp and fit.cpp).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/mode_tuner.h"
#include "framework/distribute/strategy.h"
#include "framework/model/metrics/metrics.h"
#include "framework/model/trainer.h"
#include "losses/loss.h"
#include "optimizers/optimizer.h"

namespace ember {
class Model;
}

namespace ember::detail {

struct CompiledSteps;  // compiled_steps.cpp

struct CompiledState {
  std::shared_ptr<optimizers::Optimizer> optimizer;
  // compile wrapped the given optimizer in a LossScaleOptimizer; the compile config names the given one.
  bool auto_scaled = false;
  std::vector<std::shared_ptr<losses::Loss>> losses;  // one per output (null: that output has no loss)
  std::vector<double> loss_weights;                   // one per output
  std::vector<std::string> output_names;
  std::shared_ptr<metrics::Mean> loss_tracker;                        // "loss"
  std::vector<std::shared_ptr<metrics::Mean>> output_loss_trackers;   // "<output>_loss", several outputs only
  std::vector<std::vector<metrics::MetricPtr>> output_metrics;           // per output, unweighted
  std::vector<std::vector<metrics::MetricPtr>> output_weighted_metrics;  // per output, sample-weighted
  // compile's loss, loss_weights, metrics and weighted_metrics as Keras 3 serializes them (names stay
  // names), taken before compile renames the metric objects; the optimizer is serialized when asked.
  nlohmann::json compile_args;
  // Why the metrics of a compile config could not be matched to the outputs; thrown at the first step that
  // updates metrics, as Keras 3 does (set only by compile_from_config).
  std::string metrics_error;
  // The training step's thread count (detail::tuned_train_step), made at the first step.
  std::unique_ptr<ModeTuner> step_tuner;
  // compile's run_eagerly, and (otherwise) the steps as traced functions, made at the first step.
  bool run_eagerly = false;
  bool jit_compile = false;  // compile's jit_compile, "auto" resolved
  std::shared_ptr<CompiledSteps> steps;
  // compile's steps_per_execution (at least 1).
  int steps_per_execution = 1;
  // The strategy whose scope compile ran in (Keras: model.distribute_strategy): fit and evaluate then split
  // each batch across its replicas, all-reduce the gradients and average the metrics.
  std::optional<distribute::Strategy> strategy;
  // The strategy's replicas in this process after the first (MirroredStrategy's): a copy of the model on each
  // one's device, compiled with this state's losses and metrics, made at the first step that needs them.
  std::vector<std::shared_ptr<Model>> replicas;
  // The parts that the replicas before the last handed to the default train_step in fit's replica contexts: the
  // last replica's call trains on them all.
  std::vector<data::Element> replica_parts;
};

// The compile_args above for these options (framework/io/compile_config.cpp).
nlohmann::json compile_args_config(const CompileOptions& options);

}  // namespace ember::detail
