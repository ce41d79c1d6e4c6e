// GPU benchmarks, each figure beside a reference measured in the same run:
// - seeds: 200 products of a 1000x1000 float32 matrix, then a host read (the sync), on the GPU against the
//   CPU (the seeds measured CPU 0.482 s, GPU 0.071 s);
// - matmul TFLOP/s at 4096 and 8192 in float32 (TF32 off and on), float16 and bfloat16 through ops::matmul,
//   against cuBLAS (cublasGemmEx) called directly on the same device buffers;
// - eager dispatch: 10,000 adds of 1-element GPU tensors, the time to enqueue them (then one sync), against
//   the same loop on the CPU;
// - training images/s at batch 256 on random 32x32x3 data (train_on_batch after warm-up) of the Keras
//   example CNN and of a small ResNet (Conv2D + BatchNormalization + ReLU blocks with Add), in float32
//   against the CPU and in mixed_float16 against float32 on the GPU;
// - graphs: the time of a traced training step (an MLP 784-128-10 at batch 128, Adam, as an ember::function of
//   (x, y) with no host read) with its replays captured as CUDA graphs, against the same function with them off
//   (graph::set_device_graphs_enabled) and against the eager step;
// - fusion: a fused elementwise chain at 4M float32 elements (dense's bias add, relu, dropout's mask and scale:
//   relu(x + b) * mask * 2), traced with jit_compile (one NVRTC kernel) against the same function without it (one
//   kernel per op), both without CUDA graphs;
// - batch_norm: one training-mode batch norm, forward and backward, at ResNet-50's widest shape (128, 56, 56,
//   256) in float16 and float32: ops::fused_batch_norm (cuDNN) against the ops BatchNormalization composes on
//   the CPU (speedup = composed time / fused);
// - resnet50: training images/s of ResNet-50 as keras.applications.ResNet50 builds it (applications::ResNet50:
//   NHWC 224x224x3, 1000 classes, softmax top, Adam, sparse categorical crossentropy) at batch 128 on
//   synthetic data already on the GPU (train_on_batch after 3 warm-up steps, 10 timed steps), in float32
//   with TF32 on (TF's default) and in mixed_float16 and mixed_bfloat16 against that float32 (speedup =
//   float32's step time / the policy's). bench/compare_pytorch_gpu.py measures the same in PyTorch.
// Without a GPU it says "no GPU: skipped" (on stderr with --json) and exits 0. All groups finish in well
// under 2 minutes on an H200; scripts/gpu_check.sh runs resnet50 on its own under its own time limit.
// Usage: bench_gpu [--json] [--only GROUP[,GROUP...]]   (groups: seeds, matmul, dispatch, train, batch_norm,
// graphs, fusion, resnet50)
#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "framework/ember.h"

#if defined(EMBER_BENCH_CUDA)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

using namespace ember;
using namespace ember::bench;

namespace {

constexpr Device kCpu = Device::cpu();
constexpr Device kGpu = Device::cuda(0);

void sync_gpu() { allocator_for(kGpu).synchronize(); }

// ---------------------------------------------------------------------------------------------------- seeds

void seed_rows(bool json) {
  auto run = [](Device d) {
    DeviceScope on(d);
    const Tensor x = random::normal({1000, 1000}, {.seed = 1});
    Tensor y;
    for (int i = 0; i < 3; ++i) y = ops::matmul(x, x);  // warm-up: handles, caches, allocator
    allocator_for(d).synchronize();
    return best_seconds(3, [&] {
      for (int i = 0; i < 200; ++i) y = ops::matmul(x, x);
      const float s = ops::reduce_sum(y).item<float>();  // the host read waits for all 200
      keep_alive(&s);
    });
  };
  const double cpu = run(kCpu), gpu = run(kGpu);
  if (!json)
    std::printf("seeds' figures for this benchmark: CPU 0.482 s, GPU 0.071 s (TF32 %s here)\n",
                config::tensor_float_32_execution_enabled() ? "on, TF's default" : "off");
  print({"seed_matmul_200x1000", "s", "cpu", gpu, cpu, cpu / gpu}, json);
  print({"seed_matmul_vs_seed_gpu", "s", "seed_gpu", gpu, 0.071, 0.071 / gpu}, json);
}

// --------------------------------------------------------------------------------------------------- matmul

#if defined(EMBER_BENCH_CUDA)
// cuBLAS on the same buffers: row-major C = A B is column-major C^T = B^T A^T.
double cublas_tflops(const Tensor& a, const Tensor& b, Tensor& c, int64_t n, int reps, bool tf32) {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw Internal("bench_gpu: cublasCreate failed");
    return h;
  }();
  cudaDataType_t type = CUDA_R_32F;
  if (a.dtype() == DType::Float16) type = CUDA_R_16F;
  if (a.dtype() == DType::BFloat16) type = CUDA_R_16BF;
  const cublasComputeType_t compute =
      a.dtype() == DType::Float32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float one = 1, zero = 0;
  const int m = static_cast<int>(n);
  auto gemm = [&] {
    const cublasStatus_t st = cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, b.raw_data(), type, m,
                                           a.raw_data(), type, m, &zero, c.raw_data(), type, m, compute,
                                           CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) throw Internal("bench_gpu: cublasGemmEx failed with status " + std::to_string(st));
  };
  sync_gpu();
  gemm();
  cudaDeviceSynchronize();
  const double s = best_seconds(3, [&] {
    for (int r = 0; r < reps; ++r) gemm();
    cudaDeviceSynchronize();
  });
  return 2.0 * static_cast<double>(n) * n * n * reps / s / 1e12;
}
#endif

