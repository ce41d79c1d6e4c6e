#pragma once
// Internal to framework/model (fit.cpp): where fit/evaluate/predict get their batches from (Keras 3: data
// adapters and the EpochIterator), and the small helpers the loops share.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/distribute/strategy.h"
#include "framework/model/callbacks/callback.h"
#include "framework/model/model.h"

namespace ember::detail {

// One pass's worth of batches from some data (Keras 3: a data adapter).
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Batches in one pass; -1 when unknown.
  virtual int64_t num_batches() const = 0;
  // Starts a new pass (reshuffling when asked).
  virtual void reset() = 0;
  virtual std::optional<data::Element> next() = 0;
  // The data's position between passes (data::Dataset::get_state); tensors have none of their own (their
  // shuffling draws from the global generator).
  virtual std::vector<uint64_t> get_state() const { return {}; }
  virtual void set_state(const std::vector<uint64_t>& state) {}
};


// across epochs and restarts once the source's batches are used up.
class EpochIterator {
 public:
  EpochIterator(std::unique_ptr<BatchSource> source, std::optional<int64_t> steps_per_epoch)
      : source_(std::move(source)), steps_per_epoch_(steps_per_epoch) {
    EMBER_CHECK(!steps_per_epoch_ || *steps_per_epoch_ > 0, InvalidArgument)
        << "steps must be positive, got " << steps_per_epoch_.value_or(0);
  }
  // Steps in an epoch, -1 when unknown.
  int64_t steps() const { return steps_per_epoch_ ? *steps_per_epoch_ : source_->num_batches(); }
  std::vector<uint64_t> get_state() const { return source_->get_state(); }
  void set_state(const std::vector<uint64_t>& state) { source_->set_state(state); }
  void begin_epoch() {
    if (!active_ || !steps_per_epoch_) {
      source_->reset();
      active_ = true;
      seen_ = 0;
    }
    step_ = 0;
  }
  std::optional<data::Element> next() {
    if (steps_per_epoch_ && step_ >= *steps_per_epoch_) return std::nullopt;
    const int64_t num = source_->num_batches();
    std::optional<data::Element> batch;
    if (num < 0 || seen_ < num) batch = source_->next();
    if (!batch) {
      if (steps_per_epoch_ && !warned_) {
        logging::warn(
            "Your input ran out of data; interrupting training. Make sure that your dataset or generator can generate "
            "at least `steps_per_epoch * epochs` batches. You may need to use the `.repeat()` function when building "
            "your dataset.");
        warned_ = true;
      }
      active_ = false;
      return std::nullopt;
    }
    ++seen_;
    ++step_;
    // Batches come from the CPU input pipeline; the step runs where ops run (a GPU when there is one).
    const Device device = default_device();
    for (Tensor& t : *batch)
      if (t.defined() && t.device() != device) t = t.to(device);
    if (num >= 0 && seen_ >= num && steps_per_epoch_) active_ = false;  // the next epoch starts a new pass
    return batch;
  }

 private:
  std::unique_ptr<BatchSource> source_;
  std::optional<int64_t> steps_per_epoch_;
  bool active_ = false, warned_ = false;
  int64_t seen_ = 0, step_ = 0;
};

// Tensors {x..., y..., [sample_weight]} batched along axis 0 (checked: one array per model input and
// output, the same number of samples in each). Without a batch_size, `steps` batches cover the samples
// (Keras: ceil(samples / steps) a batch), else 32 a batch. `who` names the caller.
std::unique_ptr<BatchSource> tensor_source(const Model& model, const char* who, std::vector<Tensor> x,
                                           std::vector<Tensor> y, const Tensor& sample_weight,
                                           std::optional<int64_t> batch_size, std::optional<int64_t> steps,
                                           bool shuffle);
// A dataset's elements as batches (batch_size must be unset: the dataset is batched already).
std::unique_ptr<BatchSource> dataset_source(const Model& model, const char* who, const data::Dataset& ds,
                                            std::optional<int64_t> batch_size);
// fit's validation_data as batches: tensors by validation_batch_size, else fit_batch_size, else
// validation_steps; a dataset as it is (validation_batch_size must then be unset).
std::unique_ptr<BatchSource> validation_source(const Model& model, const ValidationData& v,
                                               std::optional<int64_t> validation_batch_size,
                                               std::optional<int64_t> fit_batch_size,
                                               std::optional<int64_t> validation_steps);
// Each batch's rows of this worker of `strategy`, as Strategy::replica_batches gives them (the source itself with
// one replica); `who` names the caller.
std::unique_ptr<BatchSource> replica_batches(std::unique_ptr<BatchSource> source, const distribute::Strategy& strategy,
                                             std::string who);
// Appends each batch's class weights as its sample weight.
std::unique_ptr<BatchSource> with_class_weights(std::unique_ptr<BatchSource> source, const Model& model,
                                                std::map<int64_t, double> class_weight);
// Keras 3 class_weight_to_sample_weights.
Tensor class_weights_for(const Tensor& y, const std::map<int64_t, double>& class_weight);
// Samples along axis 0 (1 for a scalar).
int64_t first_dim(const Tensor& t);
// Checks that every tensor has the same number of samples (InvalidArgument naming both otherwise).
void check_samples(const std::string& who, const std::vector<Tensor>& tensors, const std::vector<std::string>& roles);
// "x", "y", "x[1]", ..., "sample_weight": the names check_samples uses.
std::vector<std::string> roles_of(size_t n_x, size_t n_y, bool sw);
// Host values of the metric results, in order.
Logs to_logs(const MetricResults& results);
// The callbacks of one fit/evaluate/predict call in Keras 3's order.
callbacks::CallbackList make_callbacks(const std::vector<callbacks::CallbackArg>& args, int verbose,
                                       std::shared_ptr<History> history);

}  // namespace ember::detail
