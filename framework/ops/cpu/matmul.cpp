// CPU matmul and matmul_bias. Float32 runs on oneDNN (dnnl_sgemm for single products, the matmul primitive for
// batches). BFloat16 runs natively in oneDNN's matmul primitive (bf16 operands and result, float32
// accumulation; AVX-512-BF16 or AMX kernels) where oneDNN has a JIT kernel for the geometry on this CPU,
// and otherwise, like Float16 (oneDNN 2.6 has no f16 matmul on CPUs), is widened to float32 around the
// float32 path, so both accumulate in float32 and round once. Float64 and the integers use Eigen, one
// product per batch.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/core/cpu_policy.h"
#include "framework/core/parallel.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/cpu/bias_add.h"
#include "framework/ops/cpu/dnnl_context.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/cpu/post_ops.h"
#include "framework/ops/matmul_geometry.h"
#include "framework/ops/cpu/small_batch.h"
#include "framework/ops/direct_kernel.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/half_products.h"

namespace ember {

namespace {

// Products of a small batch (at most kSmallBatch rows) with a large matrix: a layer's forward and input-
// gradient products x @ w and dy @ w^T, and its weight gradient x^T @ dy. They split over the pool by the
// large matrix's rows, one single-threaded dnnl_sgemm per thread, in the chunks in which parallel_for splits
// the optimizer's elementwise update of that weight. So each thread reads and writes the same rows of a
// weight, its gradient and its slots at every step, in its own core's caches; oneDNN's split differs from
// product to product (and oneDNN 2.6 threads the weight gradient poorly). Where the split starts, and the
// other thresholds below, are measured figures: detail::kCpuPolicy.sgemm (framework/core/cpu_policy.h).
using cpu::kSmallBatch;
using cpu::kSplitMinRows;

void check_dnnl(dnnl_status_t status, const char* what) {
  EMBER_CHECK(status == dnnl_success, Internal) << "matmul: " << what << " failed with oneDNN status " << status;
}

// Runs fn(chunk, begin, end) over the large matrix's `rows` split as parallel_for splits them, and checks
// the statuses fn returns.
template <class F>
void split_rows(int64_t rows, F&& fn) {
  std::atomic<dnnl_status_t> status{dnnl_success};
  parallel_for_chunks(rows, kSplitMinRows, [&](int64_t chunk, int64_t begin, int64_t end) {
    const dnnl_status_t s = fn(chunk, begin, end);
    if (s != dnnl_success) status.store(s);
  });
  check_dnnl(status.load(), "dnnl_sgemm");
}

// Rows [begin, end) of the outer product c = a b^T (m x n, row-major) of two contiguous vectors.
void outer_rows(const float* a, const float* b, float* c, int64_t begin, int64_t end, int64_t n) {
  using Rows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<Rows>(c + begin * n, end - begin, n).noalias() =
      Eigen::Map<const Eigen::VectorXf>(a + begin, end - begin) * Eigen::Map<const Eigen::RowVectorXf>(b, n);
}

// One row-major product c = op(a) @ op(b) with dnnl_sgemm: no primitive or memory objects, so the
// per-call overhead is the lowest oneDNN offers; it runs the same JIT kernels as the primitive. Inside a
// parallel_for body oneDNN runs on the calling thread (see detail::ParallelBody).
void sgemm(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  const char tra = ta ? 'T' : 'N', trb = tb ? 'T' : 'N';
  const detail::SgemmPolicy& policy = detail::kCpuPolicy.sgemm;
  const bool split = intra_op_threads() >= 2 && !in_parallel_body();
  const bool split_m = split && m * n >= policy.split_min_elements && m >= 2 * kSplitMinRows;  // rows of c
  if (k == 1 && n >= policy.outer_min_cols) {
    // An outer product (a batch-1 weight gradient; with k = 1 both operands are contiguous whatever the
    // transposes), which Eigen writes row by row of c.
    if (split_m)
      return parallel_for_chunks(m, kSplitMinRows, [&](int64_t, int64_t begin, int64_t end) {
        outer_rows(a, b, c, begin, end, n);
      });
    return outer_rows(a, b, c, 0, m, n);
  }
  if (split_m && k <= kSmallBatch) {
    // x^T @ dy (or any short inner dimension): rows of c.
    return split_rows(m, [&](int64_t, int64_t begin, int64_t end) {
      return dnnl_sgemm(tra, trb, end - begin, n, k, 1.0f, a + (ta ? begin : begin * lda), lda, b, ldb, 0.0f,
                        c + begin * n, n);
    });
  }
  if (split && !ta && tb && m <= kSmallBatch && n * k >= policy.split_min_elements && n >= 2 * kSplitMinRows) {
    // dy @ w^T: columns of c, rows of b.
    return split_rows(n, [&](int64_t, int64_t begin, int64_t end) {
      return dnnl_sgemm(tra, trb, m, end - begin, k, 1.0f, a, lda, b + begin * ldb, ldb, 0.0f, c + begin, n);
    });
  }
  if (split && !ta && !tb && m <= kSmallBatch && k * n >= policy.split_min_elements && k >= 2 * kSplitMinRows) {
    // x @ w: the inner dimension, rows of b. Chunk 0 writes c, the others a partial product each, added
    // to c afterwards in chunk order.
    const int64_t chunks = parallel_chunks(k, kSplitMinRows);
    std::vector<float> partial(static_cast<size_t>((chunks - 1) * m * n));
    split_rows(k, [&](int64_t chunk, int64_t begin, int64_t end) {
      float* out = chunk == 0 ? c : partial.data() + (chunk - 1) * m * n;
      return dnnl_sgemm(tra, trb, m, n, end - begin, 1.0f, a + begin, lda, b + begin * ldb, ldb, 0.0f, out, n);
    });
    for (int64_t t = 0; t + 1 < chunks; ++t) {
      const float* p = partial.data() + t * m * n;
      for (int64_t i = 0; i < m * n; ++i) c[i] += p[i];
    }
    return;
  }
  // Products too small to repay oneDNN's threading run on this thread, where their result also stops
  // depending on the pool's size.
  std::optional<ScopedOpenMPThreads> one_thread;
  if (m * n * k < policy.serial_max_product) one_thread.emplace(1);
  check_dnnl(dnnl_sgemm(tra, trb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n), "dnnl_sgemm");
}

// A cached matmul primitive; empty when oneDNN rejected the geometry.
struct MatmulPrimitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};

// Memory descriptors with explicit strides: a transpose swaps the matrix strides, a broadcast batch
// dim has size 1 (oneDNN broadcasts it), so nothing is copied.
struct MatmulDescs {
  dnnl::memory::desc src, weights, dst;
};

MatmulDescs make_descs(const MatmulGeometry& g, dnnl::memory::data_type dt) {
  const size_t nb = g.batch.size(), nd = nb + 2;
  using dims = dnnl::memory::dims;
  dims sd(nd), ss(nd), wd(nd), ws(nd), dd(nd), ds(nd);
  sd[nb] = g.m, sd[nb + 1] = g.k;
  ss[nb] = g.ta ? 1 : g.k, ss[nb + 1] = g.ta ? g.m : 1;
  wd[nb] = g.k, wd[nb + 1] = g.n;
  ws[nb] = g.tb ? 1 : g.n, ws[nb + 1] = g.tb ? g.k : 1;
  dd[nb] = g.m, dd[nb + 1] = g.n;
  ds[nb] = g.n, ds[nb + 1] = 1;
  // A size-1 dim gets the stride a contiguous layout would give it, which oneDNN accepts.
  int64_t a_extent = g.m * g.k, b_extent = g.k * g.n, c_extent = g.m * g.n;
  for (size_t i = nb; i-- > 0;) {
    sd[i] = g.a_step[i] ? g.batch[i] : 1;
    ss[i] = g.a_step[i] ? g.a_step[i] : a_extent;
    a_extent = ss[i] * sd[i];
    wd[i] = g.b_step[i] ? g.batch[i] : 1;
    ws[i] = g.b_step[i] ? g.b_step[i] : b_extent;
    b_extent = ws[i] * wd[i];
    dd[i] = g.batch[i];
    ds[i] = c_extent;
    c_extent *= g.batch[i];
  }
  return {dnnl::memory::desc(sd, dt, ss), dnnl::memory::desc(wd, dt, ws), dnnl::memory::desc(dd, dt, ds)};
}

// What a matmul primitive adds to its product before the output's one rounding: nothing, a bias of the
// primitive's data type per column, or that bias then relu.
enum class Epilogue { kNone, kBias, kBiasRelu };

// The cached primitive of a geometry, data type and epilogue. A bf16 entry stays empty, and the caller widens
// to float32, where creation fails (bf16 kernels that do not pay here, see dnnl_ctx::check_bf16_enabled, or a
// geometry oneDNN rejects) or oneDNN's kernel for it does not beat widening (dnnl_ctx::fast_bf16_kernel).
MatmulPrimitive& primitive_for(const MatmulGeometry& g, dnnl::memory::data_type dt,
                               Epilogue epilogue = Epilogue::kNone) {
  const bool bf16 = dt == dnnl::memory::data_type::bf16;
  // oneDNN sizes its work split by the calling thread's OpenMP thread count at creation.
  std::vector<int64_t> key = {omp_get_max_threads(), g.m, g.n, g.k, g.ta, g.tb, static_cast<int64_t>(epilogue)};
  key.insert(key.end(), g.batch.begin(), g.batch.end());
  key.insert(key.end(), g.a_step.begin(), g.a_step.end());
  key.insert(key.end(), g.b_step.begin(), g.b_step.end());
  std::string k(!bf16 ? "matmul_f32:" : dnnl_ctx::bf16_enabled() ? "matmul_bf16:" : "matmul_bf16_off:");
  k.append(reinterpret_cast<const char*>(key.data()), key.size() * sizeof(int64_t));
  return dnnl_ctx::cached<MatmulPrimitive>(k, [&] {
    MatmulPrimitive p;
    const MatmulDescs d = make_descs(g, dt);
    try {
      if (bf16) dnnl_ctx::check_bf16_enabled();
      // A user scratchpad keeps the cached primitive safe to run from several threads at once.
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::memory::desc bias;  // none, or one value per column broadcast over the rows and batches
      if (epilogue != Epilogue::kNone) {
        const size_t nd = static_cast<size_t>(d.dst.dims().size());
        dnnl::memory::dims dims(nd, 1), strides(nd, g.n);
        dims[nd - 1] = g.n;
        strides[nd - 1] = 1;
        bias = dnnl::memory::desc(dims, dt, strides);
      }
      if (epilogue == Epilogue::kBiasRelu) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        attr.set_post_ops(ops);
      }
      p.pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(d.src, d.weights, bias, d.dst), attr,
                                          dnnl_ctx::engine());
      if (bf16 && !dnnl_ctx::fast_bf16_kernel(p.pd)) return MatmulPrimitive{};
      p.prim = dnnl::matmul(p.pd);
    } catch (const dnnl::error&) {
      p = MatmulPrimitive{};
    }
    return p;
  });
}

