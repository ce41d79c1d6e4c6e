#pragma once
// TensorBoard (Keras 3: keras.callbacks.TensorBoard): the epoch's training logs and learning rate into
// <log_dir>/train, its validation logs into <log_dir>/validation, optionally the batch logs every N
// batches, Keras 3's evaluation_<metric>_vs_iterations after each evaluation, and (write_graph) the traced
// training step's graph for TensorBoard's Graphs tab, weight histograms every histogram_freq epochs, and a
// profile of the batches in profile_batch (framework/core/profiler.h). Weight images, the Keras model-config
// summary and embeddings are not supported (write_images and embeddings_* have no option).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "framework/io/event_file.h"
#include "framework/model/callbacks/callback.h"

namespace ember::callbacks {

// The training batches to profile (Keras's profile_batch): 0 profiles none, N the N-th batch of the run
// (counted from 1 across epochs), {start, stop} batches start to stop.
struct ProfileBatch {
  int64_t start = 0, stop = 0;
  ProfileBatch() = default;
  ProfileBatch(int64_t batch) : start(batch), stop(batch) {}  // NOLINT: Keras's profile_batch=N
  ProfileBatch(int64_t start_batch, int64_t stop_batch) : start(start_batch), stop(stop_batch) {}
};

struct TensorBoardOptions {
  // Epochs between weight histograms (0: none): every layer's weights, tagged "<weight path>/histogram",
  // as tf.summary.histogram writes them (30 buckets), into train/ at step = epoch.
  int histogram_freq = 0;
  // "epoch": scalars once per epoch; "batch" (same as 1) or N: also the batch logs as batch_<name>
  // whenever the global train batch count (from 1, across epochs) is a multiple of N.
  std::variant<std::string, int64_t> update_freq = std::string("epoch");
  // Also logs training speed: epoch_steps_per_second (optimizer steps over the epoch's wall time) and,
  // with batch-level logging, batch_steps_per_second.
  bool write_steps_per_second = false;
  // Writes the graph of fit's traced training step (its first concrete function, as a tensorflow.GraphDef:
  // framework/graph/graph_def.h) into train/ once per fit, after the first batch, as Keras does. Nothing is
  // written when compile's run_eagerly leaves no traced step (Keras then has no graph to show either).
  bool write_graph = true;
  // Profiles these training batches into <log_dir>/train/plugins/profile/<run>/ (profiler::start ... stop);
  // skipped, with a warning, while another profile runs. Negative or stop < start is InvalidArgument.
  ProfileBatch profile_batch = 0;
};

// Writes TensorBoard event files (see framework/io/event_file.h) during fit and evaluate:
//   train/:      epoch_<name> for every training log and epoch_learning_rate (the optimizer's current
//                learning rate), step = epoch; batch_<name> at step = global train batch.
//   validation/: epoch_<name> for each val_<name> log, step = epoch; evaluation_<name>_vs_iterations
//                for every log of each evaluation (fit's validation or evaluate), step = the optimizer's
//                iterations (only once the model is compiled).
//   train/:      with write_graph, the training step's graph (tf.summary.graph's event), after batch 0.
// Unlike Keras 3, whose summary record_if from batch-level logging leaks into the epoch summaries,
// epoch and evaluation summaries are written whatever update_freq is (tf-keras behaves so).
class TensorBoard : public Callback {
  EMBER_CALLBACK(TensorBoard)
 public:
  // Invalid update_freq (a string other than "epoch"/"batch", or a count < 1), histogram_freq < 0 or
  // profile_batch is InvalidArgument.
  explicit TensorBoard(std::string log_dir = "logs", TensorBoardOptions options = {});
  TensorBoard(TensorBoard&&) = default;

  const std::string& log_dir() const { return log_dir_; }
  // Batches between batch-level summaries; 0 when only epochs are logged.
  int64_t update_freq() const { return update_freq_; }
  // <log_dir>/train and <log_dir>/validation.
  std::string train_dir() const;
  std::string validation_dir() const;

  void set_model(Model* model) override;
  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_begin(int64_t batch, const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;

 private:
  using Clock = std::chrono::steady_clock;
  // Writers open on first use, so a run that logs nothing to validation/ leaves no file there.
  io::EventFileWriter& train_writer();
  io::EventFileWriter& validation_writer();
  void close_writers();
  // The compiled optimizer's iterations, or nullopt without a compiled model.
  std::optional<int64_t> optimizer_iterations() const;
  // Every layer's weights as histograms at step epoch.
  void write_histograms(int epoch);
  void stop_profile();
  // The model's traced training step as a graph event in train/, if it has one.
  void write_train_graph();

  std::string log_dir_;
  int64_t update_freq_ = 0;
  bool write_steps_per_second_ = false;
  bool write_graph_ = true;
  bool graph_pending_ = false;  // set_model arms it; the first training batch writes the graph
  int histogram_freq_ = 0;
  ProfileBatch profile_batch_;
  bool profiling_ = false;  // this callback started the running profile
  std::unique_ptr<io::EventFileWriter> train_writer_, validation_writer_;
  int64_t global_train_batch_ = 0;
  int64_t previous_epoch_iterations_ = 0;
  Clock::time_point epoch_start_, batch_start_;
};

}  // namespace ember::callbacks
