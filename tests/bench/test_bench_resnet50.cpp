// bench_gpu's ResNet-50 (bench/resnet50.h) against keras.applications.ResNet50: Keras's parameter counts
// (model.summary(): 25,636,712 total, 25,583,592 trainable, 53,120 non-trainable: the batch norms' moving
// statistics) and output shape, and one CPU training step at a small size, so the GPU benchmark's model
// is checked where there is no GPU.
#include <catch2/catch.hpp>

#include <cmath>

#include "bench/resnet50.h"
#include "framework/ember.h"

using namespace ember;

namespace {

int64_t count(const std::vector<Variable>& weights) {
  int64_t n = 0;
  for (const Variable& v : weights) n += v.shape().num_elements();
  return n;
}

}  // namespace

TEST_CASE("bench ResNet-50 has keras.applications.ResNet50's parameters and output shape", "[bench][resnet50]") {
  backend::clear_session();
  const auto model = bench::resnet50();
  CHECK(model->count_params() == 25636712);
  CHECK(count(model->trainable_weights()) == 25583592);
  CHECK(count(model->non_trainable_weights()) == 53120);
  REQUIRE(model->outputs().size() == 1);
  CHECK(model->outputs()[0].shape() == Shape{-1, 1000});
  CHECK(model->compute_output_shape(Shape{2, 224, 224, 3}) == Shape{2, 1000});
}

TEST_CASE("bench ResNet-50 trains one batch of 2 at 64x64 on the CPU", "[bench][resnet50]") {
  backend::clear_session();
  random::set_seed(1);
  DeviceScope on(Device::cpu());
  const auto model = bench::resnet50({64, 64, 3}, 10);
  model->compile({.optimizer = optimizers::Adam(), .loss = losses::SparseCategoricalCrossentropy()});
  const Tensor x = random::uniform({2, 64, 64, 3}, {.seed = 2});
  const Tensor y = Tensor::from_vector<int64_t>({3, 7}, Device::cpu());
  const Logs logs = model->train_on_batch(x, y);
  const double loss = logs.at("loss");
  CHECK(std::isfinite(loss));
  CHECK(loss > 0);
  const Tensor p = model->predict(x, {.verbose = 0});
  CHECK(p.shape() == Shape{2, 10});
}
