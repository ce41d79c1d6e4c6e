#include "layers/permute.h"

#include <algorithm>

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"

namespace ember::layers {

namespace {

std::string permute_dims_string(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace

Permute::Permute(std::vector<int64_t> dims, LayerOptions options) : Layer("permute", options), dims_(std::move(dims)) {
  std::vector<int64_t> sorted = dims_;
  std::sort(sorted.begin(), sorted.end());
  bool ok = !sorted.empty();
  for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i) + 1;
  EMBER_CHECK(ok, InvalidArgument) << "Permute '" << name()
                                   << "': dims must be a permutation of 1..n (the batch axis 0 stays first), got "
                                   << permute_dims_string(dims_);
}

void Permute::check_input_shape(const std::vector<Shape>& shapes) const {
  const int64_t rank = static_cast<int64_t>(dims_.size()) + 1;
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == rank, InvalidArgument)
      << "Permute '" << name() << "': dims " << permute_dims_string(dims_) << " need an input of rank " << rank
      << ", got " << (shapes.size() == 1 ? "shape " + shapes[0].to_keras_string() : std::to_string(shapes.size()) + " inputs");
}

Shape Permute::compute_output_shape(const Shape& input_shape) {
  check_input_shape({input_shape});
  Shape out{input_shape[0]};
  for (int64_t d : dims_) out.push_back(input_shape[d]);
  return out;
}

Tensor Permute::call(const Tensor& x, bool training) {
  check_input_shape({x.shape()});
  std::vector<int64_t> perm{0};
  perm.insert(perm.end(), dims_.begin(), dims_.end());
  return ops::transpose(x, perm);
}

nlohmann::json Permute::get_config() const {
  nlohmann::json c = base_config();
  c["dims"] = dims_;
  return c;
}

LayerPtr Permute::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "Permute '" + base.name + "'";
  EMBER_CHECK(c.contains("dims") && c["dims"].is_array(), InvalidArgument)
      << who << ": config \"dims\" must be a list of integers, got " << (c.contains("dims") ? c["dims"].dump() : "none");
  return std::make_shared<Permute>(::ember::detail::config_int_list(c, "dims", {}, who), base);
}

EMBER_REGISTER_LAYER(Permute);

}  // namespace ember::layers
