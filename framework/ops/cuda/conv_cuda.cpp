// CUDA 2-D convolution (NHWC input, HWIO filters) and its two gradients through cuDNN's convolution API.
//
// - Filters: cuDNN's NHWC filter layout is KRSC = OHWI, so the HWIO filter (a (kh*kw*i, o) matrix) is transposed
//   into the workspace before use, and the filter gradient transposed back from it.
// - Padding: cuDNN pads symmetrically. SAME with an even window or a stride can pad one pixel more after than
//   before; then, as TF's conv_ops do, the input is padded explicitly by the difference and cuDNN pads the common
//   part (the input gradient is computed on the padded shape and cropped). The padded copy is a temporary from
//   the device's allocator, returned after the call: in the workspace, which only grows, it kept a batch's
//   largest padded activation (hundreds of MB at ResNet sizes) out of reach of every other tensor.
// - Algorithms: timed once per (shape, dtype, device, math mode, determinism, operand alignment) as TF's
//   autotuning does: cuDNN's heuristics (cudnnGet*Algorithm_v7) name the usable algorithms (workspace at most
//   256 MiB, deterministic when config::is_op_determinism_enabled()), cudnnFind*AlgorithmEx times them on the
//   op's own buffers, and the fastest is cached, with the cuDNN descriptors of that key.
// - Float64, shapes beyond cuDNN's 32-bit descriptors, and configurations cuDNN has no algorithm for run the
//   direct kernels of conv.cu instead (cuDNN offers no double convolution in NHWC), which the `ember` logger
//   says once per shape (a warning; info for float64).
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/core/allocator.h"
#include "framework/core/config.h"
#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/ops/cuda/conv_launch.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/cuda/library_handles.h"
#include "framework/ops/dispatch.h"

namespace ember {

namespace {

enum class ConvCudaKind : int { Forward, BackwardData, BackwardFilter };

// The convolution's geometry (input, filter, output) plus the split of its pads into the common part cuDNN
// applies (ph, pw) and the remainder padded explicitly (top/bottom/left/right extra rows and columns).
struct ConvCudaGeom {
  cuda::ConvShape s;
  int64_t pb, pr;
  int64_t ph, pw, extra_top, extra_left, hp, wp;
  bool explicit_pad() const { return hp != s.h || wp != s.w; }
  int64_t ig() const { return s.c / s.groups; }
};

ConvCudaGeom conv_cuda_geom(const Shape& in, const Shape& filt, const Shape& out, const Conv2DAttrs& a) {
  ConvCudaGeom g;
  g.s = {in[0],  in[1],        in[2],        in[3],          filt[0],        filt[1],   filt[3],  out[1],
         out[2], a.groups,     a.strides[0], a.strides[1],   a.dilations[0], a.dilations[1], a.pads[0], a.pads[2]};
  g.pb = a.pads[1];
  g.pr = a.pads[3];
  g.ph = std::min(g.s.pt, g.pb);
  g.pw = std::min(g.s.pl, g.pr);
  g.extra_top = g.s.pt - g.ph;
  g.extra_left = g.s.pl - g.pw;
  g.hp = g.s.h + g.extra_top + (g.pb - g.ph);
  g.wp = g.s.w + g.extra_left + (g.pr - g.pw);
  return g;
}

// Whether every dimension and tensor size fits cuDNN's int descriptors.
bool conv_cuda_fits_cudnn(const ConvCudaGeom& g) {
  const cuda::ConvShape& s = g.s;
  for (int64_t v : {s.n * g.hp * g.wp * s.c, s.n * s.oh * s.ow * s.o, s.kh * s.kw * g.ig() * s.o, g.ph, g.pw, s.sh,
                    s.sw, s.dh, s.dw, s.groups})
    if (v > INT32_MAX) return false;
  return true;
}

std::string conv_cuda_describe(const char* op, const ConvCudaGeom& g, DType dt, int dev) {
  const cuda::ConvShape& s = g.s;
  std::ostringstream os;
  os << "input [" << s.n << ", " << s.h << ", " << s.w << ", " << s.c << "], filters [" << s.kh << ", " << s.kw << ", "
     << g.ig() << ", " << s.o << "], output [" << s.n << ", " << s.oh << ", " << s.ow << ", " << s.o << "], strides ["
     << s.sh << ", " << s.sw << "], dilations [" << s.dh << ", " << s.dw << "], pads [" << s.pt << ", " << g.pb << ", "
     << s.pl << ", " << g.pr << "], groups " << s.groups << ", " << dt << " on GPU:" << dev << " (" << op << ")";
  return os.str();
}

// cuDNN descriptors of one convolution on the padded input, destroyed with the object.
struct ConvCudaDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ConvCudaDescs() = default;
  ConvCudaDescs(const ConvCudaDescs&) = delete;
  ConvCudaDescs& operator=(const ConvCudaDescs&) = delete;
  ~ConvCudaDescs() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
  }
};

