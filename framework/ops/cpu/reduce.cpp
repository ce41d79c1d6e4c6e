// CPU kernels of the reductions. One engine reduces a contiguous (outer, reduced, inner) block in
// place; an axis set that is not one contiguous block is reduced one block at a time, innermost
// first, through a buffer of partial results. Sums are pairwise (several lanes per leaf block) so
// float32 totals over millions of elements stay accurate.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "framework/core/parallel.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

// Reducer policies. acc_t holds partial results; load widens one input element (half types through
// half_convert.h's conversions, which keep the loops vectorised); merge joins two
// partials; finish turns the total over `count` elements into the output type. Integer sums and
// products run in uint64 so overflow wraps (as TF's int32 does) without undefined behaviour, and
// integer means divide the 64-bit total (TF's CASTING_SPECIALIZATION for MeanReducer).
template <class T>
using wide_t = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;

// Hot loops call fast(); ops with kTrackNaN set keep a separate NaN flag there (a vectorisable
// compare-select cannot both keep a NaN partial and take a NaN input), and merge() is exact.
template <class T>
struct SumOp {
  using acc_t = wide_t<T>;
  static constexpr bool kTrackNaN = false;
  static acc_t identity() { return acc_t(0); }
  static acc_t load(const T& x) { return static_cast<acc_t>(cpu::to_compute(x)); }
  static acc_t merge(acc_t a, acc_t b) { return a + b; }
  static acc_t fast(acc_t a, acc_t b) { return a + b; }
  static T finish(acc_t a, int64_t) { return static_cast<T>(a); }
};

template <class T>
struct MeanOp : SumOp<T> {
  using acc_t = wide_t<T>;
  static T finish(acc_t a, int64_t count) {
    if constexpr (std::is_signed_v<T> && std::is_integral_v<T>) {
      return static_cast<T>(static_cast<int64_t>(a) / count);  // truncates toward zero, as TF
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(a / static_cast<uint64_t>(count));
    } else {
      return static_cast<T>(a / static_cast<acc_t>(count));  // 0/0 = NaN for an empty mean, as TF
    }
  }
};

template <class T>
struct ProdOp {
  using acc_t = wide_t<T>;
  static constexpr bool kTrackNaN = false;
  static acc_t identity() { return acc_t(1); }
  static acc_t load(const T& x) { return static_cast<acc_t>(cpu::to_compute(x)); }
  static acc_t merge(acc_t a, acc_t b) { return a * b; }
  static acc_t fast(acc_t a, acc_t b) { return a * b; }
  static T finish(acc_t a, int64_t) { return static_cast<T>(a); }
};

// max/min propagate NaN (a NaN partial is never replaced, a NaN input always wins).
template <class T, bool kMax>
struct ExtremumOp {
  using acc_t = compute_t<T>;
  static constexpr bool kTrackNaN = !std::is_integral_v<acc_t>;
  static acc_t identity() {
    if constexpr (std::numeric_limits<acc_t>::has_infinity) {
      return kMax ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    } else {
      return kMax ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
    }
  }
  static acc_t load(const T& x) { return static_cast<acc_t>(cpu::to_compute(x)); }
  static acc_t merge(acc_t a, acc_t b) {
    bool take = kMax ? (b > a) : (b < a);
    if constexpr (kTrackNaN) take = (take || b != b) && a == a;
    return take ? b : a;
  }
  static acc_t fast(acc_t a, acc_t b) { return (kMax ? (b > a) : (b < a)) ? b : a; }
  static T finish(acc_t a, int64_t) { return static_cast<T>(a); }
};
template <class T>
using MaxOp = ExtremumOp<T, true>;
template <class T>
using MinOp = ExtremumOp<T, false>;

template <bool kAll>
struct LogicalOp {
  using acc_t = uint8_t;
  static constexpr bool kTrackNaN = false;
  static acc_t identity() { return kAll ? 1 : 0; }
  static acc_t load(bool x) { return x ? 1 : 0; }
  static acc_t merge(acc_t a, acc_t b) { return kAll ? (a & b) : (a | b); }
  static acc_t fast(acc_t a, acc_t b) { return merge(a, b); }
  static bool finish(acc_t a, int64_t) { return a != 0; }
};

