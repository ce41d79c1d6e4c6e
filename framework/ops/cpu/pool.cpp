// CPU 2-D pooling (NHWC) and its gradients: hand-written loops with channels innermost so they vectorise (half
// types too: their elements go through half_convert.h's vectorisable conversions).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "framework/core/parallel.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/dispatch.h"

namespace ember {

namespace {

// Channels are processed in blocks of this many so accumulators live on the stack.
constexpr int64_t kCBlock = 64;

struct PoolGeom {
  int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
  // The clipped window [begin, end) of output row/column o along one dimension.
  static void window(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t in, int64_t& b, int64_t& e) {
    b = o * stride - pad;
    e = std::min(b + k, in);
    b = std::max<int64_t>(b, 0);
  }
  void rows(int64_t o, int64_t& b, int64_t& e) const { window(o, sh, pt, kh, h, b, e); }
  void cols(int64_t o, int64_t& b, int64_t& e) const { window(o, sw, pl, kw, w, b, e); }
};

PoolGeom pool_geom(const Shape& in, const Shape& out, const Pool2DAttrs& a) {
  return {in[0],      in[1],      in[2],        in[3],        out[1],    out[2],
          a.ksize[0], a.ksize[1], a.strides[0], a.strides[1], a.pads[0], a.pads[2]};
}

// Float32 lanes as GCC/Clang vector extensions: compares give lane masks and ?: selects whole vectors, so the
// routing below is branch-free (written as scalar selects, GCC turns it into branches and masked stores). The
// loops take the widest the build's target has registers for (the library builds for the machine's CPU by
// default: 16 lanes with AVX-512, 8 with AVX), then 4 lanes (SSE2, in every x86-64's ABI), then single channels,
// so a few channels (8, 12) still run as vectors.
#if defined(__AVX512F__)
constexpr int kWideLanes = 16;
#elif defined(__AVX__)
constexpr int kWideLanes = 8;
#else
constexpr int kWideLanes = 4;
#endif
// (Spelled out per width, here by a macro: GCC drops vector_size on a type that depends on a template parameter.)
template <int kLanes>
struct VectorTypes;
#define EMBER_POOL_VECTOR_TYPES(lanes)                                \
  template <>                                                         \
  struct VectorTypes<lanes> {                                         \
    using F = float __attribute__((vector_size(4 * (lanes))));        \
    using I = int32_t __attribute__((vector_size(4 * (lanes))));      \
    using U16 = uint16_t __attribute__((vector_size(2 * (lanes))));   \
    using U32 = uint32_t __attribute__((vector_size(4 * (lanes))));   \
  };
EMBER_POOL_VECTOR_TYPES(4)
EMBER_POOL_VECTOR_TYPES(8)
EMBER_POOL_VECTOR_TYPES(16)
#undef EMBER_POOL_VECTOR_TYPES
// Float32 lanes loaded from and stored to float32 or bfloat16 elements. A bfloat16 is a float32's upper half, so
// it widens exactly by a shift; a store narrows by dropping the lower half, exact for the values the pooling loops
// store (each a loaded value, or 0 + one).
template <int kLanes>
struct Lanes {
  using F = typename VectorTypes<kLanes>::F;
  using I = typename VectorTypes<kLanes>::I;
  using U16 = typename VectorTypes<kLanes>::U16;
  using U32 = typename VectorTypes<kLanes>::U32;
  static_assert(sizeof(F) == 4 * kLanes && sizeof(U16) == 2 * kLanes);
  static F load(const float* p) {
    F v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(float* p, F v) { std::memcpy(p, &v, sizeof v); }
  static F load(const bfloat16* p) {
    U16 h;
    std::memcpy(&h, static_cast<const void*>(p), sizeof h);
    return reinterpret_cast<F>(__builtin_convertvector(h, U32) << 16);  // (a vector cast keeps the bits)
  }
  static void store(bfloat16* p, F v) {
    const U16 h = __builtin_convertvector(reinterpret_cast<U32>(v) >> 16, U16);
    std::memcpy(static_cast<void*>(p), &h, sizeof h);
  }
};

// Runs step.template operator()<kLanes>(j) over [0, len) in the widest lanes first, then 4, then 1 (step's
// scalar form: kLanes == 1).
template <class Step>
inline void by_lanes(int64_t len, Step&& step) {
  int64_t j = 0;
  if constexpr (kWideLanes > 4)
    for (; j + kWideLanes <= len; j += kWideLanes) step.template operator()<kWideLanes>(j);
  for (; j + 4 <= len; j += 4) step.template operator()<4>(j);
  for (; j < len; ++j) step.template operator()<1>(j);
}

// The maximum of one whole 2x2 window of float32 or bfloat16 values, len channels, as the general loop below
// computes it: a NaN wins (the window's last one, as in TF's max), otherwise the first of the largest values.
// x0..x3 are the window's pixels in row-major order.
template <class T>
void max_pool_2x2(const T* x0, const T* x1, const T* x2, const T* x3, T* y, int64_t len) {
  by_lanes(len, [&]<int kLanes>(int64_t j) {
    if constexpr (kLanes == 1) {
      T best = x0[j];
      for (const T* xp : {x1, x2, x3}) {
        const float v = cpu::to_compute(xp[j]), b = cpu::to_compute(best);
        best = v > b || v != v ? xp[j] : best;
      }
      y[j] = best;
    } else {
      using L = Lanes<kLanes>;
      typename L::F best = L::load(x0 + j);
      for (const T* xp : {x1, x2, x3}) {
        const typename L::F v = L::load(xp + j);
        best = (v > best) | (v != v) ? v : best;
      }
      L::store(y + j, best);
    }
  });
}

// Keras's MaxPooling2D(2): 2x2 windows at stride 2, none clipped (no padding, so an odd last row or column is in
// no window).
bool whole_2x2_windows(const PoolGeom& g) {
  return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.pt == 0 && g.pl == 0 && 2 * g.oh <= g.h &&
         2 * g.ow <= g.w;
}

// Max pooling over whole_2x2_windows, parallel over (batch, output row). Float32 and bfloat16 run max_pool_2x2 on
// the rows as they are; float16 widens the row's two input rows to float32 at once (element conversions keep a
// float16 loop scalar, and converting window by window costs more than the maximum), runs the float32 loop and
// narrows the output row at once. Every conversion is exact (a maximum is one of the inputs), so the values are
// the general loop's.
template <class T>
void max_pool_2x2_rows(const T* x, T* y, const PoolGeom& g) {
  constexpr bool kDirect = std::is_same_v<T, float> || std::is_same_v<T, bfloat16>;
  const int64_t row = g.w * g.c, used = 2 * g.ow * g.c, out_row = g.ow * g.c;
  parallel_for(g.n * g.oh, grain_for(2 * used), [&](int64_t begin, int64_t end) {
    std::vector<float> buf(kDirect ? 0 : static_cast<size_t>(2 * used + out_row));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / g.oh, oh = t % g.oh;
      const T* x0 = x + (n * g.h + 2 * oh) * row;
      if constexpr (kDirect) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const T* xp = x0 + 2 * ow * g.c;
          max_pool_2x2(xp, xp + g.c, xp + row, xp + row + g.c, y + t * out_row + ow * g.c, g.c);
        }
      } else {
        float *top = buf.data(), *bottom = top + used, *out = bottom + used;
        cpu::to_compute_n(x0, top, used);
        cpu::to_compute_n(x0 + row, bottom, used);
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const int64_t i = 2 * ow * g.c;
          max_pool_2x2(top + i, top + i + g.c, bottom + i, bottom + i + g.c, out + ow * g.c, g.c);
        }
        cpu::from_compute_n(out, y + t * out_row, out_row);
      }
    }
  });
}

