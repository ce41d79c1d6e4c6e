// callbacks::TensorBoard: its hooks driven by hand (tags, steps and values in train/ and validation/),
// update_freq, the learning rate, and a real fit + evaluate compared with what Keras 3's TensorBoard
// wrote for the same run (tests/fixtures/tensorboard/keras_fit.json, from make_tensorboard_fixture.py).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <tuple>

#include <nlohmann/json.hpp>

#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"
#include "framework/ember.h"
#include "framework/io/event_file.h"
#include "framework/model/callbacks/learning_rate_scheduler.h"
#include "framework/graph/graph_def.h"
#include "framework/model/callbacks/tensorboard.h"

using namespace ember;
using testing::TempDir;
namespace fs = std::filesystem;
using json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

// {tag, step, value} of one written scalar.
struct Scalar {
  std::string tag;
  int64_t step;
  double value;
};

// Every scalar of the event files in dir, in file order (files sorted by name).
std::vector<Scalar> read_dir(const fs::path& dir) {
  std::vector<Scalar> out;
  for (const std::string& file : io::list_event_files(dir.string())) {
    io::EventFileReader reader(file);
    CHECK(reader.file_version() == "brain.Event:2");
    for (const io::ScalarEvent& s : reader.scalars()) out.push_back({s.tag, s.step, s.value});
  }
  return out;
}

std::string describe(const std::vector<Scalar>& scalars) {
  std::ostringstream os;
  for (const Scalar& s : scalars) os << "  " << s.tag << " @" << s.step << " = " << s.value << "\n";
  return os.str();
}

// Expects exactly these {tag, step} pairs in order, with values equal as float32.
void check_scalars(const std::vector<Scalar>& got, const std::vector<Scalar>& want) {
  INFO("got:\n" << describe(got) << "want:\n" << describe(want));
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].tag == want[i].tag);
    CHECK(got[i].step == want[i].step);
    CHECK(got[i].value == double(float(want[i].value)));
  }
}

}  // namespace

TEST_CASE("TensorBoard: options and their errors", "[callbacks][tensorboard]") {
  CHECK(callbacks::TensorBoard().log_dir() == "logs");
  CHECK(callbacks::TensorBoard().update_freq() == 0);
  CHECK(callbacks::TensorBoard("x", {.update_freq = "batch"}).update_freq() == 1);
  CHECK(callbacks::TensorBoard("x", {.update_freq = 50}).update_freq() == 50);
  CHECK(callbacks::TensorBoard("runs/a").train_dir() == (fs::path("runs/a") / "train").string());
  CHECK(callbacks::TensorBoard("runs/a").validation_dir() == (fs::path("runs/a") / "validation").string());
  CHECK_THROWS_AS(callbacks::TensorBoard("x", {.update_freq = "epochs"}), InvalidArgument);
  CHECK_THROWS_WITH(callbacks::TensorBoard("x", {.update_freq = "epochs"}),
                    Contains("update_freq") && Contains("\"epochs\"") && Contains("\"batch\""));
  CHECK_THROWS_WITH(callbacks::TensorBoard("x", {.update_freq = 0}), Contains("update_freq") && Contains("got 0"));
}

