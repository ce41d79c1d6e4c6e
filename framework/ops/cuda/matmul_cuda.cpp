// CUDA matmul. Floating dtypes run on cuBLASLt: float32 in FP32 (or TF32 tensor cores when
// cuda::tf32_enabled()), float16/bfloat16 on tensor cores with float32 accumulation and scale, float64 in FP64.
// Int32/int64 run on the tiled kernel of matmul.cu (cuBLASLt has no integer GEMM of those widths).
//
// cuBLASLt is column-major: the row-major product C = op(A) @ op(B) is computed as C^T = op(B)^T @ op(A)^T, i.e.
// cuBLASLt's A is our b and its B our a, with the transposes kept and m, n swapped; no data moves.
// Batch dims are merged as on the CPU (cpu/matmul.cpp): the innermost merged dim is cuBLASLt's strided batch
// (a broadcast operand gets batch stride 0, which cuBLASLt accepts for A and B), outer ones loop on the host.
// matmul_bias adds its bias (and relu) in cuBLASLt's epilogue (BIAS, RELU_BIAS) for a single float product,
// where cuBLASLt has an algorithm for it: the bias has one value per row of cuBLASLt's D, i.e. per column of
// ours, and joins the float32 accumulator before the output is rounded.
#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/matmul_geometry.h"
#include "framework/ops/cuda/conv_launch.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/cuda/library_handles.h"
#include "framework/ops/cuda/matmul_launch.h"
#include "framework/ops/dispatch.h"

