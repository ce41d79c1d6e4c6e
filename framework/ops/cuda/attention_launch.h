#pragma once
// Host launchers of the CUDA fused attention and its backward (kernels in attention.cu, registration in
// attention_cuda.cpp). Tensors are contiguous (batch, length, heads, dim); the logsumexp is (batch, heads, q_len).
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

struct AttentionDims {
  int64_t batch, q_len, k_len, heads, dim, v_dim;
  double scale;
  bool causal;
};

// o = softmax(scale q k^T, causal) v and lse = the logsumexp of each query's scores; dt is F32 or F64.
void fused_attention_launch(DT dt, const AttentionDims& d, const void* q, const void* k, const void* v, void* o,
                            void* lse, int device, cudaStream_t stream, const char* op);

// dq, dk, dv of fused_attention from its inputs, outputs o and lse, and the gradient d_o.
void fused_attention_grad_launch(DT dt, const AttentionDims& d, const void* q, const void* k, const void* v,
                                 const void* o, const void* lse, const void* d_o, void* dq, void* dk, void* dv,
                                 int device, cudaStream_t stream, const char* op);

}  // namespace ember::cuda