TEST_CASE("TensorBoard: hooks write epoch and every-N-batch scalars into train/ and validation/", "[callbacks][tensorboard]") {
  TempDir tmp("tensorboard");
  callbacks::TensorBoard tb(tmp.path().string(), {.update_freq = 2});
  tb.on_train_begin({});
  // Two epochs of three batches: global batches 1..6, logged at 2, 4 and 6.
  for (int epoch = 0; epoch < 2; ++epoch) {
    tb.on_epoch_begin(epoch, {});
    for (int64_t batch = 0; batch < 3; ++batch) {
      tb.on_train_batch_begin(batch, {});
      tb.on_train_batch_end(batch, Logs{{"loss", 10.0 * epoch + batch}, {"accuracy", 0.5}});
    }
    // No model: the learning rate comes from the logs, as another callback put it there.
    Logs logs{{"loss", 1.0 + epoch}, {"accuracy", 0.25}, {"learning_rate", 0.01}, {"val_loss", 2.0 + epoch},
              {"val_accuracy", 0.125}};
    tb.on_epoch_end(epoch, logs);
  }
  tb.on_train_end({});

  check_scalars(read_dir(tmp.path() / "train"), {
                                                  {"batch_loss", 2, 1.0},
                                                  {"batch_accuracy", 2, 0.5},
                                                  {"epoch_loss", 0, 1.0},
                                                  {"epoch_accuracy", 0, 0.25},
                                                  {"epoch_learning_rate", 0, 0.01},
                                                  {"batch_loss", 4, 10.0},
                                                  {"batch_accuracy", 4, 0.5},
                                                  {"batch_loss", 6, 12.0},
                                                  {"batch_accuracy", 6, 0.5},
                                                  {"epoch_loss", 1, 2.0},
                                                  {"epoch_accuracy", 1, 0.25},
                                                  {"epoch_learning_rate", 1, 0.01},
                                              });
  check_scalars(read_dir(tmp.path() / "validation"), {
                                                       {"epoch_loss", 0, 2.0},
                                                       {"epoch_accuracy", 0, 0.125},
                                                       {"epoch_loss", 1, 3.0},
                                                       {"epoch_accuracy", 1, 0.125},
                                                   });
  // One file per directory for the whole run.
  CHECK(io::list_event_files((tmp.path() / "train").string()).size() == 1);
  CHECK(io::list_event_files((tmp.path() / "validation").string()).size() == 1);
}

TEST_CASE("TensorBoard: update_freq epoch writes no batch scalars; no val_ logs, no validation file", "[callbacks][tensorboard]") {
  TempDir tmp("tensorboard");
  callbacks::TensorBoard tb(tmp.path().string());
  tb.on_train_begin({});
  tb.on_epoch_begin(0, {});
  for (int64_t batch = 0; batch < 4; ++batch) {
    tb.on_train_batch_begin(batch, {});
    tb.on_train_batch_end(batch, Logs{{"loss", 1.0}});
  }
  Logs logs{{"loss", 0.75}};
  tb.on_epoch_end(0, logs);
  Logs empty;
  tb.on_epoch_end(1, empty);  // nothing to log: nothing written, as Keras
  tb.on_train_end({});
  check_scalars(read_dir(tmp.path() / "train"), {{"epoch_loss", 0, 0.75}});
  CHECK_FALSE(fs::exists(tmp.path() / "validation"));
}

TEST_CASE("TensorBoard: the records reach disk at each epoch end, before training ends", "[callbacks][tensorboard]") {
  TempDir tmp("tensorboard");
  callbacks::TensorBoard tb(tmp.path().string());
  tb.on_train_begin({});
  Logs logs{{"loss", 0.5}, {"val_loss", 0.25}};
  tb.on_epoch_end(0, logs);
  check_scalars(read_dir(tmp.path() / "train"), {{"epoch_loss", 0, 0.5}});
  check_scalars(read_dir(tmp.path() / "validation"), {{"epoch_loss", 0, 0.25}});
  tb.on_train_end({});
}

