// The C API (include/ember_c.h): models Keras and Ember saved load and predict what Keras and Ember predict;
// their inputs and outputs are described; every failure is a status and a message, never an exception.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <thread>

#include "ember_c.h"
#include "framework/ember.h"
#include "framework/io/hdf5_file.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

std::string capi_fixture(const std::string& name) { return testing::fixture_path("checkpoints/" + name).string(); }

// Predicts with the C API on float tensors and returns the outputs as tensors of the model's output shapes.
std::vector<Tensor> capi_predict(EmberModel* model, const std::vector<Tensor>& xs) {
  const int64_t batch = xs.at(0).shape()[0];
  std::vector<std::vector<float>> in, out;
  std::vector<const float*> in_ptrs;
  std::vector<float*> out_ptrs;
  std::vector<size_t> in_sizes, out_sizes;
  for (const Tensor& x : xs) {
    in.push_back(x.to_vector<float>());
    in_ptrs.push_back(in.back().data());
    in_sizes.push_back(in.back().size());
  }
  size_t num_outputs = 0;
  REQUIRE(ember_model_num_outputs(model, &num_outputs) == EMBER_OK);
  out.resize(num_outputs);
  std::vector<Shape> shapes;
  for (size_t j = 0; j < num_outputs; ++j) {
    size_t n = 0;
    REQUIRE(ember_model_output_size(model, j, batch, &n) == EMBER_OK);
    out[j].assign(n, NAN);
    out_ptrs.push_back(out[j].data());
    out_sizes.push_back(n);
    const int64_t* dims = nullptr;
    size_t rank = 0;
    REQUIRE(ember_model_output_shape(model, j, &dims, &rank) == EMBER_OK);
    std::vector<int64_t> d(dims, dims + rank);
    d[0] = batch;
    shapes.emplace_back(d);
  }
  const EmberStatus s = ember_model_predict(model, batch, in_ptrs.data(), in_sizes.data(), out_ptrs.data(), out_sizes.data());
  INFO(ember_last_error());
  REQUIRE(s == EMBER_OK);
  std::vector<Tensor> ys;
  for (size_t j = 0; j < num_outputs; ++j) ys.push_back(Tensor::from_vector(out[j], shapes[j]));
  return ys;
}

double capi_max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
  double d = 0;
  for (size_t i = 0; i < va.size(); ++i) d = std::max(d, static_cast<double>(std::abs(va[i] - vb[i])));
  return d;
}

struct ModelHandle {
  EmberModel* m = nullptr;
  ~ModelHandle() { ember_model_free(m); }
};

}  // namespace

TEST_CASE("C API: Keras's files predict what Keras predicted", "[c_api]") {
  for (const std::string name : {"mlp", "functional", "cnn"}) {
    io::H5Group io_file = io::H5File::open_read(capi_fixture(name + "_io.h5")).root();
    std::vector<Tensor> xs;
    for (int i = 0; io_file.has_dataset("x" + std::to_string(i)); ++i) xs.push_back(io_file.read_dataset("x" + std::to_string(i)));
    for (const std::string suffix : {".keras", ".h5", "_tfk.h5"}) {
      INFO(name + suffix);
      ModelHandle h;
      REQUIRE(ember_model_load(capi_fixture(name + suffix).c_str(), &h.m) == EMBER_OK);
      CHECK(capi_max_diff(capi_predict(h.m, xs)[0], io_file.read_dataset("y")) < 1e-5);
    }
  }
}

TEST_CASE("C API: a model's inputs and outputs are described", "[c_api]") {
  ModelHandle h;
  REQUIRE(ember_model_load(capi_fixture("functional.keras").c_str(), &h.m) == EMBER_OK);
  size_t n_in = 0, n_out = 0;
  REQUIRE(ember_model_num_inputs(h.m, &n_in) == EMBER_OK);
  REQUIRE(ember_model_num_outputs(h.m, &n_out) == EMBER_OK);
  CHECK(n_in == 2);
  CHECK(n_out == 1);
  const char* name = nullptr;
  REQUIRE(ember_model_input_name(h.m, 1, &name) == EMBER_OK);
  CHECK(std::string(name) == "in_b");
  REQUIRE(ember_model_output_name(h.m, 0, &name) == EMBER_OK);
  CHECK(std::string(name) == "dense_5");
  EmberDType dtype = EMBER_BOOL;
  REQUIRE(ember_model_input_dtype(h.m, 0, &dtype) == EMBER_OK);
  CHECK(dtype == EMBER_FLOAT32);
  REQUIRE(ember_model_output_dtype(h.m, 0, &dtype) == EMBER_OK);
  CHECK(dtype == EMBER_FLOAT32);
  const int64_t* dims = nullptr;
  size_t rank = 0;
  REQUIRE(ember_model_input_shape(h.m, 0, &dims, &rank) == EMBER_OK);
  CHECK(std::vector<int64_t>(dims, dims + rank) == std::vector<int64_t>{-1, 6});
  REQUIRE(ember_model_output_shape(h.m, 0, &dims, &rank) == EMBER_OK);
  CHECK(std::vector<int64_t>(dims, dims + rank) == std::vector<int64_t>{-1, 3});
  size_t count = 0;
  REQUIRE(ember_model_input_size(h.m, 0, 5, &count) == EMBER_OK);
  CHECK(count == 30);
  REQUIRE(ember_model_output_size(h.m, 0, 5, &count) == EMBER_OK);
  CHECK(count == 15);
  CHECK(std::string(ember_version()) == "0.1.0");
  CHECK(std::string(ember_status_name(EMBER_DATA_LOSS)) == "EMBER_DATA_LOSS");
}

