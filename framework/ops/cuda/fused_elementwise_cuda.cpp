// The CUDA kernel of a fused elementwise chain: CUDA C++ generated from the chain, compiled with NVRTC for the
// device's architecture on first use and cached by its source (XLA's GPU loop fusion, TorchInductor's generated
// pointwise kernels). The program #includes framework/ops/functors.h, the same text the op kernels are built from
// (embedded at build time), so each step computes what its op's own kernel does, on floats as the CPU's fused
// kernel does (float32 as itself, bool as 0 or 1, the half types widened on loading and rounded to their type after
// each step that makes one, as their ops' kernels round on storing). The half conversions are the instructions
// cuda_fp16.h's and cuda_bf16.h's __half2float, __float2half_rn, __bfloat162float and __float2bfloat16_rn emit,
// which the ops' kernels call (cuda_types.cuh): NVRTC ships neither header, so the program spells them out.
//
// Bits: nvcc contracts a * b + c into one FMA within an expression (-fmad=true), and the ops' kernels are compiled
// so, each op alone; NVRTC compiles the functors with the same front end and flags. Across two steps, a product
// feeding the next step's sum would be contracted too, where the ops alone round the product to float first: an
// empty asm over each step's value keeps the compiler's front end from fusing them, and ptxas runs with
// --fmad=false so that the assembler does not fuse them afterwards (the multiply-adds NVVM made inside a functor
// are fma instructions by then, kept as they are).
#include "framework/ops/cuda/fused_elementwise_cuda.h"

#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/fused_elementwise_headers.h"
#include "framework/ops/cuda/nvrtc.h"
#include "framework/ops/dispatch.h"