TEST_CASE("TensorBoard: a fit and an evaluate write what Keras 3's TensorBoard writes", "[callbacks][tensorboard][keras]") {
  const json run = [] {
    std::ifstream in(ember::testing::fixture_path("tensorboard/keras_fit.json"));
    REQUIRE(in.good());
    return json::parse(in);
  }();
  const auto matrix = [](const json& rows) {
    std::vector<float> flat;
    for (const json& row : rows)
      for (const json& v : row) flat.push_back(v.get<float>());
    return Tensor::from_vector<float>(flat, {int64_t(rows.size()), int64_t(rows[0].size())});
  };
  const auto expected = [&](const std::string& key) {
    std::vector<Scalar> out;
    for (const json& s : run.at(key))
      out.push_back({s.at("tag").get<std::string>(), s.at("step").get<int64_t>(), s.at("value").get<double>()});
    return out;
  };
  const Tensor x = matrix(run.at("x")), y = matrix(run.at("y"));
  // Keras validated on the first validation_samples rows.
  const auto head = [&](const json& rows) {
    return matrix(json(std::vector<json>(rows.begin(), rows.begin() + run.at("validation_samples").get<int64_t>())));
  };
  const Tensor x_val = head(run.at("x")), y_val = head(run.at("y"));

  Sequential model({layers::Input({2}), layers::Dense(1)});
  model.set_weights({matrix(run.at("kernel")), Tensor::from_vector<float>({run.at("bias")[0].get<float>()}, {1})});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = run.at("learning_rate").get<double>()}),
                 .loss = "mse",
                 .metrics = {"mae"}});
  TempDir tmp("tensorboard");
  model.fit(x, y,
            {.batch_size = run.at("batch_size").get<int64_t>(),
             .epochs = run.at("epochs").get<int>(),
             .verbose = 0,
             .callbacks = {callbacks::TensorBoard((tmp.path() / "fit").string(), {.update_freq = "batch"})},
             .validation_data = {x_val, y_val},
             .shuffle = false});
  model.evaluate(x, y, {.batch_size = 2, .verbose = 0, .callbacks = {callbacks::TensorBoard((tmp.path() / "evaluate").string())}});

  // Values agree to float32 rounding of the training arithmetic.
  for (const std::string key : {"fit/train", "fit/validation", "evaluate/validation"}) {
    INFO(key);
    const std::vector<Scalar> got = read_dir(tmp.path() / key), want = expected(key);
    INFO("got:\n" << describe(got) << "want:\n" << describe(want));
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].tag == want[i].tag);
      CHECK(got[i].step == want[i].step);
      CHECK(got[i].value == Approx(want[i].value).epsilon(1e-5).margin(1e-7));
    }
  }
  // Keras writes its model-config summary there; Ember has none, and evaluate traces no training step.
  CHECK(read_dir(tmp.path() / "evaluate" / "train").empty());
  CHECK(run.at("evaluate/train").empty());
}

TEST_CASE("TensorBoard: epoch_learning_rate is the optimizer's rate that epoch; steps per second", "[callbacks][tensorboard]") {
  Sequential model({layers::Input({1}), layers::Dense(1)});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4, 1});
  TempDir tmp("tensorboard");
  auto tb = std::make_shared<callbacks::TensorBoard>(
      tmp.path().string(), callbacks::TensorBoardOptions{.update_freq = "batch", .write_steps_per_second = true});
  model.fit(x, x,
            {.batch_size = 2,
             .epochs = 3,
             .verbose = 0,
             .callbacks = {callbacks::LearningRateScheduler([](int epoch, double) { return 0.1 / (epoch + 1); }), tb}});
  std::vector<Scalar> lr, speed, batch_speed;
  const std::vector<Scalar> train = read_dir(tmp.path() / "train");
  for (size_t i = 0; i < train.size(); ++i) {
    const Scalar& s = train[i];
    if (s.tag == "epoch_learning_rate") lr.push_back(s);
    if (s.tag == "epoch_steps_per_second") speed.push_back(s);
    if (s.tag == "batch_steps_per_second") {
      batch_speed.push_back(s);
      // Written first, then the batch's logs at the same step (Keras's order).
      REQUIRE(i + 1 < train.size());
      CHECK((train[i + 1].tag == "batch_loss" && train[i + 1].step == s.step));
    }
  }
  REQUIRE(batch_speed.size() == 6);  // 3 epochs x 2 batches, steps 1..6
  for (size_t i = 0; i < batch_speed.size(); ++i) {
    CHECK(batch_speed[i].step == int64_t(i + 1));
    CHECK(batch_speed[i].value > 0);
  }
  check_scalars(lr, {{"epoch_learning_rate", 0, 0.1}, {"epoch_learning_rate", 1, 0.05}, {"epoch_learning_rate", 2, 0.1 / 3}});
  REQUIRE(speed.size() == 3);
  for (const Scalar& s : speed) CHECK(s.value > 0);
  // A second fit starts new files (Keras resets its writers in set_model).
  model.fit(x, x, {.batch_size = 2, .epochs = 1, .verbose = 0, .callbacks = {tb}});
  CHECK(io::list_event_files((tmp.path() / "train").string()).size() == 2);
}