// Runs a primitive on a, b, c (and its bias, when it has one), of the primitive's data type.
void execute(MatmulPrimitive& p, const void* a, const void* b, void* c, const void* bias = nullptr) {
  const dnnl::engine& eng = dnnl_ctx::engine();
  try {
    dnnl::memory src(p.pd.src_desc(), eng, const_cast<void*>(a)), wei(p.pd.weights_desc(), eng, const_cast<void*>(b)),
        dst(p.pd.dst_desc(), eng, c);
    std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(p.pd.bias_desc(), eng, const_cast<void*>(bias)));
    dnnl_ctx::ScratchMemory scratch = dnnl_ctx::scratch_memory(p.pd.scratchpad_desc());
    args.emplace(DNNL_ARG_SCRATCHPAD, scratch.memory);
    p.prim.execute(dnnl_ctx::stream(), args);
    dnnl_ctx::stream().wait();
  } catch (const dnnl::error& e) {
    throw make_error<Internal>("matmul: oneDNN matmul primitive failed: ", e.what());
  }
}

// oneDNN matmul takes at most DNNL_MAX_NDIMS dims, two of which are the matrix.
constexpr size_t kMaxPrimitiveBatchDims = DNNL_MAX_NDIMS - 2;

// c = op(a) @ op(b) over all batches, float32.
void gemm_f32(const float* a, const float* b, float* c, const MatmulGeometry& geometry) {
  const MatmulGeometry g = fold_shared_b(geometry);
  if (g.batch.empty()) return sgemm(a, b, c, g.m, g.n, g.k, g.ta, g.tb);
  if (g.batch.size() <= kMaxPrimitiveBatchDims) {
    MatmulPrimitive& p = primitive_for(g, dnnl::memory::data_type::f32);
    if (p.prim) return execute(p, a, b, c);
  }
  // More batch dims than oneDNN takes (or a geometry it rejects): one sgemm per batch.
  for (int64_t t = 0; t < g.batches; ++t) {
    auto [oa, ob] = batch_offsets(g, t);
    sgemm(a + oa, b + ob, c + t * g.m * g.n, g.m, g.n, g.k, g.ta, g.tb);
  }
}

