// CPU kernels of random_uniform, random_normal and truncated_normal. Element i comes from Philox block
// attrs.counter + i / per_block (per_block = 4 for 32- and 16-bit types, 2 for 64-bit ones, as in TF), so
// the output depends only on the attributes, never on how the work is split between threads. The scaling
// (u * range + lo, z * stddev + mean) is one fused multiply-add, std::fma, as in the CUDA kernels: the values
// are the same whether or not the build lets the compiler fuse (-march=native on an FMA host, or not).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "framework/core/parallel.h"
#include "framework/core/philox.h"
#include "framework/ops/dispatch.h"

namespace ember {

namespace {

template <class T>
constexpr int64_t per_block() {
  return sizeof(T) == 8 ? 2 : 4;
}

// Standard normal samples of one block: Box-Muller on word pairs (on both word pairs for double).
template <class T>
void normals_of(const philox::Uint4& b, compute_t<T>* z) {
  if constexpr (std::is_same_v<T, double>) {
    philox::box_muller_double(b.v[0], b.v[1], b.v[2], b.v[3], z[0], z[1]);
  } else {
    philox::box_muller_float(b.v[0], b.v[1], z[0], z[1]);
    philox::box_muller_float(b.v[2], b.v[3], z[2], z[3]);
  }
}

// Runs fill(block, first_element, count) over the blocks of an n-element output in parallel.
template <class T, class F>
void for_each_block(int64_t n, uint64_t counter, uint64_t key, F&& fill) {
  constexpr int64_t k = per_block<T>();
  const int64_t blocks = (n + k - 1) / k;
  parallel_for(blocks, kParallelGrain / k / 8, [&](int64_t b0, int64_t b1) {
    // Blocks are made a batch at a time, apart from their use: the batch's independent chains of rounds
    // overlap in the CPU, which one block then its fill, in turn, kept apart (4x slower).
    constexpr int64_t kBatch = 64;
    philox::Uint4 batch[kBatch];
    for (int64_t b = b0; b < b1; b += kBatch) {
      const int64_t m = std::min(kBatch, b1 - b);
      for (int64_t i = 0; i < m; ++i) batch[i] = philox::block(key, counter + static_cast<uint64_t>(b + i));
      for (int64_t i = 0; i < m; ++i) fill(batch[i], (b + i) * k, std::min<int64_t>(k, n - (b + i) * k));
    }
  });
}

template <class T>
void uniform_fill(T* out, int64_t n, const RandomAttrs& a) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    const T lo = static_cast<T>(a.a);
    const U range = static_cast<U>(static_cast<U>(static_cast<T>(a.b)) - static_cast<U>(lo));
    for_each_block<T>(n, a.counter, a.key, [&](const philox::Uint4& b, int64_t i0, int64_t count) {
      for (int64_t j = 0; j < count; ++j) {
        U bits;
        if constexpr (sizeof(T) == 8)
          bits = b.v[2 * j] | (static_cast<uint64_t>(b.v[2 * j + 1]) << 32);
        else
          bits = b.v[j];
        // lo + bits % range, computed unsigned so that hi - lo may exceed the signed range (TF's SignedAdd).
        out[i0 + j] = static_cast<T>(static_cast<U>(lo) + bits % range);
      }
    });
  } else {
    using C = compute_t<T>;
    // minval and maxval take the output dtype first, as TF converts them to tensors of it.
    const C lo = static_cast<C>(static_cast<T>(a.a));
    const C range = static_cast<C>(static_cast<T>(a.b)) - lo;
    for_each_block<T>(n, a.counter, a.key, [&](const philox::Uint4& b, int64_t i0, int64_t count) {
      for (int64_t j = 0; j < count; ++j) {
        C u;
        if constexpr (std::is_same_v<T, double>)
          u = philox::uint64_to_double(b.v[2 * j], b.v[2 * j + 1]);
        else if constexpr (std::is_same_v<T, half>)
          u = philox::uint32_to_half_uniform(b.v[j]);
        else if constexpr (std::is_same_v<T, bfloat16>)
          u = philox::uint32_to_bfloat16_uniform(b.v[j]);
        else
          u = philox::uint32_to_float(b.v[j]);
        out[i0 + j] = static_cast<T>(std::fma(u, range, lo));
      }
    });
  }
}

