#pragma once
// Learning-rate schedules (Keras: keras.optimizers.schedules) and LearningRate, the type of every
// optimizer's `learning_rate` option: a number or a schedule.
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::optimizers {
namespace schedules {

// A learning rate as a function of the optimizer's step (its iteration count before the update, as
// Keras 3 passes it). Values are computed in float32 arithmetic, as Keras does with TF tensors.
class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The learning rate at `step` (a float32 value, widened).
  virtual double operator()(int64_t step) const = 0;
  // Keras class name ("ExponentialDecay").
  virtual std::string class_name() const = 0;
  // Keras config: the constructor arguments by their Keras names.
  virtual nlohmann::json get_config() const = 0;
};
using SchedulePtr = std::shared_ptr<const LearningRateSchedule>;

struct ExponentialDecayOptions {
  double initial_learning_rate = 0;
  int64_t decay_steps = 0;  // must be > 0
  double decay_rate = 0;
  bool staircase = false;
  std::string name = "ExponentialDecay";
};
// initial_learning_rate * decay_rate ^ (step / decay_steps), the exponent floored when staircase.
class ExponentialDecay : public LearningRateSchedule {
 public:
  explicit ExponentialDecay(ExponentialDecayOptions options);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "ExponentialDecay"; }
  nlohmann::json get_config() const override;
  static ExponentialDecay from_config(const nlohmann::json& config);
  const ExponentialDecayOptions& options() const { return o_; }

 private:
  ExponentialDecayOptions o_;
};

struct PiecewiseConstantDecayOptions {
  std::vector<int64_t> boundaries{};  // increasing steps; one fewer than values
  std::vector<double> values{};
  std::string name = "PiecewiseConstant";
};
// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i], then
// the last value.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  explicit PiecewiseConstantDecay(PiecewiseConstantDecayOptions options);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "PiecewiseConstantDecay"; }
  nlohmann::json get_config() const override;
  static PiecewiseConstantDecay from_config(const nlohmann::json& config);
  const PiecewiseConstantDecayOptions& options() const { return o_; }

 private:
  PiecewiseConstantDecayOptions o_;
};

struct PolynomialDecayOptions {
  double initial_learning_rate = 0;
  int64_t decay_steps = 0;  // must be > 0
  double end_learning_rate = 0.0001;
  double power = 1.0;
  bool cycle = false;
  std::string name = "PolynomialDecay";
};
// (initial - end) * (1 - step / decay_steps) ^ power + end; step capped at decay_steps, or with cycle
// decay_steps stretched to the next multiple above step.
class PolynomialDecay : public LearningRateSchedule {
 public:
  explicit PolynomialDecay(PolynomialDecayOptions options);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "PolynomialDecay"; }
  nlohmann::json get_config() const override;
  static PolynomialDecay from_config(const nlohmann::json& config);
  const PolynomialDecayOptions& options() const { return o_; }

 private:
  PolynomialDecayOptions o_;
};

struct InverseTimeDecayOptions {
  double initial_learning_rate = 0;
  int64_t decay_steps = 0;  // must be > 0
  double decay_rate = 0;
  bool staircase = false;
  std::string name = "InverseTimeDecay";
};
// initial_learning_rate / (1 + decay_rate * step / decay_steps), the ratio floored when staircase.
class InverseTimeDecay : public LearningRateSchedule {
 public:
  explicit InverseTimeDecay(InverseTimeDecayOptions options);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "InverseTimeDecay"; }
  nlohmann::json get_config() const override;
  static InverseTimeDecay from_config(const nlohmann::json& config);
  const InverseTimeDecayOptions& options() const { return o_; }

 private:
  InverseTimeDecayOptions o_;
};

struct CosineDecayOptions {
  double initial_learning_rate = 0;
  int64_t decay_steps = 0;  // must be > 0
  double alpha = 0.0;       // the final rate as a fraction of the decay's starting rate
  std::string name = "CosineDecay";
  std::optional<double> warmup_target{};  // set: a linear warmup from initial_learning_rate to it
  int64_t warmup_steps = 0;
};
// Optional linear warmup over warmup_steps, then a cosine decay over decay_steps down to alpha times
// its starting rate (initial_learning_rate, or warmup_target after a warmup).
class CosineDecay : public LearningRateSchedule {
 public:
  explicit CosineDecay(CosineDecayOptions options);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "CosineDecay"; }
  nlohmann::json get_config() const override;
  static CosineDecay from_config(const nlohmann::json& config);
  const CosineDecayOptions& options() const { return o_; }

 private:
  CosineDecayOptions o_;
};

struct CosineDecayRestartsOptions {
  double initial_learning_rate = 0;
  int64_t first_decay_steps = 0;  // the first period's length; must be > 0
  double t_mul = 2.0;             // each period is t_mul times as long as the one before
  double m_mul = 1.0;             // and starts at m_mul times its rate
  double alpha = 0.0;             // the floor, as a fraction of initial_learning_rate
  std::string name = "SGDRDecay";
};
// Cosine decay with warm restarts (SGDR, Loshchilov & Hutter): a cosine decay over first_decay_steps,
// then again from the top over periods t_mul times longer, each starting m_mul times lower.
class CosineDecayRestarts : public LearningRateSchedule {
 public:
  explicit CosineDecayRestarts(CosineDecayRestartsOptions options);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "CosineDecayRestarts"; }
  nlohmann::json get_config() const override;
  static CosineDecayRestarts from_config(const nlohmann::json& config);
  const CosineDecayRestartsOptions& options() const { return o_; }

 private:
  CosineDecayRestartsOptions o_;
};

// Keras's serialized form: {"module": "keras.optimizers.schedules", "class_name", "config",
// "registered_name": null}.
nlohmann::json serialize(const LearningRateSchedule& schedule);
// Rebuilds a schedule from serialize()'s form (also accepts the Keras 2 {"class_name", "config"});
// an unknown class is InvalidArgument listing the known ones.
SchedulePtr deserialize(const nlohmann::json& j);

}  // namespace schedules

// An optimizer's learning rate: a fixed number (kept in a float32 variable) or a schedule.
class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}
  // Any schedule, copied into shared ownership: `.learning_rate = schedules::CosineDecay({...})`.
  template <class S>
    requires std::derived_from<S, schedules::LearningRateSchedule>
  LearningRate(S schedule) : schedule_(std::make_shared<S>(std::move(schedule))) {}
  LearningRate(schedules::SchedulePtr schedule);

  bool is_schedule() const { return schedule_ != nullptr; }
  // The fixed value (meaningless when is_schedule()).
  double value() const { return value_; }
  const schedules::SchedulePtr& schedule() const { return schedule_; }

 private:
  double value_ = 0;
  schedules::SchedulePtr schedule_;
};

}  // namespace ember::optimizers
