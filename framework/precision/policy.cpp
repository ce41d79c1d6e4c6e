#include "framework/precision/policy.h"

#include <mutex>

#include "framework/core/error.h"

namespace ember::mixed_precision {

Policy::Policy(const std::string& name) : name_(name) {
  if (name == "float32") compute_ = variable_ = DType::Float32;
  else if (name == "float64") compute_ = variable_ = DType::Float64;
  else if (name == "float16") compute_ = variable_ = DType::Float16;
  else if (name == "bfloat16") compute_ = variable_ = DType::BFloat16;
  else if (name == "mixed_float16") compute_ = DType::Float16, variable_ = DType::Float32;
  else if (name == "mixed_bfloat16") compute_ = DType::BFloat16, variable_ = DType::Float32;
  else
    throw InvalidArgument("mixed_precision::Policy: unknown policy \"" + name +
                          "\" (expected float32, float64, float16, bfloat16, mixed_float16 or mixed_bfloat16)");
}

namespace {
std::mutex g_mutex;
Policy& global() {
  static Policy p("float32");
  return p;
}
}  // namespace

void set_global_policy(const Policy& policy) {
  std::lock_guard lock(g_mutex);
  global() = policy;
}

Policy global_policy() {
  std::lock_guard lock(g_mutex);
  return global();
}

}  // namespace ember::mixed_precision
