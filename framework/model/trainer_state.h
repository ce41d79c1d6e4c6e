#pragma once
// What Model::compile sets up (internal to framework/model: trainer.cpp and fit.cpp).
#include <memory>
#include <string>
#include <vector>

#include "framework/model/metrics/metrics.h"
#include "losses/loss.h"
#include "optimizers/optimizer.h"

namespace ember::detail {

struct CompiledState {
  std::shared_ptr<optimizers::Optimizer> optimizer;
  std::vector<std::shared_ptr<losses::Loss>> losses;  // one per output (null: that output has no loss)
  std::vector<double> loss_weights;                   // one per output
  std::vector<std::string> output_names;
  std::shared_ptr<metrics::Mean> loss_tracker;                        // "loss"
  std::vector<std::shared_ptr<metrics::Mean>> output_loss_trackers;   // "<output>_loss", several outputs only
  std::vector<std::vector<metrics::MetricPtr>> output_metrics;           // per output, unweighted
  std::vector<std::vector<metrics::MetricPtr>> output_weighted_metrics;  // per output, sample-weighted
};

}  // namespace ember::detail
