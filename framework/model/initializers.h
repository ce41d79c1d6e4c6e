#pragma once
// Weight initializers (Keras: keras.initializers): GlorotUniform, HeNormal, Orthogonal, ... resolved by
// class or by Keras's snake_case name ("glorot_uniform"), each with Keras's formula and config.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/core/tensor.h"

namespace ember::initializers {

// What every initializer implements.
class InitializerImpl {
 public:
  virtual ~InitializerImpl() = default;
  // A new tensor of shape and dtype holding initial values.
  virtual Tensor operator()(const Shape& shape, DType dtype) const = 0;
  // Keras class name ("GlorotUniform") and config ({"seed": null}).
  virtual std::string class_name() const = 0;
  virtual nlohmann::json get_config() const = 0;
};

// A value handle on an initializer: built from a name ("he_normal", "zeros", or a Keras class name) or
// from one of the classes below; copies share the (immutable) initializer.
class Initializer {
 public:
  Initializer(const char* name);
  Initializer(const std::string& name);
  Initializer(std::shared_ptr<const InitializerImpl> impl) : impl_(std::move(impl)) {}
  template <class T>
    requires std::is_base_of_v<InitializerImpl, T>
  Initializer(T impl) : impl_(std::make_shared<T>(std::move(impl))) {}

  Tensor operator()(const Shape& shape, DType dtype = DType::Float32) const { return (*impl_)(shape, dtype); }
  std::string class_name() const { return impl_->class_name(); }
  nlohmann::json get_config() const { return impl_->get_config(); }
  // {"class_name": ..., "config": ...} (Keras's serialize); from_json accepts it, a bare name string, and
  // the Keras 3 form with "module"/"registered_name".
  nlohmann::json to_json() const;
  static Initializer from_json(const nlohmann::json& j);

 private:
  std::shared_ptr<const InitializerImpl> impl_;
};

// Keras semantics: seed = std::nullopt draws from the global seed sequence (random::set_seed); a seed
// makes the initializer deterministic. Fans: Dense kernel (in, out); conv kernel (kh, kw, in, out) with
// receptive field kh*kw multiplying both fans (Keras compute_fans).
struct SeedOptions { std::optional<uint64_t> seed; };
struct VarianceScalingOptions {
  double scale = 1.0;
  std::string mode = "fan_in";                   // fan_in, fan_out, fan_avg
  std::string distribution = "truncated_normal";  // truncated_normal, untruncated_normal, uniform
  std::optional<uint64_t> seed{};
};
struct RandomNormalOptions { double mean = 0.0; double stddev = 0.05; std::optional<uint64_t> seed; };
struct RandomUniformOptions { double minval = -0.05; double maxval = 0.05; std::optional<uint64_t> seed; };
struct OrthogonalOptions { double gain = 1.0; std::optional<uint64_t> seed; };

Initializer Zeros();
Initializer Ones();
Initializer Constant(double value = 0.0);
Initializer RandomNormal(RandomNormalOptions options = {});
Initializer RandomUniform(RandomUniformOptions options = {});
Initializer TruncatedNormal(RandomNormalOptions options = {});
Initializer VarianceScaling(VarianceScalingOptions options = {});
Initializer GlorotUniform(SeedOptions options = {});
Initializer GlorotNormal(SeedOptions options = {});
Initializer HeUniform(SeedOptions options = {});
Initializer HeNormal(SeedOptions options = {});
Initializer LecunUniform(SeedOptions options = {});
Initializer LecunNormal(SeedOptions options = {});
Initializer Orthogonal(OrthogonalOptions options = {});

// (fan_in, fan_out) of a weight shape, as Keras computes them.
std::pair<double, double> compute_fans(const Shape& shape);

}  // namespace ember::initializers

namespace ember {
using initializers::Initializer;
}
