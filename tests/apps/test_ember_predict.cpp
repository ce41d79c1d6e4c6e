// apps/ember_predict, run in-process through its command line (apps/predict.h): Keras's own files give Keras's
// predictions (tests/fixtures/checkpoints/), a model Ember saved round-trips through .npy and CSV, IDX and image
// inputs take the model's shape, --top-k ranks classes, and every bad input is a message and exit status 1.
#include <catch2/catch.hpp>

#include <fstream>
#include <iomanip>
#include <sstream>

#include "apps/predict.h"
#include "framework/ember.h"
#include "framework/io/hdf5_file.h"
#include "framework/io/image_file.h"
#include "framework/io/npy.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using Catch::Matchers::Contains;
using testing::TempDir;

namespace {

struct PredictRun {
  int status;
  std::string out, err;
};

PredictRun predict_cli(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"ember_predict"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int status = predict_app::ember_predict_main(static_cast<int>(argv.size()), argv.data(), out, err);
  return {status, out.str(), err.str()};
}

std::string ckpt(const std::string& name) { return testing::fixture_path("checkpoints/" + name).string(); }
std::string pfix(const std::string& name) { return testing::fixture_path("predict/" + name).string(); }

double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto va = ops::cast(a, DType::Float64).to_vector<double>(), vb = ops::cast(b, DType::Float64).to_vector<double>();
  double d = 0;
  for (size_t i = 0; i < va.size(); ++i) d = std::max(d, std::abs(va[i] - vb[i]));
  return d;
}

// The printed CSV lines as a (lines, values) float64 tensor.
Tensor parse_csv(const std::string& text) {
  std::istringstream in(text);
  std::vector<double> values;
  int64_t rows = 0;
  std::string line, field;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    while (std::getline(ss, field, ',')) values.push_back(std::stod(field));
    ++rows;
  }
  REQUIRE(rows > 0);
  return Tensor::from_vector(values, Shape{rows, static_cast<int64_t>(values.size()) / rows});
}

// A small softmax classifier Ember builds and saves: 3 features, 4 classes.
std::string save_classifier(const TempDir& dir, Sequential& model) {
  model.add(layers::Input({3}));
  model.add(layers::Dense(5, {.activation = "relu"}));
  model.add(layers::Dense(4, {.activation = "softmax", .name = "probs"}));
  const std::string path = dir.file("classifier.keras");
  model.save(path);
  return path;
}

const std::vector<float> kRows = {0.5f, -1, 2, 1, 1, 1, -0.25f, 0, 3, 4, -2, 0.125f, 0, 0, 0};

}  // namespace

TEST_CASE("ember_predict gives Keras's predictions for the files Keras saved", "[apps][predict]") {
  TempDir dir("predict_keras");
  for (const std::string name : {"mlp", "functional", "cnn"}) {
    io::H5Group io_file = io::H5File::open_read(ckpt(name + "_io.h5")).root();
    std::vector<std::string> inputs;
    for (int i = 0; io_file.has_dataset("x" + std::to_string(i)); ++i) {
      inputs.push_back(dir.file(name + "_x" + std::to_string(i) + ".npy"));
      io::write_npy(inputs.back(), io_file.read_dataset("x" + std::to_string(i)));
    }
    const Tensor y = io_file.read_dataset("y");
    for (const std::string suffix : {".keras", ".h5", "_tfk.h5"}) {
      INFO(name + suffix);
      const std::string out = dir.file(name + "_y.npy");
      std::vector<std::string> args = {ckpt(name + suffix)};
      args.insert(args.end(), inputs.begin(), inputs.end());
      // 4 samples in batches of 3: the last batch is partial.
      args.insert(args.end(), {"-o", out, "--batch-size", "3", "--device", "cpu"});
      const PredictRun r = predict_cli(args);
      INFO(r.err);
      REQUIRE(r.status == 0);
      CHECK(r.out.empty());
      CHECK(max_diff(io::read_npy(out), y) < 1e-5);
    }
  }
}

