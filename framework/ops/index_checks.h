#pragma once
// Internal: the checks of ops that take indices (gather, one_hot, unsorted_segment_sum,
// sparse_softmax_cross_entropy_with_logits). Defined in indexing.cpp.
#include <cstdint>

#include "framework/core/tensor.h"

namespace ember::ops::detail {

// InvalidArgument unless t is int32 or int64 (or uint8 where allowed), naming op and what.
void check_index_dtype(const char* op, const char* what, const Tensor& t, bool allow_uint8 = false);
// InvalidArgument naming the first index outside [0, limit) and its position. The indices are read on the
// host before any kernel starts, so every backend reports the same error (a GPU copy costs one sync).
void check_indices_in_range(const char* op, const char* what, const Tensor& indices, int64_t limit);

}  // namespace ember::ops::detail