TEST_CASE("TensorBoard: evaluation_<metric>_vs_iterations needs a compiled model", "[callbacks][tensorboard]") {
  TempDir tmp("tensorboard");
  callbacks::TensorBoard tb(tmp.path().string());
  tb.on_test_begin({});
  tb.on_test_end(Logs{{"loss", 1.0}});  // no model: no optimizer iterations to log against
  CHECK_FALSE(fs::exists(tmp.path() / "validation"));

  Sequential model({layers::Input({1}), layers::Dense(1)});
  model.compile({.optimizer = optimizers::SGD(), .loss = "mse"});
  tb.set_model(&model);
  tb.on_test_end(Logs{{"loss", 1.5}, {"mae", 0.5}});
  check_scalars(read_dir(tmp.path() / "validation"),
                {{"evaluation_loss_vs_iterations", 0, 1.5}, {"evaluation_mae_vs_iterations", 0, 0.5}});
}

namespace {

// The graph_def of every graph event of the event files in dir, in file order.
std::vector<std::string> read_graphs(const fs::path& dir) {
  std::vector<std::string> out;
  for (const std::string& file : io::list_event_files(dir.string())) {
    const io::EventFileReader reader(file);
    for (const io::Event& e : reader.events())
      if (!e.graph_def.empty()) out.push_back(e.graph_def);
  }
  return out;
}

const graph::NodeDef& node_named(const std::vector<graph::NodeDef>& nodes, const std::string& name) {
  for (const graph::NodeDef& n : nodes)
    if (n.name == name) return n;
  FAIL("no node named " << name);
  throw;
}

}  // namespace

TEST_CASE("TensorBoard: write_graph writes the traced training step's graph once per fit", "[callbacks][tensorboard][graph]") {
  Sequential model({layers::Input({2}), layers::Dense(1)});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  const Tensor y = Tensor::from_vector<float>({1, 2, 3, 4}, {4, 1});
  TempDir tmp("tensorboard");
  auto tb = std::make_shared<callbacks::TensorBoard>(tmp.path().string());
  model.fit(x, y, {.batch_size = 2, .epochs = 2, .verbose = 0, .callbacks = {tb}});

  const std::vector<std::string> graphs = read_graphs(tmp.path() / "train");
  REQUIRE(graphs.size() == 1);  // two epochs of two batches: written once
  CHECK_FALSE(fs::exists(tmp.path() / "validation"));
  // The graph is the first concrete function's, as TensorBoard will show it.
  const auto traced = detail::traced_train_functions(model);
  REQUIRE_FALSE(traced.empty());
  CHECK(graphs[0] == graph::to_graph_def(traced.front()->graph()));

  const std::vector<graph::NodeDef> nodes = graph::decode_graph_def(graphs[0]);
  std::ostringstream listing;
  for (const graph::NodeDef& n : nodes) {
    listing << "  " << n.name << " = " << n.op << "(";
    for (const std::string& in : n.inputs) listing << in << " ";
    listing << ")\n";
  }
  INFO(listing.str());
  // The forward: Dense's matmul_bias on the batch's x and the reads of its kernel and bias.
  const graph::NodeDef* forward = nullptr;
  for (const graph::NodeDef& n : nodes)
    if (n.op == "matmul_bias" && !n.inputs.empty() && n.inputs[0] == "input_0") forward = &n;
  REQUIRE(forward != nullptr);
  CHECK(node_named(nodes, "input_0").op == "Placeholder");
  CHECK(node_named(nodes, "input_1").op == "Placeholder");  // y
  REQUIRE(forward->inputs.size() == 3);
  for (size_t i = 1; i < 3; ++i) CHECK(node_named(nodes, forward->inputs[i]).op == "ReadVariableOp");
  // The update: the optimizer's apply as one op on the variables, named after it, the count's assignment and the
  // loss tracker's.
  std::vector<std::string> updates;
  size_t assigns = 0, host_calls = 0;
  for (const graph::NodeDef& n : nodes) {
    if (n.op == "apply_sgd_multi") updates.push_back(n.name);
    host_calls += n.op == "HostCall";
    assigns += n.op == "AssignVariableOp";
  }
  REQUIRE(updates.size() == 1);
  CHECK_THAT(updates[0], Contains(".apply_"));
  CHECK(host_calls == 0);
  CHECK(assigns == 3);  // iteration, loss/total, loss/count
  // Every input names a node of the graph.
  for (const graph::NodeDef& n : nodes)
    for (const std::string& in : n.inputs) {
      INFO(n.name << " reads " << in);
      const std::string producer = in.substr(0, in.find(':'));
      CHECK(std::any_of(nodes.begin(), nodes.end(), [&](const graph::NodeDef& m) { return m.name == producer; }));
    }

  // A second fit writes it again, into its new file.
  model.fit(x, y, {.batch_size = 2, .epochs = 1, .verbose = 0, .callbacks = {tb}});
  CHECK(read_graphs(tmp.path() / "train").size() == 2);
}