// Forward max / average pooling, parallel over (batch, output row).
template <class T, bool kMax>
void pool_forward(const T* x, T* y, const PoolGeom& g) {
  using C = compute_t<T>;
  parallel_for(g.n * g.oh, grain_for(g.ow * g.c * g.kh * g.kw), [&](int64_t begin, int64_t end) {
    C acc[kCBlock];
    for (int64_t t = begin; t < end; ++t) {
      int64_t n = t / g.oh, oh = t % g.oh, hb, he;
      g.rows(oh, hb, he);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        int64_t wb, we;
        g.cols(ow, wb, we);
        T* yp = y + ((n * g.oh + oh) * g.ow + ow) * g.c;
        if constexpr (kMax && (std::is_same_v<T, float> || std::is_same_v<T, bfloat16>)) {
          if (he - hb == 2 && we - wb == 2) {  // a whole 2x2 window: vector selects, the accumulator in registers
            const T* xp = x + ((n * g.h + hb) * g.w + wb) * g.c;
            const int64_t down = g.w * g.c;
            max_pool_2x2(xp, xp + g.c, xp + down, xp + down + g.c, yp, g.c);
            continue;
          }
        }
        for (int64_t c0 = 0; c0 < g.c; c0 += kCBlock) {
          int64_t len = std::min(kCBlock, g.c - c0);
          for (int64_t j = 0; j < len; ++j) acc[j] = kMax ? -std::numeric_limits<C>::infinity() : C(0);
          for (int64_t ih = hb; ih < he; ++ih)
            for (int64_t iw = wb; iw < we; ++iw) {
              const T* xp = x + ((n * g.h + ih) * g.w + iw) * g.c + c0;
              for (int64_t j = 0; j < len; ++j) {
                C v = cpu::to_compute(xp[j]);
                if constexpr (kMax)
                  acc[j] = (v > acc[j] || v != v) ? v : acc[j];  // NaN propagates, as in TF's max
                else
                  acc[j] += v;
              }
            }
          // SAME windows are clipped to the real pixels, so the average divides by their count (TF).
          C scale = kMax ? C(1) : C(1) / static_cast<C>((he - hb) * (we - wb));
          for (int64_t j = 0; j < len; ++j) yp[c0 + j] = cpu::from_compute<T>(kMax ? acc[j] : acc[j] * scale);
        }
      }
    }
  });
}

