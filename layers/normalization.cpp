#include "layers/normalization.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include "data/dataset.h"
#include "framework/core/config_reader.h"
#include "framework/model/initializers.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

namespace {

constexpr double kNormalizationEpsilon = 1e-7;  // keras.config.epsilon()

// The int64 zero Keras's `count` weight starts at (its dtype is "int" whatever the layer's policy).
class NormalizationCountZeros : public initializers::InitializerImpl {
 public:
  Tensor operator()(const Shape& shape, DType /*dtype*/) const override { return ops::zeros(shape, DType::Int64); }
  std::string class_name() const override { return "Zeros"; }
  nlohmann::json get_config() const override { return nlohmann::json::object(); }
};

std::string normalization_axis_text(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() == 1 ? ",)" : ")");
  return os.str();
}

// A config's "mean"/"variance": null, a number, or a (possibly nested) list of numbers, flattened.
std::optional<std::vector<double>> normalization_stats_from_config(const nlohmann::json& c, const char* key, const std::string& who) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  std::vector<double> out;
  auto walk = [&](const auto& self, const nlohmann::json& j) -> void {
    if (j.is_number()) {
      out.push_back(j.get<double>());
      return;
    }
    EMBER_CHECK(j.is_array(), InvalidArgument)
        << who << ": config \"" << key << "\" must be null, a number or a list of numbers, got " << c[key].dump();
    for (const auto& e : j) self(self, e);
  };
  walk(walk, c[key]);
  return out;
}

}  // namespace

Normalization::Normalization(NormalizationOptions options)
    : Layer("normalization", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  const std::string who = "Normalization '" + name() + "'";
  EMBER_CHECK(options_.mean.has_value() == options_.variance.has_value(), InvalidArgument)
      << who << ": when setting values directly, both `mean` and `variance` must be set";
  if (options_.mean) {
    EMBER_CHECK(options_.mean->size() == options_.variance->size() && !options_.mean->empty(), InvalidArgument)
        << who << ": `mean` and `variance` must have the same size, got " << options_.mean->size() << " and "
        << options_.variance->size();
  }
}

void Normalization::set_axes(int64_t rank) {
  const std::string who = "Normalization '" + name() + "'";
  std::set<int64_t> keep;
  for (int64_t a : options_.axis) {
    EMBER_CHECK(a >= -rank && a < rank, InvalidArgument)
        << who << ": all `axis` values must be in the range [-ndim, ndim), got axis=" << normalization_axis_text(options_.axis)
        << " for inputs of rank " << rank;
    keep.insert(a < 0 ? a + rank : a);
  }
  keep_.assign(keep.begin(), keep.end());
  reduce_.clear();
  for (int64_t d = 0; d < rank; ++d)
    if (!keep.count(d)) reduce_.push_back(d);
}

void Normalization::build(const Shape& s) {
  const std::string who = "Normalization '" + name() + "'";
  set_axes(s.rank());
  std::vector<int64_t> stats, bcast(s.rank(), 1);
  for (int64_t d : keep_) {
    EMBER_CHECK(s[d] >= 0, InvalidArgument)
        << who << ": all `axis` values to be kept must have a known size, got axis=" << normalization_axis_text(options_.axis)
        << " for inputs of shape " << s;
    stats.push_back(s[d]);
    bcast[d] = s[d];
  }
  stats_shape_ = Shape(stats);
  broadcast_shape_ = Shape(bcast);
  if (options_.mean) {
    const int64_t n = stats_shape_.num_elements();
    EMBER_CHECK(options_.mean->size() == 1 || static_cast<int64_t>(options_.mean->size()) == n, InvalidArgument)
        << who << ": `mean` and `variance` must hold one value or one per kept position (" << n << " for shape "
        << stats_shape_ << "), got " << options_.mean->size();
    return;
  }
  mean_ = add_weight("mean", stats_shape_, "zeros", false);
  variance_ = add_weight("variance", stats_shape_, "ones", false);
  count_ = add_weight("count", Shape{}, initializers::Initializer(NormalizationCountZeros{}), false);
}

void Normalization::check_adapt_shape(const Shape& s) const {
  const std::vector<Shape>& built = build_input_shapes();
  const Shape& b = built.at(0);
  bool ok = s.rank() == b.rank();
  for (int64_t d : keep_) ok = ok && s[d] == b[d];
  EMBER_CHECK(ok, InvalidArgument) << "Normalization '" << name() << "': the layer was built with input_shape=" << b
                                   << ", but adapt() is being called with data of an incompatible shape " << s;
}

void Normalization::store(const Tensor& mean, const Tensor& variance) {
  mean_.assign(ops::cast(ops::reshape(mean, stats_shape_), mean_.dtype()));
  variance_.assign(ops::cast(ops::reshape(variance, stats_shape_), variance_.dtype()));
}

