// Training on the GPU against the CPU: the Fashion-MNIST MLP (784-256-256-10) and a small CNN trained 50
// Adam steps from the same initial weights on the same batches (random images, labels from a fixed random
// teacher so there is something to learn), TF32 off: per-step losses and final weights agree. Under
// mixed_float16 on the GPU the loss goes down. Weights saved on one device load on the other and predict
// alike. All [cuda]: skipped without a GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::TempDir;

namespace {

constexpr Device kCpu = Device::cpu();
constexpr Device kGpu = Device::cuda(0);
constexpr int kSteps = 50;
constexpr int64_t kBatch = 64;
constexpr int64_t kSamples = 512;  // 8 batches, cycled

#define EMBER_CUDA_OR_SKIP()                                                    \
  if (device_count(DeviceType::CUDA) == 0) {                                    \
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");      \
    return;                                                                     \
  }

struct Tf32Scope {
  bool old = config::tensor_float_32_execution_enabled();
  explicit Tf32Scope(bool on) { config::enable_tensor_float_32_execution(on); }
  ~Tf32Scope() { config::enable_tensor_float_32_execution(old); }
};

// Sets the global policy for one test and restores it even when a check throws.
struct PolicyScope {
  mixed_precision::Policy old = mixed_precision::global_policy();
  explicit PolicyScope(const std::string& name) { mixed_precision::set_global_policy(name); }
  ~PolicyScope() { mixed_precision::set_global_policy(old); }
};

using Builder = std::function<std::unique_ptr<Sequential>()>;

std::unique_ptr<Sequential> mlp() {
  return std::make_unique<Sequential>(std::vector<SequentialEntry>{
      layers::Input({784}), layers::Dense(256, {.activation = "relu"}), layers::Dense(256, {.activation = "relu"}),
      layers::Dense(10, {.dtype = "float32"})});
}

std::unique_ptr<Sequential> cnn() {
  return std::make_unique<Sequential>(std::vector<SequentialEntry>{
      layers::Input({28, 28, 1}), layers::Conv2D(32, 3, {.activation = "relu"}), layers::MaxPooling2D(2),
      layers::Flatten(), layers::Dense(10, {.dtype = "float32"})});
}

// Images in [0, 1) and labels from a random linear teacher, on the CPU.
struct Data {
  Tensor x, y;
};
Data make_data(const Shape& image, uint64_t seed) {
  DeviceScope on(kCpu);
  std::vector<int64_t> dims = {kSamples};
  dims.insert(dims.end(), image.begin(), image.end());
  const Tensor x = random::uniform(Shape(dims), {.seed = seed});
  const Tensor flat = ops::reshape(x, {kSamples, -1});
  const Tensor teacher = random::normal({flat.shape()[1], 10}, {.seed = seed + 1});
  const Tensor logits = ops::matmul(flat - 0.5, teacher);
  return {x, ops::argmax(logits, -1, DType::Int64)};
}

void compile(Model& m) {
  m.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-3}),
             .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
}

// Fresh initial weights of the architecture, made on the CPU.
std::vector<Tensor> initial_weights(const Builder& build, uint64_t seed) {
  DeviceScope on(kCpu);
  backend::clear_session();
  random::set_seed(seed);
  return build()->get_weights();
}

struct Trained {
  std::vector<double> losses;
  std::vector<Tensor> weights;  // on the CPU
};

