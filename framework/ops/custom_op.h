#pragma once
// Custom ops: a user adds an op from their own code (TF: REGISTER_OP + REGISTER_KERNEL_BUILDER +
// RegisterGradient in one call). A registered op runs through the same dispatch point as the built-in ones:
// eagerly on the CPU (and on a GPU when it has a CUDA kernel), recorded by GradientTape, traced and replayed by
// ember::function, named in the profiler and by check_numerics.
//
//   const ops::CustomOp swish_beta = ops::register_op({
//       .name = "swish_beta",
//       .num_inputs = 1,
//       .infer = [](std::span<const ops::ShapeDType> in, const AttrMap&) { return std::vector{in[0]}; },
//       .cpu = [](const ops::CustomKernelContext& ctx) { ... fill ctx.outputs[0] from ctx.inputs[0] ... },
//       .gradient = [](const ops::CustomGradContext& ctx) { return std::vector<Tensor>{...}; },
//   });
//   Tensor y = swish_beta({x}, {{"beta", 1.5}})[0];      // or ops::custom("swish_beta", {x}, {{"beta", 1.5}})
//
// An op must be a pure function of its inputs and attributes: a traced function may run it once on constants
// when it is compiled, and merge two calls with equal inputs and attributes into one.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/attr_map.h"

namespace ember::ops {

// The type of one input or output of a custom op: its shape and dtype.
struct ShapeDType {
  Shape shape;
  DType dtype = DType::Float32;
};

// What a kernel sees: the inputs (contiguous, on the op's device), the outputs already allocated there (it
// fills them) and the call's attributes. A CUDA kernel launches on `stream` (a cudaStream_t; nullptr on the
// CPU), with the op's device current.
struct CustomKernelContext {
  std::span<const Tensor> inputs;
  std::span<Tensor> outputs;
  const AttrMap& attrs;
  void* stream = nullptr;
};

// What a gradient sees: the op's inputs and outputs, the gradient of the target with respect to each output
// (zeros where none arrived) and the attributes. It returns one gradient per input, shaped like the input (an
// undefined Tensor for an input without one, e.g. integer indices), written with ops (so a tape can
// differentiate it again) or as a custom op of its own. needs(i) says whether input i leads to a source.
struct CustomGradContext {
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  std::span<const Tensor> grads;
  const AttrMap& attrs;
  std::span<const char> wanted = {};
  bool needs(size_t input) const { return wanted.empty() || wanted[input]; }
};

using CustomInferFn = std::function<std::vector<ShapeDType>(std::span<const ShapeDType> inputs, const AttrMap& attrs)>;
using CustomKernelFn = std::function<void(const CustomKernelContext&)>;
using CustomGradFn = std::function<std::vector<Tensor>(const CustomGradContext&)>;

// One op's definition.
struct CustomOpDef {
  std::string name{};  // letters, digits and '_' (not starting with a digit); not a built-in op's name
  int num_inputs = 1;  // tensor inputs; -1: any number
  // The outputs' shapes and dtypes from the inputs'; throws InvalidArgument for inputs the op does not take.
  CustomInferFn infer{};
  CustomKernelFn cpu{};
  CustomKernelFn cuda{};      // optional: without it the op refuses GPU tensors
  CustomGradFn gradient{};    // optional: without it GradientTape.gradient through the op is Unimplemented
};

// A registered op, called like a function: op({x, y}, {{"alpha", 0.5}}) returns its outputs.
class CustomOp {
 public:
  explicit CustomOp(const CustomOpDef* def) : def_(def) {}
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, const AttrMap& attrs = {}) const;
  const std::string& name() const { return def_->name; }

 private:
  const CustomOpDef* def_;
};

// Registers an op for the rest of the process. InvalidArgument for a name already taken (by a built-in op or an
// earlier registration) or not an identifier, a negative num_inputs other than -1, or no infer or cpu function.
CustomOp register_op(CustomOpDef def);
// The op registered under `name`; NotFound when there is none.
CustomOp find_op(const std::string& name);
// Runs the op registered under `name` (find_op(name)(inputs, attrs)).
std::vector<Tensor> custom(const std::string& name, const std::vector<Tensor>& inputs, const AttrMap& attrs = {});

namespace detail {
// Runs f(); an InvalidArgument it throws (a user function's, an attribute lookup's) is rethrown with the op's
// name in front, unless its message starts with it already.
template <class F>
decltype(auto) with_op_name(const std::string& name, F&& f) {
  try {
    return f();
  } catch (const InvalidArgument& e) {
    const std::string message = e.what();
    if (message.rfind(name, 0) == 0) throw;
    throw InvalidArgument(name + ": " + message);
  }
}
}  // namespace detail

}  // namespace ember::ops

namespace ember {
struct KernelContext;
namespace ops::detail {
// The kernel of the `custom` row of op_list.def on each device: runs the registered op's CPU kernel (stream ==
// nullptr) or CUDA kernel (on `stream`).
void run_custom_kernel(const KernelContext& ctx, void* stream);
}  // namespace ops::detail
}  // namespace ember