cudnnDataType_t conv_cuda_data_type(DType dt) {
  switch (dt) {
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;  // float64 never reaches cuDNN
  }
}

// The math mode asked of the heuristics: tensor cores for the half types; for float32 the default (which lets
// cuDNN use TF32) or, with TF32 disabled, FMA only.
cudnnMathType_t conv_cuda_math(DType dt) {
  if (dt == DType::Float16 || dt == DType::BFloat16) return CUDNN_TENSOR_OP_MATH;
  return cuda::tf32_enabled() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

template <class Context>
void conv_cuda_make_descs(ConvCudaDescs& d, const ConvCudaGeom& g, DType dt, const char* op, Context&& context) {
  const cuda::ConvShape& s = g.s;
  const cudnnDataType_t type = conv_cuda_data_type(dt);
  auto check = [&](cudnnStatus_t st, const char* call) { cuda::check_cudnn(st, op, call, context); };
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  check(cudnnCreateTensorDescriptor(&d.x), "cudnnCreateTensorDescriptor");
  check(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NHWC, type, i32(s.n), i32(s.c), i32(g.hp), i32(g.wp)),
        "cudnnSetTensor4dDescriptor");
  check(cudnnCreateTensorDescriptor(&d.y), "cudnnCreateTensorDescriptor");
  check(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NHWC, type, i32(s.n), i32(s.o), i32(s.oh), i32(s.ow)),
        "cudnnSetTensor4dDescriptor");
  check(cudnnCreateFilterDescriptor(&d.w), "cudnnCreateFilterDescriptor");
  check(cudnnSetFilter4dDescriptor(d.w, type, CUDNN_TENSOR_NHWC, i32(s.o), i32(g.ig()), i32(s.kh), i32(s.kw)),
        "cudnnSetFilter4dDescriptor");
  check(cudnnCreateConvolutionDescriptor(&d.conv), "cudnnCreateConvolutionDescriptor");
  check(cudnnSetConvolution2dDescriptor(d.conv, i32(g.ph), i32(g.pw), i32(s.sh), i32(s.sw), i32(s.dh), i32(s.dw),
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
  check(cudnnSetConvolutionGroupCount(d.conv, i32(s.groups)), "cudnnSetConvolutionGroupCount");
  check(cudnnSetConvolutionMathType(d.conv, conv_cuda_math(dt)), "cudnnSetConvolutionMathType");
  int n = 0, c = 0, h = 0, w = 0;
  check(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &w),
        "cudnnGetConvolution2dForwardOutputDim");
  EMBER_CHECK(n == s.n && c == s.o && h == s.oh && w == s.ow, Internal)
      << op << ": cuDNN computes an output of [" << n << ", " << h << ", " << w << ", " << c << "] for " << context();
}

// ---------------------------------------------------------------------------------------------------------
// Algorithm choice, cached.

constexpr size_t kConvCudaMaxAlgoWorkspace = size_t{256} << 20;
constexpr size_t kConvCudaMaxPlans = 4096;

