// A custom op (TF: REGISTER_OP + a kernel + RegisterGradient): swish_beta(x) = x * sigmoid(beta * x) with its
// slope `beta` as an attribute, added from user code with a CPU kernel, a CUDA kernel (swish_beta.cu, built with
// the CUDA backend) and a gradient that is a custom op of its own. The op then works wherever a built-in one
// does: eagerly, under GradientTape, inside ember::function and in a model trained with fit.
#include <cmath>
#include <iostream>

#include "framework/ember.h"
#include "swish_beta_math.h"
#ifdef SWISH_BETA_WITH_CUDA
#include "swish_beta_cuda.h"
#endif
using namespace ember;

namespace {

// Both ops take float32 or float64; the output is like the first input.
std::vector<ops::ShapeDType> check_float(std::span<const ops::ShapeDType> in) {
  for (const ops::ShapeDType& t : in) {
    EMBER_CHECK(t.dtype == DType::Float32 || t.dtype == DType::Float64, InvalidArgument)
        << "expected float32 or float64 inputs, got " << t.dtype;
    EMBER_CHECK(t.shape == in[0].shape && t.dtype == in[0].dtype, InvalidArgument)
        << "expected inputs of one shape and dtype, got " << in[0].dtype << " " << in[0].shape << " and " << t.dtype
        << " " << t.shape;
  }
  return {in[0]};
}

// CPU kernels: a loop over the elements (inputs and outputs are contiguous).
template <class T>
void forward_cpu(const ops::CustomKernelContext& ctx) {
  const T* x = ctx.inputs[0].data<T>();
  T* y = ctx.outputs[0].data<T>();
  const T beta = ctx.attrs.get<T>("beta");
  for (int64_t i = 0; i < ctx.inputs[0].num_elements(); ++i) y[i] = swish_beta_forward(x[i], beta);
}

template <class T>
void backward_cpu(const ops::CustomKernelContext& ctx) {
  const T* x = ctx.inputs[0].data<T>();
  const T* dy = ctx.inputs[1].data<T>();
  T* dx = ctx.outputs[0].data<T>();
  const T beta = ctx.attrs.get<T>("beta");
  for (int64_t i = 0; i < ctx.inputs[0].num_elements(); ++i) dx[i] = swish_beta_backward(x[i], dy[i], beta);
}

// Picks the kernel instance of the inputs' dtype.
template <void (*F32)(const ops::CustomKernelContext&), void (*F64)(const ops::CustomKernelContext&)>
void by_dtype(const ops::CustomKernelContext& ctx) {
  ctx.inputs[0].dtype() == DType::Float32 ? F32(ctx) : F64(ctx);
}

#ifdef SWISH_BETA_WITH_CUDA
// CUDA kernels: launched on the op's stream; the pointers are device memory.
template <class T>
void forward_cuda(const ops::CustomKernelContext& ctx) {
  launch_swish_beta(ctx.inputs[0].data<T>(), ctx.outputs[0].data<T>(), ctx.inputs[0].num_elements(),
                    ctx.attrs.get<T>("beta"), ctx.stream);
}
template <class T>
void backward_cuda(const ops::CustomKernelContext& ctx) {
  launch_swish_beta_grad(ctx.inputs[0].data<T>(), ctx.inputs[1].data<T>(), ctx.outputs[0].data<T>(),
                         ctx.inputs[0].num_elements(), ctx.attrs.get<T>("beta"), ctx.stream);
}
#endif

// swish_beta_grad(x, dy) = dy * d swish_beta(x) / dx: the backward pass as one kernel.
const ops::CustomOp swish_beta_grad = ops::register_op({
    .name = "swish_beta_grad",
    .num_inputs = 2,
    .infer = [](std::span<const ops::ShapeDType> in, const AttrMap&) { return check_float(in); },
    .cpu = by_dtype<backward_cpu<float>, backward_cpu<double>>,
#ifdef SWISH_BETA_WITH_CUDA
    .cuda = by_dtype<backward_cuda<float>, backward_cuda<double>>,
#endif
});

const ops::CustomOp swish_beta_op = ops::register_op({
    .name = "swish_beta",
    .num_inputs = 1,
    .infer = [](std::span<const ops::ShapeDType> in, const AttrMap&) { return check_float(in); },
    .cpu = by_dtype<forward_cpu<float>, forward_cpu<double>>,
#ifdef SWISH_BETA_WITH_CUDA
    .cuda = by_dtype<forward_cuda<float>, forward_cuda<double>>,
#endif
    // The attributes pass on to the gradient's op unchanged.
    .gradient = [](const ops::CustomGradContext& ctx) {
      return std::vector<Tensor>{swish_beta_grad({ctx.inputs[0], ctx.grads[0]}, ctx.attrs)[0]};
    },
});

Tensor swish_beta(const Tensor& x, double beta) { return swish_beta_op({x}, {{"beta", beta}})[0]; }

// A small regression network with swish_beta between its Dense layers.
struct Net : Model {
  Net() : Model({.name = "swish_beta_net"}) {}
  layers::Dense hidden{32};
  layers::Dense out{1};
  Tensor call(const Tensor& x, bool) override { return out(swish_beta(hidden(x), 1.5)); }
};

}  // namespace

