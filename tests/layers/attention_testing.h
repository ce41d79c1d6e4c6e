#pragma once
// Helpers shared by the attention layers' tests (test_attention.cpp, test_attention_functional.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/fixtures.h"
#include "tests/support/grad_check.h"

namespace ember::testing::attention {

// Uniform in [-1, 1).
inline Tensor input_of(const Shape& shape, uint32_t seed, DType dtype = DType::Float32) {
  return make(uniform_in(shape.num_elements(), -1, 1, seed), shape, dtype);
}

inline Tensor bool_mask(const std::vector<double>& values, const Shape& shape) {
  return ops::cast(make(values, shape, DType::Float32), DType::Bool);
}

// The message of the E that f throws.
template <typename E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no exception of the expected type)";
}

inline std::string ckpt(const std::string& name) { return fixture_path("checkpoints/" + name).string(); }

}  // namespace ember::testing::attention