void matmul_rows(bool json) {
  struct Variant {
    std::string name;
    DType dtype;
    bool tf32;
  };
  const std::vector<Variant> variants = {{"f32", DType::Float32, false},
                                         {"tf32", DType::Float32, true},
                                         {"f16", DType::Float16, false},
                                         {"bf16", DType::BFloat16, false}};
  const bool tf32_before = config::tensor_float_32_execution_enabled();
  for (int64_t n : {4096, 8192}) {
    const int reps = n == 4096 ? 20 : 5;
    for (const Variant& v : variants) {
      config::enable_tensor_float_32_execution(v.tf32);
      DeviceScope on(kGpu);
      const Tensor a = ops::cast(random::uniform({n, n}, {.minval = -1, .seed = 2}), v.dtype);
      const Tensor b = ops::cast(random::uniform({n, n}, {.minval = -1, .seed = 3}), v.dtype);
      Tensor c = ops::matmul(a, b);
      sync_gpu();
      const double s = best_seconds(3, [&] {
        for (int r = 0; r < reps; ++r) c = ops::matmul(a, b);
        sync_gpu();
      });
      const double ember = 2.0 * static_cast<double>(n) * n * n * reps / s / 1e12;
      const std::string name = "matmul_" + std::to_string(n) + "_" + v.name;
#if defined(EMBER_BENCH_CUDA)
      const double ref = cublas_tflops(a, b, c, n, reps, v.tf32);
      print({name, "TFLOP/s", "cublas", ember, ref, ember / ref}, json);
#else
      print({name, "TFLOP/s", "none", ember, 0, 0}, json);
#endif
    }
  }
  config::enable_tensor_float_32_execution(tf32_before);
}

// ------------------------------------------------------------------------------------------------- dispatch

void dispatch_rows(bool json) {
  constexpr int kOps = 10000;
  // Seconds to enqueue kOps adds, and to enqueue and finish them, on a device.
  auto run = [](Device d, double& with_sync) {
    DeviceScope on(d);
    const Tensor a = Tensor::from_vector<float>({1.0f}, d);
    Tensor y = a + a;
    allocator_for(d).synchronize();
    double enqueue = 1e300;
    with_sync = 1e300;
    for (int round = 0; round < 3; ++round) {
      const auto t0 = Clock::now();
      for (int i = 0; i < kOps; ++i) y = a + y;
      const auto t1 = Clock::now();
      allocator_for(d).synchronize();
      const auto t2 = Clock::now();
      enqueue = std::min(enqueue, std::chrono::duration<double>(t1 - t0).count());
      with_sync = std::min(with_sync, std::chrono::duration<double>(t2 - t0).count());
    }
    keep_alive(&y);
    return enqueue;
  };
  double gpu_total = 0, cpu_total = 0;
  const double gpu = run(kGpu, gpu_total) / kOps * 1e6, cpu = run(kCpu, cpu_total) / kOps * 1e6;
  if (!json)
    std::printf("dispatch: %d adds of 1-element tensors; GPU %.2f us/op enqueued, %.2f us/op until finished\n", kOps, gpu,
                gpu_total / kOps * 1e6);
  print({"gpu_dispatch_add_1", "us/op", "cpu_add_1", gpu, cpu, cpu / gpu}, json);
}

// ------------------------------------------------------------------------------------------------- training

constexpr int64_t kBatch = 256;

