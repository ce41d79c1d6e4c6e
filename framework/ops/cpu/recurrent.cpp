// CPU whole-sequence LSTM and GRU (framework/ops/recurrent.h). Batch-major throughout: a (batch, steps, width)
// tensor is a (batch * steps, width) matrix whose rows b * steps + t are step t of sequence b, and one step's rows
// are the same matrix seen with a row stride of steps * width, so no transposes are needed.
// - Forward: one product projects the inputs of every step (x kernel), then per step one recurrent product
//   accumulates into that step's gates and one pass over the batch applies them (Eigen's vectorised tanh and
//   logistic).
// - Backward: from the gate activations the forward saved (its last output), per step the gates' gradients and one
//   product for dh_prev; after the loop one product each gives dx, dkernel and drecurrent_kernel over the whole
//   sequence, and a column sum the bias's.
// - Sequence lengths: a sequence's steps from its length on skip the gate passes (their outputs are zeros, their
//   gates' gradients zeros, and the carried dh, dc pass through them unchanged); the products still run over the
//   whole batch (each step's rows are one strided matrix), finished rows included.
// Float32 products go to oneDNN's sgemm, float64 ones to Eigen.
#include <oneapi/dnnl/dnnl.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/parallel.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/recurrent.h"

namespace ember {

namespace {

template <class T>
using RnnMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using RnnConstRows = Eigen::Map<const RnnMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using RnnRows = Eigen::Map<RnnMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using RnnVec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using RnnConstVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// c (m x n, row stride ldc) = op(a) op(b), or += with accumulate; a is m x k (k x m when ta), b k x n (n x k).
template <class T>
void rnn_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
          bool accumulate, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) RnnRows<T>(c, m, n, Eigen::OuterStride<>(ldc)).setZero();
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    const dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb,
                                       accumulate ? 1.0f : 0.0f, c, ldc);
    EMBER_CHECK(s == dnnl_success, Internal) << "recurrent sequence op: dnnl_sgemm failed with oneDNN status " << s;
  } else {
    const RnnConstRows<T> A(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
    const RnnConstRows<T> B(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
    RnnRows<T> C(c, m, n, Eigen::OuterStride<>(ldc));
    auto run = [&](const auto& x, const auto& y) {
      if (accumulate) C.noalias() += x * y;
      else C.noalias() = x * y;
    };
    if (ta && tb) run(A.transpose(), B.transpose());
    else if (ta) run(A.transpose(), B);
    else if (tb) run(A, B.transpose());
    else run(A, B);
  }
}

// The sizes of a sequence op: batch, steps, features, units.
struct RnnDims {
  int64_t b, t, i, u;
  int64_t rows() const { return b * t; }
};
RnnDims rnn_dims_of(const Tensor& x, const Tensor& h0) { return {x.shape()[0], x.shape()[1], x.shape()[2], h0.shape()[1]}; }

// Each sequence's length: the op's optional input `index` (checked to be in [0, steps]), else steps.
std::vector<int64_t> rnn_lengths_of(const KernelContext& ctx, size_t index, const RnnDims& d) {
  if (ctx.inputs.size() <= index) return std::vector<int64_t>(static_cast<size_t>(d.b), d.t);
  const std::vector<int32_t> l = ops::detail::rnn_sequence_lengths(op_name(ctx.op), ctx.inputs[index], d.t);
  return {l.begin(), l.end()};
}

// The row of (batch, steps, width) holding sequence b's last step (its length - 1), or -1 for a length of 0.
inline int64_t rnn_last_row(const RnnDims& d, const std::vector<int64_t>& lengths, int64_t b) {
  const int64_t n = lengths[static_cast<size_t>(b)];
  return n == 0 ? -1 : b * d.t + n - 1;
}

// Copies sequence b's final state: row `last` of `rows` (width u), or its initial state `first` when last is -1.
template <class T>
void rnn_final_state(const T* rows, int64_t last, const T* first, T* out, int64_t u) {
  std::memcpy(out, last < 0 ? first : rows + last * u, sizeof(T) * u);
}

template <class T>
T* rnn_scratch(Tensor& holder, int64_t elements) {
  holder = Tensor::empty({elements}, std::is_same_v<T, float> ? DType::Float32 : DType::Float64, Device::cpu());
  return holder.data<T>();
}

// Runs fn(b) for each sequence of the batch, split over the pool when a step's work (width elements per
// sequence) is large enough.
template <class F>
void rnn_for_batch(int64_t batch, int64_t width, F&& fn) {
  parallel_for(batch, grain_for(8 * width), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) fn(b);
  });
}