// The gradient of one whole 2x2 float32 or bfloat16 window that no other window overlaps (Keras's default pooling), len
// channels: each pixel gets 0 + dy (-0 becomes +0) where it is the window's first maximum, else 0. The rule is
// the general loop's: strictly greater replaces, so ties and a later NaN keep the earlier pixel. x0..x3 and
// d0..d3 are the window's pixels in row-major order.
template <class T>
void max_pool_grad_2x2(const T* x0, const T* x1, const T* x2, const T* x3, const T* dy, T* d0, T* d1, T* d2, T* d3,
                       int64_t len) {
  by_lanes(len, [&]<int kLanes>(int64_t j) {
    if constexpr (kLanes == 1) {
      float best = cpu::to_compute(x0[j]);
      int k = 0;
      for (int i = 1; i < 4; ++i) {
        const float v = cpu::to_compute((i == 1 ? x1 : i == 2 ? x2 : x3)[j]);
        if (v > best) best = v, k = i;
      }
      const T g = cpu::from_compute<T>(0.0f + cpu::to_compute(dy[j]));
      d0[j] = k == 0 ? g : T(0);
      d1[j] = k == 1 ? g : T(0);
      d2[j] = k == 2 ? g : T(0);
      d3[j] = k == 3 ? g : T(0);
    } else {
      using L = Lanes<kLanes>;
      using F = typename L::F;
      using I = typename L::I;
      const F zero = {};
      const F v0 = L::load(x0 + j), v1 = L::load(x1 + j), v2 = L::load(x2 + j), v3 = L::load(x3 + j);
      I gt = v1 > v0;
      F best = gt ? v1 : v0;
      I k = gt & 1;
      gt = v2 > best;
      best = gt ? v2 : best;
      k = gt ? 2 : k;
      k = v3 > best ? 3 : k;
      const F g = zero + L::load(dy + j);
      L::store(d0 + j, k == 0 ? g : zero);
      L::store(d1 + j, k == 1 ? g : zero);
      L::store(d2 + j, k == 2 ? g : zero);
      L::store(d3 + j, k == 3 ? g : zero);
    }
  });
}