struct ConvCudaPlan {
  bool cudnn = false;  // false: the direct kernels
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

// kind, device, dtype, tf32, determinism, n, hp, wp, c, o, kh, kw, oh, ow, groups, sh, sw, dh, dw, ph, pw, and the
// alignment of the two inputs and the output.
using ConvCudaKey = std::array<int64_t, 24>;

struct ConvCudaCache {
  std::mutex mutex;
  std::map<ConvCudaKey, ConvCudaPlan> plans;
  // Shared: an eviction (clear) must not destroy descriptors a running convolution still uses.
  std::map<ConvCudaKey, std::shared_ptr<ConvCudaDescs>> descs;
};

ConvCudaCache& conv_cuda_cache() {
  static ConvCudaCache* cache = new ConvCudaCache;  // never destroyed: see library_handles.cpp
  return *cache;
}

// The largest power of two up to 256 dividing the address. Some algorithms need aligned operands (a view into
// a tensor can start anywhere): a plan found unusable for a misaligned view must not send the aligned
// tensors of the same shape to the direct kernels too.
int64_t conv_cuda_alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  const uintptr_t lowest = v & (~v + 1);  // the lowest set bit; 0 for a null pointer
  return lowest == 0 || lowest > 256 ? 256 : static_cast<int64_t>(lowest);
}

ConvCudaKey conv_cuda_key(ConvCudaKind kind, int dev, DType dt, bool deterministic, const ConvCudaGeom& g,
                          const void* in0, const void* in1, const void* out) {
  const cuda::ConvShape& s = g.s;
  return {static_cast<int64_t>(kind), dev, static_cast<int64_t>(dt), cuda::tf32_enabled(), deterministic, s.n, g.hp,
          g.wp, s.c, s.o, s.kh, s.kw, s.oh, s.ow, s.groups, s.sh, s.sw, s.dh, s.dw, g.ph, g.pw,
          conv_cuda_alignment(in0), conv_cuda_alignment(in1), conv_cuda_alignment(out)};
}

// The descriptors of a key, made on its first use instead of created and destroyed on every call. The key
// names the device, and every user of a device's descriptors holds its cuDNN lease (conv_cuda_run), so a
// descriptor is never set (cudnnSetConvolutionMathType) by two threads at once.
template <class Context>
std::shared_ptr<ConvCudaDescs> conv_cuda_descs(const ConvCudaKey& key, const ConvCudaGeom& g, DType dt, const char* op,
                                               Context&& context) {
  ConvCudaCache& cache = conv_cuda_cache();
  {
    std::lock_guard<std::mutex> guard(cache.mutex);
    auto it = cache.descs.find(key);
    if (it != cache.descs.end()) return it->second;
  }
  auto d = std::make_shared<ConvCudaDescs>();
  conv_cuda_make_descs(*d, g, dt, op, context);  // stored only once complete
  std::lock_guard<std::mutex> guard(cache.mutex);
  if (cache.descs.size() >= kConvCudaMaxPlans) cache.descs.clear();
  cache.descs[key] = d;
  return d;
}