// (batch, steps, units): row (b, t) holds h_{t-1} of sequence b: h0 at t = 0, else y's step t - 1.
template <class T>
void rnn_previous_states(const T* h0, const T* y, T* hp, const RnnDims& d) {
  rnn_for_batch(d.b, d.t * d.u, [&](int64_t b) {
    std::memcpy(hp + b * d.t * d.u, h0 + b * d.u, sizeof(T) * d.u);
    std::memcpy(hp + (b * d.t + 1) * d.u, y + b * d.t * d.u, sizeof(T) * (d.t - 1) * d.u);
  });
}

// out (width) = the column sums of m (rows x width): a bias's gradient.
template <class T>
void rnn_column_sums(const T* m, int64_t rows, int64_t width, T* out) {
  parallel_for(width, grain_for(rows), [&](int64_t begin, int64_t end) {
    RnnVec<T> o(out + begin, end - begin);
    o.setZero();
    for (int64_t r = 0; r < rows; ++r) o += RnnConstVec<T>(m + r * width + begin, end - begin);
  });
}

// ------------------------------------------------------------------------------------------------ LSTM

// The forward's saved state for the backward (the op's last output): every step's gate activations i, f, g, o
// ((batch, steps, 4 units)), then every step's c ((batch, steps, units)).

// One sequence's step: z (4u) holds the gates' products, becomes their activations i, f, g, o; c = f c_prev + i g,
// h = o tanh(c).
template <class T>
void lstm_gates(T* z, const T* bias, const T* c_prev, T* c, T* h, int64_t u) {
  RnnVec<T> zs(z, 4 * u);
  zs += RnnConstVec<T>(bias, 4 * u);
  RnnVec<T> i(z, u), f(z + u, u), g(z + 2 * u, u), o(z + 3 * u, u);
  i = i.logistic();
  f = f.logistic();
  g = g.tanh();
  o = o.logistic();
  RnnVec<T> cv(c, u);
  cv = f * RnnConstVec<T>(c_prev, u) + i * g;
  RnnVec<T>(h, u) = o * cv.tanh();
}

template <class T>
void lstm_sequence_cpu_t(const KernelContext& ctx) {
  const Tensor &x = ctx.inputs[0], &h0 = ctx.inputs[1], &c0 = ctx.inputs[2], &kernel = ctx.inputs[3],
               &recurrent = ctx.inputs[4], &bias = ctx.inputs[5];
  const RnnDims d = rnn_dims_of(x, h0);
  const int64_t u = d.u, w = 4 * u, ldg = d.t * w;
  T* y = ctx.outputs[0].data<T>();
  T* gates = ctx.outputs[3].data<T>();
  T* cs = gates + d.rows() * w;
  const T *k = kernel.data<T>(), *r = recurrent.data<T>(), *bs = bias.data<T>(), *c0p = c0.data<T>();
  const std::vector<int64_t> lengths = rnn_lengths_of(ctx, 6, d);
  rnn_gemm<T>(false, false, d.rows(), w, d.i, x.data<T>(), d.i, k, w, false, gates, w);
  for (int64_t t = 0; t < d.t; ++t) {
    const T* hp = t == 0 ? h0.data<T>() : y + (t - 1) * u;
    rnn_gemm<T>(false, false, d.b, w, u, hp, t == 0 ? u : d.t * u, r, w, true, gates + t * w, ldg);
    rnn_for_batch(d.b, w, [&](int64_t b) {
      const int64_t row = b * d.t + t;
      if (t >= lengths[static_cast<size_t>(b)]) {
        std::memset(y + row * u, 0, sizeof(T) * u);
        return;
      }
      lstm_gates(gates + row * w, bs, t == 0 ? c0p + b * u : cs + (row - 1) * u, cs + row * u, y + row * u, u);
    });
  }
  T *h = ctx.outputs[1].data<T>(), *c = ctx.outputs[2].data<T>();
  rnn_for_batch(d.b, u, [&](int64_t b) {
    const int64_t last = rnn_last_row(d, lengths, b);
    rnn_final_state(y, last, h0.data<T>() + b * u, h + b * u, u);
    rnn_final_state(cs, last, c0p + b * u, c + b * u, u);
  });
}

