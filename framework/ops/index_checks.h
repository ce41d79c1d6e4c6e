#pragma once
// Internal: the checks of ops that take indices (gather, one_hot, unsorted_segment_sum,
// sparse_softmax_cross_entropy_with_logits). Defined in indexing.cpp.
#include <cstdint>
#include <span>

#include "framework/core/tensor.h"
#include "framework/ops/attrs.h"
#include "framework/ops/op.h"

namespace ember::ops::detail {

// InvalidArgument unless t is int32 or int64 (or uint8 where allowed), naming op and what.
void check_index_dtype(const char* op, const char* what, const Tensor& t, bool allow_uint8 = false);
// InvalidArgument naming the first index outside [0, limit) and its position. Indices in host memory are
// checked here, before any kernel starts. A backend that registered a device check (the CUDA backend does)
// checks its own tensors on the device instead, so a step queues ahead without waiting: its kernels skip
// bad indices safely and the error is raised at the next synchronisation with the host. op and what must
// be string literals (a device check reports them later).
void check_indices_in_range(const char* op, const char* what, const Tensor& indices, int64_t limit);

// check_indices_in_range for an op whose front end is skipped (a replayed graph): gather's indices, unsorted_segment_sum's
// segment ids and the sparse crossentropy's labels, from its inputs and attributes; other ops pass.
void check_indices_of(OpId op, std::span<const Tensor> inputs, const Attrs& attrs);

using DeviceIndexCheck = void (*)(const char* op, const char* what, const Tensor& indices, int64_t limit);
// Installs the device check of a backend's tensors (int32 or int64 indices), from the backend's own file.
void register_device_index_check(DeviceType type, DeviceIndexCheck check);

}  // namespace ember::ops::detail
