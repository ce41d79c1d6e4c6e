#include "framework/ops/attr_map.h"

#include <bit>

#include "framework/core/error.h"

namespace ember {

const char* AttrValue::type_name() const {
  static constexpr const char* kNames[] = {"int", "float", "bool", "string", "list(int)"};
  return kNames[v_.index()];
}

bool AttrValue::operator==(const AttrValue& o) const {
  if (const double* a = std::get_if<double>(&v_)) {
    const double* b = std::get_if<double>(&o.v_);
    return b && std::bit_cast<uint64_t>(*a) == std::bit_cast<uint64_t>(*b);
  }
  return v_ == o.v_;
}

AttrMap& AttrMap::set(const std::string& name, AttrValue value) {
  items_.insert_or_assign(name, std::move(value));
  return *this;
}

const AttrValue::Variant& AttrMap::find(const std::string& name, const char* type, bool int_as_float) const {
  auto it = items_.find(name);
  EMBER_CHECK(it != items_.end(), InvalidArgument) << "attribute '" << name << "' (" << type << ") is missing";
  const AttrValue::Variant& v = it->second.value();
  const bool ok = std::string(it->second.type_name()) == type || (int_as_float && std::holds_alternative<int64_t>(v));
  EMBER_CHECK(ok, InvalidArgument) << "attribute '" << name << "' is " << it->second.type_name() << ", expected "
                                   << type;
  return v;
}

}  // namespace ember