template <class T>
void lstm_sequence_grad_cpu_t(const KernelContext& ctx) {
  const Tensor &x = ctx.inputs[0], &h0 = ctx.inputs[1], &c0 = ctx.inputs[2], &kernel = ctx.inputs[3],
               &recurrent = ctx.inputs[4];
  const RnnDims d = rnn_dims_of(x, h0);
  const int64_t u = d.u, w = 4 * u, ldg = d.t * w;
  const T *xs = x.data<T>(), *k = kernel.data<T>(), *r = recurrent.data<T>(), *c0p = c0.data<T>();
  const T *y = ctx.inputs[6].data<T>(), *acts = ctx.inputs[7].data<T>(), *dy = ctx.inputs[8].data<T>();
  const T* cs = acts + d.rows() * w;
  const std::vector<int64_t> lengths = rnn_lengths_of(ctx, 11, d);
  Tensor dgates_buf, hp_buf;
  T* dgates = rnn_scratch<T>(dgates_buf, d.rows() * w);  // the gradients of the gates' pre-activations
  T* hp = rnn_scratch<T>(hp_buf, d.rows() * u);
  rnn_previous_states(h0.data<T>(), y, hp, d);
  // dh and dc carry the gradients of h_t and c_t back through the steps; they end as dh0 and dc0.
  T* dh = ctx.outputs[1].data<T>();
  T* dc = ctx.outputs[2].data<T>();
  std::memcpy(dh, ctx.inputs[9].data<T>(), sizeof(T) * d.b * u);
  std::memcpy(dc, ctx.inputs[10].data<T>(), sizeof(T) * d.b * u);
  for (int64_t t = d.t - 1; t >= 0; --t) {
    rnn_for_batch(d.b, w, [&](int64_t b) {
      const int64_t row = b * d.t + t;
      T* z = dgates + row * w;
      if (t >= lengths[static_cast<size_t>(b)]) {  // past the sequence's end: dh and dc pass through
        std::memset(z, 0, sizeof(T) * w);
        return;
      }
      const T* a = acts + row * w;
      const RnnConstVec<T> i(a, u), f(a + u, u), g(a + 2 * u, u), o(a + 3 * u, u);
      const RnnConstVec<T> c(cs + row * u, u), c_prev(t == 0 ? c0p + b * u : cs + (row - 1) * u, u);
      RnnVec<T> dhv(dh + b * u, u), dcv(dc + b * u, u);
      dhv += RnnConstVec<T>(dy + row * u, u);
      const auto tc = c.tanh().eval();
      dcv += dhv * o * (T(1) - tc * tc);
      RnnVec<T>(z, u) = dcv * g * i * (T(1) - i);
      RnnVec<T>(z + u, u) = dcv * c_prev * f * (T(1) - f);
      RnnVec<T>(z + 2 * u, u) = dcv * i * (T(1) - g * g);
      RnnVec<T>(z + 3 * u, u) = dhv * tc * o * (T(1) - o);
      dcv *= f;
      dhv.setZero();  // becomes h_prev's gradient in the product below
    });
    rnn_gemm<T>(false, true, d.b, u, w, dgates + t * w, ldg, r, w, true, dh, u);
  }
  rnn_gemm<T>(false, true, d.rows(), d.i, w, dgates, w, k, w, false, ctx.outputs[0].data<T>(), d.i);
  rnn_gemm<T>(true, false, d.i, w, d.rows(), xs, d.i, dgates, w, false, ctx.outputs[3].data<T>(), w);
  rnn_gemm<T>(true, false, u, w, d.rows(), hp, u, dgates, w, false, ctx.outputs[4].data<T>(), w);
  rnn_column_sums(dgates, d.rows(), w, ctx.outputs[5].data<T>());
}

// ------------------------------------------------------------------------------------------------ GRU

// The saved state: every step's activations z, r, hh ((batch, steps, 3 units)), then with reset_after every step's
// recurrent products h_prev recurrent + recurrent bias ((batch, steps, 3 units)), without it every step's r h_prev
// ((batch, steps, units)).