TEST_CASE("ember_predict reads a weights file with the architecture in --config", "[apps][predict]") {
  TempDir dir("predict_weights");
  Model keras = models::load_model(ckpt("functional.keras"), {.compile = false});
  const std::string config = dir.file("functional.json");
  std::ofstream(config) << keras.to_json();
  io::H5Group io_file = io::H5File::open_read(ckpt("functional_io.h5")).root();
  const std::string x0 = dir.file("x0.npy"), x1 = dir.file("x1.npy"), out = dir.file("y.npy");
  io::write_npy(x0, io_file.read_dataset("x0"));
  io::write_npy(x1, io_file.read_dataset("x1"));
  const PredictRun r = predict_cli({ckpt("functional.weights.h5"), x0, x1, "--config", config, "-o", out});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(max_diff(io::read_npy(out), io_file.read_dataset("y")) < 1e-5);

  const PredictRun no_config = predict_cli({ckpt("functional.weights.h5"), x0, x1});
  CHECK(no_config.status == 1);
  CHECK_THAT(no_config.err, Contains("weights only") && Contains("--config"));
  const PredictRun legacy_weights = predict_cli({ckpt("functional_tfk_weights.h5"), x0, x1});
  CHECK(legacy_weights.status == 1);
  CHECK_THAT(legacy_weights.err, Contains("weights-only") && Contains("--config"));
}

