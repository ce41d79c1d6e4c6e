#pragma once
// Internal: the process-wide oneDNN CPU engine and stream (oneDNN runs on the shared OpenMP pool),
// a small cache of primitives keyed by a string of their shapes and attributes, and the switch of the
// native bfloat16 primitives.
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "framework/core/allocator.h"

namespace ember::dnnl_ctx {

dnnl::engine& engine();
// One stream per calling thread (data-pipeline threads may run ops too).
dnnl::stream& stream();

// Returns the cached value for key, creating it with make() on first use. Thread-safe.
template <class P, class Make>
P& cached(const std::string& key, Make&& make) {
  static std::mutex mu;
  static std::unordered_map<std::string, P> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make()).first;
  return it->second;
}

// A oneDNN memory whose buffer (a scratchpad, reordered weights) comes from Ember's CPU allocator, which
// keeps freed large blocks for reuse: a memory oneDNN allocates itself maps fresh pages on every call, a
// page fault per 4 KiB (2 MiB a step of the example CNN). Keep it alive until the primitive has run.
struct ScratchMemory {
  std::unique_ptr<Storage> buffer;  // null for an empty descriptor
  dnnl::memory memory;
};
ScratchMemory scratch_memory(const dnnl::memory::desc& desc);

// Whether bfloat16 matmul and convolution may try oneDNN's bf16 primitives (default true). Where
// creating one fails, gives only oneDNN's slow reference kernel, or the CPU's bf16 arithmetic is no faster than
// float32's (no AMX, and a bfloat16 dot product below 1.5x float32's FMA rate, see dnnl_context.cpp; below
// AVX-512 oneDNN has no bf16 at all), the op widens to float32 instead. Switching this off makes every bf16
// primitive creation fail as on such a CPU, so tests cover that fallback anywhere; callers put the state in
// their cache keys.
bool bf16_enabled();
void set_bf16_enabled(bool enabled);
// Whether a bf16 primitive may be tried at all: they are enabled and the CPU's bf16 kernels pay. Where not, a
// bfloat16 op can skip straight to its float32 path (and whatever it would only compute for the primitive).
bool bf16_primitives_usable();
// Throws the dnnl::error oneDNN throws for an unsupported primitive when bf16 primitives are off or do not
// pay on this CPU; call it first thing where a bf16 primitive is created.
void check_bf16_enabled();

// One core's peak rates of AVX-512 multiply-accumulate, GFLOP/s: float32 FMA (vfmadd231ps) and the bfloat16
// dot product (vdpbf16ps), each the best of `rounds` runs of `iterations` x 12 independent instructions. Both
// 0 where the CPU lacks AVX512-BF16.
struct PeakRates {
  double fma_gflops = 0;
  double bf16_dot_gflops = 0;
};
PeakRates peak_rates(long iterations, int rounds);

// Which of oneDNN's bf16 kernels beat widening to float32 on a CPU: its AMX kernels where it has AMX; its
// AVX512-BF16 kernels where the CPU has those and `rates` (peak_rates) shows the bfloat16 dot product at least 1.5
// times float32's FMA rate; otherwise none. The process decides once, on first use.
enum class Bf16Kernels { kNone, kAmx, kAvx512 };
Bf16Kernels choose_bf16_kernels(bool amx, bool avx512_bf16, const PeakRates& rates);
// This CPU's choice (measured on the first call).
Bf16Kernels native_bf16_kernels();

// Whether oneDNN picked a JIT (or JIT-backed gemm) implementation rather than its reference loops.
inline bool is_jit(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).find("ref") == std::string::npos;
}
// Whether oneDNN picked one of its AMX kernels.
inline bool is_amx(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).find("amx") != std::string::npos;
}
// Whether a created bf16 primitive beats widening to float32: on a CPU with AMX only an AMX kernel does (its
// other bf16 kernels run slower than float32), on one whose AVX512-BF16 arithmetic pays any JIT kernel does.
bool fast_bf16_kernel(const dnnl::primitive_desc_base& pd);
// The fewest input channels a group at which a bf16 convolution beats widening to float32 here.
int64_t min_bf16_conv_channels();

}  // namespace ember::dnnl_ctx