namespace ember::cuda {
namespace {

using Fused = ops::FusedElementwise;

// What the program's #includes find: the functors and their macro, and the few standard declarations the functors
// use, which NVRTC does not ship (its math functions are built in, as CUDA's global float overloads).
constexpr const char* kCstdint = R"(#pragma once
using int8_t = signed char; using int16_t = short; using int32_t = int; using int64_t = long long;
using uint8_t = unsigned char; using uint16_t = unsigned short; using uint32_t = unsigned int;
using uint64_t = unsigned long long;
namespace std { using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t; using ::uint8_t; using ::uint16_t;
using ::uint32_t; using ::uint64_t; }
)";
constexpr const char* kTypeTraits = R"(#pragma once
namespace std {
template <class T, T v> struct integral_constant { static constexpr T value = v; };
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;
template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class T> struct is_floating_point
    : integral_constant<bool, is_same<T, float>::value || is_same<T, double>::value> {};
template <class T> struct is_integral : integral_constant<bool,
    is_same<T, bool>::value || is_same<T, char>::value || is_same<T, signed char>::value ||
    is_same<T, unsigned char>::value || is_same<T, short>::value || is_same<T, unsigned short>::value ||
    is_same<T, int>::value || is_same<T, unsigned int>::value || is_same<T, long>::value ||
    is_same<T, unsigned long>::value || is_same<T, long long>::value || is_same<T, unsigned long long>::value> {};
template <class T> struct is_signed
    : integral_constant<bool, is_floating_point<T>::value || (is_integral<T>::value && T(-1) < T(0))> {};
template <class T> struct make_unsigned { using type = T; };
template <> struct make_unsigned<signed char> { using type = unsigned char; };
template <> struct make_unsigned<short> { using type = unsigned short; };
template <> struct make_unsigned<int> { using type = unsigned int; };
template <> struct make_unsigned<long> { using type = unsigned long; };
template <> struct make_unsigned<long long> { using type = unsigned long long; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;
}
)";

const std::vector<NvrtcHeader>& program_headers() {
  static const std::vector<NvrtcHeader> headers = {
      {"framework/ops/functors.h", embedded::kFunctorsH},
      {"framework/core/host_device.h", embedded::kHostDeviceH},
      {"cmath", "#pragma once\n"},
      {"cstdint", kCstdint},
      {"type_traits", kTypeTraits},
  };
  return headers;
}

// The half conversions of the ops' kernels (see the top of this file); bfloat16 needs sm_80 or later, as the
// library's own kernels do.
constexpr const char* kHalfConversions = R"(__device__ __forceinline__ float ember_load_f16(unsigned short h) {
  float f; asm("{ cvt.f32.f16 %0, %1;}" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short ember_store_f16(float f) {
  unsigned short h; asm("{ cvt.rn.f16.f32 %0, %1;}" : "=h"(h) : "f"(f)); return h;
}
__device__ __forceinline__ float ember_load_bf16(unsigned short h) {
  float f;
#if __CUDA_ARCH__ >= 900
  asm("{ cvt.f32.bf16 %0, %1;}" : "=f"(f) : "h"(h));
#else
  asm("{ mov.b32 %0, {0,%1};}" : "=f"(f) : "h"(h));
#endif
  return f;
}
__device__ __forceinline__ unsigned short ember_store_bf16(float f) {
  unsigned short h; asm("{ cvt.rn.bf16.f32 %0, %1;}" : "=h"(h) : "f"(f)); return h;
}
)";

// The suffix of the conversions of a half dtype: "f16" or "bf16".
const char* half_suffix(DType dtype) { return dtype == DType::Float16 ? "f16" : "bf16"; }

// The register r<k>'s value as a float, at element i.
std::string read_input(const Fused::Input& in, int k) {
  const std::string p = "in" + std::to_string(k), period = std::to_string(in.period) + "LL";
  std::string at;
  switch (in.broadcast) {
    case Fused::Broadcast::Full: at = p + "[i]"; break;
    case Fused::Broadcast::Scalar: at = p + "[0]"; break;
    case Fused::Broadcast::Inner: at = p + "[i % " + period + "]"; break;
    case Fused::Broadcast::Outer: at = p + "[i / " + period + "]"; break;
  }
  if (in.dtype == DType::Bool) return "(" + at + " ? 1.0f : 0.0f)";
  if (ops::fused_rounds_to_half(in.dtype)) return std::string("ember_load_") + half_suffix(in.dtype) + "(" + at + ")";
  return at;
}

// The step's value, as its op's functor computes it from the registers.
std::string step_expression(const Fused::Step& s) {
  auto r = [&](size_t a) { return "r" + std::to_string(s.args[a]); };
  auto nonzero = [&](size_t a) { return "(" + r(a) + " != 0.0f)"; };
  switch (s.op) {
#define EMBER_FUSED_UNARY(name, F) \
  case OpId::name:                 \
    return "fn::" #F "{}(" + r(0) + ")";
#define EMBER_FUSED_BINARY(name, F) \
  case OpId::name:                  \
    return "fn::" #F "{}(" + r(0) + ", " + r(1) + ")";
#include "framework/ops/fused_ops.def"
    case OpId::gelu:
      return std::string("fn::Gelu{") + (std::get<GeluAttrs>(s.attrs).approximate ? "true" : "false") + "}(" + r(0) +
             ")";
    case OpId::logical_not: return "fn::LogicalNot{}(" + nonzero(0) + ")";
    case OpId::cast: return s.dtype == DType::Bool ? "fn::CastTo<bool>{}(" + r(0) + ")" : r(0);
    case OpId::logical_and: return "fn::LogicalAnd{}(" + nonzero(0) + ", " + nonzero(1) + ")";
    case OpId::logical_or: return "fn::LogicalOr{}(" + nonzero(0) + ", " + nonzero(1) + ")";
    case OpId::where: return "fn::Where{}(" + nonzero(0) + ", " + r(1) + ", " + r(2) + ")";
    case OpId::clip_by_value: return "fn::ClipByValue{}(" + r(0) + ", " + r(1) + ", " + r(2) + ")";
    default:
      throw make_error<Internal>("fused elementwise kernel: op '", op_name(s.op), "' is not fusible");
  }
}

// The element type of a buffer of `dtype` in the program: the half types as their bits.
const char* c_type(DType dtype) {
  if (dtype == DType::Bool) return "bool";
  return ops::fused_rounds_to_half(dtype) ? "unsigned short" : "float";
}

std::atomic<int64_t> g_compiles{0};

// The device's architecture, as NVRTC compiles for it.
int device_arch(int device) {
  static std::mutex mu;
  static std::map<int, int> archs;
  std::lock_guard<std::mutex> lock(mu);
  auto it = archs.find(device);
  if (it != archs.end()) return it->second;
  int major = 0, minor = 0;
  EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "jit_compile");
  EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "jit_compile");
  return archs[device] = nvrtc_arch_for(major * 10 + minor);
}

