// cuBLASLt, loaded on first use. Linking it would map and relocate its 500 MB at every program start,
// about 150 MiB of resident memory even on machines without a GPU (TensorFlow loads its CUDA libraries
// lazily for the same reason). Ember defines the cuBLASLt functions it calls; each forwards to the real one,
// found with dlsym in the library dlopen'd by the first call.
#include <cublasLt.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "framework/core/error.h"

namespace ember::cuda {
namespace {

#define EMBER_CUBLASLT_STR2(x) #x
#define EMBER_CUBLASLT_STR(x) EMBER_CUBLASLT_STR2(x)
// The toolkit's soname (the one the headers match), tried on the loader's path and then in the toolkit.
constexpr const char* kCublasLtSoname = "libcublasLt.so." EMBER_CUBLASLT_STR(CUBLAS_VER_MAJOR);

void* cublaslt_library() {
  static std::mutex mu;
  static void* handle = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (handle) return handle;
  handle = dlopen(kCublasLtSoname, RTLD_NOW | RTLD_LOCAL);
  std::string error = handle ? "" : dlerror();
#ifdef EMBER_CUDA_LIBRARY_DIR
  if (!handle) handle = dlopen((std::string(EMBER_CUDA_LIBRARY_DIR) + "/" + kCublasLtSoname).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
  EMBER_CHECK(handle, FailedPrecondition) << "matmul: cuBLASLt (" << kCublasLtSoname << ") could not be loaded: " << error
                                          << "; it comes with the CUDA toolkit Ember was built with";
  return handle;
}

template <class Fn>
Fn* cublaslt_symbol(const char* name) {
  void* sym = dlsym(cublaslt_library(), name);
  EMBER_CHECK(sym, FailedPrecondition) << "matmul: " << kCublasLtSoname << " has no function " << name;
  return reinterpret_cast<Fn*>(sym);
}

}  // namespace
}  // namespace ember::cuda

// One forwarding definition per cuBLASLt function Ember calls: ret name(params) calls the real name(args).
#define EMBER_CUBLASLT_FORWARD(ret, name, params, args)                                              \
  extern "C" ret name params {                                                                      \
    static decltype(name)* const real = ember::cuda::cublaslt_symbol<decltype(name)>(#name);        \
    return real args;                                                                               \
  }

EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtCreate, (cublasLtHandle_t * handle), (handle))
EMBER_CUBLASLT_FORWARD(const char*, cublasLtGetStatusName, (cublasStatus_t status), (status))
EMBER_CUBLASLT_FORWARD(const char*, cublasLtGetStatusString, (cublasStatus_t status), (status))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatmul,
                       (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                        cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc, const void* beta,
                        const void* c, cublasLtMatrixLayout_t c_desc, void* d, cublasLtMatrixLayout_t d_desc,
                        const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes, cudaStream_t stream),
                       (handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
                        workspace_bytes, stream))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,
                       (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_desc,
                        cublasLtMatrixLayout_t b_desc, cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
                        cublasLtMatmulPreference_t preference, int requested, cublasLtMatmulHeuristicResult_t results[],
                        int* returned),
                       (handle, desc, a_desc, b_desc, c_desc, d_desc, preference, requested, results, returned))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatmulDescCreate,
                       (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
                       (desc, compute, scale))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatmulDescSetAttribute,
                       (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t size),
                       (desc, attr, buf, size))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,
                       (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                        size_t size),
                       (pref, attr, buf, size))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatrixLayoutCreate,
                       (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
                       (layout, type, rows, cols, ld))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
EMBER_CUBLASLT_FORWARD(cublasStatus_t, cublasLtMatrixLayoutSetAttribute,
                       (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                        size_t size),
                       (layout, attr, buf, size))
