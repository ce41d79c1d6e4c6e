// The callbacks inside Model::fit: EarlyStopping restoring the best weights, CSVLogger's file,
// ReduceLROnPlateau's logged rate, TerminateOnNaN, and the progress bar fit adds at verbose 1.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "framework/ops/dispatch.h"
#include "tests/framework/model/callbacks/callback_testing.h"

using namespace ember;
using namespace ember::callbacks;
using namespace ember::testing;

namespace {

// Samples of y = x . w (w = [1, -2, 0.5]); validation targets are scaled by val_scale.
struct Data {
  Tensor x, y, val_x, val_y;
};
Data make_data(double val_scale) {
  Tensor w = Tensor::from_vector<float>({1.0f, -2.0f, 0.5f}, Shape{3, 1});
  Data d;
  d.x = random::uniform({64, 3}, {.minval = -1, .maxval = 1, .seed = 11});
  d.y = ops::matmul(d.x, w);
  d.val_x = random::uniform({32, 3}, {.minval = -1, .maxval = 1, .seed = 12});
  d.val_y = ops::matmul(d.val_x, w) * val_scale;
  return d;
}

// Zero weights, so runs are deterministic.
void zero_weights(Model& model) {
  std::vector<Tensor> zeros;
  for (const Tensor& w : model.get_weights()) zeros.push_back(ops::zeros_like(w));
  model.set_weights(zeros);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("fit with EarlyStopping(restore_best_weights) ends on the best epoch's weights", "[callbacks][fit]") {
  auto model = small_model(0.1);
  zero_weights(*model);
  // Training pulls the predictions from 0 to x.w; validation wants half of it, so its loss falls, then rises.
  Data d = make_data(0.5);
  std::vector<std::vector<Tensor>> weights;
  std::vector<double> val_losses;
  LambdaCallback recorder({.on_epoch_end = [&](int, Logs& logs) {
    weights.push_back(model->get_weights());
    val_losses.push_back(logs.at("val_loss"));
  }});
  auto es = std::make_shared<EarlyStopping>(EarlyStoppingOptions{.patience = 2, .restore_best_weights = true});
  History h = model->fit(d.x, d.y,
                         {.batch_size = 16,
                          .epochs = 100,
                          .verbose = 0,
                          .callbacks = {std::move(recorder), es},
                          .validation_data = {d.val_x, d.val_y},
                          .shuffle = false});
  const size_t best = static_cast<size_t>(std::min_element(val_losses.begin(), val_losses.end()) - val_losses.begin());
  CHECK(best > 0);
  CHECK(es->best_epoch() == static_cast<int>(best));
  CHECK(es->stopped_epoch() == static_cast<int>(best) + 2);
  CHECK(h.epoch.size() == best + 3);
  CHECK(h.history.at("val_loss") == val_losses);
  CHECK(same_weights(model->get_weights(), weights[best]));
  CHECK_FALSE(same_weights(model->get_weights(), weights.back()));
}

namespace {
int float64_casts = 0;
void count_float64_casts(const OpRecord& r) {
  if (r.op == OpId::cast && r.outputs[0].dtype() == DType::Float64) ++float64_casts;
}

// Counts its batch hooks; uses_batches says whether it claims them.
class BatchCounter : public Callback {
  EMBER_CALLBACK(BatchCounter)
 public:
  explicit BatchCounter(bool uses_batches) : uses_batches_(uses_batches) {}
  void on_train_batch_begin(int64_t, const Logs&) override { ++train_begins; }
  void on_train_batch_end(int64_t, const Logs& logs) override { train_losses.push_back(logs.at("loss")); }
  void on_test_batch_end(int64_t, const Logs& logs) override { test_losses.push_back(logs.at("loss")); }
  bool implements_train_batch_hooks() const override { return uses_batches_; }
  bool implements_test_batch_hooks() const override { return uses_batches_; }
  int train_begins = 0;
  std::vector<double> train_losses, test_losses;

 private:
  bool uses_batches_;
};
}  // namespace

TEST_CASE("fit calls the batch hooks, and makes each batch's logs, only for callbacks that use them",
          "[callbacks][fit]") {
  // As Keras's CallbackList: with History alone (verbose 0) the metrics become logs once per epoch.
  Data d = make_data(1.0);
  std::vector<std::map<std::string, std::vector<double>>> histories;
  for (bool uses_batches : {false, true}) {
    INFO("a callback using the batch hooks: " << uses_batches);
    auto model = small_model(0.1, {"mae"});
    zero_weights(*model);
    auto counter = std::make_shared<BatchCounter>(uses_batches);
    const int hook = add_op_hook(count_float64_casts);
    float64_casts = 0;
    History h = model->fit(d.x, d.y,
                           {.batch_size = 16,
                            .epochs = 2,
                            .verbose = 0,
                            .callbacks = {counter},
                            .validation_data = {d.val_x, d.val_y},
                            .shuffle = false});
    remove_op_hook(hook);
    // 4 training and 2 validation batches an epoch; loss and mae, each one cast to float64 per log made.
    CHECK(float64_casts == (uses_batches ? 2 * 2 * (4 + 2 + 1 + 1) : 2 * 2 * 2));
    CHECK(counter->train_begins == (uses_batches ? 8 : 0));
    CHECK(counter->train_losses.size() == (uses_batches ? 8u : 0u));
    CHECK(counter->test_losses.size() == (uses_batches ? 4u : 0u));
    if (uses_batches) CHECK(counter->train_losses[3] == h.history.at("loss")[0]);
    histories.push_back(h.history);
  }
  CHECK(histories[0] == histories[1]);
}

TEST_CASE("fit with CSVLogger writes the epochs' logs", "[callbacks][fit]") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ember_cb_fit_" + std::to_string(::getpid()) + ".csv")).string();
  auto model = small_model(0.1, {"mae"});
  zero_weights(*model);
  Data d = make_data(1.0);
  History h = model->fit(d.x, d.y,
                         {.batch_size = 16,
                          .epochs = 3,
                          .verbose = 0,
                          // First, so the CSV sees the learning_rate it adds (callbacks run in list order).
                          .callbacks = {ReduceLROnPlateau({.patience = 100}), CSVLogger(path)},
                          .validation_data = {d.val_x, d.val_y}});
  std::string expected = "epoch,learning_rate,loss,mae,val_loss,val_mae\r\n";
  for (size_t e = 0; e < 3; ++e) {
    expected += std::to_string(e);
    for (const char* key : {"learning_rate", "loss", "mae", "val_loss", "val_mae"})
      expected += "," + python_float_repr(h.history.at(key)[e]);
    expected += "\r\n";
  }
  CHECK(read_file(path) == expected);
  CHECK(h.history.at("learning_rate") == std::vector<double>(3, static_cast<double>(0.1f)));
  std::remove(path.c_str());
}

TEST_CASE("fit with TerminateOnNaN stops at a diverging loss", "[callbacks][fit]") {
  auto model = small_model(1e30);
  Data d = make_data(1.0);
  Capture out(std::cout);
  History h =
      model->fit(d.x, d.y * 1e10, {.batch_size = 8, .epochs = 5, .verbose = 0, .callbacks = {TerminateOnNaN()}});
  CHECK(model->stop_training);
  CHECK(h.epoch.size() == 1);
  CHECK(std::regex_search(out.str(), std::regex("^Batch [0-7]: Invalid loss, terminating training\n$")));
}

TEST_CASE("fit at verbose 1 prints Keras's epoch lines and bars", "[callbacks][fit]") {
  auto model = small_model(0.1);
  Data d = make_data(1.0);
  Capture out(std::cout);
  model->fit(d.x, d.y, {.batch_size = 16, .epochs = 2, .verbose = 1, .validation_data = {d.val_x, d.val_y}});
  // On a terminal each line is redrawn in place: compare what is left after the last \r.
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line.substr(line.rfind('\r') + 1));
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "Epoch 1/2");
  CHECK(lines[2] == "Epoch 2/2");
  const std::regex bar(R"(4/4 \[==============================\] - \d+s \d+(s|ms|us)/step - loss: \d+\.\d{4} - )"
                       R"(val_loss: \d+\.\d{4} *)");
  CHECK(std::regex_match(lines[1], bar));
  CHECK(std::regex_match(lines[3], bar));
}

TEST_CASE("fit at verbose 2 prints one line per epoch", "[callbacks][fit]") {
  auto model = small_model(0.1);
  Data d = make_data(1.0);
  Capture out(std::cout);
  model->fit(d.x, d.y, {.batch_size = 16, .epochs = 2, .verbose = 2, .validation_data = {d.val_x, d.val_y}});
  const std::string line =
      R"(4/4 - \d+s - loss: \d+\.\d{4} - val_loss: \d+\.\d{4} - \d+(s|ms|us)/epoch - \d+(s|ms|us)/step\n)";
  INFO(out.str());
  CHECK(std::regex_match(out.str(), std::regex("Epoch 1/2\n" + line + "Epoch 2/2\n" + line)));
}