// The kernel of `source` for the device, compiled and loaded on first use. A CUDA library (cudaLibraryLoadData)
// is loaded into every device's context as it is used there, so one entry serves all devices of an architecture.
cudaKernel_t fused_kernel(const std::string& source, int device) {
  const int arch = device_arch(device);
  static std::mutex mu;
  static auto* cache = new std::unordered_map<std::string, cudaKernel_t>;  // never unloaded
  std::string key = "// sm_" + std::to_string(arch) + "\n" + source;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  const NvrtcProgram program = compile_fused_elementwise(source, arch);
  g_compiles.fetch_add(1);
  cudaLibrary_t library = nullptr;
  EMBER_CUDA_CHECK(cudaLibraryLoadData(&library, program.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                   "jit_compile: loading a fused elementwise kernel");
  cudaKernel_t kernel = nullptr;
  EMBER_CUDA_CHECK(cudaLibraryGetKernel(&kernel, library, kFusedKernelName),
                   "jit_compile: finding a fused elementwise kernel");
  cache->emplace(std::move(key), kernel);
  return kernel;
}

// A 0-d host input's value as the program's float register holds it.
float scalar_as_float(const Tensor& t) {
  switch (t.dtype()) {
    case DType::Bool: return *static_cast<const bool*>(t.raw_data()) ? 1.0f : 0.0f;
    case DType::Float16: return static_cast<float>(*static_cast<const half*>(t.raw_data()));
    case DType::BFloat16: return static_cast<float>(*static_cast<const bfloat16*>(t.raw_data()));
    default: return *static_cast<const float*>(t.raw_data());
  }
}

// Runs f's kernel on the device of f. A 0-d host input (a constant such as the 2 of x * 2) is passed by value.
void fused_elementwise_cuda(const Fused& f, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const int64_t n = f.shape.num_elements();
  if (n == 0) return;
  const int device = f.device.index();
  std::vector<bool> by_value(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    by_value[k] = inputs[k].device() != f.device;
    EMBER_CHECK(!by_value[k] || (inputs[k].device().is_cpu() && inputs[k].num_elements() == 1), InvalidArgument)
        << f.name() << ": input " << k << " is on " << inputs[k].device() << " with shape " << inputs[k].shape()
        << "; the chain runs on " << f.device << ", which reads only 0-d host scalars from elsewhere";
  }
  std::lock_guard<std::recursive_mutex> enqueue(ember::detail::device_enqueue_mutex(f.device));
  activate(device);
  const cudaKernel_t kernel = fused_kernel(fused_elementwise_source(f, by_value), device);
  long long count = n;
  std::vector<float> values(inputs.size());
  std::vector<const void*> pointers(inputs.size() + outputs.size());
  std::vector<void*> args = {&count};
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (by_value[k]) {
      values[k] = scalar_as_float(inputs[k]);
      args.push_back(&values[k]);
    } else {
      pointers[k] = inputs[k].raw_data();
      args.push_back(&pointers[k]);
    }
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    pointers[inputs.size() + o] = outputs[o].raw_data();
    args.push_back(&pointers[inputs.size() + o]);
  }
  EMBER_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocks_for(n)), dim3(kThreads),
                                    args.data(), 0, stream(device)),
                   "jit_compile: launching a fused elementwise kernel");
  after_launch("fused elementwise", device);
}

const bool fused_elementwise_registered = [] {
  ops::detail::set_fused_elementwise_kernel(DeviceType::CUDA, fused_elementwise_cuda, cuda::nvrtc_available);
  return true;
}();

}  // namespace

std::string fused_elementwise_source(const Fused& f, const std::vector<bool>& by_value) {
  std::string params = "long long n", body;
  for (size_t k = 0; k < f.inputs.size(); ++k) {
    const std::string r = "r" + std::to_string(k), p = "in" + std::to_string(k);
    if (k < by_value.size() && by_value[k]) {
      params += ", float " + p;
      body += "    const float " + r + " = " + p + ";\n";
    } else {
      params += ", const " + std::string(c_type(f.inputs[k].dtype)) + "* __restrict__ " + p;
      body += "    const float " + r + " = " + read_input(f.inputs[k], static_cast<int>(k)) + ";\n";
    }
  }
  for (size_t s = 0; s < f.steps.size(); ++s) {
    const std::string r = "r" + std::to_string(f.inputs.size() + s);
    body += "    float " + r + " = static_cast<float>(" + step_expression(f.steps[s]) + ");\n";
    body += "    EMBER_ROUNDED(" + r + ");\n";
    const DType dtype = f.steps[s].dtype;
    if (ops::fused_rounds_to_half(dtype)) {
      const std::string h = half_suffix(dtype);
      body += "    " + r + " = ember_load_" + h + "(ember_store_" + h + "(" + r + "));\n";
    }
  }
  for (size_t o = 0; o < f.outputs.size(); ++o) {
    const int r = f.outputs[o];
    const DType dtype = f.dtype_of(r);
    const std::string p = "out" + std::to_string(o);
    params += ", " + std::string(c_type(dtype)) + "* __restrict__ " + p;
    const std::string value = "r" + std::to_string(r);
    if (dtype == DType::Bool)
      body += "    " + p + "[i] = " + value + " != 0.0f;\n";
    else if (ops::fused_rounds_to_half(dtype))
      body += "    " + p + "[i] = ember_store_" + std::string(half_suffix(dtype)) + "(" + value + ");\n";
    else
      body += "    " + p + "[i] = " + value + ";\n";
  }
  return "#include \"framework/ops/functors.h\"\n"
         "namespace fn = ember::functors;\n"
         "#define EMBER_ROUNDED(r) asm(\"\" : \"+f\"(r))\n" +
         std::string(kHalfConversions) +
         "extern \"C\" __global__ void " + std::string(kFusedKernelName) + "(" + params + ") {\n"
         "  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;\n"
         "  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {\n" +
         body + "  }\n}\n";
}

NvrtcProgram compile_fused_elementwise(const std::string& source, int arch) {
  return nvrtc_compile(source, arch, program_headers(), {"--ptxas-options=--fmad=false"},
                       "jit_compile: fused elementwise kernel");
}

int64_t fused_elementwise_compiles() { return g_compiles.load(); }

}  // namespace ember::cuda
