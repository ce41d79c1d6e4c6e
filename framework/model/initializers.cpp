// Keras 3's initializers (keras/src/initializers/{random,constants}_initializers.py): formulas, names,
// configs and seed semantics.
#include "framework/model/initializers.h"

#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "framework/core/strings.h"
#include "framework/ops/creation.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/random.h"

namespace ember::initializers {

namespace {

using json = nlohmann::json;

json seed_json(const std::optional<uint64_t>& seed) { return seed ? json(*seed) : json(nullptr); }

enum class Draw { Normal, TruncatedNormal, Uniform };

// A draw for initializer `who`. Seeded: stateless, like Keras 3's integer seed, so every call gives the
// same values (TF's seed pair (DEFAULT_GRAPH_SEED, seed) at counter 0: the numbers the first
// random::normal({.seed = seed}) of a fresh process gives). Unseeded: the global seed sequence, so each
// call draws fresh values and random::set_seed makes them reproducible.
Tensor draw(Draw kind, const char* who, const Shape& shape, DType dtype, std::optional<uint64_t> seed, double a,
            double b) {
  EMBER_CHECK(is_floating(dtype), InvalidArgument)
      << who << ": dtype " << dtype << " is not supported (random initializers need float32, float64, float16 or "
      << "bfloat16)";
  for (int64_t d : shape)
    EMBER_CHECK(d >= 0, InvalidArgument) << who << ": shape " << shape << " has a negative dimension";
  if (!seed) {
    const random::NormalOptions normal{.mean = a, .stddev = b, .dtype = dtype, .seed = std::nullopt};
    switch (kind) {
      case Draw::Normal:
        return random::normal(shape, normal);
      case Draw::TruncatedNormal:
        return random::truncated_normal(shape, normal);
      case Draw::Uniform:
        return random::uniform(shape, {.minval = a, .maxval = b, .dtype = dtype, .seed = std::nullopt});
    }
  }
  if (kind == Draw::Uniform) {
    EMBER_CHECK(std::isfinite(a) && std::isfinite(b) && a <= b, InvalidArgument)
        << who << ": need finite minval <= maxval, got [" << a << ", " << b << ")";
  } else {
    EMBER_CHECK(b >= 0, InvalidArgument) << who << ": stddev must be >= 0, got " << b;
  }
  constexpr uint64_t kDefaultGraphSeed = 87654321, kMaxInt32 = 0x7fffffff;
  uint64_t seed2 = *seed % kMaxInt32;
  const uint64_t key = kDefaultGraphSeed | (seed2 << 32);
  const OpId op = kind == Draw::Uniform  ? OpId::random_uniform
                  : kind == Draw::Normal ? OpId::random_normal
                                         : OpId::truncated_normal;
  return run_op(op, {}, OutputSpec{shape, dtype}, RandomAttrs{shape, dtype, key, 0, a, b});
}

// Zeros, Ones, Constant: a fill of any dtype.
class ConstantImpl : public InitializerImpl {
 public:
  ConstantImpl(std::string class_name, double value) : class_name_(std::move(class_name)), value_(value) {}
  Tensor operator()(const Shape& shape, DType dtype) const override { return ops::full(shape, value_, dtype); }
  std::string class_name() const override { return class_name_; }
  json get_config() const override { return class_name_ == "Constant" ? json{{"value", value_}} : json::object(); }

 private:
  std::string class_name_;
  double value_;
};

// RandomNormal and TruncatedNormal (two standard deviations, as Keras).
class NormalImpl : public InitializerImpl {
 public:
  NormalImpl(bool truncated, RandomNormalOptions o) : truncated_(truncated), o_(o) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    return draw(truncated_ ? Draw::TruncatedNormal : Draw::Normal, truncated_ ? "TruncatedNormal" : "RandomNormal",
                shape, dtype, o_.seed, o_.mean, o_.stddev);
  }
  std::string class_name() const override { return truncated_ ? "TruncatedNormal" : "RandomNormal"; }
  json get_config() const override { return {{"seed", seed_json(o_.seed)}, {"mean", o_.mean}, {"stddev", o_.stddev}}; }

 private:
  bool truncated_;
  RandomNormalOptions o_;
};

class UniformImpl : public InitializerImpl {
 public:
  explicit UniformImpl(RandomUniformOptions o) : o_(o) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    return draw(Draw::Uniform, "RandomUniform", shape, dtype, o_.seed, o_.minval, o_.maxval);
  }
  std::string class_name() const override { return "RandomUniform"; }
  json get_config() const override {
    return {{"seed", seed_json(o_.seed)}, {"minval", o_.minval}, {"maxval", o_.maxval}};
  }

 private:
  RandomUniformOptions o_;
};