std::shared_ptr<Model> example_cnn() {
  return std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({32, 32, 3}), layers::Conv2D(32, 3, {.activation = "relu"}), layers::MaxPooling2D(2),
      layers::Conv2D(64, 3, {.activation = "relu"}), layers::MaxPooling2D(2), layers::Flatten(), layers::Dropout(0.3),
      layers::Dense(128, {.activation = "relu"}), layers::Dense(10, {.dtype = "float32"})});
}

// conv 3x3 -> batch norm -> relu (no relu when last in a residual branch).
Tensor conv_bn(const Tensor& x, int64_t filters, int64_t stride, bool relu) {
  Tensor h = layers::Conv2D(filters, 3, {.strides = stride, .padding = "same", .use_bias = false})(x);
  h = layers::BatchNormalization()(h);
  return relu ? layers::ReLU()(h) : h;
}

Tensor residual_block(const Tensor& x, int64_t filters) {
  const Tensor r = conv_bn(conv_bn(x, filters, 1, true), filters, 1, false);
  return layers::ReLU()(layers::Add()(std::vector<Tensor>{x, r}));
}

std::shared_ptr<Model> small_resnet() {
  const Tensor in = layers::Input({32, 32, 3});
  Tensor h = conv_bn(in, 32, 1, true);
  h = residual_block(h, 32);
  h = residual_block(h, 32);
  h = conv_bn(h, 64, 2, true);
  h = residual_block(h, 64);
  h = layers::GlobalAveragePooling2D()(h);
  const Tensor out = layers::Dense(10, {.dtype = "float32"})(h);
  return std::make_shared<Model>(in, out, ModelOptions{.name = "small_resnet"});
}

