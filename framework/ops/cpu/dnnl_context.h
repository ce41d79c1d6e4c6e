#pragma once
// Internal: the process-wide oneDNN CPU engine and stream (oneDNN runs on the shared OpenMP pool),
// a small cache of primitives keyed by a string of their shapes and attributes, and the switch of the
// native bfloat16 primitives.
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
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
// creating one fails, gives only oneDNN's slow reference kernel, or the CPU lacks AMX (oneDNN 2.6's
// AVX512-BF16 kernels measured slower than its float32 ones, see dnnl_context.cpp; below AVX-512 it has
// no bf16 at all), the op widens to float32 instead. Switching this off makes every bf16 primitive
// creation fail as on such a CPU, so tests cover that fallback here; callers put the state in their
// cache keys.
bool bf16_enabled();
void set_bf16_enabled(bool enabled);
// Whether a bf16 primitive may be tried at all: they are enabled and the CPU has AMX. Where not, a bfloat16
// op can skip straight to its float32 path (and whatever it would only compute for the primitive).
bool bf16_primitives_usable();
// Throws the dnnl::error oneDNN throws for an unsupported primitive when bf16 primitives are off or the
// CPU has no AMX; call it first thing where a bf16 primitive is created.
void check_bf16_enabled();

// Whether oneDNN picked a JIT (or JIT-backed gemm) implementation rather than its reference loops.
inline bool is_jit(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).find("ref") == std::string::npos;
}
// Whether oneDNN picked one of its AMX kernels.
inline bool is_amx(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).find("amx") != std::string::npos;
}

}  // namespace ember::dnnl_ctx
