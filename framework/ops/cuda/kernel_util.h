#pragma once
// Host-side helpers for the CUDA kernel registration files (.cpp, g++, C++20): the device and stream an
// op runs on, and DType -> DT for the .cu launchers.
#include "framework/core/dtype.h"
#include "framework/ops/cuda/cuda_dt.h"
#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/dispatch.h"

namespace ember::cuda {

static_assert(static_cast<int>(DType::Float32) == static_cast<int>(DT::F32) &&
              static_cast<int>(DType::Float64) == static_cast<int>(DT::F64) &&
              static_cast<int>(DType::Float16) == static_cast<int>(DT::F16) &&
              static_cast<int>(DType::BFloat16) == static_cast<int>(DT::BF16) &&
              static_cast<int>(DType::Int32) == static_cast<int>(DT::I32) &&
              static_cast<int>(DType::Int64) == static_cast<int>(DT::I64) &&
              static_cast<int>(DType::UInt8) == static_cast<int>(DT::U8) &&
              static_cast<int>(DType::Bool) == static_cast<int>(DT::Bool),
              "cuda::DT must mirror ember::DType");

inline DT to_dt(DType t) { return static_cast<DT>(t); }

// The CUDA device index an op runs on (its first output's, else its first input's), made current.
inline int device_of(const KernelContext& ctx) {
  int d = !ctx.outputs.empty() ? ctx.outputs[0].device().index() : ctx.inputs[0].device().index();
  activate(d);
  return d;
}
// The compute stream of the op's device.
inline cudaStream_t stream_of(const KernelContext& ctx) { return stream(device_of(ctx)); }

}  // namespace ember::cuda