// The max-pool gradient over whole_2x2_windows, as max_pool_2x2_rows: per (batch, output row), max_pool_grad_2x2
// on the two input rows and the row of dy, writing the two rows of dx; float16 on float32 copies of them (widened
// at once, the two rows of dx narrowed at once: exact, each is 0 or 0 + dy). Pixels in no window (an odd last row
// or column) get 0.
template <class T>
void max_pool_grad_2x2_rows(const T* x, const T* dy, T* dx, const PoolGeom& g) {
  constexpr bool kDirect = std::is_same_v<T, float> || std::is_same_v<T, bfloat16>;
  const int64_t row = g.w * g.c, used = 2 * g.ow * g.c, out_row = g.ow * g.c;
  parallel_for(g.n * g.oh, grain_for(4 * used), [&](int64_t begin, int64_t end) {
    std::vector<float> buf(kDirect ? 0 : static_cast<size_t>(4 * used + out_row));
    for (int64_t t = begin; t < end; ++t) {  // t: a pair of input rows, the windows of output row t % oh
      const int64_t n = t / g.oh, pair = t % g.oh;
      T* d0 = dx + (n * g.h + 2 * pair) * row;
      const T* x0 = x + (n * g.h + 2 * pair) * row;
      if constexpr (kDirect) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const int64_t i = 2 * ow * g.c;
          max_pool_grad_2x2(x0 + i, x0 + i + g.c, x0 + row + i, x0 + row + i + g.c, dy + t * out_row + ow * g.c,
                            d0 + i, d0 + i + g.c, d0 + row + i, d0 + row + i + g.c, g.c);
        }
      } else {
        float *top = buf.data(), *bottom = top + used, *dtop = bottom + used, *dbottom = dtop + used,
              *dyf = dbottom + used;
        cpu::to_compute_n(x0, top, used);
        cpu::to_compute_n(x0 + row, bottom, used);
        cpu::to_compute_n(dy + t * out_row, dyf, out_row);
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const int64_t i = 2 * ow * g.c;
          max_pool_grad_2x2(top + i, top + i + g.c, bottom + i, bottom + i + g.c, dyf + ow * g.c, dtop + i,
                            dtop + i + g.c, dbottom + i, dbottom + i + g.c, g.c);
        }
        cpu::from_compute_n(dtop, d0, used);
        cpu::from_compute_n(dbottom, d0 + row, used);
      }
      std::fill(d0 + used, d0 + row, T(0));  // an odd last column
      std::fill(d0 + row + used, d0 + 2 * row, T(0));
    }
  });
  if (g.h % 2)  // an odd last row
    for (int64_t n = 0; n < g.n; ++n) std::fill(dx + (n * g.h + g.h - 1) * row, dx + (n * g.h + g.h) * row, T(0));
}