TEST_CASE("ember_predict round-trips a model Ember saved through CSV and .npy", "[apps][predict]") {
  TempDir dir("predict_csv");
  Sequential model;
  const std::string path = save_classifier(dir, model);
  const Tensor x = Tensor::from_vector(kRows, Shape{5, 3});
  const Tensor want = model.predict(x, {.verbose = 0});

  const std::string csv = dir.file("x.csv");
  {
    std::ofstream f(csv);
    f << "sepal,petal,stem\n";  // a header line is skipped
    const std::vector<float> v = kRows;
    for (int i = 0; i < 5; ++i) f << v[3 * i] << ", " << v[3 * i + 1] << "," << v[3 * i + 2] << "\r\n";
  }
  const PredictRun printed = predict_cli({path, csv});
  INFO(printed.err);
  REQUIRE(printed.status == 0);
  CHECK(max_diff(parse_csv(printed.out), want) < 1e-6);

  const std::string out_csv = dir.file("y.csv");
  REQUIRE(predict_cli({path, csv, "-o", out_csv}).status == 0);
  std::ifstream written(out_csv);
  CHECK(std::string((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>()) == printed.out);

  const std::string npy = dir.file("x.npy"), out_npy = dir.file("y.npy");
  io::write_npy(npy, ops::cast(x, DType::Float64));  // any numeric dtype is cast to the input's
  REQUIRE(predict_cli({path, npy, "--output", out_npy}).status == 0);
  const Tensor got = io::read_npy(out_npy);
  CHECK(got.dtype() == DType::Float32);
  CHECK(max_diff(got, want) < 1e-6);

  // One sample without its batch axis.
  const std::string one = dir.file("one.npy");
  io::write_npy(one, Tensor::from_vector<float>({0.5f, -1, 2}));
  const PredictRun single = predict_cli({path, one});
  REQUIRE(single.status == 0);
  CHECK(max_diff(parse_csv(single.out), ops::slice(want, {0, 0}, {1, -1})) < 1e-6);
}

TEST_CASE("ember_predict writes one file per output of a multi-output model", "[apps][predict]") {
  TempDir dir("predict_multi");
  Tensor in = layers::Input({3}, {.name = "features"});
  Tensor a = layers::Dense(2, {.name = "score"})(in);
  Tensor b = layers::Dense(1, {.activation = "sigmoid", .name = "flag"})(in);
  Model model(in, std::vector<Tensor>{a, b});
  const std::string path = dir.file("multi.h5");
  model.save(path);
  const std::string x = dir.file("x.npy");
  io::write_npy(x, Tensor::from_vector(kRows, Shape{5, 3}));
  const std::vector<Tensor> want = model.predict_outputs({Tensor::from_vector(kRows, Shape{5, 3})}, {.verbose = 0});
  const PredictRun r = predict_cli({path, x, "-o", dir.file("y.npy")});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(max_diff(io::read_npy(dir.file("y_score.npy")), want[0]) < 1e-6);
  CHECK(max_diff(io::read_npy(dir.file("y_flag.npy")), want[1]) < 1e-6);
  const PredictRun printed = predict_cli({path, x});
  CHECK_THAT(printed.out, Contains("# output 'score' (5, 2)") && Contains("# output 'flag' (5, 1)"));
}

TEST_CASE("ember_predict --top-k ranks classes, with names from --labels", "[apps][predict]") {
  TempDir dir("predict_topk");
  Sequential model;
  const std::string path = save_classifier(dir, model);
  const std::string npy = dir.file("x.npy");
  const Tensor x = Tensor::from_vector(kRows, Shape{5, 3});
  io::write_npy(npy, x);
  const std::vector<float> p = model.predict(x, {.verbose = 0}).to_vector<float>();

  const PredictRun r = predict_cli({path, npy, "--top-k", "2"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::istringstream lines(r.out);
  std::string line;
  for (int i = 0; i < 5; ++i) {
    REQUIRE(std::getline(lines, line));
    const auto row = p.begin() + 4 * i;
    const int best = static_cast<int>(std::max_element(row, row + 4) - row);
    std::ostringstream prob;
    prob << std::fixed << std::setprecision(4) << row[best];
    CHECK_THAT(line, Catch::StartsWith(std::to_string(i) + ": " + std::to_string(best) + " (" + prob.str() + "), "));
  }

  const std::string labels = dir.file("labels.txt");
  std::ofstream(labels) << "cat\ndog\nbird\nfish\n";
  const PredictRun named = predict_cli({path, npy, "--top-k", "9", "--labels", labels});  // k beyond 4: all 4
  REQUIRE(named.status == 0);
  std::getline(std::istringstream(named.out), line);
  for (const std::string name : {"cat", "dog", "bird", "fish"}) CHECK_THAT(line, Contains(name + " ("));

  std::ofstream(labels) << "cat\ndog\n";
  const PredictRun short_labels = predict_cli({path, npy, "--top-k", "1", "--labels", labels});
  CHECK(short_labels.status == 1);
  CHECK_THAT(short_labels.err, Contains("2 names") && Contains("'probs' has 4 classes"));

  // Logits (the fixture MLP ends in a linear Dense): softmax makes them probabilities.
  io::H5Group io_file = io::H5File::open_read(ckpt("mlp_io.h5")).root();
  const std::string mlp_x = dir.file("mlp_x.npy");
  io::write_npy(mlp_x, io_file.read_dataset("x0"));
  const PredictRun logits = predict_cli({ckpt("mlp.keras"), mlp_x, "--top-k", "4"});
  REQUIRE(logits.status == 0);
  std::istringstream logit_lines(logits.out);
  std::getline(logit_lines, line);
  double sum = 0;
  for (size_t at = line.find('('); at != std::string::npos; at = line.find('(', at + 1)) sum += std::stod(line.substr(at + 1));
  CHECK(sum == Approx(1).margin(1e-3));
}

TEST_CASE("ember_predict reads IDX files and PNG images in the model's input shape", "[apps][predict]") {
  TempDir dir("predict_images");
  Model cnn = models::load_model(ckpt("cnn.keras"), {.compile = false});  // input (None, 12, 12, 1), 10 classes
  const std::string png = pfix("gray12.png");
  const Tensor pixels = ops::cast(io::decode_image(png, 1), DType::Float32);

  const PredictRun one = predict_cli({ckpt("cnn.keras"), png});
  INFO(one.err);
  REQUIRE(one.status == 0);
  const Tensor want = cnn.predict(ops::reshape(pixels, {1, 12, 12, 1}), {.verbose = 0});
  CHECK(max_diff(parse_csv(one.out), want) < 1e-5);
  // Several images make one batch; images of different sizes cannot.
  const PredictRun two = predict_cli({ckpt("cnn.keras"), png, png});
  REQUIRE(two.status == 0);
  CHECK(parse_csv(two.out).shape() == Shape{2, 10});
  const PredictRun sizes = predict_cli({ckpt("cnn.keras"), png, pfix("rgb.png")});
  CHECK(sizes.status == 1);
  CHECK_THAT(sizes.err, Contains("rgb.png") && Contains("(4, 5, 1)") && Contains("one size"));

  // An IDX file of two 12x12 images, (2, 12, 12), fills (None, 12, 12, 1); --scale multiplies the pixels.
  const std::string idx = dir.file("images-idx3-ubyte");
  {
    std::ofstream f(idx, std::ios::binary);
    const unsigned char header[] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 12, 0, 0, 0, 12};
    f.write(reinterpret_cast<const char*>(header), sizeof header);
    const std::vector<uint8_t> bytes = ops::cast(pixels, DType::UInt8).to_vector<uint8_t>();
    for (int copy = 0; copy < 2; ++copy) f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const PredictRun from_idx = predict_cli({ckpt("cnn.keras"), idx, "--scale", "0.5"});
  INFO(from_idx.err);
  REQUIRE(from_idx.status == 0);
  const Tensor half = cnn.predict(ops::reshape(pixels * 0.5, {1, 12, 12, 1}), {.verbose = 0});
  CHECK(max_diff(parse_csv(from_idx.out), ops::concat({half, half}, 0)) < 1e-5);
}

TEST_CASE("ember_predict reads JPEG files with the channels of the model's input", "[apps][predict]") {
  TempDir dir("predict_jpeg");
  const std::string jpg = pfix("rgb.jpg");
  const Tensor pixels = ops::cast(io::decode_image(jpg, 3), DType::Float32);
  random::set_seed(5);
  Sequential model({layers::Input(pixels.shape()), layers::Flatten(), layers::Dense(3)});
  const std::string path = dir.file("rgb_model.keras");
  model.save(path);
  const PredictRun r = predict_cli({path, jpg, jpg});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const Tensor one = model.predict(ops::reshape(pixels, {1, pixels.shape()[0], pixels.shape()[1], 3}), {.verbose = 0});
  CHECK(max_diff(parse_csv(r.out), ops::concat({one, one}, 0)) < 1e-4);
}

TEST_CASE("ember_predict --device gpu gives the CPU's predictions, or says no GPU is visible",
          "[apps][predict][cuda]") {
  TempDir dir("predict_gpu");
  io::H5Group io_file = io::H5File::open_read(ckpt("mlp_io.h5")).root();
  const std::string x = dir.file("x.npy");
  io::write_npy(x, io_file.read_dataset("x0"));
  const PredictRun r = predict_cli({ckpt("mlp.keras"), x, "--device", "gpu"});
  if (device_count(DeviceType::CUDA) == 0) {
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains("--device gpu") && Contains("no CUDA GPU is visible"));
    return;
  }
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(max_diff(parse_csv(r.out), io_file.read_dataset("y")) < 1e-4);
}

TEST_CASE("ember_predict explains bad models, inputs and flags", "[apps][predict]") {
  TempDir dir("predict_errors");
  const std::string x6 = dir.file("x6.npy");
  io::write_npy(x6, Tensor::from_vector(std::vector<float>(12, 0.5f), Shape{2, 6}));

  // The wrong number of input files names the inputs.
  PredictRun r = predict_cli({ckpt("functional.keras"), x6});
  CHECK(r.status == 1);
  CHECK(r.err == "ember_predict: model 'functional' has 2 inputs (in_a, in_b), given 1 input files; give one file per "
                 "input, in this order\n");
  // A shape that does not fit names the input, the file, the shape read and the shape expected.
  r = predict_cli({ckpt("mlp.keras"), pfix("f8.npy")});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("input 'input_layer' from " + pfix("f8.npy")) && Contains("got shape (2, 3)") &&
                        Contains("expects (None, 16)"));
  r = predict_cli({ckpt("cnn.keras"), pfix("u1.npy")});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("got shape (2, 2, 3)") && Contains("expects (None, 12, 12, 1)"));

  // Missing, corrupt and unknown files.
  r = predict_cli({dir.file("missing.keras"), x6});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("missing.keras"));
  r = predict_cli({pfix("f8.npy"), x6});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("f8.npy"));
  r = predict_cli({ckpt("mlp.keras"), pfix("rgb.png")});  // an image where the input is not one
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("expects (None, 16)"));
  const std::string junk = dir.file("junk.npy");
  std::ofstream(junk) << "not numpy";
  r = predict_cli({ckpt("mlp.keras"), junk});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("junk.npy is not a .npy file"));
  r = predict_cli({ckpt("mlp.keras"), dir.file("x.parquet")});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("unknown input format"));
  const std::string bad_csv = dir.file("bad.csv");
  std::ofstream(bad_csv) << "1,2\n3,oops\n";
  r = predict_cli({ckpt("mlp.keras"), bad_csv});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("bad.csv line 2: 'oops' is not a number"));
  r = predict_cli({ckpt("functional.keras"), x6, x6, "-o", dir.file("y.txt")});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("must end in .npy or .csv"));
  r = predict_cli({ckpt("functional.keras"), x6, x6, "--config", dir.file("missing.json")});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("missing.json"));

  // Flags CLI11 refuses.
  CHECK(predict_cli({ckpt("mlp.keras")}).status != 0);
  CHECK(predict_cli({ckpt("mlp.keras"), x6, "--device", "tpu"}).status != 0);
  CHECK(predict_cli({ckpt("mlp.keras"), x6, "--batch-size", "0"}).status != 0);
  CHECK(predict_cli({ckpt("mlp.keras"), x6, "--labels", x6}).status != 0);  // --labels needs --top-k
}