TEST_CASE("TensorBoard: no graph with write_graph false or when compile runs eagerly", "[callbacks][tensorboard][graph]") {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4, 1});
  for (const bool run_eagerly : {false, true}) {
    INFO("run_eagerly " << run_eagerly);
    Sequential model({layers::Input({1}), layers::Dense(1)});
    model.compile({.optimizer = optimizers::SGD(), .loss = "mse", .run_eagerly = run_eagerly});
    TempDir tmp("tensorboard");
    model.fit(x, x,
              {.batch_size = 2,
               .epochs = 1,
               .verbose = 0,
               .callbacks = {callbacks::TensorBoard(tmp.path().string(), {.write_graph = run_eagerly})}});
    CHECK(detail::traced_train_functions(model).empty() == run_eagerly);
    CHECK(read_graphs(tmp.path() / "train").empty());
    CHECK(read_dir(tmp.path() / "train").size() == 2);  // epoch_loss, epoch_learning_rate
  }
}

TEST_CASE("TensorBoard: histogram_freq writes every layer's weights as histograms every N epochs", "[callbacks][tensorboard]") {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4, 1});
  Sequential model({layers::Input({1}), layers::Dense(2, {.name = "hidden"}), layers::Dense(1, {.name = "out"})});
  model.compile({.optimizer = optimizers::SGD(), .loss = "mse"});
  TempDir tmp("tensorboard");
  model.fit(x, x,
            {.batch_size = 2,
             .epochs = 3,
             .verbose = 0,
             .callbacks = {callbacks::TensorBoard(tmp.path().string(), {.histogram_freq = 2, .write_graph = false})}});
  const std::vector<std::string> files = io::list_event_files((tmp.path() / "train").string());
  REQUIRE(files.size() == 1);
  std::vector<std::pair<std::string, int64_t>> histograms;
  const io::EventFileReader reader(files[0]);
  for (const io::Event& e : reader.events())
    for (const io::SummaryValue& v : e.values)
      if (v.plugin_name == "histograms") histograms.emplace_back(v.tag, e.step);
  // Epochs 0 and 2 (epoch % 2 == 0), each weight once, tagged by its path as Keras 3 does.
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {"hidden/kernel/histogram", 0}, {"hidden/bias/histogram", 0}, {"out/kernel/histogram", 0},
      {"out/bias/histogram", 0},      {"hidden/kernel/histogram", 2}, {"hidden/bias/histogram", 2},
      {"out/kernel/histogram", 2},    {"out/bias/histogram", 2}};
  CHECK(histograms == expected);
  CHECK_THROWS_AS(callbacks::TensorBoard("logs", {.histogram_freq = -1}), InvalidArgument);
}

TEST_CASE("TensorBoard: weight_image lays weights out as Keras 3's write_images does", "[callbacks][tensorboard][keras]") {
  // images_text.json (make_image_text_fixture.py): the event Keras 3's TensorBoard._log_weight_as_image writes
  // for biases, dense kernels (wide, tall, one column), conv kernels and a scalar-like weight (none).
  std::ifstream in(ember::testing::fixture_path("tensorboard") / "images_text.json");
  REQUIRE(in.good());
  const json fixture = json::parse(in);
  REQUIRE(fixture["weight_images"].size() == 8);
  for (const json& c : fixture["weight_images"]) {
    const std::string tag = c["tag"];
    INFO(tag);
    const Tensor weight = Tensor::from_vector<float>(c["data"].get<std::vector<float>>(),
                                                     Shape(c["shape"].get<std::vector<int64_t>>()));
    const std::optional<callbacks::WeightImage> image = callbacks::weight_image(weight);
    if (c["event_without_wall_time_hex"].is_null()) {
      CHECK_FALSE(image);
      continue;
    }
    REQUIRE(image);
    const std::string event = io::encode_image_event(tag, image->data, image->shape, c["step"].get<int64_t>(), 3, 0);
    std::string hex;
    for (unsigned char b : event) {
      static const char* digits = "0123456789abcdef";
      hex += digits[b >> 4];
      hex += digits[b & 15];
    }
    CHECK(hex == c["event_without_wall_time_hex"].get<std::string>());
  }
  CHECK_FALSE(callbacks::weight_image(ops::zeros({2, 2, 2, 2, 2})));  // rank 5
  CHECK_FALSE(callbacks::weight_image(ops::zeros({2, 2, 2, 5})));     // 5 channels
}