// One algorithm cuDNN reports (a heuristic's or a timed search's result), reduced to what a plan needs.
struct ConvCudaCandidate {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

// The usable entries of a cuDNN result list, in its order: supported, deterministic if required, free of
// down-conversion (which would compute float32 or bfloat16 in float16) and within `max_workspace`. The
// heuristics (cudnnGet*Algorithm_v7) leave the workspace to a separate query, size(algo, &bytes), made with the
// entry's math mode set on the descriptor; a timed search (cudnnFind*AlgorithmEx) reports it in the entry.
template <class Perf, class Size>
std::vector<ConvCudaCandidate> conv_cuda_usable(const Perf* perf, int count, cudnnConvolutionDescriptor_t conv, DType dt,
                                                bool deterministic, size_t max_workspace, Size&& size) {
  std::vector<ConvCudaCandidate> out;
  const bool fma_only = dt == DType::Float32 && !cuda::tf32_enabled();
  for (int i = 0; i < count; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
    if (p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
    const cudnnMathType_t math = fma_only ? CUDNN_FMA_MATH : p.mathType;
    size_t bytes = p.memory;
    if constexpr (!std::is_same_v<std::decay_t<Size>, std::nullptr_t>) {
      if (cudnnSetConvolutionMathType(conv, math) != CUDNN_STATUS_SUCCESS) continue;
      if (size(p.algo, &bytes) != CUDNN_STATUS_SUCCESS) continue;
    }
    if (bytes > max_workspace) continue;
    out.push_back({static_cast<int>(p.algo), math, bytes});
  }
  return out;
}

// The calls of one kind of convolution: the heuristics, the workspace query and the timed search, on the
// buffers the op is about to use (the search runs every candidate on them and overwrites the output).
struct ConvCudaBuffers {
  const void* in0;  // Forward, BackwardFilter: x (padded); BackwardData: the OHWI filter
  const void* in1;  // Forward: the OHWI filter; BackwardData, BackwardFilter: dy
  void* out;        // Forward: y; BackwardData: dx (padded); BackwardFilter: the OHWI filter gradient
};

template <class Context>
std::vector<ConvCudaCandidate> conv_cuda_heuristics(ConvCudaKind kind, cudnnHandle_t h, const ConvCudaDescs& d,
                                                    DType dt, bool deterministic, const char* op, Context&& context) {
  auto run = [&](auto* perf, int count, auto&& get, auto&& size) -> std::vector<ConvCudaCandidate> {
    int returned = 0;
    const cudnnStatus_t st = get(count, &returned, perf);
    if (CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED) return {};
    if (st != CUDNN_STATUS_SUCCESS) cuda::throw_cudnn_error(st, op, "cudnnGetConvolution*Algorithm_v7", context());
    return conv_cuda_usable(perf, std::min(returned, count), d.conv, dt, deterministic, kConvCudaMaxAlgoWorkspace,
                            size);
  };
  switch (kind) {
    case ConvCudaKind::Forward: {
      std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
      return run(
          perf.data(), static_cast<int>(perf.size()),
          [&](int n, int* r, cudnnConvolutionFwdAlgoPerf_t* p) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, n, r, p);
          },
          [&](cudnnConvolutionFwdAlgo_t a, size_t* b) {
            return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, a, b);
          });
    }
    case ConvCudaKind::BackwardData: {
      std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
      return run(
          perf.data(), static_cast<int>(perf.size()),
          [&](int n, int* r, cudnnConvolutionBwdDataAlgoPerf_t* p) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, n, r, p);
          },
          [&](cudnnConvolutionBwdDataAlgo_t a, size_t* b) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, a, b);
          });
    }
    case ConvCudaKind::BackwardFilter: {
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> perf{};
      return run(
          perf.data(), static_cast<int>(perf.size()),
          [&](int n, int* r, cudnnConvolutionBwdFilterAlgoPerf_t* p) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, n, r, p);
          },
          [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* b) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, a, b);
          });
    }
  }
  return {};
}

