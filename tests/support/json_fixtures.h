#pragma once
// Reading the JSON fixtures that scripts wrote from Keras (tests/fixtures/**.json) and the tensors they hold.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/ember.h"
#include "tests/support/fixtures.h"

namespace ember::testing {

// The parsed file; throws std::runtime_error naming the path when it cannot be opened.
inline nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(in);
}

// tests/fixtures/<relative>, parsed.
inline nlohmann::json load_json_fixture(const std::string& relative) { return read_json_file(fixture_path(relative)); }

// A tensor written as {"shape": [...], "dtype": "float32" | "int32" | "int64" | "uint8", "values": [...]}
// (values flat, row-major).
inline Tensor tensor_from_json(const nlohmann::json& t) {
  const Shape shape(t.at("shape").get<std::vector<int64_t>>());
  const std::string dtype = t.at("dtype").get<std::string>();
  const nlohmann::json& v = t.at("values");
  if (dtype == "float32") return Tensor::from_vector<float>(v.get<std::vector<float>>(), shape);
  if (dtype == "int32") return Tensor::from_vector<int32_t>(v.get<std::vector<int32_t>>(), shape);
  if (dtype == "int64") return Tensor::from_vector<int64_t>(v.get<std::vector<int64_t>>(), shape);
  if (dtype == "uint8") return Tensor::from_vector<uint8_t>(v.get<std::vector<uint8_t>>(), shape);
  throw std::runtime_error("fixture tensor of unsupported dtype " + dtype);
}

// A tensor written as a nested JSON list (its shape from the nesting), read in float64 and cast to dtype.
inline Tensor tensor_from_nested_json(const nlohmann::json& j, DType dtype = DType::Float32) {
  std::vector<int64_t> dims;
  const nlohmann::json* p = &j;
  while (p->is_array()) {
    dims.push_back(static_cast<int64_t>(p->size()));
    if (p->empty()) break;
    p = &(*p)[0];
  }
  std::vector<double> flat;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& v) {
    if (v.is_array())
      for (const auto& e : v) walk(e);
    else
      flat.push_back(v.get<double>());
  };
  walk(j);
  return ops::cast(Tensor::from_vector(flat, Shape(dims)), dtype);
}

}  // namespace ember::testing