// Reads an element of a raw input (In is the op's input type) or of a partial buffer (In == acc_t).
template <class Op, class In>
inline typename Op::acc_t load(const In& x) {
  if constexpr (std::is_same_v<In, typename Op::acc_t>) {
    return x;
  } else {
    return Op::load(x);
  }
}

// Independent accumulators in a leaf: four 256-bit vectors' worth, so the adds pipeline and vectorise.
template <class A>
inline constexpr int64_t kLanes = 128 / static_cast<int64_t>(sizeof(A));
constexpr int64_t kRowLeaf = 2048;  // contiguous elements per pairwise leaf
constexpr int64_t kColLeaf = 64;    // rows per pairwise leaf in the column case
constexpr int64_t kColWidth = 256;  // inner elements handled together in the column case

// The NaN flag of a kTrackNaN op: an integer as wide as acc_t, so flag and value vectorise together.
template <class A>
using flag_t = std::conditional_t<sizeof(A) == 8, int64_t, int32_t>;

template <class Op>
inline typename Op::acc_t nan_if(typename Op::acc_t acc, bool bad) {
  if constexpr (Op::kTrackNaN) {
    if (bad) return std::numeric_limits<typename Op::acc_t>::quiet_NaN();
  }
  return acc;
}

// Pairwise reduction of n contiguous elements.
template <class Op, class In>
typename Op::acc_t reduce_row(const In* p, int64_t n) {
  using A = typename Op::acc_t;
  constexpr int64_t L = kLanes<A>;
  if constexpr (std::is_same_v<In, half>) {
    if (n <= kRowLeaf) {  // float16's element conversion keeps the loop scalar: the leaf widens at once
      A wide[kRowLeaf];
      cpu::to_compute_n(p, wide, n);
      return reduce_row<Op>(static_cast<const A*>(wide), n);
    }
  }
  if (n <= kRowLeaf) {
    A lane[L];
    flag_t<A> bad[L];
    for (int64_t j = 0; j < L; ++j) {
      lane[j] = Op::identity();
      bad[j] = 0;
    }
    int64_t i = 0;
    for (; i + L <= n; i += L) {
      for (int64_t j = 0; j < L; ++j) {
        const A v = load<Op>(p[i + j]);
        lane[j] = Op::fast(lane[j], v);
        if constexpr (Op::kTrackNaN) bad[j] |= static_cast<flag_t<A>>(v != v);
      }
    }
    A acc = Op::identity();
    flag_t<A> any_bad = 0;
    for (; i < n; ++i) {
      const A v = load<Op>(p[i]);
      acc = Op::fast(acc, v);
      if constexpr (Op::kTrackNaN) any_bad |= static_cast<flag_t<A>>(v != v);
    }
    for (int64_t j = 0; j < L; ++j) {
      acc = Op::fast(acc, lane[j]);
      any_bad |= bad[j];
    }
    return nan_if<Op>(acc, any_bad != 0);
  }
  int64_t half = (n / 2 + L - 1) / L * L;
  return Op::merge(reduce_row<Op>(p, half), reduce_row<Op>(p + half, n - half));
}