// cuDNN's timed search (cudnnFind*AlgorithmEx: every algorithm that fits `workspace_bytes` runs on the op's
// buffers), its usable results fastest first. Empty when the search itself fails (it then allocates nothing
// of its own that could be left behind; the caller keeps the heuristics' order).
std::vector<ConvCudaCandidate> conv_cuda_search(ConvCudaKind kind, cudnnHandle_t h, const ConvCudaDescs& d, DType dt,
                                                bool deterministic, const ConvCudaBuffers& buf, void* workspace,
                                                size_t workspace_bytes) {
  auto no_size = nullptr;
  std::vector<ConvCudaCandidate> out;
  int returned = 0;
  switch (kind) {
    case ConvCudaKind::Forward: {
      std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
      if (cudnnFindConvolutionForwardAlgorithmEx(h, d.x, buf.in0, d.w, buf.in1, d.conv, d.y, buf.out,
                                                 static_cast<int>(perf.size()), &returned, perf.data(), workspace,
                                                 workspace_bytes) == CUDNN_STATUS_SUCCESS)
        out = conv_cuda_usable(perf.data(), returned, d.conv, dt, deterministic, workspace_bytes, no_size);
      break;
    }
    case ConvCudaKind::BackwardData: {
      std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
      if (cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w, buf.in0, d.y, buf.in1, d.conv, d.x, buf.out,
                                                      static_cast<int>(perf.size()), &returned, perf.data(), workspace,
                                                      workspace_bytes) == CUDNN_STATUS_SUCCESS)
        out = conv_cuda_usable(perf.data(), returned, d.conv, dt, deterministic, workspace_bytes, no_size);
      break;
    }
    case ConvCudaKind::BackwardFilter: {
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> perf{};
      if (cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x, buf.in0, d.y, buf.in1, d.conv, d.w, buf.out,
                                                        static_cast<int>(perf.size()), &returned, perf.data(),
                                                        workspace, workspace_bytes) == CUDNN_STATUS_SUCCESS)
        out = conv_cuda_usable(perf.data(), returned, d.conv, dt, deterministic, workspace_bytes, no_size);
      break;
    }
  }
  return out;
}

bool conv_cuda_cached_plan(const ConvCudaKey& key, ConvCudaPlan* plan) {
  ConvCudaCache& cache = conv_cuda_cache();
  std::lock_guard<std::mutex> guard(cache.mutex);
  auto it = cache.plans.find(key);
  if (it == cache.plans.end()) return false;
  *plan = it->second;
  return true;
}

void conv_cuda_store_plan(const ConvCudaKey& key, const ConvCudaPlan& plan) {
  ConvCudaCache& cache = conv_cuda_cache();
  std::lock_guard<std::mutex> guard(cache.mutex);
  if (cache.plans.size() >= kConvCudaMaxPlans) cache.plans.clear();
  cache.plans[key] = plan;
}

// Says once per convolution (op, shapes, dtype, device) why it runs on the direct kernels, which are many
// times slower than cuDNN: at info level when that is the documented path (float64), as a warning otherwise.
void conv_cuda_note_direct(const std::string& where, const std::string& why, bool expected) {
  static std::mutex* mutex = new std::mutex;
  static std::set<std::string>* noted = new std::set<std::string>;  // never destroyed: see library_handles.cpp
  {
    std::lock_guard<std::mutex> guard(*mutex);
    if (!noted->insert(where).second) return;
  }
  const std::string message = "conv2d on the GPU runs the direct kernel (no cuDNN) for " + where + ": " + why;
  if (expected)
    logging::info(message);
  else
    logging::warn(message);
}

// ---------------------------------------------------------------------------------------------------------
// Running one op.

size_t conv_cuda_round_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// A buffer from the device's caching allocator for the length of one call (none for 0 bytes). Returning it once
// the call's work is enqueued is safe: the allocator is stream-ordered, and every op of the device runs on the
// one stream the cuDNN handle is bound to, so the next user of the block runs behind that work.
class ConvCudaTemp {
 public:
  ConvCudaTemp(int dev, size_t bytes) : allocator_(allocator_for(Device::cuda(dev))), bytes_(bytes) {
    if (bytes_ > 0) ptr_ = allocator_.allocate(bytes_);
  }
  ConvCudaTemp(const ConvCudaTemp&) = delete;
  ConvCudaTemp& operator=(const ConvCudaTemp&) = delete;
  ~ConvCudaTemp() {
    if (ptr_) allocator_.deallocate(ptr_, bytes_);
  }
  void* get() const { return ptr_; }

 private:
  Allocator& allocator_;
  size_t bytes_;
  void* ptr_ = nullptr;
};

void conv_cuda_direct(ConvCudaKind kind, DType dt, const void* in0, const void* in1, void* out, const ConvCudaGeom& g,
                      int dev, const char* op) {
  const cuda::DT t = cuda::to_dt(dt);
  switch (kind) {
    case ConvCudaKind::Forward: return cuda::launch_conv2d_direct(t, in0, in1, out, g.s, dev, op);
    case ConvCudaKind::BackwardData: return cuda::launch_conv2d_backprop_input_direct(t, in0, in1, out, g.s, dev, op);
    case ConvCudaKind::BackwardFilter:
      return cuda::launch_conv2d_backprop_filter_direct(t, in0, in1, out, g.s, dev, op);
  }
}

