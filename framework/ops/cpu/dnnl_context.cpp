#include "framework/ops/cpu/dnnl_context.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>

#include "framework/core/logging.h"

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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// `iterations` rounds of 12 independent instructions on zmm0-11 from zmm12 and zmm13 (inline assembly, so that
// no compiler schedules them otherwise; the assembler needs no -m flag for them).
#define EMBER_PEAK_BODY(op)                                                                                   \
  op " %%zmm12, %%zmm13, %%zmm0\n" op " %%zmm12, %%zmm13, %%zmm1\n" op " %%zmm12, %%zmm13, %%zmm2\n" op     \
     " %%zmm12, %%zmm13, %%zmm3\n" op " %%zmm12, %%zmm13, %%zmm4\n" op " %%zmm12, %%zmm13, %%zmm5\n" op     \
     " %%zmm12, %%zmm13, %%zmm6\n" op " %%zmm12, %%zmm13, %%zmm7\n" op " %%zmm12, %%zmm13, %%zmm8\n" op     \
     " %%zmm12, %%zmm13, %%zmm9\n" op " %%zmm12, %%zmm13, %%zmm10\n" op " %%zmm12, %%zmm13, %%zmm11\n"
#define EMBER_PEAK_LOOP(op)                                                                                   \
  __asm__ volatile("vpxord %%zmm12, %%zmm12, %%zmm12\n vpxord %%zmm13, %%zmm13, %%zmm13\n mov %0, %%rcx\n" \
                   "1:\n" EMBER_PEAK_BODY(op) "dec %%rcx\n jnz 1b\n vzeroupper\n"                          \
                   :                                                                                        \
                   : "r"(iterations)                                                                        \
                   : "rcx", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",   \
                     "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15")  // (vzeroupper: every upper half)

PeakRates peak_rates(long iterations, int rounds) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16") || iterations <= 0) return {};
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
  double fma = 1e300, dot = 1e300;
  for (int r = 0; r < std::max(rounds, 1); ++r) {
    auto t0 = clock::now();
    EMBER_PEAK_LOOP("vfmadd231ps");
    fma = std::min(fma, seconds(t0));
    t0 = clock::now();
    EMBER_PEAK_LOOP("vdpbf16ps");
    dot = std::min(dot, seconds(t0));
  }
  // A vfmadd231ps does 32 floating-point operations, a vdpbf16ps 64.
  const double instructions = 12.0 * static_cast<double>(iterations);
  return {instructions * 32 / fma / 1e9, instructions * 64 / dot / 1e9};
}
#undef EMBER_PEAK_LOOP
#undef EMBER_PEAK_BODY
#else
PeakRates peak_rates(long, int) { return {}; }
#endif

Bf16Kernels choose_bf16_kernels(bool amx, bool avx512_bf16, const PeakRates& rates) {
  if (amx) return Bf16Kernels::kAmx;
  if (avx512_bf16 && rates.fma_gflops > 0 && rates.bf16_dot_gflops >= 1.5 * rates.fma_gflops)
    return Bf16Kernels::kAvx512;
  return Bf16Kernels::kNone;
}

namespace {
bool has_isa(unsigned effective, dnnl::cpu_isa isa) {
  const auto need = static_cast<unsigned>(isa);  // the ISA values are bit sets
  return (effective & need) == need;
}
}  // namespace

// Whether oneDNN's bf16 kernels beat widening to float32 here: with AMX, or where the CPU's bfloat16
// dot product (vdpbf16ps, what oneDNN's AVX512-BF16 kernels compute with) runs at least 1.5 times float32's
// FMA rate, which a short measurement on first use decides. With AMX (oneDNN 2.6, 2 threads) a 1024^3 matmul
// took 4.4 ms against float32's 13.8, a 3x3 64->128 convolution 4.9 / 7.6 / 8.2 ms (forward / data /
// weights) against 23.7 / 18.8 / 18.3. The two AVX512-BF16 CPUs measured differ: on an Intel Xeon (Sapphire
// Rapids, AMX off) vdpbf16ps ran at half float32's rate and the same work took 19.6 ms and 27.8 / 37.1 /
// 29.6 ms, slower than float32; on an AMD EPYC (Zen 4) it runs at twice float32's rate and the CNN's
// 13x13x32->64 convolution took 1.3 / 1.4 / 1.8 ms against float32's 2.6 / 2.6 / 2.8. Plain AVX-512 only
// emulates bf16 (4-5x slower still); below AVX-512 oneDNN has no bf16.
Bf16Kernels native_bf16_kernels() {
  static const Bf16Kernels kind = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const bool amx = has_isa(isa, dnnl::cpu_isa::avx512_core_amx);
    const bool avx512_bf16 = has_isa(isa, dnnl::cpu_isa::avx512_core_bf16);
    // Measured only where it decides.
    const PeakRates r = !amx && avx512_bf16 ? peak_rates(200'000, 3) : PeakRates{};
    const Bf16Kernels k = choose_bf16_kernels(amx, avx512_bf16, r);
    if (r.fma_gflops > 0)
      logging::debug("bfloat16 kernels: vdpbf16ps at " + std::to_string(r.bf16_dot_gflops / r.fma_gflops) +
                     "x float32's FMA rate, " +
                     (k == Bf16Kernels::kNone ? "widened to float32" : "oneDNN's AVX512-BF16 kernels"));
    return k;
  }();
  return kind;
}

bool fast_bf16_kernel(const dnnl::primitive_desc_base& pd) {
  switch (native_bf16_kernels()) {
    case Bf16Kernels::kAmx: return is_amx(pd);
    case Bf16Kernels::kAvx512: return is_jit(pd);
    case Bf16Kernels::kNone: return false;
  }
  return false;
}

// Fewer than 16 input channels do not fill AMX's tiles: on the Fashion-MNIST CNN's first convolution (one input
// channel, batch 128, one thread) the filter gradient took 1.85 ms on AMX against float32's 1.5 ms (and the
// forward 1.6 ms on an Intel AVX512-BF16 kernel against 0.8 ms). On the AMD EPYC's AVX512-BF16 kernels the same
// convolution beats float32 (2 threads: forward 0.53 ms against 0.66, filter gradient 0.38 against 0.44).
int64_t min_bf16_conv_channels() { return native_bf16_kernels() == Bf16Kernels::kAmx ? 16 : 1; }

bool bf16_primitives_usable() { return bf16_enabled() && native_bf16_kernels() != Bf16Kernels::kNone; }

void check_bf16_enabled() {
  if (!bf16_enabled()) throw dnnl::error(dnnl_unimplemented, "bf16 primitives are switched off");
  if (native_bf16_kernels() == Bf16Kernels::kNone)
    throw dnnl::error(dnnl_unimplemented, "oneDNN's bf16 kernels are slower than float32 here");
}

}  // namespace ember::dnnl_ctx
