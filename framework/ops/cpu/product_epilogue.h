#pragma once
// Internal: a CPU product with a fused chain in its epilogue (jit_compile's epilogue fusion: a Fused node with a
// FusedElementwise::Product, framework/ops/cpu/fused_elementwise.cpp).
#include <cstdint>
#include <functional>
#include <span>

#include "framework/ops/dispatch.h"

namespace ember::cpu {

// Finishes the rows [begin, end) of a product's output (the elements [begin * channels, end * channels)), called
// once they hold the bias and activation.
using RowEpilogue = std::function<void(int64_t begin, int64_t end)>;

// Runs matmul_bias or conv2d_bias (`op`, with its kernel's inputs and attrs) into `out`, allocated with the op's
// output shape and dtype, then `epilogue` on ranges of out's rows (its elements over its last dimension) that
// cover them all, on the pool. Where the bias is a pass after the product (matmul_bias on float32, float16 and
// widened bfloat16), each range right after that pass made it, in the same parallel loop; elsewhere in a pass
// of its own after the kernel.
void product_with_epilogue(OpId op, std::span<const Tensor> inputs, Tensor& out, const Attrs& attrs,
                           const RowEpilogue& epilogue);

}  // namespace ember::cpu