// Pairwise reduction over `rows` rows (stride apart) of `width` contiguous columns into out[width].
template <class Op, class In>
void reduce_cols(const In* p, int64_t rows, int64_t stride, int64_t width, typename Op::acc_t* out) {
  using A = typename Op::acc_t;
  if (rows <= kColLeaf) {
    flag_t<A> bad[kColWidth];
    for (int64_t j = 0; j < width; ++j) {
      out[j] = Op::identity();
      bad[j] = 0;
    }
    auto add_row = [&](const auto* row) {
      for (int64_t j = 0; j < width; ++j) {
        const A v = load<Op>(row[j]);
        out[j] = Op::fast(out[j], v);
        if constexpr (Op::kTrackNaN) bad[j] |= static_cast<flag_t<A>>(v != v);
      }
    };
    if constexpr (std::is_same_v<In, half>) {
      // Widened as in reduce_row: a row at a time, or as many rows as fill kRowLeaf where they are contiguous.
      A wide[kRowLeaf];
      const int64_t group = stride == width ? std::max<int64_t>(1, kRowLeaf / std::max<int64_t>(width, 1)) : 1;
      for (int64_t r = 0; r < rows; r += group) {
        const int64_t g = std::min(group, rows - r);
        cpu::to_compute_n(p + r * stride, wide, g * width);
        for (int64_t q = 0; q < g; ++q) add_row(static_cast<const A*>(wide + q * width));
      }
    } else {
      for (int64_t r = 0; r < rows; ++r) add_row(p + r * stride);
    }
    if constexpr (Op::kTrackNaN)
      for (int64_t j = 0; j < width; ++j) out[j] = nan_if<Op>(out[j], bad[j] != 0);
    return;
  }
  int64_t half = rows / 2;
  reduce_cols<Op>(p, half, stride, width, out);
  A tmp[kColWidth];
  reduce_cols<Op>(p + half * stride, rows - half, stride, width, tmp);
  for (int64_t j = 0; j < width; ++j) out[j] = Op::merge(out[j], tmp[j]);
}

// A block (outer, red, inner) whose outer rows lie `ostride` elements apart, split in tasks that
// each own distinct outputs: one per outer row when inner == 1, else per (outer, column chunk).
template <class Op, class In>
struct Block {
  const In* in;
  typename Op::acc_t* out;
  int64_t outer, red, inner, ostride;

  int64_t chunks() const { return inner == 1 ? 1 : (inner + kColWidth - 1) / kColWidth; }
  int64_t tasks() const { return outer * chunks(); }
  void run(int64_t t) const {
    int64_t o = t / chunks(), c = t % chunks();
    if (inner == 1) {
      out[o] = reduce_row<Op>(in + o * ostride, red);
      return;
    }
    int64_t j0 = c * kColWidth, width = std::min(kColWidth, inner - j0);
    reduce_cols<Op>(in + o * ostride + j0, red, inner, width, out + o * inner + j0);
  }
};

// Reduces a contiguous block into out[outer * inner], in parallel when it is large.
template <class Op, class In>
void reduce_block(const In* in, typename Op::acc_t* out, int64_t outer, int64_t red, int64_t inner) {
  using A = typename Op::acc_t;
  const Block<Op, In> whole{in, out, outer, red, inner, red * inner};
  const int64_t work = outer * red * inner, tasks = whole.tasks();
  const int threads = intra_op_threads();
  if (tasks >= threads || work < 2 * kParallelGrain || red < 2 * threads) {
    int64_t per_task = std::max<int64_t>(1, work / std::max<int64_t>(tasks, 1));
    parallel_for(tasks, grain_for(per_task), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) whole.run(t);
    });
    return;
  }
  // Few outputs over a long reduced axis: each thread reduces a slice of it, then the partials merge.
  const int64_t parts = threads, n_out = outer * inner;
  std::vector<A> partial(static_cast<size_t>(parts * n_out));
  parallel_for(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      int64_t r0 = red * c / parts, r1 = red * (c + 1) / parts;
      const Block<Op, In> slice{in + r0 * inner, partial.data() + c * n_out, outer, r1 - r0, inner, red * inner};
      for (int64_t t = 0; t < slice.tasks(); ++t) slice.run(t);
    }
  });
  for (int64_t k = 0; k < n_out; ++k) {
    A acc = partial[static_cast<size_t>(k)];
    for (int64_t c = 1; c < parts; ++c) acc = Op::merge(acc, partial[static_cast<size_t>(c * n_out + k)]);
    out[k] = acc;
  }
}