// Forward: in0 = x, in1 = w (HWIO), out = y. BackwardData: in0 = w, in1 = dy, out = dx. BackwardFilter: in0 = x,
// in1 = dy, out = dw (HWIO).
void conv_cuda_run(const KernelContext& ctx, ConvCudaKind kind, const ConvCudaGeom& g) {
  const Tensor &a = ctx.inputs[0], &b = ctx.inputs[1];
  Tensor& out = ctx.outputs[0];
  const char* op = op_name(ctx.op);
  const int dev = cuda::device_of(ctx);
  if (out.num_elements() == 0) return;
  if (a.num_elements() == 0 || b.num_elements() == 0) {  // an empty sum: zeros
    EMBER_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, out.nbytes(), cuda::stream(dev)), op);
    return;
  }
  const DType dt = a.dtype();
  auto ctx_fn = [&] { return conv_cuda_describe(op, g, dt, dev); };
  auto direct = [&](const char* why, bool expected) {
    conv_cuda_note_direct(ctx_fn(), why, expected);
    conv_cuda_direct(kind, dt, a.raw_data(), b.raw_data(), out.raw_data(), g, dev, op);
  };
  if (dt == DType::Float64) return direct("cuDNN has no float64 convolution in NHWC", true);
  if (!conv_cuda_fits_cudnn(g)) return direct("a dimension or tensor size exceeds cuDNN's 32-bit descriptors", false);

  const bool deterministic = config::is_op_determinism_enabled();
  cuda::CudnnLease lease = cuda::cudnn_handle(dev);
  const ConvCudaKey key = conv_cuda_key(kind, dev, dt, deterministic, g, a.raw_data(), b.raw_data(), out.raw_data());
  const std::shared_ptr<ConvCudaDescs> descs = conv_cuda_descs(key, g, dt, op, ctx_fn);
  const ConvCudaDescs& d = *descs;
  const char* const no_algorithm = deterministic ? "cuDNN offers no deterministic algorithm within the 256 MiB "
                                                   "workspace cap (enable_op_determinism is on)"
                                                 : "cuDNN offers no algorithm within the 256 MiB workspace cap";

  // A key seen before runs its cached plan. A new one asks the heuristics for the usable algorithms and, once
  // the operands are in place, times them (cudnnFind*AlgorithmEx) in scratch as large as the largest needs:
  // the fastest becomes the key's plan, or the heuristics' first when the search finds none usable.
  ConvCudaPlan plan;
  const bool cached = conv_cuda_cached_plan(key, &plan);
  std::vector<ConvCudaCandidate> candidates;
  size_t scratch_bytes = plan.workspace;
  if (cached && !plan.cudnn) return direct(no_algorithm, false);
  if (!cached) {
    candidates = conv_cuda_heuristics(kind, lease.handle, d, dt, deterministic, op, ctx_fn);
    if (candidates.empty()) {
      conv_cuda_store_plan(key, ConvCudaPlan{});
      return direct(no_algorithm, false);
    }
    for (const ConvCudaCandidate& c : candidates) scratch_bytes = std::max(scratch_bytes, c.workspace);
  }

  // One workspace request, split into the OHWI filter (or filter gradient) and, for a cached plan, cuDNN's
  // scratch; the explicitly padded input (or input gradient) is a temporary of its own.
  const cuda::ConvShape& s = g.s;
  const size_t elem = dtype_size(dt);
  const int eb = static_cast<int>(elem);
  const int64_t filter_rows = s.kh * s.kw * g.ig();  // HWIO as a (filter_rows, o) matrix
  const size_t filter_bytes = conv_cuda_round_up(static_cast<size_t>(filter_rows * s.o) * elem);
  const ConvCudaTemp padded(dev, g.explicit_pad() ? static_cast<size_t>(s.n * g.hp * g.wp * s.c) * elem : 0);
  char* base = static_cast<char*>(cuda::workspace(dev, filter_bytes + (cached ? plan.workspace : 0)));
  void* filter_buf = base;
  void* pad_buf = padded.get();
  void* scratch = cached && plan.workspace > 0 ? base + filter_bytes : nullptr;
  // A new key's search runs in scratch of its own, as large as the largest candidate needs and returned to the
  // allocator after the call (the workspace would keep it). With too little memory for that, the heuristics'
  // first choice runs in what it needs, and a later call searches again (nothing is cached).
  std::optional<ConvCudaTemp> own_scratch;
  bool search = !cached;
  if (search) {
    try {
      own_scratch.emplace(dev, scratch_bytes);
    } catch (const ResourceExhausted&) {
      search = false;
      plan = {true, candidates.front().algo, candidates.front().math, candidates.front().workspace};
      scratch_bytes = plan.workspace;
      own_scratch.emplace(dev, scratch_bytes);
    }
    scratch = own_scratch->get();
  }

  ConvCudaBuffers buf{};
  switch (kind) {
    case ConvCudaKind::Forward: {
      cuda::launch_conv_transpose2d(b.raw_data(), filter_buf, filter_rows, s.o, eb, dev, op);
      const void* x = a.raw_data();
      if (pad_buf) {
        cuda::launch_conv_pad_nhwc(x, pad_buf, s.n, s.h, s.w, s.c, g.hp, g.wp, g.extra_top, g.extra_left, eb, dev, op);
        x = pad_buf;
      }
      buf = {x, filter_buf, out.raw_data()};
      break;
    }
    case ConvCudaKind::BackwardData:
      cuda::launch_conv_transpose2d(a.raw_data(), filter_buf, filter_rows, s.o, eb, dev, op);
      buf = {filter_buf, b.raw_data(), pad_buf ? pad_buf : out.raw_data()};
      break;
    case ConvCudaKind::BackwardFilter: {
      const void* x = a.raw_data();
      if (pad_buf) {
        cuda::launch_conv_pad_nhwc(x, pad_buf, s.n, s.h, s.w, s.c, g.hp, g.wp, g.extra_top, g.extra_left, eb, dev, op);
        x = pad_buf;
      }
      buf = {x, b.raw_data(), filter_buf};
      break;
    }
  }
  if (search) {
    cuda::check_cudnn(cudnnSetConvolutionMathType(d.conv, conv_cuda_math(dt)), op, "cudnnSetConvolutionMathType",
                      ctx_fn);
    const std::vector<ConvCudaCandidate> timed =
        conv_cuda_search(kind, lease.handle, d, dt, deterministic, buf, scratch, scratch_bytes);
    const ConvCudaCandidate& best = timed.empty() ? candidates.front() : timed.front();
    plan = {true, best.algo, best.math, best.workspace};
    conv_cuda_store_plan(key, plan);
  }
  cuda::check_cudnn(cudnnSetConvolutionMathType(d.conv, plan.math), op, "cudnnSetConvolutionMathType", ctx_fn);

  const float one = 1.0f, zero = 0.0f;
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  const char* call = "";
  switch (kind) {
    case ConvCudaKind::Forward:
      call = "cudnnConvolutionForward";
      st = cudnnConvolutionForward(lease.handle, &one, d.x, buf.in0, d.w, buf.in1, d.conv,
                                   static_cast<cudnnConvolutionFwdAlgo_t>(plan.algo), scratch, plan.workspace, &zero,
                                   d.y, buf.out);
      break;
    case ConvCudaKind::BackwardData:
      call = "cudnnConvolutionBackwardData";
      st = cudnnConvolutionBackwardData(lease.handle, &one, d.w, buf.in0, d.y, buf.in1, d.conv,
                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.algo), scratch, plan.workspace,
                                        &zero, d.x, buf.out);
      if (st == CUDNN_STATUS_SUCCESS && pad_buf)
        cuda::launch_conv_crop_nhwc(pad_buf, out.raw_data(), s.n, s.h, s.w, s.c, g.hp, g.wp, g.extra_top, g.extra_left,
                                    eb, dev, op);
      break;
    case ConvCudaKind::BackwardFilter:
      call = "cudnnConvolutionBackwardFilter";
      st = cudnnConvolutionBackwardFilter(lease.handle, &one, d.x, buf.in0, d.y, buf.in1, d.conv,
                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan.algo), scratch,
                                          plan.workspace, &zero, d.w, buf.out);
      if (st == CUDNN_STATUS_SUCCESS)
        cuda::launch_conv_transpose2d(filter_buf, out.raw_data(), s.o, filter_rows, eb, dev, op);
      break;
  }
  if (CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED) {
    // The plan's algorithm was offered and then rejected by the call: this shape goes direct from now on.
    conv_cuda_store_plan(key, ConvCudaPlan{});
    return direct("cuDNN rejected the algorithm its own search chose", false);
  }
  cuda::check_cudnn(st, op, call, ctx_fn);
}

