// Keras's weight regularizers (keras/src/regularizers/regularizers.py): L1, L2, L1L2.
#include "framework/model/regularizers.h"

#include <cmath>
#include <sstream>

#include "framework/core/error.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::regularizers {

namespace {

using json = nlohmann::json;

// Keras's validate_float_arg: a finite, non-negative number.
double validate(double v, const char* who, const char* name) {
  EMBER_CHECK(std::isfinite(v) && v >= 0, InvalidArgument)
      << who << ": " << name << " must be a finite non-negative number, got " << v;
  return v;
}

// l1 * sum(|x|) + l2 * sum(x^2) as a float32 scalar; L1L2 leaves out a term with a zero factor (as
// Keras), so L1L2(0, 0) gives a constant 0.
class L1L2Impl : public RegularizerImpl {
 public:
  L1L2Impl(std::string class_name, double l1, double l2) : class_name_(std::move(class_name)), l1_(l1), l2_(l2) {}
  Tensor operator()(const Tensor& x) const override {
    EMBER_CHECK(is_floating(x.dtype()), InvalidArgument)
        << class_name_ << ": expected a floating-point weight, got dtype " << x.dtype();
    // Half-precision weights are summed in float32: a sum of squares overflows float16 quickly.
    const Tensor w = dtype_size(x.dtype()) < 4 ? ops::cast(x, DType::Float32) : x;
    Tensor penalty;
    auto add = [&penalty](const Tensor& term) { penalty = penalty.defined() ? penalty + term : term; };
    if (l1_ != 0.0 || class_name_ == "L1") add(ops::reduce_sum(ops::abs(w)) * l1_);
    if (l2_ != 0.0 || class_name_ == "L2") add(ops::reduce_sum(ops::square(w)) * l2_);
    if (!penalty.defined()) return ops::zeros({}, DType::Float32);
    return penalty.dtype() == DType::Float32 ? penalty : ops::cast(penalty, DType::Float32);
  }
  std::string class_name() const override { return class_name_; }
  json get_config() const override {
    if (class_name_ == "L1") return {{"l1", l1_}};
    if (class_name_ == "L2") return {{"l2", l2_}};
    return {{"l1", l1_}, {"l2", l2_}};
  }

 private:
  std::string class_name_;
  double l1_, l2_;
};

[[noreturn]] void unknown_regularizer(const std::string& name) {
  throw InvalidArgument("Unknown regularizer \"" + name + "\"; known regularizers: L1, L2, L1L2, l1, l2, l1l2, l1_l2");
}

// Reads a number from a Keras config; null or missing gives the default (as Keras's `None` handling).
double number(const json& config, const char* key, double fallback, const std::string& who) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  EMBER_CHECK(it->is_number(), InvalidArgument)
      << "Regularizer " << who << ": config \"" << key << "\" must be a number, got " << it->dump();
  return it->get<double>();
}

// A regularizer from a class or snake_case name and a config (an object, possibly empty).
Regularizer resolve_regularizer(const std::string& name, const json& config) {
  EMBER_CHECK(config.is_object(), InvalidArgument)
      << "Regularizer " << name << ": config must be an object, got " << config.dump();
  auto only = [&](std::initializer_list<const char*> keys) {
    for (const auto& [key, value] : config.items()) {
      bool known = false;
      for (const char* k : keys) known = known || key == k;
      EMBER_CHECK(known, InvalidArgument)
          << "Regularizer " << name << ": unknown config key \"" << key << "\" in " << config.dump();
    }
  };
  if (name == "L1" || name == "l1") {
    only({"l1"});
    return L1(number(config, "l1", 0.01, name));
  }
  if (name == "L2" || name == "l2") {
    only({"l2"});
    return L2(number(config, "l2", 0.01, name));
  }
  // Keras 3 registers L1L2 as "L1L2" and "l1l2" (defaults 0.0); "l1_l2" is tf.keras 2's function
  // l1_l2(l1=0.01, l2=0.01), kept with its defaults.
  if (name == "L1L2" || name == "l1l2" || name == "l1_l2") {
    only({"l1", "l2"});
    const double fallback = name == "l1_l2" ? 0.01 : 0.0;
    return L1L2(number(config, "l1", fallback, name), number(config, "l2", fallback, name));
  }
  unknown_regularizer(name);
}

}  // namespace

Regularizer::Regularizer(const char* name) : Regularizer(std::string(name)) {}
Regularizer::Regularizer(const std::string& name) : impl_(resolve_regularizer(name, json::object()).impl_) {}

Tensor Regularizer::operator()(const Tensor& x) const {
  EMBER_CHECK(impl_ != nullptr, FailedPrecondition) << "Regularizer: called an empty regularizer";
  return (*impl_)(x);
}

json Regularizer::to_json() const {
  if (!impl_) return nullptr;
  return {{"class_name", impl_->class_name()}, {"config", impl_->get_config()}};
}

Regularizer Regularizer::from_json(const json& j) {
  if (j.is_null()) return Regularizer();
  if (j.is_string()) return Regularizer(j.get<std::string>());
  EMBER_CHECK(j.is_object() && j.contains("class_name") && j["class_name"].is_string(), InvalidArgument)
      << "Regularizer::from_json: expected null, a name or an object with a \"class_name\" string, got " << j.dump();
  // shared_object_id: Keras 3's mark of an object serialized more than once (see Initializer::from_json).
  for (const auto& [key, value] : j.items())
    EMBER_CHECK(key == "class_name" || key == "config" || key == "module" || key == "registered_name" ||
                    key == "shared_object_id",
                InvalidArgument)
        << "Regularizer::from_json: unknown key \"" << key << "\" in " << j.dump();
  const json config = j.contains("config") && !j["config"].is_null() ? j["config"] : json::object();
  return resolve_regularizer(j["class_name"].get<std::string>(), config);
}

Regularizer L1(double l1) { return Regularizer(L1L2Impl("L1", validate(l1, "L1", "l1"), 0.0)); }
Regularizer L2(double l2) { return Regularizer(L1L2Impl("L2", 0.0, validate(l2, "L2", "l2"))); }
Regularizer L1L2(double l1, double l2) {
  return Regularizer(L1L2Impl("L1L2", validate(l1, "L1L2", "l1"), validate(l2, "L1L2", "l2")));
}

}  // namespace ember::regularizers