void Normalization::adapt(const Tensor& data) {
  EMBER_CHECK(!options_.mean, FailedPrecondition)
      << "Normalization '" << name() << "': adapt() needs a layer without a given `mean` and `variance`";
  if (!built()) build_for({data.shape()});
  check_adapt_shape(data.shape());
  const Tensor x = ops::cast(data, compute_dtype());
  store(ops::reduce_mean(x, reduce_), ops::reduce_variance(x, reduce_));
}

void Normalization::adapt(const data::Dataset& dataset) {
  const std::string who = "Normalization '" + name() + "'";
  EMBER_CHECK(!options_.mean, FailedPrecondition) << who << ": adapt() needs a layer without a given `mean` and `variance`";
  data::Dataset ds = dataset;
  bool first = true;
  Tensor total_mean, total_var;
  int64_t total_count = 0;
  for (const data::Element& e : ds) {
    EMBER_CHECK(!e.empty(), InvalidArgument) << who << ": adapt() got an element with no components";
    Tensor batch = e[0];
    if (first) {
      if (batch.rank() == 0 || batch.rank() == 1) {
        // Keras batches a dataset of rank-1 elements by 128 (their spec has no batch axis).
        EMBER_CHECK(batch.rank() == 1, InvalidArgument)
            << who << ": adapt() needs elements of rank >= 1, got a scalar element";
        adapt(dataset.batch(128));
        return;
      }
      if (!built()) build_for({batch.shape()});
      total_mean = ops::zeros(stats_shape_, compute_dtype());
      total_var = ops::zeros(stats_shape_, compute_dtype());
      first = false;
    }
    check_adapt_shape(batch.shape());
    batch = ops::cast(batch, compute_dtype());
    const Tensor batch_mean = ops::reshape(ops::reduce_mean(batch, reduce_), stats_shape_);
    const Tensor batch_var = ops::reshape(ops::reduce_variance(batch, reduce_), stats_shape_);
    int64_t batch_count = 1;
    for (int64_t d : reduce_) batch_count *= batch.shape()[d];
    total_count += batch_count;
    const double batch_weight = static_cast<double>(batch_count) / static_cast<double>(total_count);
    const double existing_weight = 1.0 - batch_weight;
    const Tensor new_mean = total_mean * existing_weight + batch_mean * batch_weight;
    total_var = (total_var + ops::square(total_mean - new_mean)) * existing_weight +
                (batch_var + ops::square(batch_mean - new_mean)) * batch_weight;
    total_mean = new_mean;
  }
  EMBER_CHECK(!first, InvalidArgument) << who << ": adapt() received an empty dataset (no batches)";
  store(total_mean, total_var);
}

Tensor Normalization::call(const Tensor& x, bool /*training*/) {
  const Tensor in = x.dtype() == compute_dtype() ? x : ops::cast(x, compute_dtype());
  Tensor mean, variance;
  if (options_.mean) {
    const auto constant = [&](const std::vector<double>& v) {
      std::vector<float> f(v.begin(), v.end());
      Tensor t = Tensor::from_vector<float>(f, Shape{static_cast<int64_t>(f.size())}, in.device());
      t = f.size() == 1 ? ops::reshape(t, Shape(std::vector<int64_t>(broadcast_shape_.rank(), 1)))
                        : ops::reshape(t, broadcast_shape_);
      return ops::cast(t, compute_dtype());
    };
    mean = constant(*options_.mean);
    variance = constant(*options_.variance);
  } else {
    mean = ops::reshape(read(mean_), broadcast_shape_);
    variance = ops::reshape(read(variance_), broadcast_shape_);
  }
  const Tensor stddev = ops::maximum(ops::sqrt(variance), Tensor::scalar_of(kNormalizationEpsilon, compute_dtype(),
                                                                              in.device()));
  return options_.invert ? mean + in * stddev : (in - mean) / stddev;
}

nlohmann::json Normalization::get_config() const {
  nlohmann::json c = base_config();
  c["axis"] = options_.axis;
  c["invert"] = options_.invert;
  const auto stats = [](const std::optional<std::vector<double>>& v) -> nlohmann::json {
    if (!v) return nullptr;
    if (v->size() == 1) return (*v)[0];
    return *v;
  };
  c["mean"] = stats(options_.mean);
  c["variance"] = stats(options_.variance);
  return c;
}

LayerPtr Normalization::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "Normalization '" + base.name + "'";
  NormalizationOptions o;
  if (c.contains("axis")) {
    const nlohmann::json& a = c["axis"];
    if (a.is_null()) o.axis = {};
    else if (a.is_number_integer()) o.axis = {a.get<int64_t>()};
    else o.axis = ::ember::detail::config_int_list(c, "axis", {-1}, who);
  }
  o.mean = normalization_stats_from_config(c, "mean", who);
  o.variance = normalization_stats_from_config(c, "variance", who);
  o.invert = ::ember::detail::config_bool(c, "invert", false, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<Normalization>(o);
}

EMBER_REGISTER_LAYER(Normalization);

}  // namespace ember::layers