// The kernel body shared by every reduction: collapses the shape into alternating kept/reduced
// groups (size-1 dimensions dropped), reduces the groups innermost first, then finishes.
template <class Op, class T>
void reduce_kernel(const KernelContext& ctx) {
  using A = typename Op::acc_t;
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& attrs = std::get<ReduceAttrs>(ctx.attrs);
  const T* in = static_cast<const T*>(x.raw_data());
  T* out = static_cast<T*>(y.raw_data());
  const int64_t n_out = y.num_elements();
  if (n_out == 0) return;

  std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
  int64_t count = 1;
  for (int64_t a : attrs.axes) {
    reduced[static_cast<size_t>(a)] = true;
    count *= x.shape()[a];
  }
  if (count == 0) {
    const T v = Op::finish(Op::identity(), 0);
    std::fill(out, out + n_out, v);
    return;
  }
  if (count == 1) {  // only size-1 dimensions (or none) are reduced: the values are the result
    std::memcpy(out, in, static_cast<size_t>(n_out) * sizeof(T));
    return;
  }

  std::vector<std::pair<int64_t, bool>> groups;  // (size, reduced)
  for (int64_t d = 0; d < x.rank(); ++d) {
    int64_t s = x.shape()[d];
    bool r = reduced[static_cast<size_t>(d)];
    if (s == 1) continue;
    if (!groups.empty() && groups.back().second == r) {
      groups.back().first *= s;
    } else {
      groups.emplace_back(s, r);
    }
  }

  std::vector<A> cur, next;
  bool first = true;
  for (;;) {
    int64_t g = static_cast<int64_t>(groups.size()) - 1;
    while (g >= 0 && !groups[static_cast<size_t>(g)].second) --g;
    if (g < 0) break;
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < g; ++i) outer *= groups[static_cast<size_t>(i)].first;
    for (size_t i = static_cast<size_t>(g) + 1; i < groups.size(); ++i) inner *= groups[i].first;
    const int64_t red = groups[static_cast<size_t>(g)].first;
    next.resize(static_cast<size_t>(outer * inner));
    if (first) {
      reduce_block<Op>(in, next.data(), outer, red, inner);
    } else {
      reduce_block<Op>(cur.data(), next.data(), outer, red, inner);
    }
    first = false;
    std::swap(cur, next);
    groups.erase(groups.begin() + g);
    // The kept groups on both sides of the removed one are now adjacent.
    if (g > 0 && static_cast<size_t>(g) < groups.size()) {
      groups[static_cast<size_t>(g) - 1].first *= groups[static_cast<size_t>(g)].first;
      groups.erase(groups.begin() + g);
    }
  }
  parallel_for(n_out, kParallelGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = Op::finish(cur[static_cast<size_t>(i)], count);
  });
}

void reduce_sum_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_NUMERIC(ctx.inputs[0].dtype(), "reduce_sum", reduce_kernel<SumOp<scalar_t>, scalar_t>(ctx));
}
void reduce_mean_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_NUMERIC(ctx.inputs[0].dtype(), "reduce_mean", reduce_kernel<MeanOp<scalar_t>, scalar_t>(ctx));
}
void reduce_max_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_NUMERIC(ctx.inputs[0].dtype(), "reduce_max", reduce_kernel<MaxOp<scalar_t>, scalar_t>(ctx));
}
void reduce_min_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_NUMERIC(ctx.inputs[0].dtype(), "reduce_min", reduce_kernel<MinOp<scalar_t>, scalar_t>(ctx));
}
void reduce_prod_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_NUMERIC(ctx.inputs[0].dtype(), "reduce_prod", reduce_kernel<ProdOp<scalar_t>, scalar_t>(ctx));
}
void reduce_all_cpu(const KernelContext& ctx) { reduce_kernel<LogicalOp<true>, bool>(ctx); }
void reduce_any_cpu(const KernelContext& ctx) { reduce_kernel<LogicalOp<false>, bool>(ctx); }