// Images/s of train_on_batch on `device` under `policy` (each step reads its loss: a sync per step).
double train_images_per_second(const std::function<std::shared_ptr<Model>()>& build, Device device,
                               const std::string& policy, int warmup, int steps) {
  mixed_precision::set_global_policy(policy);
  DeviceScope on(device);
  backend::clear_session();
  random::set_seed(4);
  std::shared_ptr<Model> model = build();
  model->compile({.optimizer = optimizers::Adam(), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  mixed_precision::set_global_policy("float32");
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 4; ++i) {
    xs.push_back(random::uniform({kBatch, 32, 32, 3}));
    ys.push_back(ops::cast(random::uniform({kBatch}, {.maxval = 10}), DType::Int64));
  }
  int next = 0;
  auto step = [&] {
    model->train_on_batch(xs[static_cast<size_t>(next)], ys[static_cast<size_t>(next)]);
    next = (next + 1) % 4;
  };
  for (int i = 0; i < warmup; ++i) step();
  allocator_for(device).synchronize();
  const double s = best_seconds(1, [&] {
    for (int i = 0; i < steps; ++i) step();
    allocator_for(device).synchronize();
  });
  return static_cast<double>(steps * kBatch) / s;
}

void train_rows(bool json) {
  struct Net {
    std::string name;
    std::function<std::shared_ptr<Model>()> build;
    int cpu_steps;
  };
  const std::vector<Net> nets = {{"cnn", example_cnn, 3}, {"resnet", small_resnet, 2}};
  for (const Net& n : nets) {
    const double cpu = train_images_per_second(n.build, kCpu, "float32", 1, n.cpu_steps);
    const double f32 = train_images_per_second(n.build, kGpu, "float32", 5, 30);
    const double f16 = train_images_per_second(n.build, kGpu, "mixed_float16", 5, 30);
    print({"train_" + n.name + "_f32", "img/s", "cpu_f32", f32, cpu, f32 / cpu}, json);
    print({"train_" + n.name + "_mixed_f16", "img/s", "gpu_f32", f16, f32, f16 / f32}, json);
  }
}

// ----------------------------------------------------------------------------------------------- batch_norm

// Milliseconds of one training-mode batch norm, forward and backward (the gradients of x, gamma and beta from a
// given dy), of an x of `shape` and dtype dt on the GPU: fused (ops::fused_batch_norm, cuDNN) or composed as
// BatchNormalization composes it elsewhere (float32 statistics, x cast to float32 and the output back).
double batch_norm_ms(const Shape& shape, DType dt, bool fused) {
  DeviceScope on(kGpu);
  const Shape c{shape[3]};
  const Tensor x = ops::cast(random::normal(shape), dt), dy = ops::cast(random::normal(shape), dt);
  const Tensor gamma = random::normal(c), beta = random::normal(c);
  const std::vector<int64_t> axes = {0, 1, 2};
  auto step = [&] {
    GradientTape tape;
    for (const Tensor& t : {x, gamma, beta}) tape.watch(t);
    Tensor y;
    if (fused) {
      y = ops::fused_batch_norm(x, gamma, beta, 1e-3)[0];
    } else {
      const Tensor xs = ops::cast(x, DType::Float32);
      const Tensor mean = ops::reduce_mean(xs, axes, true);
      const Tensor var = ops::reduce_mean(ops::squared_difference(xs, ops::stop_gradient(mean)), axes, true);
      const Tensor inv = ops::rsqrt(var + 1e-3) * gamma;
      y = ops::cast(xs * inv + (beta - mean * inv), dt);
    }
    const std::vector<Tensor> g = tape.gradient(y, std::vector<Tensor>{x, gamma, beta}, {.output_gradients = {dy}});
    keep_alive(&g);
  };
  for (int i = 0; i < 3; ++i) step();
  sync_gpu();
  constexpr int kSteps = 10;
  return 1e3 / kSteps * best_seconds(3, [&] {
    for (int i = 0; i < kSteps; ++i) step();
    sync_gpu();
  });
}

// ResNet-50's widest batch norm at batch 128 (conv2 block outputs): cuDNN's fused kernels against the composed
// ops, in float16 (mixed precision) and float32.
void batch_norm_rows(bool json) {
  const Shape shape{128, 56, 56, 256};
  for (DType dt : {DType::Float16, DType::Float32}) {
    const double composed = batch_norm_ms(shape, dt, false), fused = batch_norm_ms(shape, dt, true);
    print({std::string("batch_norm_") + dtype_name(dt) + "_fused_vs_composed", "ms", "composed", fused, composed,
           composed / fused},
          json);
  }
}

// --------------------------------------------------------------------------------------------------- graphs

// Microseconds per step of `step` (warmed up first), the device drained after the timed steps.
double step_microseconds(const std::function<void()>& step, int steps) {
  for (int i = 0; i < 5; ++i) step();
  sync_gpu();
  const double s = best_seconds(3, [&] {
    for (int i = 0; i < steps; ++i) step();
    sync_gpu();
  });
  return s / steps * 1e6;
}

void graph_rows(bool json) {
  DeviceScope on(kGpu);
  backend::clear_session();
  random::set_seed(6);
  Sequential model({layers::Input({784}), layers::Dense(128, {.activation = "relu"}), layers::Dense(10)});
  optimizers::Adam opt({.learning_rate = 1e-3});
  losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
  auto train_step = [&](const Tensor& x, const Tensor& y) {
    GradientTape tape;
    Tensor loss = loss_fn(y, model(x, /*training=*/true));
    std::vector<Variable> weights = model.trainable_weights();
    opt.apply(tape.gradient(loss, weights), weights);
    return loss;
  };
  constexpr int64_t kStepBatch = 128;  // the app's
  const Tensor x = random::uniform({kStepBatch, 784});
  const Tensor y = ops::cast(random::uniform({kStepBatch}, {.maxval = 10}), DType::Int32);
  auto traced = ember::function(train_step);
  constexpr int kSteps = 200;
  const bool before = graph::device_graphs_enabled();
  graph::set_device_graphs_enabled(true);
  const double graphs = step_microseconds([&] { traced(x, y); }, kSteps);
  graph::set_device_graphs_enabled(false);
  const double plain = step_microseconds([&] { traced(x, y); }, kSteps);
  graph::set_device_graphs_enabled(before);
  const double eager = step_microseconds([&] { train_step(x, y); }, kSteps);
  print({"cuda_graph_mlp_step", "us", "function_no_cuda_graphs", graphs, plain, plain / graphs}, json);
  print({"cuda_graph_mlp_step_vs_eager", "us", "eager", graphs, eager, eager / graphs}, json);
}

// --------------------------------------------------------------------------------------------------- fusion

void fusion_rows(bool json) {
  DeviceScope on(kGpu);
  random::set_seed(7);
  constexpr int64_t kRows = 4096, kCols = 1024;  // 4M elements
  const Tensor x = random::normal({kRows, kCols}), b = random::normal({kCols});
  const Tensor mask = ops::cast(ops::greater(random::uniform({kRows, kCols}), Tensor::scalar(0.5f)), DType::Float32);
  const auto chain = [](const Tensor& x, const Tensor& b, const Tensor& mask) {
    return ops::relu(x + b) * mask * 2.0f;
  };
  auto fused = ember::function(chain, {.jit_compile = true});
  auto alone = ember::function(chain);
  const bool before = graph::device_graphs_enabled();
  graph::set_device_graphs_enabled(false);
  constexpr int kCalls = 100;
  const double fused_us = step_microseconds([&] { fused(x, b, mask); }, kCalls);  // the first call compiles
  const double alone_us = step_microseconds([&] { alone(x, b, mask); }, kCalls);
  graph::set_device_graphs_enabled(before);
  print({"fused_chain_4m", "us", "op_by_op", fused_us, alone_us, alone_us / fused_us}, json);
}

// ------------------------------------------------------------------------------------------------- resnet50

constexpr int64_t kResnetBatch = 128;

// Images/s of ResNet-50's train_on_batch under `policy` on the GPU. Two batches of synthetic images and
// labels are made on the GPU first, so the figure is the step's and not a host-to-device copy's.
double resnet50_images_per_second(const std::string& policy, int warmup, int steps) {
  DeviceScope on(kGpu);
  backend::clear_session();
  random::set_seed(5);
  mixed_precision::set_global_policy(policy);
  auto model = std::make_shared<Model>(applications::ResNet50());
  model->compile({.optimizer = optimizers::Adam(), .loss = losses::SparseCategoricalCrossentropy()});
  mixed_precision::set_global_policy("float32");
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 2; ++i) {
    xs.push_back(random::uniform({kResnetBatch, 224, 224, 3}));
    ys.push_back(ops::cast(random::uniform({kResnetBatch}, {.maxval = 1000}), DType::Int64));
  }
  int next = 0;
  auto step = [&] {
    model->train_on_batch(xs[static_cast<size_t>(next)], ys[static_cast<size_t>(next)]);
    next = 1 - next;
  };
  for (int i = 0; i < warmup; ++i) step();
  sync_gpu();
  const double s = best_seconds(1, [&] {
    for (int i = 0; i < steps; ++i) step();
    sync_gpu();
  });
  return static_cast<double>(steps * kResnetBatch) / s;
}