// Keras's GRU, per sequence and step. xz (3u): the input products x kernel + input bias, becomes the activations
// z, r, hh. With reset_after, rec (3u) holds h_prev recurrent + recurrent bias. Without, rec (2u) holds h_prev
// recurrent[:, :2u], and the candidate's product (r h_prev) recurrent[:, 2u:] comes in a second pass.
template <class T>
void gru_gates_after(T* xz, const T* rec, const T* h_prev, T* h, int64_t u) {
  RnnVec<T> z(xz, u), r(xz + u, u), hh(xz + 2 * u, u);
  z = (z + RnnConstVec<T>(rec, u)).logistic();
  r = (r + RnnConstVec<T>(rec + u, u)).logistic();
  hh = (hh + r * RnnConstVec<T>(rec + 2 * u, u)).tanh();
  RnnVec<T>(h, u) = z * RnnConstVec<T>(h_prev, u) + (T(1) - z) * hh;
}

template <class T>
void gru_gates_before(T* xz, const T* rec_zr, const T* h_prev, T* rh, int64_t u) {
  RnnVec<T> z(xz, u), r(xz + u, u);
  z = (z + RnnConstVec<T>(rec_zr, u)).logistic();
  r = (r + RnnConstVec<T>(rec_zr + u, u)).logistic();
  RnnVec<T>(rh, u) = r * RnnConstVec<T>(h_prev, u);
}

template <class T>
void gru_candidate_before(T* xz, const T* rec_h, const T* h_prev, T* h, int64_t u) {
  RnnVec<T> z(xz, u), hh(xz + 2 * u, u);
  hh = (hh + RnnConstVec<T>(rec_h, u)).tanh();
  RnnVec<T>(h, u) = z * RnnConstVec<T>(h_prev, u) + (T(1) - z) * hh;
}

// Adds bias (width) to every row of m (rows x width).
template <class T>
void rnn_add_rows(T* m, int64_t rows, int64_t width, const T* bias) {
  parallel_for(rows, grain_for(width), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) RnnVec<T>(m + row * width, width) += RnnConstVec<T>(bias, width);
  });
}

template <class T>
void gru_sequence_cpu_t(const KernelContext& ctx) {
  const Tensor &x = ctx.inputs[0], &h0 = ctx.inputs[1], &kernel = ctx.inputs[2], &recurrent = ctx.inputs[3],
               &bias = ctx.inputs[4];
  const bool after = std::get<RnnSequenceAttrs>(ctx.attrs).reset_after;
  const RnnDims d = rnn_dims_of(x, h0);
  const int64_t u = d.u, w = 3 * u, ldg = d.t * w;
  T* y = ctx.outputs[0].data<T>();
  const T *k = kernel.data<T>(), *r = recurrent.data<T>(), *bs = bias.data<T>();
  T* xz = ctx.outputs[2].data<T>();
  T* saved = xz + d.rows() * w;  // reset_after: the recurrent products (3u a row); else r h_prev (u a row)
  Tensor rec_buf;
  T* rec = after ? nullptr : rnn_scratch<T>(rec_buf, d.b * w);
  const std::vector<int64_t> lengths = rnn_lengths_of(ctx, 5, d);
  auto finished = [&](int64_t b, int64_t t) { return t >= lengths[static_cast<size_t>(b)]; };
  rnn_gemm<T>(false, false, d.rows(), w, d.i, x.data<T>(), d.i, k, w, false, xz, w);
  rnn_add_rows(xz, d.rows(), w, bs);
  for (int64_t t = 0; t < d.t; ++t) {
    const T* hp = t == 0 ? h0.data<T>() : y + (t - 1) * u;
    const int64_t ldh = t == 0 ? u : d.t * u;
    if (after) {
      rnn_for_batch(d.b, w, [&](int64_t b) { std::memcpy(saved + (b * d.t + t) * w, bs + w, sizeof(T) * w); });
      rnn_gemm<T>(false, false, d.b, w, u, hp, ldh, r, w, true, saved + t * w, ldg);
      rnn_for_batch(d.b, w, [&](int64_t b) {
        const int64_t row = b * d.t + t;
        if (finished(b, t)) std::memset(y + row * u, 0, sizeof(T) * u);
        else gru_gates_after(xz + row * w, saved + row * w, hp + b * ldh, y + row * u, u);
      });
    } else {
      rnn_gemm<T>(false, false, d.b, 2 * u, u, hp, ldh, r, w, false, rec, w);
      rnn_for_batch(d.b, w, [&](int64_t b) {
        const int64_t row = b * d.t + t;
        // A finished row's r h_prev is zero: the backward's weight product reads it.
        if (finished(b, t)) std::memset(saved + row * u, 0, sizeof(T) * u);
        else gru_gates_before(xz + row * w, rec + b * w, hp + b * ldh, saved + row * u, u);
      });
      rnn_gemm<T>(false, false, d.b, u, u, saved + t * u, d.t * u, r + 2 * u, w, false, rec, w);
      rnn_for_batch(d.b, w, [&](int64_t b) {
        const int64_t row = b * d.t + t;
        if (finished(b, t)) std::memset(y + row * u, 0, sizeof(T) * u);
        else gru_candidate_before(xz + row * w, rec + b * w, hp + b * ldh, y + row * u, u);
      });
    }
  }
  T* h = ctx.outputs[1].data<T>();
  rnn_for_batch(d.b, u, [&](int64_t b) {
    rnn_final_state(y, rnn_last_row(d, lengths, b), h0.data<T>() + b * u, h + b * u, u);
  });
}