// Max-pool gradient: each window's gradient goes to the first (row-major) position of its maximum, as TF's
// MaxPoolGrad. Windows overlap along both spatial axes, so the work is split over (batch, channel block),
// whose output slices are disjoint.
template <class T>
void max_pool_backward(const T* x, const T* dy, T* dx, const PoolGeom& g) {
  using C = compute_t<T>;
  int64_t cblocks = (g.c + kCBlock - 1) / kCBlock;
  // Windows that do not overlap (stride >= window: Keras's default pooling) own their pixels and write all of
  // them below, so only the pixels outside every window need zeroing (with VALID 2x2 pooling of an even size:
  // none). Overlapping windows scatter-add, onto a zeroed slice.
  const bool disjoint = g.sh >= g.kh && g.sw >= g.kw;
  std::vector<char> row_hit(static_cast<size_t>(g.h), 0), col_hit(static_cast<size_t>(g.w), 0);
  auto mark = [](std::vector<char>& hit, int64_t out, auto window) {
    for (int64_t o = 0; o < out; ++o) {
      int64_t b, e;
      window(o, b, e);
      std::fill(hit.begin() + b, hit.begin() + e, char(1));
    }
  };
  if (disjoint) {
    mark(row_hit, g.oh, [&](int64_t o, int64_t& b, int64_t& e) { g.rows(o, b, e); });
    mark(col_hit, g.ow, [&](int64_t o, int64_t& b, int64_t& e) { g.cols(o, b, e); });
  }
  parallel_for(
      g.n * cblocks, grain_for(g.oh * g.ow * std::min(g.c, kCBlock) * g.kh * g.kw), [&](int64_t begin, int64_t end) {
        C best[kCBlock];
        // Same width as float so the select below vectorises; a position is within one image.
        int32_t pos[kCBlock];
        T grad[kCBlock];
        for (int64_t t = begin; t < end; ++t) {
          int64_t n = t / cblocks, c0 = (t % cblocks) * kCBlock;
          int64_t len = std::min(kCBlock, g.c - c0);
          const T* xn = x + n * g.h * g.w * g.c + c0;
          T* dxn = dx + n * g.h * g.w * g.c + c0;
          // Zeroing the task's own slice here keeps it in cache for the writes below.
          for (int64_t ih = 0; ih < g.h; ++ih)
            for (int64_t iw = 0; iw < g.w; ++iw) {
              if (disjoint && row_hit[static_cast<size_t>(ih)] && col_hit[static_cast<size_t>(iw)]) continue;
              T* dp = dxn + (ih * g.w + iw) * g.c;
              std::fill(dp, dp + len, T(0));
            }
          for (int64_t oh = 0; oh < g.oh; ++oh) {
            int64_t hb, he;
            g.rows(oh, hb, he);
            for (int64_t ow = 0; ow < g.ow; ++ow) {
              int64_t wb, we;
              g.cols(ow, wb, we);
              const T* dyp = dy + ((n * g.oh + oh) * g.ow + ow) * g.c + c0;
              if (disjoint && he - hb == 2 && we - wb == 2) {
                const T* xp = xn + (hb * g.w + wb) * g.c;
                T* dp = dxn + (hb * g.w + wb) * g.c;
                const int64_t down = g.w * g.c;
                if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bfloat16>) {
                  max_pool_grad_2x2(xp, xp + g.c, xp + down, xp + down + g.c, dyp, dp, dp + g.c, dp + down,
                                    dp + down + g.c, len);
                  continue;
                }
              }
              for (int64_t j = 0; j < len; ++j) {
                best[j] = cpu::to_compute(xn[(hb * g.w + wb) * g.c + j]);
                pos[j] = static_cast<int32_t>(hb * g.w + wb);
              }
              for (int64_t ih = hb; ih < he; ++ih)
                for (int64_t iw = wb; iw < we; ++iw) {
                  const T* xp = xn + (ih * g.w + iw) * g.c;
                  int32_t p = static_cast<int32_t>(ih * g.w + iw);
                  for (int64_t j = 0; j < len; ++j) {
                    C v = cpu::to_compute(xp[j]);
                    bool greater = v > best[j];  // strictly: ties keep the first maximum
                    best[j] = greater ? v : best[j];
                    pos[j] = greater ? p : pos[j];
                  }
                }
              if (disjoint) {
                // Each pixel is in this window only: write every pixel of it (the maximum's gradient, or 0)
                // in vector selects instead of scattering by pos. 0 + dy, as the sum below: -0 becomes +0.
                // Added in a loop of its own: under trapping math GCC will not if-convert an add in a select.
                for (int64_t j = 0; j < len; ++j) grad[j] = cpu::from_compute<T>(C(0) + cpu::to_compute(dyp[j]));
                for (int64_t ih = hb; ih < he; ++ih)
                  for (int64_t iw = wb; iw < we; ++iw) {
                    T* dp = dxn + (ih * g.w + iw) * g.c;
                    int32_t p = static_cast<int32_t>(ih * g.w + iw);
                    for (int64_t j = 0; j < len; ++j) dp[j] = pos[j] == p ? grad[j] : T(0);
                  }
                continue;
              }
              for (int64_t j = 0; j < len; ++j) {
                T& d = dxn[pos[j] * g.c + j];
                d = cpu::from_compute<T>(cpu::to_compute(d) + cpu::to_compute(dyp[j]));
              }
            }
          }
        }
      });
}

// Average-pool gradient as a gather: every input pixel sums grad / count over the windows covering it, so rows
// are independent and the loop runs in parallel over (batch, input row).
template <class T>
void avg_pool_backward(const T* dy, T* dx, const PoolGeom& g, const std::vector<int64_t>& row_count,
                       const std::vector<int64_t>& col_count) {
  using C = compute_t<T>;
  // Output positions o whose window [o * s - pad, o * s - pad + k) contains i.
  auto covering = [](int64_t i, int64_t s, int64_t pad, int64_t k, int64_t out, int64_t& lo, int64_t& hi) {
    int64_t first = i + pad - k + 1;
    lo = first <= 0 ? 0 : (first + s - 1) / s;
    hi = std::min((i + pad) / s + 1, out);
  };
  parallel_for(g.n * g.h, grain_for(g.w * g.c * g.kh * g.kw), [&](int64_t begin, int64_t end) {
    C acc[kCBlock];
    for (int64_t t = begin; t < end; ++t) {
      int64_t n = t / g.h, ih = t % g.h, oh_lo, oh_hi;
      covering(ih, g.sh, g.pt, g.kh, g.oh, oh_lo, oh_hi);
      for (int64_t iw = 0; iw < g.w; ++iw) {
        int64_t ow_lo, ow_hi;
        covering(iw, g.sw, g.pl, g.kw, g.ow, ow_lo, ow_hi);
        T* dxp = dx + ((n * g.h + ih) * g.w + iw) * g.c;
        for (int64_t c0 = 0; c0 < g.c; c0 += kCBlock) {
          int64_t len = std::min(kCBlock, g.c - c0);
          for (int64_t j = 0; j < len; ++j) acc[j] = 0;
          for (int64_t oh = oh_lo; oh < oh_hi; ++oh)
            for (int64_t ow = ow_lo; ow < ow_hi; ++ow) {
              C inv = C(1) / static_cast<C>(row_count[oh] * col_count[ow]);
              const T* dyp = dy + ((n * g.oh + oh) * g.ow + ow) * g.c + c0;
              for (int64_t j = 0; j < len; ++j) acc[j] += cpu::to_compute(dyp[j]) * inv;
            }
          for (int64_t j = 0; j < len; ++j) dxp[c0 + j] = cpu::from_compute<T>(acc[j]);
        }
      }
    }
  });
}

