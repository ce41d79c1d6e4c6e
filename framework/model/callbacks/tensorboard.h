#pragma once
// TensorBoard (Keras 3: keras.callbacks.TensorBoard): the epoch's training logs and learning rate into
// <log_dir>/train, its validation logs into <log_dir>/validation, optionally the batch logs every N
// batches, Keras 3's evaluation_<metric>_vs_iterations after each evaluation, and (write_graph) the traced
// training step's graph for TensorBoard's Graphs tab, weight histograms (and, with write_images, weight
// images) every histogram_freq epochs, and a profile of the batches in profile_batch
// (framework/core/profiler.h). Embeddings are not supported (embeddings_* have no option).
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "framework/core/tensor.h"
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
  // With histogram_freq, also each weight as an image ("<weight path>/image", tf.summary.image with its
  // default max_outputs 3), laid out as weight_image says; weights it gives no image are skipped, as in Keras.
  bool write_images = false;
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

// A weight as Keras 3's TensorBoard(write_images=True) shows it (_log_weight_as_image): the image batch
// [k, h, w, c] and its values, row-major. Dimensions of size 1 are dropped; then a vector of n is one
// 1 x n x 1 image (height n), a matrix one grayscale image (transposed when it has more rows than columns),
// a rank-3 kernel (k, w_in, out) `out` images of k x w_in, and a rank-4 weight is shown as it is when its
// last dimension is 1, 3 or 4 (gray, RGB, RGBA). Any other weight gives none (nullopt).
struct WeightImage {
  std::array<int64_t, 4> shape{};
  std::vector<float> data;
};
std::optional<WeightImage> weight_image(const Tensor& weight);

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
  // Every layer's weights as histograms (and images, with write_images) at step epoch.
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
  bool write_images_ = false;
  ProfileBatch profile_batch_;
  bool profiling_ = false;  // this callback started the running profile
  std::unique_ptr<io::EventFileWriter> train_writer_, validation_writer_;
  int64_t global_train_batch_ = 0;
  int64_t previous_epoch_iterations_ = 0;
  Clock::time_point epoch_start_, batch_start_;
};

}  // namespace ember::callbacks