// VarianceScaling and its named presets (GlorotUniform, HeNormal, ...), whose config is only the seed.
class VarianceScalingImpl : public InitializerImpl {
 public:
  VarianceScalingImpl(std::string class_name, VarianceScalingOptions o)
      : class_name_(std::move(class_name)), o_(std::move(o)) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    auto [fan_in, fan_out] = compute_fans(shape);
    double scale = o_.scale;
    if (o_.mode == "fan_in")
      scale /= std::max(1.0, fan_in);
    else if (o_.mode == "fan_out")
      scale /= std::max(1.0, fan_out);
    else
      scale /= std::max(1.0, (fan_in + fan_out) / 2.0);
    const char* who = class_name_.c_str();
    if (o_.distribution == "truncated_normal")  // the stddev of a unit normal truncated at +-2
      return draw(Draw::TruncatedNormal, who, shape, dtype, o_.seed, 0.0, std::sqrt(scale) / 0.87962566103423978);
    if (o_.distribution == "untruncated_normal")
      return draw(Draw::Normal, who, shape, dtype, o_.seed, 0.0, std::sqrt(scale));
    const double limit = std::sqrt(3.0 * scale);
    return draw(Draw::Uniform, who, shape, dtype, o_.seed, -limit, limit);
  }
  std::string class_name() const override { return class_name_; }
  json get_config() const override {
    if (class_name_ != "VarianceScaling") return {{"seed", seed_json(o_.seed)}};
    return {{"seed", seed_json(o_.seed)}, {"scale", o_.scale}, {"mode", o_.mode}, {"distribution", o_.distribution}};
  }

 private:
  std::string class_name_;
  VarianceScalingOptions o_;
};

// QR of a normal (max(rows, cols), min(rows, cols)) matrix, columns signed by diag(R), transposed when
// rows < cols (Keras's Orthogonal); float64 Householder QR on the host.
class OrthogonalImpl : public InitializerImpl {
 public:
  explicit OrthogonalImpl(OrthogonalOptions o) : o_(o) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    EMBER_CHECK(shape.rank() >= 2, InvalidArgument)
        << "Orthogonal: the tensor to initialize must be at least two-dimensional, got shape " << shape;
    EMBER_CHECK(is_floating(dtype), InvalidArgument)
        << "Orthogonal: dtype " << dtype << " is not supported (expected a floating-point dtype)";
    int64_t rows = 1;
    for (int64_t i = 0; i + 1 < shape.rank(); ++i) rows *= shape[i];
    const int64_t cols = shape[shape.rank() - 1];
    const int64_t m = std::max(rows, cols), n = std::min(rows, cols);
    std::vector<double> out(static_cast<size_t>(rows * cols), 0.0);
    if (n > 0) {
      Tensor a = draw(Draw::Normal, "Orthogonal", Shape{m, n}, DType::Float64, o_.seed, 0.0, 1.0);
      std::vector<double> av = a.to(Device::cpu()).to_vector<double>();
      using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      Mat am = Eigen::Map<const Mat>(av.data(), m, n);
      Eigen::HouseholderQR<Mat> qr(am);
      Mat q = qr.householderQ() * Mat::Identity(m, n);
      const auto diag = qr.matrixQR().diagonal();
      for (int64_t j = 0; j < n; ++j) {
        const double d = diag(j);
        const double s = d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0;  // Keras's ops.sign
        q.col(j) *= s * o_.gain;
      }
      if (rows < cols) q.transposeInPlace();
      std::copy(q.data(), q.data() + q.size(), out.begin());
    }
    Tensor t = Tensor::from_vector<double>(out, shape, default_device());
    return dtype == DType::Float64 ? t : ops::cast(t, dtype);
  }
  std::string class_name() const override { return "Orthogonal"; }
  json get_config() const override { return {{"seed", seed_json(o_.seed)}, {"gain", o_.gain}}; }

 private:
  OrthogonalOptions o_;
};

