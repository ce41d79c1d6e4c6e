#include "optimizers/schedules.h"

#include <functional>
#include <map>
#include <numbers>
#include <sstream>

#include "framework/core/error.h"
#include "optimizers/config_util.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {
namespace schedules {

using detail::Scalar;
using nlohmann::json;

namespace {

// Keras computes schedules on tensors converted from Python floats: float32.
Scalar f32(double v) { return Scalar(v, DType::Float32); }

void check_decay_steps(const char* cls, const char* key, int64_t decay_steps) {
  EMBER_CHECK(decay_steps > 0, InvalidArgument)
      << cls << ": Argument `" << key << "` must be > 0. Received: " << key << "=" << decay_steps;
}

}  // namespace

// ---------------------------------------------------------------- ExponentialDecay

ExponentialDecay::ExponentialDecay(ExponentialDecayOptions options) : o_(std::move(options)) {
  check_decay_steps("ExponentialDecay", "decay_steps", o_.decay_steps);
}

double ExponentialDecay::operator()(int64_t step) const {
  Scalar p = f32(static_cast<double>(step)) / f32(static_cast<double>(o_.decay_steps));
  if (o_.staircase) p = floor(p);
  return (f32(o_.initial_learning_rate) * pow(f32(o_.decay_rate), p)).value();
}

json ExponentialDecay::get_config() const {
  return {{"initial_learning_rate", o_.initial_learning_rate}, {"decay_steps", o_.decay_steps},
          {"decay_rate", o_.decay_rate}, {"staircase", o_.staircase}, {"name", o_.name}};
}

ExponentialDecay ExponentialDecay::from_config(const json& c) {
  const std::string cls = "ExponentialDecay";
  detail::check_optimizer_config_keys(c, cls, {"initial_learning_rate", "decay_steps", "decay_rate", "staircase", "name"});
  return ExponentialDecay({.initial_learning_rate = detail::config_required_number(c, "initial_learning_rate", cls),
                           .decay_steps = detail::config_required_int(c, "decay_steps", cls),
                           .decay_rate = detail::config_required_number(c, "decay_rate", cls),
                           .staircase = detail::config_bool(c, "staircase", false, cls),
                           .name = detail::config_string(c, "name", "ExponentialDecay", cls)});
}

// ---------------------------------------------------------------- PiecewiseConstantDecay

PiecewiseConstantDecay::PiecewiseConstantDecay(PiecewiseConstantDecayOptions options) : o_(std::move(options)) {
  if (o_.boundaries.size() + 1 != o_.values.size()) {
    std::ostringstream b, v;
    for (size_t i = 0; i < o_.boundaries.size(); ++i) b << (i ? ", " : "") << o_.boundaries[i];
    for (size_t i = 0; i < o_.values.size(); ++i) v << (i ? ", " : "") << o_.values[i];
    throw make_error<InvalidArgument>(
        "PiecewiseConstantDecay: The length of boundaries should be 1 less than the length of values. "
        "Received: boundaries=[",
        b.str(), "] of length ", o_.boundaries.size(), ", and values=[", v.str(), "] of length ", o_.values.size(),
        ".");
  }
  // Keras fails at the first call (boundaries[0]); refused here, where the options are given.
  EMBER_CHECK(!o_.boundaries.empty(), InvalidArgument) << "PiecewiseConstantDecay: boundaries is empty; give at least one";
}

double PiecewiseConstantDecay::operator()(int64_t step) const {
  // Keras's float32 sum of (step in range) * value, in its order: the first range, the last, then the
  // inner ones. Increasing boundaries make exactly one term non-zero; others overlap as Keras's do.
  const std::vector<int64_t>& b = o_.boundaries;
  const std::vector<double>& v = o_.values;
  auto term = [&](bool in_range, double value) { return f32(in_range ? 1.0 : 0.0) * f32(value); };
  Scalar total = f32(0.0) + term(step <= b.front(), v.front());
  total = total + term(step > b.back(), v.back());
  for (size_t i = 0; i + 1 < b.size(); ++i) total = total + term(step > b[i] && step <= b[i + 1], v[i + 1]);
  return total.value();
}

json PiecewiseConstantDecay::get_config() const {
  return {{"boundaries", o_.boundaries}, {"values", o_.values}, {"name", o_.name}};
}

PiecewiseConstantDecay PiecewiseConstantDecay::from_config(const json& c) {
  const std::string cls = "PiecewiseConstantDecay";
  detail::check_optimizer_config_keys(c, cls, {"boundaries", "values", "name"});
  EMBER_CHECK(c.contains("boundaries") && c["boundaries"].is_array() && c.contains("values") && c["values"].is_array(),
              InvalidArgument)
      << cls << ".from_config: 'boundaries' and 'values' must be lists, got " << c.dump();
  PiecewiseConstantDecayOptions o;
  for (const json& b : c["boundaries"]) {
    EMBER_CHECK(b.is_number(), InvalidArgument) << cls << ".from_config: a boundary must be a number, got " << b.dump();
    o.boundaries.push_back(static_cast<int64_t>(b.get<double>()));  // Keras casts boundaries to the int64 step
  }
  for (const json& v : c["values"]) {
    EMBER_CHECK(v.is_number(), InvalidArgument) << cls << ".from_config: a value must be a number, got " << v.dump();
    o.values.push_back(v.get<double>());
  }
  o.name = detail::config_string(c, "name", "PiecewiseConstant", cls);
  return PiecewiseConstantDecay(std::move(o));
}

// ---------------------------------------------------------------- PolynomialDecay

PolynomialDecay::PolynomialDecay(PolynomialDecayOptions options) : o_(std::move(options)) {
  check_decay_steps("PolynomialDecay", "decay_steps", o_.decay_steps);
}

double PolynomialDecay::operator()(int64_t step) const {
  Scalar global_step = f32(static_cast<double>(step));
  Scalar decay_steps = f32(static_cast<double>(o_.decay_steps));
  if (o_.cycle) {
    // The first multiple of decay_steps above the step (1 at step 0).
    Scalar multiplier = step == 0 ? f32(1.0) : ceil(global_step / decay_steps);
    decay_steps = decay_steps * multiplier;
  } else {
    global_step = minimum(global_step, decay_steps);
  }
  Scalar p = global_step / decay_steps;
  Scalar end = f32(o_.end_learning_rate);
  return ((f32(o_.initial_learning_rate) - end) * pow(1.0 - p, f32(o_.power)) + end).value();
}

json PolynomialDecay::get_config() const {
  return {{"initial_learning_rate", o_.initial_learning_rate}, {"decay_steps", o_.decay_steps},
          {"end_learning_rate", o_.end_learning_rate}, {"power", o_.power}, {"cycle", o_.cycle}, {"name", o_.name}};
}

PolynomialDecay PolynomialDecay::from_config(const json& c) {
  const std::string cls = "PolynomialDecay";
  detail::check_optimizer_config_keys(c, cls,
                            {"initial_learning_rate", "decay_steps", "end_learning_rate", "power", "cycle", "name"});
  return PolynomialDecay({.initial_learning_rate = detail::config_required_number(c, "initial_learning_rate", cls),
                          .decay_steps = detail::config_required_int(c, "decay_steps", cls),
                          .end_learning_rate = detail::config_number(c, "end_learning_rate", 0.0001, cls),
                          .power = detail::config_number(c, "power", 1.0, cls),
                          .cycle = detail::config_bool(c, "cycle", false, cls),
                          .name = detail::config_string(c, "name", "PolynomialDecay", cls)});
}

// ---------------------------------------------------------------- InverseTimeDecay

InverseTimeDecay::InverseTimeDecay(InverseTimeDecayOptions options) : o_(std::move(options)) {
  check_decay_steps("InverseTimeDecay", "decay_steps", o_.decay_steps);
}

double InverseTimeDecay::operator()(int64_t step) const {
  Scalar p = f32(static_cast<double>(step)) / f32(static_cast<double>(o_.decay_steps));
  if (o_.staircase) p = floor(p);
  return (f32(o_.initial_learning_rate) / (1.0 + f32(o_.decay_rate) * p)).value();
}

json InverseTimeDecay::get_config() const {
  return {{"initial_learning_rate", o_.initial_learning_rate}, {"decay_steps", o_.decay_steps},
          {"decay_rate", o_.decay_rate}, {"staircase", o_.staircase}, {"name", o_.name}};
}

InverseTimeDecay InverseTimeDecay::from_config(const json& c) {
  const std::string cls = "InverseTimeDecay";
  detail::check_optimizer_config_keys(c, cls, {"initial_learning_rate", "decay_steps", "decay_rate", "staircase", "name"});
  return InverseTimeDecay({.initial_learning_rate = detail::config_required_number(c, "initial_learning_rate", cls),
                           .decay_steps = detail::config_required_int(c, "decay_steps", cls),
                           .decay_rate = detail::config_required_number(c, "decay_rate", cls),
                           .staircase = detail::config_bool(c, "staircase", false, cls),
                           .name = detail::config_string(c, "name", "InverseTimeDecay", cls)});
}

// ---------------------------------------------------------------- CosineDecay

CosineDecay::CosineDecay(CosineDecayOptions options) : o_(std::move(options)) {
  check_decay_steps("CosineDecay", "decay_steps", o_.decay_steps);
}

double CosineDecay::operator()(int64_t step) const {
  const Scalar initial = f32(o_.initial_learning_rate);
  const Scalar decay_steps = f32(static_cast<double>(o_.decay_steps));
  Scalar global_step = f32(static_cast<double>(step));
  auto decay = [&](Scalar s, Scalar decay_from) {
    Scalar cosine_decayed = 0.5 * (1.0 + cos(f32(std::numbers::pi) * (s / decay_steps)));
    // (1 - alpha) is Python arithmetic in Keras: computed in double, then met by a float32 tensor.
    Scalar decayed = f32(1.0 - o_.alpha) * cosine_decayed + o_.alpha;
    return decay_from * decayed;
  };
  if (!o_.warmup_target) return decay(minimum(global_step, decay_steps), initial).value();
  const Scalar target = f32(*o_.warmup_target);
  const Scalar warmup_steps = f32(static_cast<double>(o_.warmup_steps));
  global_step = minimum(global_step, decay_steps + warmup_steps);
  if (global_step.value() < warmup_steps.value())
    return ((target - initial) * (global_step / warmup_steps) + initial).value();
  return decay(global_step - warmup_steps, target).value();
}

json CosineDecay::get_config() const {
  return {{"initial_learning_rate", o_.initial_learning_rate},
          {"decay_steps", o_.decay_steps},
          {"alpha", o_.alpha},
          {"name", o_.name},
          {"warmup_target", detail::optional_json(o_.warmup_target)},
          {"warmup_steps", o_.warmup_steps}};
}

CosineDecay CosineDecay::from_config(const json& c) {
  const std::string cls = "CosineDecay";
  detail::check_optimizer_config_keys(c, cls,
                            {"initial_learning_rate", "decay_steps", "alpha", "name", "warmup_target", "warmup_steps"});
  return CosineDecay({.initial_learning_rate = detail::config_required_number(c, "initial_learning_rate", cls),
                      .decay_steps = detail::config_required_int(c, "decay_steps", cls),
                      .alpha = detail::config_number(c, "alpha", 0.0, cls),
                      .name = detail::config_string(c, "name", "CosineDecay", cls),
                      .warmup_target = detail::config_optional(c, "warmup_target", cls),
                      .warmup_steps = detail::config_int(c, "warmup_steps", 0, cls)});
}

// ---------------------------------------------------------------- CosineDecayRestarts

CosineDecayRestarts::CosineDecayRestarts(CosineDecayRestartsOptions options) : o_(std::move(options)) {
  check_decay_steps("CosineDecayRestarts", "first_decay_steps", o_.first_decay_steps);
}

double CosineDecayRestarts::operator()(int64_t step) const {
  // Keras casts every argument to the rate's dtype (float32) and computes on tensors.
  const Scalar t_mul = f32(o_.t_mul), m_mul = f32(o_.m_mul), alpha = f32(o_.alpha);
  Scalar fraction = f32(static_cast<double>(step)) / f32(static_cast<double>(o_.first_decay_steps));
  Scalar i_restart = floor(fraction);  // periods completed, for t_mul == 1
  if (t_mul.value() == 1.0) {
    fraction = fraction - i_restart;
  } else {
    // Period lengths grow geometrically: period i starts at fraction (1 - t_mul^i) / (1 - t_mul).
    i_restart = floor(log(1.0 - fraction * (1.0 - t_mul)) / log(t_mul));
    const Scalar sum_r = (1.0 - pow(t_mul, i_restart)) / (1.0 - t_mul);
    fraction = (fraction - sum_r) / pow(t_mul, i_restart);
  }
  const Scalar cosine_decayed = 0.5 * pow(m_mul, i_restart) * (1.0 + cos(f32(std::numbers::pi) * fraction));
  return (f32(o_.initial_learning_rate) * ((1.0 - alpha) * cosine_decayed + alpha)).value();
}

json CosineDecayRestarts::get_config() const {
  return {{"initial_learning_rate", o_.initial_learning_rate},
          {"first_decay_steps", o_.first_decay_steps},
          {"t_mul", o_.t_mul},
          {"m_mul", o_.m_mul},
          {"alpha", o_.alpha},
          {"name", o_.name}};
}

CosineDecayRestarts CosineDecayRestarts::from_config(const json& c) {
  const std::string cls = "CosineDecayRestarts";
  detail::check_optimizer_config_keys(c, cls, {"initial_learning_rate", "first_decay_steps", "t_mul", "m_mul", "alpha", "name"});
  return CosineDecayRestarts({.initial_learning_rate = detail::config_required_number(c, "initial_learning_rate", cls),
                              .first_decay_steps = detail::config_required_int(c, "first_decay_steps", cls),
                              .t_mul = detail::config_number(c, "t_mul", 2.0, cls),
                              .m_mul = detail::config_number(c, "m_mul", 1.0, cls),
                              .alpha = detail::config_number(c, "alpha", 0.0, cls),
                              .name = detail::config_string(c, "name", "SGDRDecay", cls)});
}

// ---------------------------------------------------------------- (de)serialization

json serialize(const LearningRateSchedule& schedule) {
  return {{"module", "keras.optimizers.schedules"},
          {"class_name", schedule.class_name()},
          {"config", schedule.get_config()},
          {"registered_name", nullptr}};
}

SchedulePtr deserialize(const json& j) {
  using Factory = std::function<SchedulePtr(const json&)>;
  static const std::map<std::string, Factory> factories = {
      {"ExponentialDecay",
       [](const json& c) { return std::make_shared<ExponentialDecay>(ExponentialDecay::from_config(c)); }},
      {"PiecewiseConstantDecay",
       [](const json& c) { return std::make_shared<PiecewiseConstantDecay>(PiecewiseConstantDecay::from_config(c)); }},
      {"PolynomialDecay",
       [](const json& c) { return std::make_shared<PolynomialDecay>(PolynomialDecay::from_config(c)); }},
      {"InverseTimeDecay",
       [](const json& c) { return std::make_shared<InverseTimeDecay>(InverseTimeDecay::from_config(c)); }},
      {"CosineDecay", [](const json& c) { return std::make_shared<CosineDecay>(CosineDecay::from_config(c)); }},
      {"CosineDecayRestarts",
       [](const json& c) { return std::make_shared<CosineDecayRestarts>(CosineDecayRestarts::from_config(c)); }},
  };
  EMBER_CHECK(j.is_object() && j.contains("class_name") && j["class_name"].is_string(), InvalidArgument)
      << "schedules::deserialize: expected {\"class_name\", \"config\"}, got " << j.dump();
  const std::string name = j["class_name"].get<std::string>();
  auto it = factories.find(name);
  if (it == factories.end()) {
    std::string known;
    for (const auto& [k, f] : factories) known += (known.empty() ? "" : ", ") + k;
    throw make_error<InvalidArgument>("schedules::deserialize: unknown learning rate schedule '", name,
                                      "'; expected one of: ", known);
  }
  return it->second(j.value("config", json::object()));
}

}  // namespace schedules

LearningRate::LearningRate(schedules::SchedulePtr schedule) : schedule_(std::move(schedule)) {
  EMBER_CHECK(schedule_ != nullptr, InvalidArgument) << "LearningRate: the schedule pointer is null";
}

}  // namespace ember::optimizers
