#pragma once
// ModelCheckpoint (Keras 3: keras/src/callbacks/model_checkpoint.py): saves the model or its weights after
// every epoch or every N batches, optionally only when the monitored quantity improved, to a path
// formatted from the epoch and the logs ("ckpt-{epoch:02d}-{val_loss:.2f}.weights.h5").
#include <cstdint>
#include <optional>
#include <string>

#include "framework/model/callbacks/monitor_callback.h"

namespace ember::callbacks {

// When a checkpointing callback saves: "epoch" (after every epoch) or a number of batches.
struct SaveFreq {
  SaveFreq(const char* when);  // "epoch"; anything else is InvalidArgument
  SaveFreq(const std::string& when) : SaveFreq(when.c_str()) {}
  SaveFreq(int64_t batches);   // must be > 0
  SaveFreq(int batches) : SaveFreq(static_cast<int64_t>(batches)) {}
  bool per_epoch() const { return batches_ == 0; }
  int64_t batches() const { return batches_; }

 private:
  int64_t batches_ = 0;
};

// Counts batches across epochs the way Keras's checkpoint callbacks do (steps_per_execution aware): true
// once `freq` batches have passed since the last save.
class BatchSaveCounter {
 public:
  bool should_save(int64_t batch, const SaveFreq& freq);
  void new_epoch() { last_batch_seen_.reset(); }

 private:
  int64_t since_last_save_ = 0;
  std::optional<int64_t> last_batch_seen_;
};

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  int verbose = 0;              // 1: print a message on each save / non-improvement
  bool save_best_only = false;  // save only when the monitored quantity improved
  // true: model.save_weights (filepath must end in ".weights.h5"); false: model.save (".keras" or ".h5").
  bool save_weights_only = false;
  std::string mode = "auto";    // "auto", "min" or "max" (see MonitorCallback)
  SaveFreq save_freq = "epoch";
  std::optional<double> initial_value_threshold{};  // with save_best_only: the value to beat first
};

class ModelCheckpoint : public MonitorCallback {
  EMBER_CALLBACK(ModelCheckpoint)
 public:
  // filepath: a Python format string over "epoch" (1-based), "batch" (1-based, when saving per batch)
  // and the log keys. A wrong extension for save_weights_only is InvalidArgument, as in Keras.
  explicit ModelCheckpoint(std::string filepath, ModelCheckpointOptions options = {});

  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;

  // The path a save at this point would write (Keras: _get_file_path); batch < 0 for an epoch-end save.
  std::string file_path(int epoch, int64_t batch, const Logs& logs) const;
  const std::string& filepath() const { return filepath_; }
  const ModelCheckpointOptions& options() const { return options_; }

 private:
  void save_model(int epoch, int64_t batch, const Logs& logs);
  bool should_save_model(int epoch, const Logs& logs, const std::string& path);

  std::string filepath_;
  ModelCheckpointOptions options_;
  int current_epoch_ = 0;
  BatchSaveCounter counter_;
};

}  // namespace ember::callbacks