// argmax/argmin: the first index on ties; a NaN counts as more extreme than any number in both
// (the first NaN wins), as NumPy and PyTorch do, so argmax agrees with reduce_max. Two passes, both
// vectorisable: the extremum by the reducer above, then the first position holding it.
template <class T, class Idx, bool kMax>
void arg_kernel(const KernelContext& ctx) {
  using Op = ExtremumOp<T, kMax>;
  using C = typename Op::acc_t;
  const Tensor& x = ctx.inputs[0];
  const int64_t axis = std::get<ArgReduceAttrs>(ctx.attrs).axis;
  const T* in = static_cast<const T*>(x.raw_data());
  Idx* out = static_cast<Idx*>(ctx.outputs[0].raw_data());
  int64_t outer = 1, inner = 1, red = x.shape()[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  if (outer * inner == 0 || red == 0) return;  // the front end rejects an empty axis

  auto matches = [](C v, C m) {
    if constexpr (Op::kTrackNaN) {
      return (v == m) | ((m != m) & (v != v));  // branch-free, so the column loop vectorises
    } else {
      return v == m;
    }
  };
  const int64_t chunks = (inner + kColWidth - 1) / kColWidth;
  const int64_t per_task = red * std::min(inner, kColWidth);
  parallel_for(outer * chunks, grain_for(per_task), [&](int64_t b, int64_t e) {
    C m[kColWidth];
    int64_t idx[kColWidth];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / chunks, j0 = (t % chunks) * kColWidth, width = std::min(kColWidth, inner - j0);
      const T* base = in + o * red * inner + j0;
      if (inner == 1) {
        const C mv = reduce_row<Op>(base, red);
        int64_t r = 0;
        while (r + 1 < red && !matches(static_cast<C>(base[r]), mv)) ++r;
        out[o] = static_cast<Idx>(r);
        continue;
      }
      reduce_cols<Op>(base, red, inner, width, m);
      for (int64_t j = 0; j < width; ++j) idx[j] = red;
      for (int64_t r = red - 1; r >= 0; --r) {  // backwards, so the first match is the last written
        const T* row = base + r * inner;
        for (int64_t j = 0; j < width; ++j) idx[j] = matches(static_cast<C>(row[j]), m[j]) ? r : idx[j];
      }
      for (int64_t j = 0; j < width; ++j) out[o * inner + j0 + j] = static_cast<Idx>(idx[j]);
    }
  });
}

template <bool kMax>
void arg_cpu(const KernelContext& ctx) {
  const char* name = kMax ? "argmax" : "argmin";
  const DType out_type = std::get<ArgReduceAttrs>(ctx.attrs).output_type;
  EMBER_DISPATCH_NUMERIC(ctx.inputs[0].dtype(), name, {
    if (out_type == DType::Int32) {
      arg_kernel<scalar_t, int32_t, kMax>(ctx);
    } else {
      arg_kernel<scalar_t, int64_t, kMax>(ctx);
    }
  });
}

#define EMBER_REDUCE_NUMERIC_                                                                            \
  DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32, DType::Int64, DType::UInt8

EMBER_REGISTER_KERNEL(reduce_sum, CPU, reduce_sum_cpu, EMBER_REDUCE_NUMERIC_);
EMBER_REGISTER_KERNEL(reduce_mean, CPU, reduce_mean_cpu, EMBER_REDUCE_NUMERIC_);
EMBER_REGISTER_KERNEL(reduce_max, CPU, reduce_max_cpu, EMBER_REDUCE_NUMERIC_);
EMBER_REGISTER_KERNEL(reduce_min, CPU, reduce_min_cpu, EMBER_REDUCE_NUMERIC_);
EMBER_REGISTER_KERNEL(reduce_prod, CPU, reduce_prod_cpu, EMBER_REDUCE_NUMERIC_);
EMBER_REGISTER_KERNEL(reduce_all, CPU, reduce_all_cpu, DType::Bool);
EMBER_REGISTER_KERNEL(reduce_any, CPU, reduce_any_cpu, DType::Bool);
EMBER_REGISTER_KERNEL(argmax, CPU, arg_cpu<true>, EMBER_REDUCE_NUMERIC_);
EMBER_REGISTER_KERNEL(argmin, CPU, arg_cpu<false>, EMBER_REDUCE_NUMERIC_);

}  // namespace
}  // namespace ember
