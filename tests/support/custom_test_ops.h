#pragma once
// A custom op the tests register (framework/ops/custom_op.h), written as a user writes one: the case of
// op_list.def's `custom` row in the table-walking harnesses (grad check, CPU/CUDA backend check). Test programs
// built with the CUDA backend compile its CUDA kernel from tests/support/custom_test_ops.cu.
#include <cstring>

#include "framework/ember.h"

#ifdef EMBER_TEST_CUSTOM_OP_CUDA
// y[(i + shift) mod n] = x[i] for n elements of `element_size` bytes, 0 <= shift < n, on `stream`.
void launch_test_roll(const void* x, void* y, int64_t n, int64_t shift, int64_t element_size, void* stream);
#endif

namespace ember::testing {

// test_roll(x, shift): the elements of x (in flat order) moved `shift` places on, cyclically: any dtype, the int
// attribute "shift". Its gradient rolls the incoming gradient back (the op itself with -shift).
inline ops::CustomOp test_roll_op() {
  static const ops::CustomOp op = ops::register_op({
      .name = "test_roll",
      .num_inputs = 1,
      .infer = [](std::span<const ops::ShapeDType> in, const AttrMap&) { return std::vector<ops::ShapeDType>{in[0]}; },
      .cpu =
          [](const ops::CustomKernelContext& ctx) {
            const Tensor& x = ctx.inputs[0];
            const int64_t n = x.num_elements(), size = static_cast<int64_t>(dtype_size(x.dtype()));
            if (n == 0) return;
            const int64_t shift = ((ctx.attrs.get<int64_t>("shift") % n) + n) % n;
            const char* src = static_cast<const char*>(x.raw_data());
            char* dst = static_cast<char*>(ctx.outputs[0].raw_data());
            for (int64_t i = 0; i < n; ++i) std::memcpy(dst + ((i + shift) % n) * size, src + i * size, size);
          },
#ifdef EMBER_TEST_CUSTOM_OP_CUDA
      .cuda =
          [](const ops::CustomKernelContext& ctx) {
            const Tensor& x = ctx.inputs[0];
            const int64_t n = x.num_elements();
            if (n == 0) return;
            launch_test_roll(x.raw_data(), ctx.outputs[0].raw_data(), n, ((ctx.attrs.get<int64_t>("shift") % n) + n) % n,
                             static_cast<int64_t>(dtype_size(x.dtype())), ctx.stream);
          },
#endif
      .gradient =
          [](const ops::CustomGradContext& ctx) {
            return ops::custom("test_roll", {ctx.grads[0]}, {{"shift", -ctx.attrs.get<int64_t>("shift")}});
          },
  });
  return op;
}

inline Tensor test_roll(const Tensor& x, int64_t shift) { return test_roll_op()({x}, {{"shift", shift}})[0]; }

}  // namespace ember::testing
