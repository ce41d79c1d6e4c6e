#pragma once
// A chain of elementwise ops run as one pass over the data (jit_compile's fused kernels, XLA's loop fusion): the
// graph compiler's fuse_elementwise pass builds one from the ops it groups, and the CPU kernel evaluates it a block
// of elements at a time, every op of the chain on a block that stays in the core's cache, with the functors the
// ops' own kernels use, so that the values are the unfused ops' to the bit. The CUDA backend compiles one kernel
// per chain with NVRTC from the same functors (framework/ops/cuda/fused_elementwise_cuda.cpp).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/attrs.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/op.h"

namespace ember::ops {

struct FusedElementwise {
  // How an input reaches the loop over `shape`: whole, one value for all, or broadcast along the outer or the
  // inner dimensions (a bias of shape (c,) over (n, c): element i reads i % c; a (n, 1) column: i / c).
  enum class Broadcast : uint8_t { Full, Scalar, Inner, Outer };
  struct Input {
    DType dtype = DType::Float32;
    Broadcast broadcast = Broadcast::Full;
    int64_t period = 1;  // Inner: the input's element count; Outer: the elements each input value covers
  };
  // One op of the chain. Its operands are registers: first the inputs, then each step's result in turn.
  struct Step {
    OpId op{};
    Attrs attrs{};
    std::vector<int> args;
    DType dtype = DType::Float32;  // of its result
    OutputSpec spec;               // the op's own output spec, for running it alone
  };
  // A product the chain reads (jit_compile's epilogue fusion, in fuse_elementwise): a CPU matmul_bias or conv2d_bias
  // made first from the fused node's first `arity` inputs, whose output is the chain's input `input` and the fused
  // node's first output. Its kernel runs the chain on each range of the output's rows right after adding the bias
  // and the activation to them, while they are in cache: one pass over the product's output for all three.
  struct Product {
    OpId op{};
    Attrs attrs{};
    OutputSpec spec;  // the product's output
    int arity = 0;  // its inputs: the fused node's first `arity`
    int input = 0;  // the chain input it makes (Broadcast::Full), not among the fused node's inputs
  };
  Shape shape;  // every step's result has this shape
  Device device = Device::cpu();
  std::vector<Input> inputs;
  std::vector<Step> steps;
  std::vector<int> outputs;  // the registers written out, in the fused node's output order
  std::optional<Product> product;

  int num_registers() const { return static_cast<int>(inputs.size() + steps.size()); }
  // The dtype of register r: its input's or its step's.
  DType dtype_of(int r) const {
    const size_t k = static_cast<size_t>(r);
    return k < inputs.size() ? inputs[k].dtype : steps[k - inputs.size()].dtype;
  }
  // A printable summary: "fused[mul, add, relu]", "fused[matmul_bias, sigmoid, mul]" with a product.
  std::string name() const;
};

// Whether a fused chain can hold values of `dtype`: the kernels hold each as a float, float32 as itself, bool as 0
// or 1, float16 and bfloat16 widened (each step whose value is half rounds it to its type, as the op's own kernel
// does on storing it, so the chain keeps the unfused ops' bits).
inline bool fused_value_dtype(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Bool || dtype == DType::Float16 || dtype == DType::BFloat16;
}
// Whether a fused chain's value of `dtype` is rounded to a half type after each step that makes it.
inline bool fused_rounds_to_half(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

// Whether `op` with `attrs` can be a step: an elementwise op whose values the fused kernel computes as its own
// kernel does, on operands of fused_value_dtype.
bool fusible_elementwise(OpId op, const Attrs& attrs);
// How `input` broadcasts to `shape`, or false when the fused kernel cannot read it so.
bool fused_broadcast(const Shape& input, const Shape& shape, FusedElementwise::Input& out);

// Whether `device` has a kernel that runs a chain in one pass (the CPU; CUDA in a build with the CUDA backend): the
// graph compiler fuses chains only there.
bool fused_elementwise_runs_on(DeviceType device);

// Runs the chain on `inputs` (the product's, then one per FusedElementwise::inputs but the product's) into new tensors,
// the product's output first where there is one, then one per output register: in one
// pass on a device fused_elementwise_runs_on; with op_by_op (a tape records the inputs and must see each op) or on
// another device, each op alone through the dispatch point.
std::vector<Tensor> run_fused_elementwise(const FusedElementwise& f, std::span<const Tensor> inputs,
                                          bool op_by_op = false);

namespace detail {
// A device's kernel for a chain (inputs as run_fused_elementwise's): outputs are allocated, one per
// FusedElementwise::outputs, on f.device. Only the CPU's takes a chain with a product. Set by the
// device's backend when it loads.
using FusedElementwiseKernel = void (*)(const FusedElementwise& f, std::span<const Tensor> inputs,
                                        std::span<Tensor> outputs);
// `available`, when given, says whether the kernel can run in this process (asked when a graph is compiled; e.g.
// the library that builds it loads): where it cannot, chains on that device are left unfused.
void set_fused_elementwise_kernel(DeviceType device, FusedElementwiseKernel kernel, bool (*available)() = nullptr);
}  // namespace detail

}  // namespace ember::ops