// BFloat16 in oneDNN's bf16 matmul, plus a bias per column (and its relu) before the one rounding where `bias` is
// given; false (nothing written) when oneDNN has no JIT kernel for it here.
bool gemm_bf16_native(const bfloat16* a, const bfloat16* b, bfloat16* c, const MatmulGeometry& geometry,
                      const bfloat16* bias = nullptr, bool relu = false) {
  const MatmulGeometry g = fold_shared_b(geometry);
  if (g.batch.size() > kMaxPrimitiveBatchDims) return false;
  const Epilogue e = !bias ? Epilogue::kNone : relu ? Epilogue::kBiasRelu : Epilogue::kBias;
  MatmulPrimitive& p = primitive_for(g, dnnl::memory::data_type::bf16, e);
  if (!p.prim) return false;
  execute(p, a, b, c, bias);
  return true;
}

// Half types without a native kernel: widen both operands to float32 (vectorised), multiply there
// (float32 accumulation) and round once at the end. The scratch buffers are tensors, so the allocator's
// statistics count them.
template <class T>
void gemm_widened(const KernelContext& ctx, const MatmulGeometry& g) {
  const Tensor &a = ctx.inputs[0], &b = ctx.inputs[1];
  Tensor& out = ctx.outputs[0];
  const Device host = Device::cpu();
  Tensor a32 = Tensor::empty(a.shape(), DType::Float32, host), b32 = Tensor::empty(b.shape(), DType::Float32, host);
  Tensor c32 = Tensor::empty(out.shape(), DType::Float32, host);
  cpu::widen(a.data<T>(), a32.data<float>(), a.num_elements());
  cpu::widen(b.data<T>(), b32.data<float>(), b.num_elements());
  gemm_f32(a32.data<float>(), b32.data<float>(), c32.data<float>(), g);
  cpu::narrow(c32.data<float>(), out.data<T>(), out.num_elements());
}

