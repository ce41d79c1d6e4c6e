#include "framework/model/callbacks/model_checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/core/python_format.h"
#include "framework/distribute/worker_files.h"
#include "framework/model/model.h"

namespace ember::callbacks {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string format_5f(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.5f", v);
  return buf;
}
}  // namespace

SaveFreq::SaveFreq(const char* when) {
  EMBER_CHECK(std::string(when) == "epoch", InvalidArgument)
      << "Unrecognized save_freq: " << when << ". Expected save_freq are 'epoch' or integer values";
}

SaveFreq::SaveFreq(int64_t batches) : batches_(batches) {
  EMBER_CHECK(batches > 0, InvalidArgument)
      << "Unrecognized save_freq: " << batches << ". Expected save_freq are 'epoch' or a positive number of batches";
}

bool BatchSaveCounter::should_save(int64_t batch, const SaveFreq& freq) {
  if (freq.per_epoch()) return false;
  // A batch index that does not grow means a new epoch started.
  const int64_t add = !last_batch_seen_ || batch <= *last_batch_seen_ ? batch + 1 : batch - *last_batch_seen_;
  since_last_save_ += add;
  last_batch_seen_ = batch;
  if (since_last_save_ < freq.batches()) return false;
  since_last_save_ = 0;
  return true;
}

ModelCheckpoint::ModelCheckpoint(std::string filepath, ModelCheckpointOptions options)
    : MonitorCallback("ModelCheckpoint", options.monitor, options.mode, options.initial_value_threshold, 0),
      filepath_(std::move(filepath)), options_(std::move(options)) {
  if (options_.save_weights_only) {
    EMBER_CHECK(ends_with(filepath_, ".weights.h5"), InvalidArgument)
        << "When using `save_weights_only = true` in `ModelCheckpoint`, the filepath provided must end in "
           "`.weights.h5` (Keras weights format). Received: filepath="
        << filepath_;
  } else {
    EMBER_CHECK(ends_with(filepath_, ".keras") || ends_with(filepath_, ".h5"), InvalidArgument)
        << "The filepath provided must end in `.keras` (Keras model format) or `.h5` (legacy HDF5). Received: "
           "filepath="
        << filepath_;
  }
}

void ModelCheckpoint::on_epoch_begin(int epoch, const Logs&) { current_epoch_ = epoch; }

void ModelCheckpoint::on_train_batch_end(int64_t batch, const Logs& logs) {
  if (counter_.should_save(batch, options_.save_freq)) save_model(current_epoch_, batch, logs);
}

void ModelCheckpoint::on_epoch_end(int epoch, Logs& logs) {
  set_monitor_op();
  if (options_.save_freq.per_epoch()) save_model(epoch, -1, logs);
}

std::string ModelCheckpoint::file_path(int epoch, int64_t batch, const Logs& logs) const {
  std::map<std::string, PythonFormatArg> args;
  for (const auto& [key, value] : logs) args[key] = value;
  args["epoch"] = static_cast<int64_t>(epoch + 1);
  if (batch >= 0 && !logs.get("batch")) args["batch"] = batch + 1;
  try {
    return python_str_format(filepath_, args);
  } catch (const InvalidArgument& e) {
    EMBER_CHECK(false, InvalidArgument) << "Failed to format this callback filepath: \"" << filepath_
                                        << "\". Reason: " << e.what();
  }
  return {};
}

bool ModelCheckpoint::should_save_model(int epoch, const Logs& logs, const std::string& path) {
  if (!options_.save_best_only) {
    if (options_.verbose > 0) std::cout << "\nEpoch " << epoch + 1 << ": saving model to " << path << "\n";
    return true;
  }
  const std::optional<double> current = logs.get(monitor());
  if (!current) {
    logging::warn("Can save best model only with " + monitor() + " available.");
    return true;
  }
  const std::string best_str = best_ ? format_5f(*best_) : "None";
  if (is_improvement(*current, best_)) {
    if (options_.verbose > 0)
      std::cout << "\nEpoch " << epoch + 1 << ": " << monitor() << " improved from " << best_str << " to "
                << format_5f(*current) << ", saving model to " << path << "\n";
    best_ = *current;
    return true;
  }
  if (options_.verbose > 0)
    std::cout << "\nEpoch " << epoch + 1 << ": " << monitor() << " did not improve from " << best_str << "\n";
  return false;
}

void ModelCheckpoint::save_model(int epoch, int64_t batch, const Logs& logs) {
  EMBER_CHECK(model(), FailedPrecondition) << "ModelCheckpoint: no model to save (set_model was not called)";
  if (options_.save_best_only) set_monitor_op();
  const std::string path = file_path(epoch, batch, logs);
  EMBER_CHECK(!std::filesystem::is_directory(path), InvalidArgument)
      << "Please specify a non-directory filepath for ModelCheckpoint. Filepath used is an existing directory: "
      << path;
  if (!should_save_model(epoch, logs, path)) return;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  // In a multi-worker job only the chief's file is kept (TF: distributed_file_utils.write_filepath).
  const std::string written = distribute::write_filepath(path);
  if (options_.save_weights_only)
    model()->save_weights(written, {.overwrite = true});
  else
    model()->save(written, {.overwrite = true});
  distribute::remove_temp_filepath(path);
  if (options_.verbose > 0) std::cout << "\nEpoch " << epoch + 1 << ": finished saving model to " << path << "\n";
  std::cout.flush();
}

}  // namespace ember::callbacks