template <class T>
void gru_sequence_grad_cpu_t(const KernelContext& ctx) {
  const Tensor &x = ctx.inputs[0], &h0 = ctx.inputs[1], &kernel = ctx.inputs[2], &recurrent = ctx.inputs[3];
  const bool after = std::get<RnnSequenceAttrs>(ctx.attrs).reset_after;
  const RnnDims d = rnn_dims_of(x, h0);
  const int64_t u = d.u, w = 3 * u, ldg = d.t * w;
  const T *xs = x.data<T>(), *k = kernel.data<T>(), *r = recurrent.data<T>();
  const T *y = ctx.inputs[5].data<T>(), *acts = ctx.inputs[6].data<T>(), *dy = ctx.inputs[7].data<T>();
  const T* saved = acts + d.rows() * w;
  Tensor dx_buf, drec_buf, hp_buf, drh_buf;
  T* dxz = rnn_scratch<T>(dx_buf, d.rows() * w);  // the gradients of the input products z, r, candidate
  // reset_after: the gradients of the recurrent products (z, r, r times the candidate's)
  T* drec = after ? rnn_scratch<T>(drec_buf, d.rows() * w) : nullptr;
  T* hp = rnn_scratch<T>(hp_buf, d.rows() * u);
  T* drh = after ? nullptr : rnn_scratch<T>(drh_buf, d.b * u);
  const std::vector<int64_t> lengths = rnn_lengths_of(ctx, 9, d);
  auto finished = [&](int64_t b, int64_t t) { return t >= lengths[static_cast<size_t>(b)]; };
  rnn_previous_states(h0.data<T>(), y, hp, d);
  T* dh = ctx.outputs[1].data<T>();  // the gradient of h_t, carried back to dh0
  std::memcpy(dh, ctx.inputs[8].data<T>(), sizeof(T) * d.b * u);
  for (int64_t t = d.t - 1; t >= 0; --t) {
    rnn_for_batch(d.b, w, [&](int64_t b) {
      const int64_t row = b * d.t + t;
      T* g = dxz + row * w;
      if (finished(b, t)) {  // past the sequence's end: no gates' gradients, dh passes through
        std::memset(g, 0, sizeof(T) * w);
        if (after) std::memset(drec + row * w, 0, sizeof(T) * w);
        return;
      }
      const T* a = acts + row * w;
      const RnnConstVec<T> z(a, u), rr(a + u, u), hh(a + 2 * u, u);
      RnnVec<T> dhv(dh + b * u, u), dz(g, u), dr(g + u, u), dhh(g + 2 * u, u);
      dhv += RnnConstVec<T>(dy + row * u, u);
      dz = dhv * (RnnConstVec<T>(hp + row * u, u) - hh) * z * (T(1) - z);
      dhh = dhv * (T(1) - z) * (T(1) - hh * hh);
      dhv *= z;
      if (after) {
        T* gr = drec + row * w;
        dr = dhh * RnnConstVec<T>(saved + row * w + 2 * u, u) * rr * (T(1) - rr);
        RnnVec<T>(gr, 2 * u) = RnnConstVec<T>(g, 2 * u);
        RnnVec<T>(gr + 2 * u, u) = dhh * rr;
      }
    });
    if (after) {
      rnn_gemm<T>(false, true, d.b, u, w, drec + t * w, ldg, r, w, true, dh, u);
      continue;
    }
    // d(r h_prev) = d candidate recurrent[:, 2u:]^T, then r's gradient and h_prev's share through r h_prev.
    rnn_gemm<T>(false, true, d.b, u, u, dxz + t * w + 2 * u, ldg, r + 2 * u, w, false, drh, u);
    rnn_for_batch(d.b, w, [&](int64_t b) {
      const int64_t row = b * d.t + t;
      if (finished(b, t)) return;
      const RnnConstVec<T> rr(acts + row * w + u, u), d_rh(drh + b * u, u);
      RnnVec<T>(dh + b * u, u) += d_rh * rr;
      RnnVec<T>(dxz + row * w + u, u) = d_rh * RnnConstVec<T>(hp + row * u, u) * rr * (T(1) - rr);
    });
    rnn_gemm<T>(false, true, d.b, u, 2 * u, dxz + t * w, ldg, r, w, true, dh, u);
  }
  T *dk = ctx.outputs[2].data<T>(), *dr = ctx.outputs[3].data<T>(), *db = ctx.outputs[4].data<T>();
  rnn_gemm<T>(false, true, d.rows(), d.i, w, dxz, w, k, w, false, ctx.outputs[0].data<T>(), d.i);
  rnn_gemm<T>(true, false, d.i, w, d.rows(), xs, d.i, dxz, w, false, dk, w);
  rnn_column_sums(dxz, d.rows(), w, db);
  if (after) {
    rnn_gemm<T>(true, false, u, w, d.rows(), hp, u, drec, w, false, dr, w);
    rnn_column_sums(drec, d.rows(), w, db + w);
  } else {
    rnn_gemm<T>(true, false, u, 2 * u, d.rows(), hp, u, dxz, w, false, dr, w);
    rnn_gemm<T>(true, false, u, u, d.rows(), saved, u, dxz + 2 * u, w, false, dr + 2 * u, w);
  }
}

