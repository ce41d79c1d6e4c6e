#include "framework/core/dtype.h"

#include <algorithm>
#include <cstring>
#include <ostream>

#include "framework/core/error.h"

namespace ember {

namespace {
constexpr DTypeTraits kTraits[kNumDTypes] = {
    {"float32", 4, true, false}, {"float64", 8, true, false}, {"float16", 2, true, false},
    {"bfloat16", 2, true, false}, {"int32", 4, false, true}, {"int64", 8, false, true},
    {"uint8", 1, false, true},   {"bool", 1, false, false},  {"string", sizeof(std::string), false, false},
};
}  // namespace

const DTypeTraits& traits(DType t) { return kTraits[static_cast<int>(t)]; }

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == kTraits[i].name) return static_cast<DType>(i);
  if (name == "float") return DType::Float32;
  if (name == "double") return DType::Float64;
  if (name == "half") return DType::Float16;
  throw make_error<InvalidArgument>("dtype_from_name: unknown dtype '", name,
                                    "' (expected float32, float64, float16, bfloat16, int32, int64, uint8, bool or string)");
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

void copy_host_elements(void* dst, const void* src, size_t count, DType dtype) {
  if (dtype == DType::String) {
    std::copy_n(static_cast<const std::string*>(src), count, static_cast<std::string*>(dst));
  } else if (count) {
    std::memcpy(dst, src, count * dtype_size(dtype));
  }
}

}  // namespace ember