// Float64 and the integer types: Eigen products on row-major maps, one per batch.
template <class T>
void gemm_eigen(const T* a, const T* b, T* c, const MatmulGeometry& g) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  auto product = [&](int64_t t) {
    auto [oa, ob] = batch_offsets(g, t);
    Eigen::Map<const Mat> A(a + oa, g.ta ? g.k : g.m, g.ta ? g.m : g.k);
    Eigen::Map<const Mat> B(b + ob, g.tb ? g.n : g.k, g.tb ? g.k : g.n);
    Eigen::Map<Mat> C(c + t * g.m * g.n, g.m, g.n);
    if (g.ta && g.tb) C.noalias() = A.transpose() * B.transpose();
    else if (g.ta) C.noalias() = A.transpose() * B;
    else if (g.tb) C.noalias() = A * B.transpose();
    else C.noalias() = A * B;
  };
  const int64_t work = g.m * g.n * g.k;
  // Many or small products: split the batches over the pool. Few large ones: one at a time, each
  // threaded by Eigen (which stays serial when called inside a parallel region).
  if (g.batches >= 2 * intra_op_threads() || work < (int64_t{1} << 18)) {
    parallel_for(g.batches, grain_for(work),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t t = begin; t < end; ++t) product(t);
                 });
  } else {
    for (int64_t t = 0; t < g.batches; ++t) product(t);
  }
}

void matmul_cpu(const KernelContext& ctx) {
  const Tensor &a = ctx.inputs[0], &b = ctx.inputs[1];
  Tensor& out = ctx.outputs[0];
  if (out.num_elements() == 0) return;
  const MatmulGeometry g = matmul_geometry(a.shape(), b.shape(), std::get<MatMulAttrs>(ctx.attrs));
  if (g.k == 0) {  // an empty sum: all zeros (zero bits are zero in every supported dtype)
    std::memset(out.raw_data(), 0, out.nbytes());
    return;
  }
  switch (a.dtype()) {
    case DType::Float32: return gemm_f32(a.data<float>(), b.data<float>(), out.data<float>(), g);
    case DType::Float16: return gemm_widened<half>(ctx, g);
    case DType::BFloat16:
      if (gemm_bf16_native(a.data<bfloat16>(), b.data<bfloat16>(), out.data<bfloat16>(), g)) return;
      return gemm_widened<bfloat16>(ctx, g);
    case DType::Float64: return gemm_eigen(a.data<double>(), b.data<double>(), out.data<double>(), g);
    case DType::Int32: return gemm_eigen(a.data<int32_t>(), b.data<int32_t>(), out.data<int32_t>(), g);
    case DType::Int64: return gemm_eigen(a.data<int64_t>(), b.data<int64_t>(), out.data<int64_t>(), g);
    default: throw make_error<InvalidArgument>("matmul: dtype ", a.dtype(), " is not supported");
  }
}