// The saved state's elements on the CPU (see above).
int64_t rnn_saved_elements_cpu(const ops::detail::RnnSavedQuery& q) {
  const int64_t rows = q.batch * q.steps;
  if (q.lstm) return rows * 5 * q.units;
  return rows * (q.reset_after ? 6 : 4) * q.units;
}

template <class F32, class F64>
void rnn_by_dtype(const KernelContext& ctx, F32 f32, F64 f64) {
  if (ctx.inputs[0].dtype() == DType::Float32) f32(ctx);
  else f64(ctx);
}

void lstm_sequence_cpu(const KernelContext& ctx) {
  rnn_by_dtype(ctx, lstm_sequence_cpu_t<float>, lstm_sequence_cpu_t<double>);
}
void lstm_sequence_grad_cpu(const KernelContext& ctx) {
  rnn_by_dtype(ctx, lstm_sequence_grad_cpu_t<float>, lstm_sequence_grad_cpu_t<double>);
}
void gru_sequence_cpu(const KernelContext& ctx) { rnn_by_dtype(ctx, gru_sequence_cpu_t<float>, gru_sequence_cpu_t<double>); }
void gru_sequence_grad_cpu(const KernelContext& ctx) {
  rnn_by_dtype(ctx, gru_sequence_grad_cpu_t<float>, gru_sequence_grad_cpu_t<double>);
}

}  // namespace

static const bool rnn_saved_size_registered_cpu = [] {
  ops::detail::register_rnn_saved_elements(DeviceType::CPU, rnn_saved_elements_cpu);
  return true;
}();
EMBER_REGISTER_KERNEL(lstm_sequence, CPU, lstm_sequence_cpu, DType::Float32, DType::Float64);
EMBER_REGISTER_KERNEL(lstm_sequence_grad, CPU, lstm_sequence_grad_cpu, DType::Float32, DType::Float64);
EMBER_REGISTER_KERNEL(gru_sequence, CPU, gru_sequence_cpu, DType::Float32, DType::Float64);
EMBER_REGISTER_KERNEL(gru_sequence_grad, CPU, gru_sequence_grad_cpu, DType::Float32, DType::Float64);

}  // namespace ember