void resnet50_rows(bool json) {
  const bool tf32_before = config::tensor_float_32_execution_enabled();
  config::enable_tensor_float_32_execution(true);  // float32's row is TF's default: TF32 on
  const double f32 = resnet50_images_per_second("float32", 3, 10);
  print({"resnet50_float32", "img/s", "none", f32, 0, 0}, json);
  const double f16 = resnet50_images_per_second("mixed_float16", 3, 10);
  print({"resnet50_mixed_float16_vs_float32", "img/s", "float32", f16, f32, f16 / f32}, json);
  const double bf16 = resnet50_images_per_second("mixed_bfloat16", 3, 10);
  print({"resnet50_mixed_bfloat16_vs_float32", "img/s", "float32", bf16, f32, bf16 / f32}, json);
  config::enable_tensor_float_32_execution(tf32_before);
  backend::clear_session();
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") json = true;
    else if (arg == "--only" && i + 1 < argc) only = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_gpu [--json] [--only GROUP[,GROUP...]] (groups: seeds, matmul, dispatch, train, batch_norm, graphs, fusion, resnet50)\n");
      return 2;
    }
  }
  const std::vector<std::string> groups = {"seeds",  "matmul", "dispatch", "train",
                                           "batch_norm", "graphs", "fusion", "resnet50"};
  std::vector<std::string> selected;  // --only's comma-separated groups; empty: all
  for (size_t at = 0; !only.empty() && at <= only.size();) {
    const size_t comma = std::min(only.find(',', at), only.size());
    selected.push_back(only.substr(at, comma - at));
    if (std::find(groups.begin(), groups.end(), selected.back()) == groups.end()) {
      std::fprintf(stderr, "bench_gpu: unknown group '%s' for --only\n", selected.back().c_str());
      return 2;
    }
    at = comma + 1;
  }
  const auto wanted = [&](const char* group) {
    return selected.empty() || std::find(selected.begin(), selected.end(), group) != selected.end();
  };
  try {
    if (device_count(DeviceType::CUDA) == 0) {
      std::fprintf(json ? stderr : stdout, "no GPU: skipped\n");
      return 0;
    }
    random::set_seed(42);
    if (!json)
      std::printf("GPU benchmarks on %s, %d CPU threads for the CPU references\n",
                  config::list_physical_devices("GPU")[0].name.c_str(), config::get_intra_op_parallelism_threads());
    if (wanted("seeds")) seed_rows(json);
    if (wanted("matmul")) matmul_rows(json);
    if (wanted("dispatch")) dispatch_rows(json);
    if (wanted("train")) train_rows(json);
    if (wanted("batch_norm")) batch_norm_rows(json);
    if (wanted("graphs")) graph_rows(json);
    if (wanted("fusion")) fusion_rows(json);
    if (wanted("resnet50")) resnet50_rows(json);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
