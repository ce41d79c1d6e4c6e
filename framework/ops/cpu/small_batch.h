#pragma once
// How the CPU kernels split a small batch's work with a large matrix over the pool (matmul.cpp's products,
// apply_adam_factored's update): by the large matrix's rows, in the chunks parallel_for_chunks makes of them,
// so each thread reads and writes the same rows of a weight, its gradient and its slots at every step.
#include <cstdint>

namespace ember::cpu {

constexpr int64_t kSmallBatch = 8;     // at most this many rows make a small batch
constexpr int64_t kSplitMinRows = 32;  // rows of the large matrix per chunk, at least

}  // namespace ember::cpu