namespace ember {

namespace {

// The device-side part: `inner` products `a_stride`/`b_stride` apart; `outer` such groups at the offsets below.
struct MatmulCudaSplit {
  int64_t inner = 1, a_stride = 0, b_stride = 0, outer = 1;
};

MatmulCudaSplit matmul_cuda_split(const MatmulGeometry& g) {
  MatmulCudaSplit s;
  if (g.batch.empty()) return s;
  s.inner = g.batch.back();
  s.a_stride = g.a_step.back();
  s.b_stride = g.b_step.back();
  s.outer = g.batches / s.inner;
  return s;
}

// Element offsets of the a and b matrices starting outer group t (the outer dims are all but the last).
std::pair<int64_t, int64_t> matmul_cuda_outer_offsets(const MatmulGeometry& g, int64_t t) {
  int64_t oa = 0, ob = 0;
  if (g.batch.empty()) return {oa, ob};
  for (size_t i = g.batch.size() - 1; i-- > 0;) {
    const int64_t idx = t % g.batch[i];
    t /= g.batch[i];
    oa += idx * g.a_step[i];
    ob += idx * g.b_step[i];
  }
  return {oa, ob};
}

// ---------------------------------------------------------------------------------------------------------
// cuBLASLt plans: descriptors and the heuristic's algorithm, cached per geometry, dtype and alignment.

constexpr size_t kMatmulCudaWorkspaceBytes = size_t{32} << 20;
constexpr size_t kMatmulCudaMaxPlans = 1024;

struct MatmulCudaPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  MatmulCudaPlan() = default;
  MatmulCudaPlan(const MatmulCudaPlan&) = delete;
  MatmulCudaPlan& operator=(const MatmulCudaPlan&) = delete;
  ~MatmulCudaPlan() {
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// device, dtype, tf32, m, n, k, ta, tb, inner batch, a stride, b stride, alignment of a, b, c, epilogue.
using MatmulCudaKey = std::array<int64_t, 15>;

// The cuBLASLt epilogue a plan applies (matmul_bias's bias and relu; the key's last entry).
enum class MatmulCudaEpilogue : int64_t { None, Bias, ReluBias };

struct MatmulCudaCache {
  std::mutex mutex;  // held while a plan is used, so eviction never frees one in flight
  // A null plan: cuBLASLt has no algorithm with the key's epilogue (matmul_bias then adds the bias itself).
  std::map<MatmulCudaKey, std::unique_ptr<MatmulCudaPlan>> plans;
};

MatmulCudaCache& matmul_cuda_cache() {
  static MatmulCudaCache* cache = new MatmulCudaCache;  // never destroyed: see library_handles.cpp
  return *cache;
}

// The largest power of two (at most 256) dividing every address the operand is read or written at.
uint32_t matmul_cuda_alignment(uint64_t bits) {
  uint32_t align = 1;
  while (align < 256 && (bits & align) == 0) align <<= 1;
  return align;
}

struct MatmulCudaTypes {
  cudaDataType_t data, scale;
  cublasComputeType_t compute;
};

MatmulCudaTypes matmul_cuda_types(DType dt, bool tf32) {
  switch (dt) {
    case DType::Float32: return {CUDA_R_32F, CUDA_R_32F, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
    case DType::Float16: return {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::BFloat16: return {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::Float64: return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
    default: throw make_error<Unimplemented>("matmul: dtype ", dt, " has no cuBLASLt path on CUDA");
  }
}

template <class Context>
std::unique_ptr<MatmulCudaPlan> matmul_cuda_make_plan(const MatmulCudaKey& key, DType dt, Context&& context) {
  const auto [device, dtype_code, tf32, m, n, k, ta, tb, batch, sa, sb, align_a, align_b, align_c, epilogue] = key;
  (void)dtype_code;
  const MatmulCudaTypes t = matmul_cuda_types(dt, tf32 != 0);
  auto plan = std::make_unique<MatmulCudaPlan>();
  auto check = [&](cublasStatus_t st, const char* call) { cuda::check_cublas(st, "matmul", call, context); };
  check(cublasLtMatmulDescCreate(&plan->op, t.compute, t.scale), "cublasLtMatmulDescCreate");
  // cuBLASLt's A is our b and its B our a (see the top of the file).
  const cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)),
        "cublasLtMatmulDescSetAttribute");
  check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)),
        "cublasLtMatmulDescSetAttribute");
  // Layouts describe the stored column-major matrices: rows, cols, leading dimension.
  auto layout = [&](cublasLtMatrixLayout_t& l, int64_t rows, int64_t cols, int64_t stride) {
    check(cublasLtMatrixLayoutCreate(&l, t.data, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), rows),
          "cublasLtMatrixLayoutCreate");
    if (batch == 1) return;
    const int32_t count = static_cast<int32_t>(batch);
    check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
          "cublasLtMatrixLayoutSetAttribute");
    check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
          "cublasLtMatrixLayoutSetAttribute");
  };
  if (epilogue != static_cast<int64_t>(MatmulCudaEpilogue::None)) {
    // The bias has one value per row of cuBLASLt's column-major D (n rows: one per column of our product).
    const cublasLtEpilogue_t e = epilogue == static_cast<int64_t>(MatmulCudaEpilogue::ReluBias)
                                     ? CUBLASLT_EPILOGUE_RELU_BIAS
                                     : CUBLASLT_EPILOGUE_BIAS;
    check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)),
          "cublasLtMatmulDescSetAttribute");
  }
  layout(plan->la, tb ? k : n, tb ? n : k, sb);
  layout(plan->lb, ta ? m : k, ta ? k : m, sa);
  layout(plan->lc, n, m, m * n);

  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = kMatmulCudaWorkspaceBytes;
  const uint32_t al_a = static_cast<uint32_t>(align_b), al_b = static_cast<uint32_t>(align_a),
                 al_c = static_cast<uint32_t>(align_c);
  cublasStatus_t st =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(cuda::cublaslt_handle(static_cast<int>(device)), plan->op, plan->la, plan->lb,
                                        plan->lc, plan->lc, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  // With an epilogue, no algorithm is an answer (matmul_bias adds the bias itself), not an error.
  if (epilogue != static_cast<int64_t>(MatmulCudaEpilogue::None) &&
      (found == 0 || st == CUBLAS_STATUS_NOT_SUPPORTED))
    return nullptr;
  check(st, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) check(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmulAlgoGetHeuristic (no algorithm)");
  plan->algo = result.algo;
  return plan;
}

// ---------------------------------------------------------------------------------------------------------
// The kernel.

// The product of ctx's first two inputs into its output. With a bias (matmul_bias: one value per column of the
// product) the product tries cuBLASLt's bias (or bias+relu) epilogue: for the float types cuBLASLt computes in
// float32 and a single, unbatched product, when cuBLASLt has an algorithm for it. Returns whether the epilogue
// ran (when not, the caller adds the bias). The bias's address is 16-byte aligned, as cuBLASLt's vectorised
// epilogue loads expect.
bool matmul_cuda_product(const KernelContext& ctx, const Tensor* bias, bool relu) {
  const Tensor &a = ctx.inputs[0], &b = ctx.inputs[1];
  Tensor& out = ctx.outputs[0];
  if (out.num_elements() == 0) return true;
  const MatMulAttrs& attrs = std::get<MatMulAttrs>(ctx.attrs);
  const MatmulGeometry g = fold_shared_b(matmul_geometry(a.shape(), b.shape(), attrs));
  const int dev = cuda::device_of(ctx);
  cudaStream_t stream = cuda::stream(dev);
  if (g.k == 0) {  // an empty sum: all zeros (zero bits are zero in every supported dtype)
    EMBER_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, out.nbytes(), stream), "matmul");
    return false;
  }
  const MatmulCudaSplit split = matmul_cuda_split(g);
  const DType dt = a.dtype();
  const size_t elem = dtype_size(dt);
  const char* pa = static_cast<const char*>(a.raw_data());
  const char* pb = static_cast<const char*>(b.raw_data());
  char* pc = static_cast<char*>(out.raw_data());
  const int64_t c_group = split.inner * g.m * g.n;  // output elements per outer group

  if (dt == DType::Int32 || dt == DType::Int64) {
    for (int64_t t = 0; t < split.outer; ++t) {
      const auto [oa, ob] = matmul_cuda_outer_offsets(g, t);
      cuda::launch_matmul_int(cuda::to_dt(dt), pa + oa * elem, pb + ob * elem, pc + t * c_group * elem, g.m, g.n, g.k,
                              g.ta, g.tb, split.inner, split.a_stride, split.b_stride, dev, "matmul");
    }
    return false;
  }

  auto context = [&] {
    std::ostringstream os;
    os << std::boolalpha << "a of shape " << a.shape() << " and b of shape " << b.shape() << " (" << dt
       << ", transpose_a=" << attrs.transpose_a << ", transpose_b=" << attrs.transpose_b << ") on GPU:" << dev;
    return os.str();
  };
  EMBER_CHECK(split.inner <= INT32_MAX, Unimplemented)
      << "matmul: a batch of " << split.inner << " products exceeds cuBLASLt's batch count limit, for " << context();
  // Every address an operand is used at: its base plus multiples of its outer steps.
  uint64_t bits_a = reinterpret_cast<uintptr_t>(pa), bits_b = reinterpret_cast<uintptr_t>(pb),
           bits_c = reinterpret_cast<uintptr_t>(pc);
  for (size_t i = 0; i + 1 < g.batch.size(); ++i) {
    bits_a |= static_cast<uint64_t>(g.a_step[i]) * elem;
    bits_b |= static_cast<uint64_t>(g.b_step[i]) * elem;
  }
  // The strided batch's matrices start at multiples of its strides too (an odd m*k leaves float16 matrices
  // only 2-byte aligned), so the alignment promised to cuBLASLt includes them.
  bits_a |= static_cast<uint64_t>(split.a_stride) * elem;
  bits_b |= static_cast<uint64_t>(split.b_stride) * elem;
  bits_c |= static_cast<uint64_t>(g.m * g.n) * elem;
  if (split.outer > 1) bits_c |= static_cast<uint64_t>(c_group) * elem;
  const bool tf32 = dt == DType::Float32 && cuda::tf32_enabled();
  const bool epilogue_ok = bias != nullptr && dt != DType::Float64 && split.inner == 1 && split.outer == 1 &&
                           reinterpret_cast<uintptr_t>(bias->raw_data()) % 16 == 0;
  const MatmulCudaEpilogue epilogue = !epilogue_ok ? MatmulCudaEpilogue::None
                                      : relu       ? MatmulCudaEpilogue::ReluBias
                                                   : MatmulCudaEpilogue::Bias;
  MatmulCudaKey key = {dev,
                             static_cast<int64_t>(dt),
                             tf32,
                             g.m,
                             g.n,
                             g.k,
                             g.ta,
                             g.tb,
                             split.inner,
                             split.a_stride,
                             split.b_stride,
                             matmul_cuda_alignment(bits_a),
                             matmul_cuda_alignment(bits_b),
                             matmul_cuda_alignment(bits_c),
                             static_cast<int64_t>(epilogue)};

  MatmulCudaCache& cache = matmul_cuda_cache();
  std::lock_guard<std::mutex> guard(cache.mutex);
  auto find_plan = [&](const MatmulCudaKey& k) -> const MatmulCudaPlan* {
    auto it = cache.plans.find(k);
    if (it == cache.plans.end()) {
      if (cache.plans.size() >= kMatmulCudaMaxPlans) cache.plans.clear();
      it = cache.plans.emplace(k, matmul_cuda_make_plan(k, dt, context)).first;
    }
    return it->second.get();
  };
  const MatmulCudaPlan* found = find_plan(key);
  const bool fused = found != nullptr && epilogue != MatmulCudaEpilogue::None;
  if (found == nullptr) {  // no algorithm with the epilogue: the plain product
    key.back() = static_cast<int64_t>(MatmulCudaEpilogue::None);
    found = find_plan(key);
  }
  const MatmulCudaPlan& plan = *found;
  if (fused) {
    const void* bias_ptr = bias->raw_data();
    cuda::check_cublas(
        cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)),
        "matmul", "cublasLtMatmulDescSetAttribute", context);
  }
  cublasLtHandle_t handle = cuda::cublaslt_handle(dev);
  void* workspace = cuda::workspace(dev, kMatmulCudaWorkspaceBytes);
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const bool f64 = dt == DType::Float64;
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : static_cast<const void*>(&alpha_f);
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
  for (int64_t t = 0; t < split.outer; ++t) {
    const auto [oa, ob] = matmul_cuda_outer_offsets(g, t);
    char* c = pc + t * c_group * elem;
    cuda::check_cublas(cublasLtMatmul(handle, plan.op, alpha, pb + ob * elem, plan.la, pa + oa * elem, plan.lb, beta,
                                      c, plan.lc, c, plan.lc, &plan.algo, workspace, kMatmulCudaWorkspaceBytes, stream),
                       "matmul", "cublasLtMatmul", context);
  }
  return fused;
}

