#pragma once
// Running an op's kernel without the dispatch point's per-call work, for a graph replay that did that work once
// when it planned the op (framework/graph's executor).
#include <span>

#include "framework/ops/dispatch.h"

namespace ember {

// Whether some of the op's inputs may be undefined tensors (its kernel tells them apart).
bool takes_undefined_inputs(OpId op);
// The kernel run_op runs for `op` on `device` when the dtype it is chosen by (the first input's, or the first
// output's for an op without inputs) is `key`; nullptr when there is none.
KernelFn find_kernel(OpId op, DeviceType device, DType key);
// run_op_into on the CPU with the kernel given (find_kernel), for a caller that checked once what run_op checks
// on every call (the inputs' devices and count, the kernel and dtype) and that runs it while nothing observes
// ops (no hook needing every op, no tracer, no profiler, no recording tape): no hook is called.
void run_kernel_into(KernelFn kernel, OpId op, std::span<const Tensor> inputs, std::span<const OutputSpec> specs,
                     std::span<Tensor> outputs, const Attrs& attrs);

}  // namespace ember
