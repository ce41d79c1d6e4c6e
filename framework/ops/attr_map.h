#pragma once
// AttrMap: the attributes of a custom op call (framework/ops/custom_op.h), a small map from names to typed
// values (TF: an op's attrs). They are part of the op's identity in a traced graph: two calls with equal
// attributes compute the same.
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ember {

// One attribute value: an integer, a float, a bool, a string or a list of integers. C++ integers are
// stored as int64, floats as double.
class AttrValue {
 public:
  using Variant = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  AttrValue(T v) : v_(static_cast<int64_t>(v)) {}
  template <std::floating_point T>
  AttrValue(T v) : v_(static_cast<double>(v)) {}
  AttrValue(bool v) : v_(v) {}
  AttrValue(const char* v) : v_(std::string(v)) {}
  AttrValue(std::string v) : v_(std::move(v)) {}
  AttrValue(std::vector<int64_t> v) : v_(std::move(v)) {}
  AttrValue(std::initializer_list<int64_t> v) : v_(std::vector<int64_t>(v)) {}

  const Variant& value() const { return v_; }
  // "int", "float", "bool", "string" or "list(int)".
  const char* type_name() const;
  // Floats compare by their bits (as the built-in ops' attributes do): -0.0 and 0.0 differ, a NaN equals itself.
  bool operator==(const AttrValue& o) const;

 private:
  Variant v_;
};

// Attributes by name, e.g. {{"beta", 1.5}, {"axes", {0, 2}}, {"mode", "clip"}}.
class AttrMap {
 public:
  AttrMap() = default;
  AttrMap(std::initializer_list<std::pair<const std::string, AttrValue>> items) : items_(items) {}

  // Adds or replaces one attribute.
  AttrMap& set(const std::string& name, AttrValue value);
  bool has(const std::string& name) const { return items_.count(name) != 0; }
  // The attribute as T: int64_t (or another integer type), double (or float; an integer attribute converts),
  // bool, std::string or std::vector<int64_t>. InvalidArgument when it is missing or of another type.
  template <class T>
  T get(const std::string& name) const;
  // The same, with `fallback` when the attribute is missing.
  template <class T>
  T get(const std::string& name, T fallback) const {
    return has(name) ? get<T>(name) : fallback;
  }
  const std::map<std::string, AttrValue>& items() const { return items_; }
  bool operator==(const AttrMap&) const = default;

 private:
  // The value of `name`, whose type must be `type` (a type_name); InvalidArgument otherwise.
  const AttrValue::Variant& find(const std::string& name, const char* type, bool int_as_float = false) const;
  std::map<std::string, AttrValue> items_;
};

template <class T>
T AttrMap::get(const std::string& name) const {
  if constexpr (std::same_as<T, bool>) {
    return std::get<bool>(find(name, "bool"));
  } else if constexpr (std::integral<T>) {
    return static_cast<T>(std::get<int64_t>(find(name, "int")));
  } else if constexpr (std::floating_point<T>) {
    const AttrValue::Variant& v = find(name, "float", /*int_as_float=*/true);
    return static_cast<T>(std::holds_alternative<double>(v) ? std::get<double>(v) : std::get<int64_t>(v));
  } else if constexpr (std::same_as<T, std::string>) {
    return std::get<std::string>(find(name, "string"));
  } else {
    static_assert(std::same_as<T, std::vector<int64_t>>,
                  "AttrMap::get: T must be an integer, floating, bool, std::string or std::vector<int64_t> type");
    return std::get<std::vector<int64_t>>(find(name, "list(int)"));
  }
}

}  // namespace ember
