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

// Runs fill(words, first_block, blocks) over the Philox blocks counter + [0, total) in parallel, a batch of
// philox::kBatchBlocks at a time: words[4 i .. 4 i + 3] are block first_block + i's. A batch's blocks are made
// together, apart from their use: their independent chains of rounds overlap in the CPU (philox::blocks
// vectorises them), which one block then its fill, in turn, kept apart (4x slower).
template <class F>
void for_each_batch(int64_t total, int64_t grain, uint64_t counter, uint64_t key, F&& fill) {
  parallel_for(total, grain, [&](int64_t b0, int64_t b1) {
    constexpr int64_t kBatch = philox::kBatchBlocks;
    uint32_t words[4 * kBatch];
    for (int64_t b = b0; b < b1; b += kBatch) {
      const int64_t m = std::min(kBatch, b1 - b);
      philox::blocks(key, counter + static_cast<uint64_t>(b), static_cast<int>(m), words);
      fill(static_cast<const uint32_t*>(words), b, m);
    }
  });
}

// Runs fill(block, first_element, count) over the blocks of an n-element output in parallel.
template <class T, class F>
void for_each_block(int64_t n, uint64_t counter, uint64_t key, F&& fill) {
  constexpr int64_t k = per_block<T>();
  for_each_batch((n + k - 1) / k, kParallelGrain / k / 8, counter, key,
                 [&](const uint32_t* words, int64_t b, int64_t m) {
                   for (int64_t i = 0; i < m; ++i) {
                     const philox::Uint4 block{{words[4 * i], words[4 * i + 1], words[4 * i + 2], words[4 * i + 3]}};
                     fill(block, (b + i) * k, std::min<int64_t>(k, n - (b + i) * k));
                   }
                 });
}

// Runs fill(words, first_element, count) over an n-element output of a type taking one word an element:
// words[j] is element first_element + j's word, as for_each_block hands them out, so one loop fills a batch.
template <class F>
void for_each_word_batch(int64_t n, uint64_t counter, uint64_t key, F&& fill) {
  for_each_batch((n + 3) / 4, kParallelGrain / 4 / 8, counter, key, [&](const uint32_t* words, int64_t b, int64_t m) {
    fill(words, 4 * b, std::min<int64_t>(4 * m, n - 4 * b));
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
    if constexpr (std::is_same_v<T, double>) {
      for_each_block<T>(n, a.counter, a.key, [&](const philox::Uint4& b, int64_t i0, int64_t count) {
        for (int64_t j = 0; j < count; ++j)
          out[i0 + j] = std::fma(philox::uint64_to_double(b.v[2 * j], b.v[2 * j + 1]), range, lo);
      });
    } else {
      for_each_word_batch(n, a.counter, a.key, [&](const uint32_t* w, int64_t i0, int64_t count) {
        T* o = out + i0;
        for (int64_t j = 0; j < count; ++j) {
          C u;
          if constexpr (std::is_same_v<T, half>)
            u = philox::uint32_to_half_uniform(w[j]);
          else if constexpr (std::is_same_v<T, bfloat16>)
            u = philox::uint32_to_bfloat16_uniform(w[j]);
          else
            u = philox::uint32_to_float(w[j]);
          o[j] = static_cast<T>(std::fma(u, range, lo));
        }
      });
    }
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