// Reads a Keras config: typed fields with defaults; unknown keys are an error, as Keras's cls(**config).
class ConfigReader {
 public:
  ConfigReader(const json& config, std::string who) : c_(config), who_(std::move(who)) {
    EMBER_CHECK(c_.is_object() || c_.is_null(), InvalidArgument)
        << "Initializer " << who_ << ": config must be an object, got " << c_.dump();
  }
  double number(const std::string& key, double fallback) {
    const json* v = take(key);
    if (!v || v->is_null()) return fallback;
    EMBER_CHECK(v->is_number(), InvalidArgument)
        << "Initializer " << who_ << ": config \"" << key << "\" must be a number, got " << v->dump();
    return v->get<double>();
  }
  std::string string(const std::string& key, const std::string& fallback) {
    const json* v = take(key);
    if (!v || v->is_null()) return fallback;
    EMBER_CHECK(v->is_string(), InvalidArgument)
        << "Initializer " << who_ << ": config \"" << key << "\" must be a string, got " << v->dump();
    return v->get<std::string>();
  }
  std::optional<uint64_t> seed() {
    const json* v = take("seed");
    if (!v || v->is_null()) return std::nullopt;
    EMBER_CHECK(v->is_number_integer() && v->get<int64_t>() >= 0, InvalidArgument)
        << "Initializer " << who_ << ": config \"seed\" must be null or a non-negative integer, got " << v->dump();
    return v->get<uint64_t>();
  }
  // Keras 3.12+ writes input_axes/output_axes (null unless set) for the VarianceScaling family.
  void axes() {
    for (const char* key : {"input_axes", "output_axes"}) {
      const json* v = take(key);
      EMBER_CHECK(!v || v->is_null(), InvalidArgument)
          << "Initializer " << who_ << ": config \"" << key << "\" is not supported (only null), got " << v->dump();
    }
  }
  // Throws on any key not read.
  void finish() const {
    if (!c_.is_object()) return;
    for (const auto& [key, value] : c_.items())
      EMBER_CHECK(used_.count(key), InvalidArgument)
          << "Initializer " << who_ << ": unknown config key \"" << key << "\" in " << c_.dump();
  }

 private:
  const json* take(const std::string& key) {
    used_.insert(key);
    if (!c_.is_object()) return nullptr;
    auto it = c_.find(key);
    return it == c_.end() ? nullptr : &*it;
  }
  const json& c_;
  std::string who_;
  std::set<std::string> used_;
};

using Factory = std::function<Initializer(ConfigReader&)>;

Factory seed_only(Initializer (*make)(SeedOptions)) {
  return [make](ConfigReader& r) {
    SeedOptions o{r.seed()};
    r.axes();
    return make(o);
  };
}

// Class names, Keras's snake_case names and its aliases, each to a factory reading a config.
const std::map<std::string, Factory>& initializer_registry() {
  static const std::map<std::string, Factory> table = [] {
    std::map<std::string, Factory> t;
    auto add = [&t](std::initializer_list<const char*> names, const Factory& f) {
      for (const char* n : names) t[n] = f;
    };
    add({"Zeros", "zeros", "zero"}, [](ConfigReader&) { return Zeros(); });
    add({"Ones", "ones", "one"}, [](ConfigReader&) { return Ones(); });
    add({"Constant", "constant"}, [](ConfigReader& r) { return Constant(r.number("value", 0.0)); });
    auto normal_options = [](ConfigReader& r) {
      RandomNormalOptions o;
      o.mean = r.number("mean", o.mean);
      o.stddev = r.number("stddev", o.stddev);
      o.seed = r.seed();
      return o;
    };
    add({"RandomNormal", "random_normal", "normal"},
        [normal_options](ConfigReader& r) { return RandomNormal(normal_options(r)); });
    add({"TruncatedNormal", "truncated_normal"},
        [normal_options](ConfigReader& r) { return TruncatedNormal(normal_options(r)); });
    add({"RandomUniform", "random_uniform", "uniform"}, [](ConfigReader& r) {
      RandomUniformOptions o;
      o.minval = r.number("minval", o.minval);
      o.maxval = r.number("maxval", o.maxval);
      o.seed = r.seed();
      return RandomUniform(o);
    });
    add({"VarianceScaling", "variance_scaling"}, [](ConfigReader& r) {
      VarianceScalingOptions o;
      o.scale = r.number("scale", o.scale);
      o.mode = r.string("mode", o.mode);
      o.distribution = r.string("distribution", o.distribution);
      o.seed = r.seed();
      r.axes();
      return VarianceScaling(o);
    });
    add({"GlorotUniform", "glorot_uniform"}, seed_only(GlorotUniform));
    add({"GlorotNormal", "glorot_normal"}, seed_only(GlorotNormal));
    add({"HeUniform", "he_uniform"}, seed_only(HeUniform));
    add({"HeNormal", "he_normal"}, seed_only(HeNormal));
    add({"LecunUniform", "lecun_uniform"}, seed_only(LecunUniform));
    add({"LecunNormal", "lecun_normal"}, seed_only(LecunNormal));
    add({"Orthogonal", "orthogonal", "OrthogonalInitializer"}, [](ConfigReader& r) {
      OrthogonalOptions o;
      o.gain = r.number("gain", o.gain);
      o.seed = r.seed();
      return Orthogonal(o);
    });
    return t;
  }();
  return table;
}

Initializer resolve_initializer(const std::string& name, const json& config) {
  const auto& table = initializer_registry();
  auto it = table.find(name);
  if (it == table.end()) {
    std::ostringstream known;
    for (const auto& [n, f] : table) known << (known.tellp() > 0 ? ", " : "") << n;
    throw InvalidArgument("Unknown initializer \"" + name + "\"; known initializers: " + known.str());
  }
  ConfigReader reader(config, name);
  Initializer init = it->second(reader);
  reader.finish();
  return init;
}

}  // namespace

