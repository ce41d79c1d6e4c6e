#pragma once
// jit_compile's fused elementwise chains on CUDA (fused_elementwise_cuda.cpp): one kernel per chain, its source
// generated from the chain, compiled with NVRTC and cached by that source and the architecture. Internal; no CUDA
// header, so that tests compile and inspect the kernels without a GPU.
#include <cstdint>
#include <string>
#include <vector>

#include "framework/ops/cuda/nvrtc.h"
#include "framework/ops/fused_elementwise.h"

namespace ember::cuda {

// The entry point of every generated kernel: (long long n, the inputs' pointers, the outputs' pointers).
inline constexpr const char* kFusedKernelName = "ember_fused";

// The CUDA source of `f`'s kernel: a grid-stride loop over the n elements of f.shape, each input read as
// FusedElementwise::Broadcast says, each step calling its op's functor (framework/ops/functors.h) on floats, the
// output registers written out (bool ones as value != 0). An input marked in `by_value` is a float parameter (a
// 0-d host scalar's value) rather than a pointer.
std::string fused_elementwise_source(const ops::FusedElementwise& f, const std::vector<bool>& by_value = {});

// Compiles a source fused_elementwise_source made for the architecture `arch` (90: sm_90). Each step's result is
// rounded to float before the next step reads it (no multiply-add fused across two ops), as the ops run alone.
NvrtcProgram compile_fused_elementwise(const std::string& source, int arch);

// Kernels compiled by the fused CUDA kernel since the process started (the cache's misses).
int64_t fused_elementwise_compiles();

}  // namespace ember::cuda