// kSteps train_on_batch steps on `device` from the given weights, batches in order.
Trained train(const Builder& build, const std::vector<Tensor>& init, const Data& d, Device device) {
  DeviceScope on(device);
  backend::clear_session();
  std::unique_ptr<Sequential> m = build();
  m->set_weights(init);
  compile(*m);
  const Tensor x = d.x.to(device), y = d.y.to(device);
  Trained t;
  for (int s = 0; s < kSteps; ++s) {
    const int64_t b = (s * kBatch) % kSamples;
    t.losses.push_back(m->train_on_batch(x.slice_rows(b, b + kBatch), y.slice_rows(b, b + kBatch)).at("loss"));
  }
  for (const Tensor& w : m->get_weights()) {
    CHECK(w.device() == device);
    t.weights.push_back(w.to(kCpu));
  }
  return t;
}

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// GPU training tracks the CPU's: each step's loss within 1e-3 (relative), each weight within 2e-3 of the
// CPU's (Adam moves a weight by at most about lr = 1e-3 a step), and the whole difference within 1% of
// how far training moved the weights.
void check_parity(const Builder& build, const Shape& image, uint64_t seed) {
  Tf32Scope tf32(false);
  const Data d = make_data(image, seed);
  const std::vector<Tensor> init = initial_weights(build, seed + 2);
  const Trained cpu = train(build, init, d, kCpu);
  const Trained gpu = train(build, init, d, kGpu);
  REQUIRE(gpu.losses.size() == cpu.losses.size());
  for (size_t s = 0; s < cpu.losses.size(); ++s) {
    INFO("step " << s << ": cpu loss " << cpu.losses[s] << ", gpu loss " << gpu.losses[s]);
    CHECK(std::isfinite(gpu.losses[s]));
    CHECK(std::abs(gpu.losses[s] - cpu.losses[s]) <= 1e-3 * std::abs(cpu.losses[s]) + 1e-5);
  }
  CHECK(cpu.losses.back() < cpu.losses.front());
  REQUIRE(gpu.weights.size() == cpu.weights.size());
  for (size_t i = 0; i < cpu.weights.size(); ++i) {
    const std::vector<double> a = testing::values_as_double(cpu.weights[i]);
    const std::vector<double> b = testing::values_as_double(gpu.weights[i]);
    const std::vector<double> w0 = testing::values_as_double(init[i]);
    REQUIRE(a.size() == b.size());
    std::vector<double> diff(a.size()), moved(a.size());
    double worst = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      diff[k] = b[k] - a[k];
      moved[k] = a[k] - w0[k];
      worst = std::max(worst, std::abs(diff[k]));
    }
    INFO("weight " << i << " " << cpu.weights[i].shape() << ": largest difference " << worst << ", |gpu - cpu| "
                   << norm(diff) << ", |cpu - initial| " << norm(moved));
    CHECK(worst <= 2e-3);
    CHECK(norm(diff) <= 1e-2 * norm(moved) + 1e-6);
  }
}

// Under mixed_float16 (float16 compute, float32 variables, loss scaling) the GPU run learns.
void check_mixed_float16_learns(const Builder& build, const Shape& image, uint64_t seed) {
  PolicyScope policy("mixed_float16");
  const Data d = make_data(image, seed);
  DeviceScope on(kGpu);
  backend::clear_session();
  random::set_seed(seed + 2);
  std::unique_ptr<Sequential> m = build();
  compile(*m);
  CHECK(m->optimizer().class_name() == "LossScaleOptimizer");
  const Tensor x = d.x.to(kGpu), y = d.y.to(kGpu);
  std::vector<double> losses;
  for (int s = 0; s < kSteps; ++s) {
    const int64_t b = (s * kBatch) % kSamples;
    losses.push_back(m->train_on_batch(x.slice_rows(b, b + kBatch), y.slice_rows(b, b + kBatch)).at("loss"));
  }
  double last = 0;
  for (int s = kSteps - 8; s < kSteps; ++s) last += losses[static_cast<size_t>(s)] / 8;  // the last pass over the data
  INFO("first loss " << losses.front() << ", mean of the last 8 " << last);
  CHECK(std::isfinite(last));
  CHECK(last < 0.9 * losses.front());
  for (const Tensor& w : m->get_weights()) {
    CHECK(w.dtype() == DType::Float32);
    CHECK(ops::reduce_all(ops::is_finite(w)).item<bool>());
  }
}

