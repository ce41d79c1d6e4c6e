#pragma once
// Internal: dtype-agnostic copy helpers shared by the shape and indexing kernels (cpu/array.cpp, cpu/indexing.cpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/core/dtype.h"

namespace ember::cpu {

// Runs body(E{}) with E an unsigned integer type of the element size (every dtype is 1, 2, 4 or 8 bytes),
// so element moves need one instantiation per size rather than per dtype.
template <class F>
void by_size(size_t esize, F&& body) {
  switch (esize) {
    case 1: body(uint8_t{}); break;
    case 2: body(uint16_t{}); break;
    case 4: body(uint32_t{}); break;
    default: body(uint64_t{}); break;
  }
}

// memcpy split across the pool when large.
void copy_bytes(char* dst, const char* src, size_t n);

// dst (contiguous, of `shape`) <- src read with element strides `strides` (any sign; 0 broadcasts); strings are
// assigned element by element.
void strided_copy(const void* src, void* dst, DType dtype, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& strides);

}  // namespace ember::cpu
