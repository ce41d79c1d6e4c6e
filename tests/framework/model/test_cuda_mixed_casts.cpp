// Under mixed precision on the GPU, activations stay float16/bfloat16 and NHWC from layer to layer: a traced
// training step of a small ResNet (Conv2D, BatchNormalization, ReLU, Add, pooling, Dense) casts the images once
// (float32 to the compute dtype), casts no other activation but the logits into the float32 head (and their
// gradient back), transposes no activation, casts each float32 weight it computes with at most once (and its
// gradient back once), and runs its batch norms as cuDNN's kernels, under mixed_float16 with the relus and the
// residual add inside.
// Counted with an op hook over steps after warm-up. [cuda]: skipped without a GPU.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/ops/dispatch.h"

using namespace ember;

namespace {

constexpr Device kGpu = Device::cuda(0);
constexpr int64_t kBatch = 24;  // no weight has a dimension of 24, so a leading 24 marks an activation

struct PolicyScope {
  mixed_precision::Policy old = mixed_precision::global_policy();
  explicit PolicyScope(const std::string& name) { mixed_precision::set_global_policy(name); }
  ~PolicyScope() { mixed_precision::set_global_policy(old); }
};

Tensor conv_bn(const Tensor& x, int64_t filters, bool relu) {
  Tensor h = layers::Conv2D(filters, 3, {.padding = "same", .use_bias = false})(x);
  h = layers::BatchNormalization()(h);
  return relu ? layers::ReLU()(h) : h;
}

std::shared_ptr<Model> small_resnet() {
  const Tensor in = layers::Input({12, 12, 3});
  Tensor h = conv_bn(in, 16, true);
  const Tensor r = conv_bn(conv_bn(h, 16, true), 16, false);
  h = layers::ReLU()(layers::Add()(std::vector<Tensor>{h, r}));
  h = layers::MaxPooling2D(2)(h);
  h = layers::GlobalAveragePooling2D()(h);
  h = layers::Dense(32, {.activation = "relu"})(h);
  const Tensor out = layers::Dense(10, {.dtype = "float32"})(h);
  return std::make_shared<Model>(in, out, ModelOptions{.name = "mixed_casts"});
}

struct Tally {
  int image_casts = 0;             // rank-4 activations (a leading batch dimension) cast
  int other_activation_casts = 0;  // other tensors with a leading batch dimension: logits, labels
  int activation_transposes = 0;
  int weight_casts = 0;            // casts of tensors of rank >= 1 without one: weights and their gradients
  std::map<BatchNormOps, int> batch_norms;
};
Tally g_tally;

bool has_batch(const Tensor& t) { return t.rank() >= 1 && t.shape()[0] == kBatch; }

void tally(const OpRecord& r) {
  if (r.op == OpId::cast) {
    const Tensor& x = r.inputs[0];
    if (has_batch(x))
      ++(x.rank() == 4 ? g_tally.image_casts : g_tally.other_activation_casts);
    else if (x.rank() >= 1)
      ++g_tally.weight_casts;
  } else if (r.op == OpId::transpose && has_batch(r.inputs[0])) {
    ++g_tally.activation_transposes;
  } else if (r.op == OpId::fused_batch_norm) {
    ++g_tally.batch_norms[std::get<BatchNormAttrs>(r.attrs).ops];
  }
}

}  // namespace

TEST_CASE("a mixed-precision GPU training step keeps activations half precision NHWC", "[cuda][mixed_precision]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  for (const char* policy : {"mixed_float16", "mixed_bfloat16"}) {
    INFO(policy);
    DeviceScope on(kGpu);
    backend::clear_session();
    random::set_seed(5);
    std::shared_ptr<Model> m;
    {
      PolicyScope scope(policy);
      m = small_resnet();
      m->compile({.optimizer = optimizers::Adam(), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
    }
    const Tensor x = random::uniform({kBatch, 12, 12, 3});
    const Tensor y = ops::cast(random::uniform({kBatch}, {.maxval = 10}), DType::Int64);
    for (int s = 0; s < 3; ++s) m->train_on_batch(x, y);

    constexpr int kSteps = 2;
    g_tally = {};
    const int hook = add_op_hook(&tally);
    for (int s = 0; s < kSteps; ++s) m->train_on_batch(x, y);
    remove_op_hook(hook);

    int cast_weights = 0;  // float32 weights a half layer computes with: the convolutions' and Dense's
    for (const Variable& v : m->trainable_weights())
      cast_weights += v.name().find("batch_normalization") == std::string::npos;
    CHECK(g_tally.image_casts == kSteps);                 // the images, once per step
    CHECK(g_tally.other_activation_casts <= 3 * kSteps);  // the float32 head's input and its gradient, the labels
    CHECK(g_tally.activation_transposes == 0);
    CHECK(g_tally.weight_casts <= 2 * cast_weights * kSteps);  // each weight and its gradient, once
    // cuDNN fuses the relus and the residual add into the batch norms for float16 (ops::fused_batch_norm_fuses).
    const bool fused = std::string(policy) == "mixed_float16";
    CHECK(g_tally.batch_norms[BatchNormOps::Bn] == (fused ? 0 : 3 * kSteps));
    CHECK(g_tally.batch_norms[BatchNormOps::BnRelu] == (fused ? 2 * kSteps : 0));
    CHECK(g_tally.batch_norms[BatchNormOps::BnAddRelu] == (fused ? kSteps : 0));
  }
}