// A model trained a few steps on `from`, saved, loaded into a fresh model on `to`: the same weights bit for
// bit and the same predictions (within float32 rounding of two backends).
void check_checkpoint_crosses(const Builder& build, const Shape& image, Device from, Device to) {
  Tf32Scope tf32(false);
  TempDir dir("cuda_ckpt");
  const std::string path = dir.file("model.weights.h5");
  const Data d = make_data(image, 7);
  Tensor saved_pred, loaded_pred;
  std::vector<Tensor> saved_w, loaded_w;
  {
    DeviceScope on(from);
    backend::clear_session();
    random::set_seed(8);
    std::unique_ptr<Sequential> m = build();
    compile(*m);
    const Tensor x = d.x.to(from), y = d.y.to(from);
    for (int s = 0; s < 3; ++s) m->train_on_batch(x.slice_rows(s * kBatch, (s + 1) * kBatch), y.slice_rows(s * kBatch, (s + 1) * kBatch));
    m->save_weights(path);
    saved_pred = m->predict(x.slice_rows(0, 100), {.verbose = 0}).to(kCpu);
    for (const Tensor& w : m->get_weights()) saved_w.push_back(w.to(kCpu));
  }
  {
    DeviceScope on(to);
    backend::clear_session();
    random::set_seed(9);  // other initial weights, all overwritten by the load
    std::unique_ptr<Sequential> m = build();
    m->load_weights(path);
    for (const Tensor& w : m->get_weights()) {
      CHECK(w.device() == to);
      loaded_w.push_back(w.to(kCpu));
    }
    loaded_pred = m->predict(d.x.slice_rows(0, 100).to(to), {.verbose = 0}).to(kCpu);
  }
  REQUIRE(loaded_w.size() == saved_w.size());
  for (size_t i = 0; i < saved_w.size(); ++i) {
    INFO("weight " << i);
    CHECK(testing::values_as_double(loaded_w[i]) == testing::values_as_double(saved_w[i]));
  }
  REQUIRE(loaded_pred.shape() == saved_pred.shape());
  const std::vector<double> a = testing::values_as_double(saved_pred), b = testing::values_as_double(loaded_pred);
  double big = 0;
  for (double v : a) big = std::max(big, std::abs(v));
  for (size_t k = 0; k < a.size(); ++k) {
    INFO("prediction element " << k << ": saved on " << from << " " << a[k] << ", loaded on " << to << " " << b[k]);
    CHECK(std::abs(a[k] - b[k]) <= 1e-5 * (std::abs(a[k]) + big));
  }
}

}  // namespace

TEST_CASE("MLP 784-256-256-10: 50 Adam steps on the GPU track the CPU (TF32 off)", "[cuda][training]") {
  EMBER_CUDA_OR_SKIP();
  check_parity(mlp, {784}, 11);
}

TEST_CASE("CNN Conv2D-MaxPooling2D-Dense: 50 Adam steps on the GPU track the CPU (TF32 off)", "[cuda][training]") {
  EMBER_CUDA_OR_SKIP();
  check_parity(cnn, {28, 28, 1}, 21);
}

TEST_CASE("mixed_float16 training on the GPU lowers the loss", "[cuda][training][mixed_precision]") {
  EMBER_CUDA_OR_SKIP();
  check_mixed_float16_learns(mlp, {784}, 31);
  check_mixed_float16_learns(cnn, {28, 28, 1}, 41);
}

TEST_CASE("weights saved on the GPU load on the CPU and predict alike, and back", "[cuda][training][checkpoint]") {
  EMBER_CUDA_OR_SKIP();
  check_checkpoint_crosses(cnn, {28, 28, 1}, kGpu, kCpu);
  check_checkpoint_crosses(cnn, {28, 28, 1}, kCpu, kGpu);
  check_checkpoint_crosses(mlp, {784}, kGpu, kCpu);
}
