#include "layers/dot.h"

#include <sstream>

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

namespace {

std::string dot_axes_string(const std::vector<int64_t>& axes) {
  std::ostringstream os;
  if (axes.size() == 1) {
    os << axes[0];
  } else {
    os << "(" << axes[0] << ", " << axes[1] << ")";
  }
  return os.str();
}

// Keras's ops.normalize(x, axis, order=2): x * min(rsqrt(sum(x^2)), 1 / epsilon), epsilon = 1e-7.
Tensor dot_l2_normalize(const Tensor& x, int64_t axis) {
  Tensor inv_norm = ops::rsqrt(ops::reduce_sum(ops::square(x), {axis}, true));
  return x * ops::minimum(inv_norm, ops::full({}, 1.0 / 1e-7, x.dtype()));
}

// Moves axis `from` of x to position `to`, keeping the order of the others.
Tensor dot_move_axis(const Tensor& x, int64_t from, int64_t to) {
  if (from == to) return x;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return ops::transpose(x, perm);
}

}  // namespace

Dot::Dot(std::vector<int64_t> axes, DotOptions options)
    : Merge("dot", {options.name, options.dtype, options.trainable}), axes_(std::move(axes)), options_(std::move(options)) {
  for (int64_t a : axes_)
    EMBER_CHECK(a != 0, InvalidArgument) << "Dot '" << name() << "': cannot take the dot product over the batch axis 0, got axes "
                                         << dot_axes_string(axes_);
}

Dot::Dot(int64_t axes, DotOptions options) : Dot(std::vector<int64_t>{axes}, std::move(options)) {}

Dot::Dot(std::array<int64_t, 2> axes, DotOptions options)
    : Dot(std::vector<int64_t>{axes[0], axes[1]}, std::move(options)) {}

std::array<int64_t, 2> Dot::resolved_axes(int64_t rank_x, int64_t rank_y) const {
  const int64_t ax = axes_[0], ay = axes_.size() == 2 ? axes_[1] : axes_[0];
  std::array<int64_t, 2> out{ax < 0 ? ax + rank_x : ax, ay < 0 ? ay + rank_y : ay};
  EMBER_CHECK(out[0] >= 1 && out[0] < rank_x && out[1] >= 1 && out[1] < rank_y, InvalidArgument)
      << who() << ": axes " << dot_axes_string(axes_) << " are out of range (or the batch axis) for inputs of rank "
      << rank_x << " and " << rank_y;
  return out;
}

Shape Dot::merged_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 2, InvalidArgument)
      << who() << ": expected a list of exactly 2 inputs, got " << shapes.size();
  const Shape &x = shapes[0], &y = shapes[1];
  EMBER_CHECK(x.rank() >= 2 && y.rank() >= 2, InvalidArgument)
      << who() << ": expected inputs of rank >= 2 (batch first), got shapes " << x.to_keras_string() << " and "
      << y.to_keras_string();
  EMBER_CHECK(x[0] < 0 || y[0] < 0 || x[0] == y[0], InvalidArgument)
      << who() << ": cannot take the dot product of inputs with different batch sizes, got shapes "
      << x.to_keras_string() << " and " << y.to_keras_string();
  const auto [ax, ay] = resolved_axes(x.rank(), y.rank());
  EMBER_CHECK(x[ax] < 0 || y[ay] < 0 || x[ax] == y[ay], InvalidArgument)
      << who() << ": incompatible input shapes " << x.to_keras_string() << " and " << y.to_keras_string()
      << ": axis " << ax << " of the first has size " << x[ax] << " but axis " << ay << " of the second has size "
      << y[ay] << " (axes " << dot_axes_string(axes_) << ")";
  // Keras's compute_output_shape: x without its axis, then y without its axis and its batch axis.
  Shape out{x[0] >= 0 ? x[0] : y[0]};
  for (int64_t i = 1; i < x.rank(); ++i)
    if (i != ax) out.push_back(x[i]);
  for (int64_t i = 1; i < y.rank(); ++i)
    if (i != ay) out.push_back(y[i]);
  if (out.rank() == 1) out.push_back(1);
  return out;
}

Tensor Dot::call(const std::vector<Tensor>& xs, bool training) {
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  merged_shape(shapes);
  return merge_function(xs);
}

// Keras's batch_dot: bring x's axis last and y's to position 1, flatten both to rank 3, one batched matmul,
// then restore the kept axes (a rank-2 input's dot leaves a size-1 axis that is squeezed).
Tensor Dot::merge_function(const std::vector<Tensor>& xs) const {
  Tensor x = xs[0], y = xs[1];
  auto [ax, ay] = resolved_axes(x.rank(), y.rank());
  if (options_.normalize) {
    x = dot_l2_normalize(x, ax);
    y = dot_l2_normalize(y, ay);
  }
  const int64_t rank_x = x.rank(), rank_y = y.rank();
  if (rank_x == 2) {
    x = ops::expand_dims(x, 1);
    ++ax;
  }
  if (rank_y == 2) y = ops::expand_dims(y, 2);
  x = dot_move_axis(x, ax, x.rank() - 1);
  y = dot_move_axis(y, ay, 1);
  const Shape xs_shape = x.shape(), ys_shape = y.shape();
  const int64_t batch = xs_shape[0], k = xs_shape[xs_shape.rank() - 1];
  int64_t m = 1, n = 1;
  for (int64_t i = 1; i + 1 < xs_shape.rank(); ++i) m *= xs_shape[i];
  for (int64_t i = 2; i < ys_shape.rank(); ++i) n *= ys_shape[i];
  Tensor r = ops::matmul(ops::reshape(x, {batch, m, k}), ops::reshape(y, {batch, k, n}));
  std::vector<int64_t> out{batch};
  for (int64_t i = 1; i + 1 < xs_shape.rank(); ++i) out.push_back(xs_shape[i]);
  for (int64_t i = 2; i < ys_shape.rank(); ++i) out.push_back(ys_shape[i]);
  if (rank_x == 2) {
    out.erase(out.begin() + 1);
  } else if (rank_y == 2) {
    out.pop_back();
  }
  return ops::reshape(r, Shape(out));
}

nlohmann::json Dot::get_config() const {
  nlohmann::json c = base_config();
  c["axes"] = axes_.size() == 1 ? nlohmann::json(axes_[0]) : nlohmann::json(axes_);
  c["normalize"] = options_.normalize;
  return c;
}

LayerPtr Dot::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "Dot '" + base.name + "'";
  EMBER_CHECK(c.contains("axes") && !c["axes"].is_null(), InvalidArgument)
      << who << ": config \"axes\" is required (an integer or a list of two)";
  const std::vector<int64_t> axes = ::ember::detail::config_int_list(c, "axes", {}, who);
  EMBER_CHECK((axes.size() == 1 && c["axes"].is_number_integer()) || axes.size() == 2, InvalidArgument)
      << who << ": config \"axes\" must be an integer or a list of two integers, got " << c["axes"].dump();
  DotOptions o;
  o.normalize = ::ember::detail::config_bool(c, "normalize", false, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return axes.size() == 1 ? std::make_shared<Dot>(axes[0], o) : std::make_shared<Dot>(std::array{axes[0], axes[1]}, o);
}

EMBER_REGISTER_LAYER(Dot);

}  // namespace ember::layers
