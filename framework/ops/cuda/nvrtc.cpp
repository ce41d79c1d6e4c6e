// NVRTC through the functions of libnvrtc Ember calls (loaded on first use, as cuBLASLt is).
#include "framework/ops/cuda/nvrtc.h"

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <algorithm>
#include <memory>

#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/ops/cuda/toolkit_library.h"

// NVRTC's soname carries the toolkit's major version (CUDART_VERSION / 1000, spelt out for the preprocessor).
#if CUDART_VERSION >= 13000 && CUDART_VERSION < 14000
#define EMBER_NVRTC_SONAME "libnvrtc.so.13"
#elif CUDART_VERSION >= 12000 && CUDART_VERSION < 13000
#define EMBER_NVRTC_SONAME "libnvrtc.so.12"
#else
#error "NVRTC's soname is not known for this CUDA toolkit"
#endif
#define EMBER_NVRTC_FORWARD(ret, name, params, args) \
  EMBER_TOOLKIT_FORWARD(EMBER_NVRTC_SONAME, "jit_compile: NVRTC", ret, name, params, args)

EMBER_NVRTC_FORWARD(const char*, nvrtcGetErrorString, (nvrtcResult result), (result))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcGetNumSupportedArchs, (int* count), (count))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcGetSupportedArchs, (int* archs), (archs))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcCreateProgram,
                    (nvrtcProgram * prog, const char* src, const char* name, int num_headers,
                     const char* const* headers, const char* const* include_names),
                    (prog, src, name, num_headers, headers, include_names))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram * prog), (prog))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcCompileProgram, (nvrtcProgram prog, int num_options, const char* const* options),
                    (prog, num_options, options))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcGetPTXSize, (nvrtcProgram prog, size_t* size), (prog, size))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcGetPTX, (nvrtcProgram prog, char* ptx), (prog, ptx))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram prog, size_t* size), (prog, size))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram prog, char* cubin), (prog, cubin))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t* size), (prog, size))
EMBER_NVRTC_FORWARD(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram prog, char* log), (prog, log))

namespace ember::cuda {
namespace {

void check_nvrtc(nvrtcResult result, const char* call, const std::string& what) {
  EMBER_CHECK(result == NVRTC_SUCCESS, Internal) << what << ": " << call << " failed (" << nvrtcGetErrorString(result)
                                                 << ")";
}

// One of the program's outputs; the PTX and the log are strings that end with their terminator, dropped.
template <class Size, class Get>
std::string read_output(nvrtcProgram prog, Size size_of, Get get, const char* call, const std::string& what,
                        bool text) {
  size_t n = 0;
  check_nvrtc(size_of(prog, &n), call, what);
  std::string out(n, '\0');
  check_nvrtc(get(prog, out.data()), call, what);
  if (text && !out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

}  // namespace

NvrtcProgram nvrtc_compile(const std::string& source, int arch, const std::vector<NvrtcHeader>& headers,
                           const std::vector<std::string>& options, const std::string& what) {
  std::vector<const char*> texts, names;
  for (const NvrtcHeader& h : headers) {
    texts.push_back(h.text);
    names.push_back(h.name);
  }
  nvrtcProgram prog = nullptr;
  check_nvrtc(nvrtcCreateProgram(&prog, source.c_str(), "ember_kernel.cu", static_cast<int>(headers.size()),
                                 texts.data(), names.data()),
              "nvrtcCreateProgram", what);
  const std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> destroy(&prog, [](nvrtcProgram* p) {
    nvrtcDestroyProgram(p);
  });
  std::vector<std::string> all = {"--gpu-architecture=sm_" + std::to_string(arch), "--std=c++17"};
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : all) argv.push_back(o.c_str());
  const nvrtcResult result = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  if (result != NVRTC_SUCCESS) {
    const std::string log =
        read_output(prog, nvrtcGetProgramLogSize, nvrtcGetProgramLog, "nvrtcGetProgramLog", what, true);
    throw make_error<Internal>(what, ": NVRTC could not compile the generated kernel for sm_", arch, " (",
                               nvrtcGetErrorString(result), "):\n", log, "\nsource:\n", source);
  }
  NvrtcProgram out;
  out.ptx = read_output(prog, nvrtcGetPTXSize, nvrtcGetPTX, "nvrtcGetPTX", what, true);
  out.cubin = read_output(prog, nvrtcGetCUBINSize, nvrtcGetCUBIN, "nvrtcGetCUBIN", what, false);
  return out;
}

bool nvrtc_available() {
  static const bool available = [] {
    try {
      int count = 0;
      check_nvrtc(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs", "jit_compile");
      return true;
    } catch (const Error& e) {
      logging::warn(std::string("jit_compile: elementwise chains on the GPU stay unfused, op by op: ") + e.what());
      return false;
    }
  }();
  return available;
}

int nvrtc_arch_for(int arch) {
  int count = 0;
  check_nvrtc(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs", "jit_compile");
  std::vector<int> archs(static_cast<size_t>(count));
  check_nvrtc(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs", "jit_compile");
  int best = 0;
  for (int a : archs)
    if (a <= arch) best = std::max(best, a);
  EMBER_CHECK(best > 0, FailedPrecondition) << "jit_compile: NVRTC compiles for no architecture at or below sm_"
                                            << arch << " (the device's)";
  return best;
}

}  // namespace ember::cuda