int main() {
  bool ok = true;
  auto expect = [&ok](bool cond, const char* what) {
    std::cout << (cond ? "ok:     " : "FAILED: ") << what << "\n";
    ok = ok && cond;
  };

  // Eager: the op, and its gradient from the tape, against the formula.
  Tensor x = Tensor::from_vector<double>({-2.0, -0.5, 0.0, 0.5, 2.0}, {5});
  GradientTape tape;
  tape.watch(x);
  Tensor y = swish_beta(x, 1.5);
  Tensor dx = tape.gradient(ops::reduce_sum(y), x);
  std::cout << "swish_beta(x, 1.5) = " << y << "\nits gradient       = " << dx << "\n";
  std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>(), gv = dx.to_vector<double>();
  bool close = true;
  for (size_t i = 0; i < xv.size(); ++i) {
    const double s = 1.0 / (1.0 + std::exp(-1.5 * xv[i]));
    close = close && std::abs(yv[i] - xv[i] * s) < 1e-12 && std::abs(gv[i] - (s + 1.5 * xv[i] * s * (1 - s))) < 1e-12;
  }
  expect(close, "forward and tape gradient match the formula");

  // Graph mode: traced once, replayed with the same bits.
  auto f = ember::function([](const std::vector<Tensor>& in) { return std::vector<Tensor>{swish_beta(in[0], 1.5)}; });
  f(std::vector<Tensor>{x});
  expect(ops::reduce_all(ops::equal(f(std::vector<Tensor>{x})[0], y)).item<bool>() && f.tracing_count() == 1,
         "ember::function replays it with eager's values");

  // On a GPU, when there is one and the CUDA kernels are built: the same values as the CPU's.
  if (!config::list_physical_devices("GPU").empty()) {
    DeviceScope on(Device::cuda(0));
    GradientTape gpu_tape;
    Tensor xg = x.to(Device::cuda(0));
    gpu_tape.watch(xg);
    Tensor yg = swish_beta(xg, 1.5);
    Tensor dg = gpu_tape.gradient(ops::reduce_sum(yg), xg);
    const double err = ops::reduce_max(ops::abs(yg.to(Device::cpu()) - y)).item<double>() +
                       ops::reduce_max(ops::abs(dg.to(Device::cpu()) - dx)).item<double>();
    expect(err < 1e-12, "the CUDA kernels agree with the CPU");
  }

  // A model trained with fit (its train step traced into a graph): the loss falls.
  random::set_seed(3);
  Tensor xs = random::uniform({256, 1}, {.minval = -2.0, .maxval = 2.0});
  Tensor ys = ops::square(xs) * 0.5 + xs * 0.3 - 0.5;
  Net net;
  net.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse"});
  History history = net.fit(xs, ys, {.batch_size = 32, .epochs = 40, .verbose = 0});
  const std::vector<double>& loss = history.history.at("loss");
  std::cout << "loss: " << loss.front() << " after the first epoch, " << loss.back() << " after the last\n";
  expect(loss.back() < 0.5 * loss.front(), "training through the custom op lowers the loss");

  std::cout << (ok ? "custom op works end to end\n" : "custom op example failed\n");
  return ok ? 0 : 1;
}