Initializer::Initializer(const char* name) : Initializer(std::string(name)) {}
Initializer::Initializer(const std::string& name) : impl_(resolve_initializer(name, json::object()).impl_) {}

json Initializer::to_json() const { return {{"class_name", class_name()}, {"config", get_config()}}; }

Initializer Initializer::from_json(const json& j) {
  if (j.is_string()) return Initializer(j.get<std::string>());
  EMBER_CHECK(j.is_object() && j.contains("class_name") && j["class_name"].is_string(), InvalidArgument)
      << "Initializer::from_json: expected a name or an object with a \"class_name\" string, got " << j.dump();
  // shared_object_id: Keras 3 marks an object serialized more than once in a config (an RNN layer's and its
  // cell's initializers are the same objects); each copy is complete, and initializers are immutable.
  for (const auto& [key, value] : j.items())
    EMBER_CHECK(key == "class_name" || key == "config" || key == "module" || key == "registered_name" ||
                    key == "shared_object_id",
                InvalidArgument)
        << "Initializer::from_json: unknown key \"" << key << "\" in " << j.dump();
  return resolve_initializer(j["class_name"].get<std::string>(), j.contains("config") ? j["config"] : json::object());
}

std::pair<double, double> compute_fans(const Shape& shape) {
  const int64_t r = shape.rank();
  if (r < 1) return {1.0, 1.0};
  if (r == 1) return {static_cast<double>(shape[0]), static_cast<double>(shape[0])};
  if (r == 2) return {static_cast<double>(shape[0]), static_cast<double>(shape[1])};
  double receptive = 1;
  for (int64_t i = 0; i < r - 2; ++i) receptive *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[r - 2]) * receptive, static_cast<double>(shape[r - 1]) * receptive};
}

Initializer Zeros() { return Initializer(ConstantImpl("Zeros", 0.0)); }
Initializer Ones() { return Initializer(ConstantImpl("Ones", 1.0)); }
Initializer Constant(double value) { return Initializer(ConstantImpl("Constant", value)); }
Initializer RandomNormal(RandomNormalOptions options) { return Initializer(NormalImpl(false, options)); }
Initializer TruncatedNormal(RandomNormalOptions options) { return Initializer(NormalImpl(true, options)); }
Initializer RandomUniform(RandomUniformOptions options) { return Initializer(UniformImpl(options)); }

Initializer VarianceScaling(VarianceScalingOptions o) {
  EMBER_CHECK(o.scale > 0.0, InvalidArgument) << "VarianceScaling: scale must be positive, got " << o.scale;
  EMBER_CHECK(o.mode == "fan_in" || o.mode == "fan_out" || o.mode == "fan_avg", InvalidArgument)
      << "VarianceScaling: mode must be one of fan_in, fan_out, fan_avg, got \"" << o.mode << "\"";
  o.distribution = ascii_lower(std::move(o.distribution));
  if (o.distribution == "normal") o.distribution = "truncated_normal";  // as Keras
  EMBER_CHECK(
      o.distribution == "truncated_normal" || o.distribution == "untruncated_normal" || o.distribution == "uniform",
      InvalidArgument)
      << "VarianceScaling: distribution must be one of truncated_normal, untruncated_normal, uniform, got \""
      << o.distribution << "\"";
  return Initializer(VarianceScalingImpl("VarianceScaling", std::move(o)));
}

namespace {
Initializer preset(const char* class_name, double scale, const char* mode, const char* distribution, SeedOptions s) {
  return Initializer(VarianceScalingImpl(class_name, {scale, mode, distribution, s.seed}));
}
}  // namespace

Initializer GlorotUniform(SeedOptions s) { return preset("GlorotUniform", 1.0, "fan_avg", "uniform", s); }
Initializer GlorotNormal(SeedOptions s) { return preset("GlorotNormal", 1.0, "fan_avg", "truncated_normal", s); }
Initializer HeUniform(SeedOptions s) { return preset("HeUniform", 2.0, "fan_in", "uniform", s); }
Initializer HeNormal(SeedOptions s) { return preset("HeNormal", 2.0, "fan_in", "truncated_normal", s); }
Initializer LecunUniform(SeedOptions s) { return preset("LecunUniform", 1.0, "fan_in", "uniform", s); }
Initializer LecunNormal(SeedOptions s) { return preset("LecunNormal", 1.0, "fan_in", "truncated_normal", s); }
Initializer Orthogonal(OrthogonalOptions options) { return Initializer(OrthogonalImpl(options)); }

}  // namespace ember::initializers
