#include "layers/concatenate.h"

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

using ::ember::detail::config_int;

namespace {

std::string concat_list_string(const std::vector<Shape>& shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shapes[i].to_string();
  return s + "]";
}

}  // namespace

Concatenate::Concatenate(int64_t axis, LayerOptions options) : Merge("concatenate", options), axis_(axis) {}

std::vector<Tensor> Concatenate::compute_mask(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks) {
  bool any = false;
  for (const Tensor& m : masks) any = any || m.defined();
  if (!any) return {};
  std::vector<Tensor> full;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& m = i < masks.size() ? masks[i] : Tensor();
    if (!m.defined()) {
      full.push_back(ops::ones(xs[i].shape(), DType::Bool));
    } else if (m.rank() < xs[i].rank()) {
      full.push_back(ops::broadcast_to(ops::expand_dims(m, -1), xs[i].shape()));
    } else {
      full.push_back(m);
    }
  }
  return {ops::reduce_any(ops::concat(full, axis_), {-1}, false)};
}

Shape Concatenate::merged_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(!shapes.empty(), InvalidArgument) << who() << ": expected a list of at least one input, got none";
  const int64_t rank = shapes[0].rank();
  EMBER_CHECK(axis_ >= -rank && axis_ < rank, InvalidArgument)
      << who() << ": axis " << axis_ << " is out of range for inputs of rank " << rank << ", got shapes "
      << concat_list_string(shapes);
  const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
  Shape out = shapes[0];
  for (size_t k = 1; k < shapes.size(); ++k) {
    const Shape& s = shapes[k];
    bool ok = s.rank() == rank;
    for (int64_t d = 0; ok && d < rank; ++d) {
      if (d == axis) continue;
      ok = out[d] < 0 || s[d] < 0 || out[d] == s[d];
      if (out[d] < 0) out[d] = s[d];
    }
    EMBER_CHECK(ok, InvalidArgument) << who() << ": inputs must have matching shapes except along axis " << axis_
                                     << ", got " << shapes[0] << " and " << s << " (all shapes: "
                                     << concat_list_string(shapes) << ")";
    out[axis] = out[axis] < 0 || s[axis] < 0 ? -1 : out[axis] + s[axis];
  }
  return out;
}

Tensor Concatenate::merge_function(const std::vector<Tensor>& xs) const {
  return xs.size() == 1 ? xs[0] : ops::concat(xs, axis_);
}

nlohmann::json Concatenate::get_config() const {
  nlohmann::json c = base_config();
  c["axis"] = axis_;
  return c;
}

LayerPtr Concatenate::from_config(const nlohmann::json& c) {
  return std::make_shared<Concatenate>(config_int(c, "axis", -1, "Concatenate"), options_from_config(c));
}

EMBER_REGISTER_LAYER(Concatenate);

}  // namespace ember::layers