template <class T>
void normal_fill(T* out, int64_t n, const RandomAttrs& a) {
  using C = compute_t<T>;
  const C mean = static_cast<C>(a.a), stddev = static_cast<C>(a.b);
  for_each_block<T>(n, a.counter, a.key, [&](const philox::Uint4& b, int64_t i0, int64_t count) {
    C z[4] = {};
    normals_of<T>(b, z);
    for (int64_t j = 0; j < count; ++j) out[i0 + j] = static_cast<T>(std::fma(z[j], stddev, mean));
  });
}

// Past this many redraws an element gives up and takes 0; the chance of getting there, 0.0455^64, is nil.
constexpr uint64_t kMaxTruncatedRounds = 64;

// TF redraws samples outside two standard deviations from the same stream, which makes an element depend
// on its neighbours' luck. Here element i's r-th attempt is value i % per_block of block
// (counter + i / per_block, r): round 0 is exactly random_normal's draw, later rounds use counter high
// words no other op touches, and every element stays a pure function of the attributes.
template <class T>
void truncated_normal_fill(T* out, int64_t n, const RandomAttrs& a) {
  using C = compute_t<T>;
  const C mean = static_cast<C>(a.a), stddev = static_cast<C>(a.b);
  constexpr int64_t k = per_block<T>();
  for_each_block<T>(n, a.counter, a.key, [&](const philox::Uint4& first, int64_t i0, int64_t count) {
    C z[4] = {};
    normals_of<T>(first, z);
    const uint64_t counter = a.counter + static_cast<uint64_t>(i0 / k);
    for (int64_t j = 0; j < count; ++j) {
      C v = z[j];
      for (uint64_t r = 1; !(std::abs(v) < C(2)); ++r) {
        if (r == kMaxTruncatedRounds) {
          v = C(0);
          break;
        }
        C redraw[4] = {};
        normals_of<T>(philox::block(a.key, counter, r), redraw);
        v = redraw[j];
      }
      out[i0 + j] = static_cast<T>(std::fma(v, stddev, mean));
    }
  });
}

void random_uniform_cpu(const KernelContext& ctx) {
  const auto& a = std::get<RandomAttrs>(ctx.attrs);
  Tensor& out = ctx.outputs[0];
  EMBER_DISPATCH_NUMERIC(out.dtype(), "random_uniform",
                         uniform_fill(static_cast<scalar_t*>(out.raw_data()), out.num_elements(), a));
}

void random_normal_cpu(const KernelContext& ctx) {
  const auto& a = std::get<RandomAttrs>(ctx.attrs);
  Tensor& out = ctx.outputs[0];
  EMBER_DISPATCH_FLOAT(out.dtype(), "random_normal",
                       normal_fill(static_cast<scalar_t*>(out.raw_data()), out.num_elements(), a));
}

void truncated_normal_cpu(const KernelContext& ctx) {
  const auto& a = std::get<RandomAttrs>(ctx.attrs);
  Tensor& out = ctx.outputs[0];
  EMBER_DISPATCH_FLOAT(out.dtype(), "truncated_normal",
                       truncated_normal_fill(static_cast<scalar_t*>(out.raw_data()), out.num_elements(), a));
}

}  // namespace

EMBER_REGISTER_KERNEL(random_uniform, CPU, random_uniform_cpu, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16, DType::Int32, DType::Int64);
EMBER_REGISTER_KERNEL(random_normal, CPU, random_normal_cpu, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(truncated_normal, CPU, truncated_normal_cpu, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace ember