// matmul_bias: bfloat16 on oneDNN's native bf16 kernels adds the bias (and the relu, where relu_post_op_exact says it
// may) inside the primitive, before the output's one rounding, as conv2d_bias does, and any other activation in a
// pass after it; otherwise the product as matmul computes it (inputs 0 and 1, output 0 are matmul's), then the
// bias and the fused activation in one pass over the output. (Without native bf16 kernels relu_post_op_exact's
// passes over the operands would be wasted: they are skipped.)
// product_with_epilogue's epilogue as a pass of its own over out's rows (its elements over its last dimension).
void epilogue_pass(const Tensor& out, const cpu::RowEpilogue& epilogue) {
  const int64_t channels = out.shape()[out.rank() - 1];
  cpu::run_range(out.num_elements() / channels, grain_for(channels), epilogue);
}

// (`epilogue`, when given: product_with_epilogue's, on the rows the bias pass finished or after the primitive.)
void matmul_bias_run(const KernelContext& ctx, const cpu::RowEpilogue* epilogue) {
  const Tensor& bias = ctx.inputs[2];
  Tensor& out = ctx.outputs[0];
  if (out.dtype() == DType::BFloat16 && out.num_elements() > 0 && dnnl_ctx::bf16_primitives_usable()) {
    const Tensor &a = ctx.inputs[0], &b = ctx.inputs[1];
    const auto& attrs = std::get<MatMulAttrs>(ctx.attrs);
    const MatmulGeometry g = matmul_geometry(a.shape(), b.shape(), attrs);
    if (g.k > 0) {
      const bool relu = attrs.activation == FusedActivation::Relu;
      const bool fused_relu = relu && cpu::relu_post_op_exact<bfloat16>(a, b, bias, g.k);
      if (gemm_bf16_native(a.data<bfloat16>(), b.data<bfloat16>(), out.data<bfloat16>(), g, bias.data<bfloat16>(),
                           fused_relu)) {
        if (!fused_relu) cpu::activation_in_place(out.data<bfloat16>(), out.num_elements(), attrs.activation);
        if (epilogue) epilogue_pass(out, *epilogue);
        return;
      }
    }
  }
  matmul_cpu(ctx);
  const int64_t n = bias.num_elements(), rows = n == 0 ? 0 : out.num_elements() / n;
  const FusedActivation activation = std::get<MatMulAttrs>(ctx.attrs).activation;
  EMBER_DISPATCH_FLOAT(out.dtype(), "matmul_bias", {
    cpu::add_bias_rows<scalar_t>(out.data<scalar_t>(), bias.data<scalar_t>(), rows, n, activation, epilogue);
  });
}

void matmul_bias_cpu(const KernelContext& ctx) { matmul_bias_run(ctx, nullptr); }

}  // namespace

namespace ops {
bool cpu_matmul_widens_half(DType dtype) {
  return dtype == DType::Float16 || (dtype == DType::BFloat16 && !dnnl_ctx::bf16_primitives_usable());
}
}  // namespace ops

namespace cpu {
void product_with_epilogue(OpId op, std::span<const Tensor> inputs, Tensor& out, const Attrs& attrs,
                           const RowEpilogue& epilogue) {
  const KernelContext ctx{op, inputs, std::span<Tensor>(&out, 1), attrs};
  if (out.num_elements() == 0) return;
  if (op == OpId::matmul_bias) return matmul_bias_run(ctx, &epilogue);
  const KernelFn kernel = find_kernel(op, DeviceType::CPU, inputs[0].dtype());
  EMBER_CHECK(kernel && op == OpId::conv2d_bias, Internal)
      << "product_with_epilogue: no CPU epilogue for " << op_name(op) << " on " << inputs[0].dtype();
  kernel(ctx);
  epilogue_pass(out, epilogue);
}
}  // namespace cpu

EMBER_REGISTER_KERNEL(matmul, CPU, matmul_cpu, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                      DType::Int32, DType::Int64);
EMBER_REGISTER_KERNEL(matmul_bias, CPU, matmul_bias_cpu, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace ember