template <bool kMax>
void pool_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  if (y.num_elements() == 0) return;
  PoolGeom g = pool_geom(x.shape(), y.shape(), std::get<Pool2DAttrs>(ctx.attrs));
  EMBER_DISPATCH_FLOAT(x.dtype(), op_name(ctx.op), {
    const auto* xp = static_cast<const scalar_t*>(x.raw_data());
    auto* yp = static_cast<scalar_t*>(y.raw_data());
    if constexpr (kMax && !std::is_same_v<scalar_t, double>) {
      if (whole_2x2_windows(g)) return max_pool_2x2_rows<scalar_t>(xp, yp, g);
    }
    pool_forward<scalar_t, kMax>(xp, yp, g);
  });
}

void max_pool_grad_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[2];
  Tensor& dx = ctx.outputs[0];
  if (dx.num_elements() == 0) return;
  PoolGeom g = pool_geom(x.shape(), dy.shape(), std::get<Pool2DAttrs>(ctx.attrs));
  EMBER_CHECK(g.h * g.w <= INT32_MAX, InvalidArgument)
      << "max_pool2d_grad: images of " << g.h << "x" << g.w << " pixels are too large (at most 2^31 pixels)";
  EMBER_DISPATCH_FLOAT(x.dtype(), op_name(ctx.op), {
    const auto* xp = static_cast<const scalar_t*>(x.raw_data());
    const auto* dyp = static_cast<const scalar_t*>(dy.raw_data());
    auto* dxp = static_cast<scalar_t*>(dx.raw_data());
    if constexpr (!std::is_same_v<scalar_t, double>) {
      if (whole_2x2_windows(g)) return max_pool_grad_2x2_rows<scalar_t>(xp, dyp, dxp, g);
    }
    max_pool_backward<scalar_t>(xp, dyp, dxp, g);
  });
}

void avg_pool_grad_cpu(const KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  if (dx.num_elements() == 0) return;
  PoolGeom g = pool_geom(dx.shape(), dy.shape(), std::get<Pool2DAttrs>(ctx.attrs));
  std::vector<int64_t> row_count(static_cast<size_t>(g.oh)), col_count(static_cast<size_t>(g.ow));
  for (int64_t o = 0; o < g.oh; ++o) {
    int64_t b, e;
    g.rows(o, b, e);
    row_count[static_cast<size_t>(o)] = e - b;
  }
  for (int64_t o = 0; o < g.ow; ++o) {
    int64_t b, e;
    g.cols(o, b, e);
    col_count[static_cast<size_t>(o)] = e - b;
  }
  EMBER_DISPATCH_FLOAT(dy.dtype(), op_name(ctx.op), {
    avg_pool_backward<scalar_t>(static_cast<const scalar_t*>(dy.raw_data()), static_cast<scalar_t*>(dx.raw_data()), g,
                                row_count, col_count);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(max_pool2d, CPU, pool_cpu<true>, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16);
EMBER_REGISTER_KERNEL(avg_pool2d, CPU, pool_cpu<false>, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(max_pool2d_grad, CPU, max_pool_grad_cpu, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(avg_pool2d_grad, CPU, avg_pool_grad_cpu, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace ember