TEST_CASE("TensorBoard: write_images writes each weight's image with its histogram", "[callbacks][tensorboard]") {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4, 1});
  Sequential model({layers::Input({1}), layers::Dense(3, {.name = "hidden"}), layers::Dense(1, {.name = "out"})});
  model.compile({.optimizer = optimizers::SGD(), .loss = "mse"});
  TempDir tmp("tensorboard");
  model.fit(x, x,
            {.batch_size = 2,
             .epochs = 2,
             .verbose = 0,
             .callbacks = {callbacks::TensorBoard(tmp.path().string(),
                                                  {.histogram_freq = 1, .write_images = true, .write_graph = false})}});
  const std::vector<std::string> files = io::list_event_files((tmp.path() / "train").string());
  REQUIRE(files.size() == 1);
  std::vector<std::tuple<std::string, int64_t, std::string, std::string>> images;  // tag, step, width, height
  const io::EventFileReader reader(files[0]);
  for (const io::Event& e : reader.events())
    for (const io::SummaryValue& v : e.values)
      if (v.plugin_name == "images") {
        REQUIRE(v.strings.size() == 3);
        images.emplace_back(v.tag, e.step, v.strings[0], v.strings[1]);
      }
  // hidden/kernel (1, 3) squeezes to a bias-like vector: 1 wide, 3 high; out/bias (1,) squeezes to a scalar:
  // no image, as in Keras.
  const std::vector<std::tuple<std::string, int64_t, std::string, std::string>> expected = {
      {"hidden/kernel/image", 0, "1", "3"}, {"hidden/bias/image", 0, "1", "3"}, {"out/kernel/image", 0, "1", "3"},
      {"hidden/kernel/image", 1, "1", "3"}, {"hidden/bias/image", 1, "1", "3"}, {"out/kernel/image", 1, "1", "3"}};
  CHECK(images == expected);
}

// Writes a log directory with every kind of summary for check_summaries_with_tensorboard.py (run by its tag;
// EMBER_TENSORBOARD_CHECK_DIR names the directory, by default <temp>/ember_tensorboard_check).
TEST_CASE("TensorBoard: write logs for the check with real TensorBoard", "[.tensorboard_logs]") {
  const char* env = std::getenv("EMBER_TENSORBOARD_CHECK_DIR");
  const fs::path dir = env ? fs::path(env) : fs::temp_directory_path() / "ember_tensorboard_check";
  fs::remove_all(dir);
  const Tensor x = ops::reshape(ops::range(0, 8 * 36, 1, DType::Float32) / 288.0, {8, 6, 6, 1});
  const Tensor y = ops::reshape(ops::range(0, 8, 1, DType::Float32) / 8.0, {8, 1});
  Sequential model({layers::Input({6, 6, 1}), layers::Conv2D(3, 3, {.name = "conv"}), layers::Flatten(),
                    layers::Dense(4, {.activation = "relu", .name = "hidden"}), layers::Dense(1, {.name = "out"})});
  model.compile({.optimizer = optimizers::SGD(), .loss = "mse"});
  model.fit(x, y,
            {.batch_size = 4,
             .epochs = 2,
             .verbose = 0,
             .callbacks = {callbacks::TensorBoard(dir.string(), {.histogram_freq = 1, .write_images = true})}});
  io::EventFileWriter notes((dir / "notes").string());
  notes.add_text("notes/run", "A **small** run: `conv` kernels as images, café ✓", 0);
  std::vector<float> rgb(2 * 4 * 5 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = float(i % 17) / 16.0f;
  notes.add_image("notes/rgb", rgb, {2, 4, 5, 3}, 0);
  notes.close();
  std::cout << "TensorBoard logs written to " << dir.string() << "\n";
}
