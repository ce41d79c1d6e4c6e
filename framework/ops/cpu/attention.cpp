// CPU fused attention (FlashAttention-2): per (batch, head) and block of queries the scores of one block of keys at a
// time, softmax'd online with a running max and sum per query, so that no (query_len, key_len) matrix is ever held.
// The backward recomputes each block's probabilities from the saved logsumexp. Blocks are Eigen products on strided
// maps of the (batch, length, heads, dim) tensors.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/core/parallel.h"
#include "framework/ops/dispatch.h"

namespace ember {

namespace {

// Queries and keys per block: a 64 x 64 block of scores stays in the L1/L2 caches beside its operands.
constexpr int64_t kBlock = 64;

template <class C>
using Mat = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class C>
using Rows = Eigen::Map<Mat<C>, 0, Eigen::OuterStride<>>;
template <class C>
using ConstRows = Eigen::Map<const Mat<C>, 0, Eigen::OuterStride<>>;

struct Dims {
  int64_t batch, q_len, k_len, heads, dim, v_dim;
};

Dims dims_of(const KernelContext& ctx) {
  const Shape &q = ctx.inputs[0].shape(), &k = ctx.inputs[1].shape(), &v = ctx.inputs[2].shape();
  return {q[0], q[1], k[1], q[2], q[3], v[3]};
}

// Rows [first, first + n) of head h of batch b in a (batch, len, heads, width) tensor.
template <class C>
ConstRows<C> const_rows(const C* base, const Dims& d, int64_t len, int64_t width, int64_t b, int64_t h, int64_t first,
                     int64_t n) {
  return ConstRows<C>(base + ((b * len + first) * d.heads + h) * width, n, width, Eigen::OuterStride<>(d.heads * width));
}
template <class C>
Rows<C> rows_of(C* base, const Dims& d, int64_t len, int64_t width, int64_t b, int64_t h, int64_t first, int64_t n) {
  return Rows<C>(base + ((b * len + first) * d.heads + h) * width, n, width, Eigen::OuterStride<>(d.heads * width));
}

// The keys query i0 + r may see: all, or 0..i0 + r when causal. Scores of keys past that become -inf in s, whose
// rows are queries i0.. and columns keys j0...
template <class C, class S>
void mask_causal(S& s, int64_t i0, int64_t j0) {
  for (int64_t r = 0; r < s.rows(); ++r)
    for (int64_t c = std::max<int64_t>(0, i0 + r + 1 - j0); c < s.cols(); ++c)
      s(r, c) = -std::numeric_limits<C>::infinity();
}

template <class C>
void forward(const KernelContext& ctx) {
  const Dims d = dims_of(ctx);
  const auto& a = std::get<FusedAttentionAttrs>(ctx.attrs);
  const C scale = static_cast<C>(a.scale);
  const C *q = ctx.inputs[0].data<C>(), *k = ctx.inputs[1].data<C>(), *v = ctx.inputs[2].data<C>();
  C *o = ctx.outputs[0].data<C>(), *lse = ctx.outputs[1].data<C>();
  const int64_t q_blocks = (d.q_len + kBlock - 1) / kBlock;
  const int64_t items = d.batch * d.heads * q_blocks;
  parallel_for(items, grain_for(kBlock * d.k_len * (d.dim + d.v_dim)), [&](int64_t begin, int64_t end) {
    Mat<C> s(kBlock, kBlock), acc(kBlock, d.v_dim);
    Eigen::Array<C, Eigen::Dynamic, 1> m(kBlock), l(kBlock);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / (d.heads * q_blocks), h = item / q_blocks % d.heads, i0 = item % q_blocks * kBlock;
      const int64_t rows = std::min(kBlock, d.q_len - i0);
      const ConstRows<C> qb = const_rows(q, d, d.q_len, d.dim, b, h, i0, rows);
      auto ab = acc.topRows(rows);
      ab.setZero();
      m.setConstant(-std::numeric_limits<C>::infinity());
      l.setZero();
      const int64_t k_end = a.causal ? std::min(d.k_len, i0 + rows) : d.k_len;
      for (int64_t j0 = 0; j0 < k_end; j0 += kBlock) {
        const int64_t cols = std::min(kBlock, k_end - j0);
        auto sb = s.topLeftCorner(rows, cols);
        sb.noalias() = qb * const_rows(k, d, d.k_len, d.dim, b, h, j0, cols).transpose();
        sb *= scale;
        if (a.causal && j0 + cols - 1 > i0) mask_causal<C>(sb, i0, j0);
        for (int64_t r = 0; r < rows; ++r) {
          // Keys come in order, so the first block holds key 0, which every query sees: the max is finite from then.
          const C m_new = std::max(m(r), sb.row(r).maxCoeff());
          const C alpha = std::exp(m(r) - m_new);
          sb.row(r) = (sb.row(r).array() - m_new).exp().matrix();
          l(r) = alpha * l(r) + sb.row(r).sum();
          ab.row(r) *= alpha;
          m(r) = m_new;
        }
        ab.noalias() += sb * const_rows(v, d, d.k_len, d.v_dim, b, h, j0, cols);
      }
      Rows<C> ob = rows_of(o, d, d.q_len, d.v_dim, b, h, i0, rows);
      C* lse_row = lse + (b * d.heads + h) * d.q_len + i0;
      for (int64_t r = 0; r < rows; ++r) {
        ob.row(r) = ab.row(r) * (C(1) / l(r));
        lse_row[r] = m(r) + std::log(l(r));
      }
    }
  });
}

// Inputs q, k, v, o, lse, do; outputs dq, dk, dv. Per (batch, head): for each block of keys, every block of queries
// that sees it gives P = exp(scale q k^T - lse), then dv += P^T do, dS = P * (do v^T - delta), dk += scale dS^T q
// and dq += scale dS k, with delta = rowsum(do * o).
template <class C>
void backward(const KernelContext& ctx) {
  const Dims d = dims_of(ctx);
  const auto& a = std::get<FusedAttentionAttrs>(ctx.attrs);
  const C scale = static_cast<C>(a.scale);
  const C *q = ctx.inputs[0].data<C>(), *k = ctx.inputs[1].data<C>(), *v = ctx.inputs[2].data<C>(),
          *o = ctx.inputs[3].data<C>(), *lse = ctx.inputs[4].data<C>(), *dout = ctx.inputs[5].data<C>();
  C *dq = ctx.outputs[0].data<C>(), *dk = ctx.outputs[1].data<C>(), *dv = ctx.outputs[2].data<C>();
  parallel_for(d.batch * d.heads, grain_for(d.q_len * d.k_len * (2 * d.dim + 2 * d.v_dim)), [&](int64_t begin, int64_t end) {
    Mat<C> p(kBlock, kBlock), dp(kBlock, kBlock), dq_acc(d.q_len, d.dim), dk_acc(kBlock, d.dim), dv_acc(kBlock, d.v_dim);
    Eigen::Array<C, Eigen::Dynamic, 1> delta(d.q_len);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / d.heads, h = item % d.heads;
      const C* lse_bh = lse + (b * d.heads + h) * d.q_len;
      const ConstRows<C> o_all = const_rows(o, d, d.q_len, d.v_dim, b, h, 0, d.q_len);
      const ConstRows<C> do_all = const_rows(dout, d, d.q_len, d.v_dim, b, h, 0, d.q_len);
      delta = o_all.cwiseProduct(do_all).rowwise().sum().array();
      dq_acc.setZero();
      for (int64_t j0 = 0; j0 < d.k_len; j0 += kBlock) {
        const int64_t cols = std::min(kBlock, d.k_len - j0);
        const ConstRows<C> kb = const_rows(k, d, d.k_len, d.dim, b, h, j0, cols);
        const ConstRows<C> vb = const_rows(v, d, d.k_len, d.v_dim, b, h, j0, cols);
        auto dkb = dk_acc.topRows(cols);
        auto dvb = dv_acc.topRows(cols);
        dkb.setZero();
        dvb.setZero();
        // Causal: query i sees key j0 only from i = j0 on.
        for (int64_t i0 = a.causal ? j0 / kBlock * kBlock : 0; i0 < d.q_len; i0 += kBlock) {
          const int64_t rows = std::min(kBlock, d.q_len - i0);
          const ConstRows<C> qb = const_rows(q, d, d.q_len, d.dim, b, h, i0, rows);
          const ConstRows<C> dob = const_rows(dout, d, d.q_len, d.v_dim, b, h, i0, rows);
          auto pb = p.topLeftCorner(rows, cols);
          auto dpb = dp.topLeftCorner(rows, cols);
          pb.noalias() = qb * kb.transpose();
          pb *= scale;
          if (a.causal && j0 + cols - 1 > i0) mask_causal<C>(pb, i0, j0);
          for (int64_t r = 0; r < rows; ++r) pb.row(r) = (pb.row(r).array() - lse_bh[i0 + r]).exp().matrix();
          dvb.noalias() += pb.transpose() * dob;
          dpb.noalias() = dob * vb.transpose();
          for (int64_t r = 0; r < rows; ++r)
            dpb.row(r) = (pb.row(r).array() * (dpb.row(r).array() - delta(i0 + r))).matrix() * scale;
          dkb.noalias() += dpb.transpose() * qb;
          dq_acc.middleRows(i0, rows).noalias() += dpb * kb;
        }
        rows_of(dk, d, d.k_len, d.dim, b, h, j0, cols) = dkb;
        rows_of(dv, d, d.k_len, d.v_dim, b, h, j0, cols) = dvb;
      }
      rows_of(dq, d, d.q_len, d.dim, b, h, 0, d.q_len) = dq_acc;
    }
  });
}

void fused_attention_cpu(const KernelContext& ctx) {
  if (ctx.outputs[0].num_elements() == 0 && ctx.outputs[1].num_elements() == 0) return;
  if (ctx.inputs[0].dtype() == DType::Float32)
    forward<float>(ctx);
  else
    forward<double>(ctx);
}

void fused_attention_grad_cpu(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype() == DType::Float32)
    backward<float>(ctx);
  else
    backward<double>(ctx);
}

}  // namespace

EMBER_REGISTER_KERNEL(fused_attention, CPU, fused_attention_cpu, DType::Float32, DType::Float64);
EMBER_REGISTER_KERNEL(fused_attention_grad, CPU, fused_attention_grad_cpu, DType::Float32, DType::Float64);

}  // namespace ember