void conv2d_cuda(const KernelContext& ctx) {
  const Tensor &x = ctx.inputs[0], &w = ctx.inputs[1];
  conv_cuda_run(ctx, ConvCudaKind::Forward,
                conv_cuda_geom(x.shape(), w.shape(), ctx.outputs[0].shape(), std::get<Conv2DAttrs>(ctx.attrs)));
}

// The convolution as conv2d's kernel, then the bias (and the fused relu) in one pass over the output.
void conv2d_bias_cuda(const KernelContext& ctx) {
  const Tensor &x = ctx.inputs[0], &w = ctx.inputs[1], &b = ctx.inputs[2];
  Tensor& y = ctx.outputs[0];
  const auto& attrs = std::get<Conv2DAttrs>(ctx.attrs);
  // The graph compiler fuses tanh and sigmoid into conv2d_bias on the CPU only.
  EMBER_CHECK(attrs.activation == FusedActivation::None || attrs.activation == FusedActivation::Relu, Unimplemented)
      << "conv2d_bias: the fused activation " << fused_activation_name(attrs.activation)
      << " has no CUDA kernel (relu or none expected)";
  conv_cuda_run(ctx, ConvCudaKind::Forward, conv_cuda_geom(x.shape(), w.shape(), y.shape(), attrs));
  cuda::launch_bias_add(cuda::to_dt(y.dtype()), y.raw_data(), b.raw_data(), y.num_elements(), y.shape()[3],
                        attrs.activation == FusedActivation::Relu, cuda::device_of(ctx), "conv2d_bias");
}

void conv2d_backprop_input_cuda(const KernelContext& ctx) {
  const Tensor &w = ctx.inputs[0], &dy = ctx.inputs[1];
  conv_cuda_run(ctx, ConvCudaKind::BackwardData,
                conv_cuda_geom(ctx.outputs[0].shape(), w.shape(), dy.shape(), std::get<Conv2DAttrs>(ctx.attrs)));
}

void conv2d_backprop_filter_cuda(const KernelContext& ctx) {
  const Tensor &x = ctx.inputs[0], &dy = ctx.inputs[1];
  conv_cuda_run(ctx, ConvCudaKind::BackwardFilter,
                conv_cuda_geom(x.shape(), ctx.outputs[0].shape(), dy.shape(), std::get<Conv2DAttrs>(ctx.attrs)));
}

}  // namespace

EMBER_REGISTER_KERNEL(conv2d, CUDA, conv2d_cuda, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16);
EMBER_REGISTER_KERNEL(conv2d_bias, CUDA, conv2d_bias_cuda, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(conv2d_backprop_input, CUDA, conv2d_backprop_input_cuda, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);
EMBER_REGISTER_KERNEL(conv2d_backprop_filter, CUDA, conv2d_backprop_filter_cuda, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);

}  // namespace ember
