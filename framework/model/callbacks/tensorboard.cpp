#include "framework/model/callbacks/tensorboard.h"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/core/profiler.h"
#include "framework/graph/function.h"
#include "framework/graph/graph_def.h"
#include "framework/model/model.h"
#include "framework/ops/elementwise.h"
#include "optimizers/optimizer.h"

namespace ember::callbacks {
namespace {

int64_t parse_update_freq(const std::variant<std::string, int64_t>& freq) {
  if (const auto* n = std::get_if<int64_t>(&freq)) {
    EMBER_CHECK(*n >= 1, InvalidArgument)
        << "TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches >= 1; got " << *n;
    return *n;
  }
  const auto& s = std::get<std::string>(freq);
  if (s == "epoch") return 0;
  if (s == "batch") return 1;  // Keras: "batch" is a synonym for 1
  throw InvalidArgument("TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches >= 1; got \"" +
                        s + "\"");
}

double tb_seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::optional<WeightImage> weight_image(const Tensor& weight) {
  std::vector<int64_t> shape;  // ops.squeeze
  for (int64_t d : weight.shape().dims())
    if (d != 1) shape.push_back(d);
  WeightImage image;
  image.data = ops::cast(weight, DType::Float32).to_vector<float>();
  switch (shape.size()) {
    case 1:  // a bias: one image of height n
      image.shape = {1, shape[0], 1, 1};
      return image;
    case 2: {  // a dense kernel, with its longer side across
      int64_t rows = shape[0], cols = shape[1];
      if (rows > cols) {
        std::vector<float> t(image.data.size());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = image.data[r * cols + c];
        image.data = std::move(t);
        std::swap(rows, cols);
      }
      image.shape = {1, rows, cols, 1};
      return image;
    }
    case 3: {  // channels last to channels first: each output channel's kernel one image
      const int64_t a = shape[0], b = shape[1], n = shape[2];
      std::vector<float> t(image.data.size());
      for (int64_t i = 0; i < a * b; ++i)
        for (int64_t j = 0; j < n; ++j) t[j * a * b + i] = image.data[i * n + j];
      image.data = std::move(t);
      image.shape = {n, a, b, 1};
      return image;
    }
    case 4:
      if (shape[3] != 1 && shape[3] != 3 && shape[3] != 4) return std::nullopt;
      image.shape = {shape[0], shape[1], shape[2], shape[3]};
      return image;
    default:
      return std::nullopt;
  }
}

TensorBoard::TensorBoard(std::string log_dir, TensorBoardOptions options)
    : log_dir_(std::move(log_dir)),
      update_freq_(parse_update_freq(options.update_freq)),
      write_steps_per_second_(options.write_steps_per_second),
      write_graph_(options.write_graph),
      histogram_freq_(options.histogram_freq),
      write_images_(options.write_images),
      profile_batch_(options.profile_batch) {
  EMBER_CHECK(histogram_freq_ >= 0, InvalidArgument)
      << "TensorBoard: histogram_freq must be >= 0 (0 writes no histograms); got " << histogram_freq_;
  EMBER_CHECK(profile_batch_.start >= 0 && profile_batch_.stop >= profile_batch_.start, InvalidArgument)
      << "TensorBoard: profile_batch must be a non-negative integer or a pair {start, stop} of positive integers "
         "with start <= stop; got {"
      << profile_batch_.start << ", " << profile_batch_.stop << "}";
}

std::string TensorBoard::train_dir() const { return (std::filesystem::path(log_dir_) / "train").string(); }
std::string TensorBoard::validation_dir() const {
  return (std::filesystem::path(log_dir_) / "validation").string();
}

io::EventFileWriter& TensorBoard::train_writer() {
  if (!train_writer_) train_writer_ = std::make_unique<io::EventFileWriter>(train_dir());
  return *train_writer_;
}

io::EventFileWriter& TensorBoard::validation_writer() {
  if (!validation_writer_) validation_writer_ = std::make_unique<io::EventFileWriter>(validation_dir());
  return *validation_writer_;
}

void TensorBoard::close_writers() {
  // Both are released even when closing the first fails; the first error is reported.
  auto train = std::move(train_writer_);
  auto validation = std::move(validation_writer_);
  if (train) train->close();
  if (validation) validation->close();
}

std::optional<int64_t> TensorBoard::optimizer_iterations() const {
  if (!model() || !model()->compiled()) return std::nullopt;
  return model()->optimizer().iterations().value().item<int64_t>();
}

void TensorBoard::set_model(Model* model) {
  Callback::set_model(model);
  // As Keras: each fit/evaluate starts new event files, and each fit writes the graph again.
  close_writers();
  graph_pending_ = write_graph_;
}

void TensorBoard::write_train_graph() {
  graph_pending_ = false;
  if (!model()) return;
  const std::vector<std::shared_ptr<ConcreteFunction>> traced = detail::traced_train_functions(*model());
  if (traced.empty()) return;  // run eagerly: no graph
  io::EventFileWriter& writer = train_writer();
  writer.add_graph(graph::to_graph_def(traced.front()->graph()));
  writer.flush();
}

void TensorBoard::on_train_begin(const Logs&) {
  global_train_batch_ = 0;
  previous_epoch_iterations_ = 0;
}

void TensorBoard::on_train_end(const Logs&) {
  if (profiling_) stop_profile();
  close_writers();
}

void TensorBoard::stop_profile() {
  profiling_ = false;
  profiler::stop();
}

void TensorBoard::write_histograms(int epoch) {
  if (!model()) return;
  io::EventFileWriter& writer = train_writer();
  for (const auto& layer : model()->layers())
    for (const Variable& w : layer->weights()) {
      std::string tag = w.name();
      std::replace(tag.begin(), tag.end(), ':', '_');
      writer.add_histogram(tag + "/histogram", ops::cast(w.value(), DType::Float64).to_vector<double>(), epoch);
      if (!write_images_) continue;
      if (const std::optional<WeightImage> image = weight_image(w.value()))
        writer.add_image(tag + "/image", image->data, image->shape, epoch);
    }
  writer.flush();
}

void TensorBoard::on_epoch_begin(int, const Logs&) {
  if (!write_steps_per_second_) return;
  previous_epoch_iterations_ = optimizer_iterations().value_or(global_train_batch_);
  epoch_start_ = Clock::now();
}

void TensorBoard::on_train_batch_begin(int64_t, const Logs&) {
  ++global_train_batch_;
  if (write_steps_per_second_) batch_start_ = Clock::now();
  if (profile_batch_.start > 0 && global_train_batch_ == profile_batch_.start) {
    // As Keras: a profile that someone else runs is left alone (and this one skipped).
    if (profiler::active()) {
      logging::warn("TensorBoard: another profile is running; profile_batch is skipped");
    } else {
      profiler::start(train_dir());
      profiling_ = true;
    }
  }
}

void TensorBoard::on_train_batch_end(int64_t, const Logs& logs) {
  // Keras writes the train function's graph once it has been traced, at the end of the first batch.
  if (graph_pending_) write_train_graph();
  if (profiling_ && global_train_batch_ >= profile_batch_.stop) stop_profile();
  if (update_freq_ == 0 || global_train_batch_ % update_freq_ != 0) return;
  io::EventFileWriter& writer = train_writer();
  if (write_steps_per_second_)
    writer.add_scalar("batch_steps_per_second", 1.0 / tb_seconds_since(batch_start_), global_train_batch_);
  for (const auto& [name, value] : logs) writer.add_scalar("batch_" + name, value, global_train_batch_);
}

void TensorBoard::on_epoch_end(int epoch, Logs& logs) {
  if (logs.empty()) return;
  Logs train_logs, val_logs;
  for (const auto& [name, value] : logs) (name.starts_with("val_") ? val_logs : train_logs)[name] = value;
  // Keras reads the optimizer's rate rather than trusting logs (a scheduler may have changed it since).
  if (model() && model()->compiled()) train_logs["learning_rate"] = model()->optimizer().learning_rate();
  if (write_steps_per_second_) {
    const int64_t iterations = optimizer_iterations().value_or(global_train_batch_);
    train_logs["steps_per_second"] = double(iterations - previous_epoch_iterations_) / tb_seconds_since(epoch_start_);
  }
  if (!train_logs.empty()) {
    io::EventFileWriter& writer = train_writer();
    for (const auto& [name, value] : train_logs) writer.add_scalar("epoch_" + name, value, epoch);
    writer.flush();
  }
  if (!val_logs.empty()) {
    io::EventFileWriter& writer = validation_writer();
    for (const auto& [name, value] : val_logs) writer.add_scalar("epoch_" + name.substr(4), value, epoch);
    writer.flush();
  }
  if (histogram_freq_ > 0 && epoch % histogram_freq_ == 0) write_histograms(epoch);
}

void TensorBoard::on_test_end(const Logs& logs) {
  const std::optional<int64_t> iterations = optimizer_iterations();
  if (!iterations || logs.empty()) return;
  io::EventFileWriter& writer = validation_writer();
  for (const auto& [name, value] : logs)
    writer.add_scalar("evaluation_" + name + "_vs_iterations", value, *iterations);
  writer.flush();
}

}  // namespace ember::callbacks
