#include "framework/ops/cpu/dnnl_context.h"

#include <atomic>

namespace ember::dnnl_ctx {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

ScratchMemory scratch_memory(const dnnl::memory::desc& desc) {
  ScratchMemory s;
  const size_t bytes = desc.get_size();
  if (bytes > 0) s.buffer = std::make_unique<Storage>(bytes, Device::cpu());
  s.memory = dnnl::memory(desc, engine(), s.buffer ? s.buffer->data() : nullptr);
  return s;
}

namespace {
std::atomic<bool> bf16_primitives_enabled{true};
}  // namespace

bool bf16_enabled() { return bf16_primitives_enabled.load(std::memory_order_relaxed); }
void set_bf16_enabled(bool enabled) { bf16_primitives_enabled.store(enabled, std::memory_order_relaxed); }

namespace {
// Whether oneDNN's bf16 kernels beat widening to float32 here: only with AMX. Measured on this project's CPU
// (AMX, AVX512-BF16) at 2 threads, oneDNN 2.6: with AMX a 1024^3 matmul takes 4.4 ms against float32's 13.8,
// a 3x3 64->128 convolution 4.9 / 7.6 / 8.2 ms (forward / data / weights) against 23.7 / 18.8 / 18.3; limited
// to AVX512-BF16 (DNNL_MAX_CPU_ISA=AVX512_CORE_BF16) the same take 19.6 ms and 27.8 / 37.1 / 29.6 ms, slower
// than float32, and plain AVX-512 only emulates bf16 (4-5x slower still). Below AVX-512 oneDNN has no bf16.
// The ISA values are bit sets.
bool native_bf16_isa() {
  static const bool native = [] {
    const auto need = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx);
    return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & need) == need;
  }();
  return native;
}
}  // namespace

bool bf16_primitives_usable() { return bf16_enabled() && native_bf16_isa(); }

void check_bf16_enabled() {
  if (!bf16_enabled()) throw dnnl::error(dnnl_unimplemented, "bf16 primitives are switched off");
  if (!native_bf16_isa()) throw dnnl::error(dnnl_unimplemented, "no AMX: oneDNN's bf16 kernels are slower here");
}

}  // namespace ember::dnnl_ctx
