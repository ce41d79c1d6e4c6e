// cuBLASLt, loaded on first use (toolkit_library.h): the definitions of the cuBLASLt functions Ember calls.
#include <cublasLt.h>

#include "framework/ops/cuda/toolkit_library.h"

#define EMBER_CUBLASLT_FORWARD(ret, name, params, args)                                                           \
  EMBER_TOOLKIT_FORWARD("libcublasLt.so." EMBER_TOOLKIT_STR(CUBLAS_VER_MAJOR), "matmul: cuBLASLt", ret, name,     \
                        params, args)

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