void matmul_cuda(const KernelContext& ctx) { matmul_cuda_product(ctx, nullptr, false); }

// The product with the bias (and the fused relu) in cuBLASLt's epilogue, or, where it has none, the product
// and then the bias (and relu) in one pass over the output.
void matmul_bias_cuda(const KernelContext& ctx) {
  const Tensor& bias = ctx.inputs[2];
  const FusedActivation activation = std::get<MatMulAttrs>(ctx.attrs).activation;
  // The graph compiler fuses tanh and sigmoid into matmul_bias on the CPU only.
  EMBER_CHECK(activation == FusedActivation::None || activation == FusedActivation::Relu, Unimplemented)
      << "matmul_bias: the fused activation " << fused_activation_name(activation)
      << " has no CUDA kernel (relu or none expected)";
  const bool relu = activation == FusedActivation::Relu;
  if (matmul_cuda_product(ctx, &bias, relu)) return;
  Tensor& out = ctx.outputs[0];
  cuda::launch_bias_add(cuda::to_dt(out.dtype()), out.raw_data(), bias.raw_data(), out.num_elements(),
                        bias.num_elements(), relu, cuda::device_of(ctx),
                        "matmul_bias");
}

}  // namespace

EMBER_REGISTER_KERNEL(matmul, CUDA, matmul_cuda, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                      DType::Int32, DType::Int64);
EMBER_REGISTER_KERNEL(matmul_bias, CUDA, matmul_bias_cuda, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace ember