TEST_CASE("C API: models Ember saved, whole or as weights with their JSON, round-trip", "[c_api]") {
  testing::TempDir dir("c_api");
  Tensor in = layers::Input({4}, {.name = "pixels"});
  Tensor hidden = layers::Dense(8, {.activation = "tanh"})(in);
  Model model(in, layers::Dense(3, {.activation = "softmax", .name = "classes"})(hidden));
  const Tensor x = Tensor::from_vector<float>({0.1f, -0.2f, 0.3f, 0.4f, 1, 2, -3, 0.5f, 0, 0, 0, 0}, Shape{3, 4});
  const Tensor want = model.predict(x, {.verbose = 0});
  model.save(dir.file("m.h5"));
  model.save_weights(dir.file("m.weights.h5"));
  std::ofstream(dir.file("m.json")) << model.to_json();

  ModelHandle whole, parts;
  REQUIRE(ember_model_load(dir.file("m.h5").c_str(), &whole.m) == EMBER_OK);
  CHECK(capi_max_diff(capi_predict(whole.m, {x})[0], want) < 1e-6);
  REQUIRE(ember_model_load_weights(dir.file("m.json").c_str(), dir.file("m.weights.h5").c_str(), &parts.m) == EMBER_OK);
  CHECK(capi_max_diff(capi_predict(parts.m, {x})[0], want) < 1e-6);
  const char* name = nullptr;
  REQUIRE(ember_model_output_name(parts.m, 0, &name) == EMBER_OK);
  CHECK(std::string(name) == "classes");
}

TEST_CASE("C API: failures are statuses with messages", "[c_api]") {
  testing::TempDir dir("c_api_errors");
  EmberModel* m = reinterpret_cast<EmberModel*>(0x1);
  CHECK(ember_model_load(dir.file("missing.keras").c_str(), &m) == EMBER_NOT_FOUND);
  CHECK(m == nullptr);
  CHECK_THAT(ember_last_error(), Contains("missing.keras"));
  std::ofstream(dir.file("junk.keras")) << "not a model";
  CHECK(ember_model_load(dir.file("junk.keras").c_str(), &m) == EMBER_DATA_LOSS);
  CHECK_THAT(ember_last_error(), Contains("junk.keras"));
  CHECK(ember_model_load(nullptr, &m) == EMBER_INVALID_ARGUMENT);
  CHECK_THAT(ember_last_error(), Contains("ember_model_load: path is NULL"));
  CHECK(ember_model_load_weights(dir.file("missing.json").c_str(), capi_fixture("functional.weights.h5").c_str(), &m) ==
        EMBER_NOT_FOUND);
  std::ofstream(dir.file("bad.json")) << "{\"class_name\": \"Functional\"";
  CHECK(ember_model_load_weights(dir.file("bad.json").c_str(), capi_fixture("functional.weights.h5").c_str(), &m) != EMBER_OK);
  CHECK(m == nullptr);
  ember_model_free(nullptr);

  ModelHandle h;
  REQUIRE(ember_model_load(capi_fixture("functional.keras").c_str(), &h.m) == EMBER_OK);
  size_t count = 0;
  CHECK(ember_model_num_inputs(nullptr, &count) == EMBER_INVALID_ARGUMENT);
  CHECK(ember_model_num_inputs(h.m, nullptr) == EMBER_INVALID_ARGUMENT);
  const char* name = nullptr;
  CHECK(ember_model_input_name(h.m, 2, &name) == EMBER_INVALID_ARGUMENT);
  CHECK_THAT(ember_last_error(), Contains("input 2 does not exist; the model has 2 inputs"));
  CHECK(ember_model_output_size(h.m, 0, 0, &count) == EMBER_INVALID_ARGUMENT);
  CHECK_THAT(ember_last_error(), Contains("batch_size must be positive"));

  // Buffers of the wrong size name the input and both sizes, and leave the outputs alone.
  std::vector<float> a(12, 0.5f), b(10, 0.5f), y(6, -7.0f);
  const float* inputs[] = {a.data(), b.data()};
  size_t input_sizes[] = {12, 10};
  float* outputs[] = {y.data()};
  size_t output_sizes[] = {6};
  CHECK(ember_model_predict(h.m, 2, inputs, input_sizes, outputs, output_sizes) == EMBER_INVALID_ARGUMENT);
  CHECK_THAT(ember_last_error(), Contains("input 1 ('in_b', shape (None, 6)) holds 12 floats for a batch of 2; given 10"));
  CHECK(y == std::vector<float>(6, -7.0f));
  b.assign(12, 0.5f);  // now as long as the size given for it
  inputs[1] = b.data();
  input_sizes[1] = 12;
  output_sizes[0] = 5;
  CHECK(ember_model_predict(h.m, 2, inputs, input_sizes, outputs, output_sizes) == EMBER_INVALID_ARGUMENT);
  CHECK_THAT(ember_last_error(), Contains("output 0 ('dense_5'") && Contains("given room for 5"));
  CHECK(ember_model_predict(h.m, 2, nullptr, input_sizes, outputs, output_sizes) == EMBER_INVALID_ARGUMENT);
  output_sizes[0] = 6;
  REQUIRE(ember_model_predict(h.m, 2, inputs, input_sizes, outputs, output_sizes) == EMBER_OK);
  CHECK(y != std::vector<float>(6, -7.0f));

  // The message belongs to the thread whose call failed.
  std::string other;
  std::thread([&] { other = ember_last_error(); }).join();
  CHECK(other.empty());
  CHECK_THAT(ember_last_error(), Contains("NULL"));
}
