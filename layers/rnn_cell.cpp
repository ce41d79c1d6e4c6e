#include "layers/rnn_cell.h"

#include "framework/graph/trace.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/random.h"

namespace ember::layers {

namespace {

// The seeded draw Dropout makes (layers/dropout.cpp): TF's seed pair (DEFAULT_GRAPH_SEED, seed) and a
// counter block per draw, so a seeded cell's masks depend only on its seed and how many it drew.
constexpr uint64_t kRnnTfDefaultGraphSeed = 87654321, kRnnTfMaxInt32 = 0x7fffffff;
constexpr int kRnnDrawShift = 40;

}  // namespace

namespace detail {
std::string rnn_activation_name(const std::string& activation) {
  return activation.empty() ? "linear" : activation;
}

std::vector<Tensor> rnn_run_widened(DType compute_dtype, std::vector<Tensor> inputs,
                                    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& op) {
  if (compute_dtype == DType::Float32 || compute_dtype == DType::Float64) return op(inputs);
  for (Tensor& t : inputs) t = ops::cast(t, DType::Float32);
  std::vector<Tensor> out = op(inputs);
  for (Tensor& t : out) t = ops::cast(t, compute_dtype);
  return out;
}

std::optional<uint64_t> rnn_config_seed(const nlohmann::json& c, const std::string& who) {
  std::optional<int64_t> seed = ::ember::detail::config_optional_int(c, "seed", who);
  if (!seed) return std::nullopt;
  EMBER_CHECK(*seed >= 0, InvalidArgument) << who << ": config \"seed\" must be >= 0, got " << *seed;
  return static_cast<uint64_t>(*seed);
}
}  // namespace detail

std::string RNNCell::who() const { return class_name() + " '" + name() + "'"; }

std::vector<Tensor> RNNCell::get_initial_state(int64_t batch_size) const {
  std::vector<Tensor> out;
  for (int64_t s : state_size()) out.push_back(ops::zeros({batch_size, s}, compute_dtype()));
  return out;
}

void RNNCell::set_dropout(double dropout, double recurrent_dropout, std::optional<uint64_t> seed) {
  EMBER_CHECK(dropout >= 0 && dropout < 1 && recurrent_dropout >= 0 && recurrent_dropout < 1, InvalidArgument)
      << who() << ": dropout and recurrent_dropout must be in [0, 1), got " << dropout << " and "
      << recurrent_dropout;
  dropout_ = dropout;
  recurrent_dropout_ = recurrent_dropout;
  seed_ = seed;
}

void RNNCell::reset_dropout_masks() {
  input_masks_.clear();
  recurrent_masks_.clear();
}

Tensor RNNCell::draw_mask(const Shape& shape, double rate) {
  Tensor u;
  if (!seed_) {
    u = random::uniform(shape, {.minval = 0.0, .maxval = 1.0, .dtype = DType::Float32, .seed = std::nullopt});
  } else {
    // The draw counter lives on the host: a traced function draws each call's masks through a host node.
    u = graph::host_call("rnn_dropout_noise", {}, [this, shape](std::span<const Tensor>) {
      const uint64_t key = kRnnTfDefaultGraphSeed | ((*seed_ % kRnnTfMaxInt32) << 32);
      const uint64_t counter = seeded_draws_++ << kRnnDrawShift;
      return std::vector<Tensor>{run_op(OpId::random_uniform, {}, OutputSpec{shape, DType::Float32},
                                        RandomAttrs{shape, DType::Float32, key, counter, 0.0, 1.0})};
    }, [this, draws = seeded_draws_] { seeded_draws_ = draws; })[0];
  }
  Tensor keep = ops::greater_equal(u, ops::full({}, rate, DType::Float32));
  return ops::cast(keep, compute_dtype()) * (1.0 / (1.0 - rate));
}

const std::vector<Tensor>& RNNCell::dropout_masks(const Shape& shape, int count, bool recurrent) {
  std::vector<Tensor>& masks = recurrent ? recurrent_masks_ : input_masks_;
  if (masks.empty()) {
    const double rate = recurrent ? recurrent_dropout_ : dropout_;
    for (int i = 0; i < count; ++i) masks.push_back(draw_mask(shape, rate));
  }
  return masks;
}

Tensor RNNCell::sequence_with_dropout(const Tensor& sequence, bool training) {
  if (!training || dropout_ <= 0) return sequence;
  const Shape& s = sequence.shape();
  return sequence * ops::reshape(dropout_masks(Shape{s[0], s[2]}, 1, false)[0], {s[0], 1, s[2]});
}

std::vector<Tensor> RNNCell::run_sequence(const Tensor& /*sequence*/, const std::vector<Tensor>& /*states*/,
                                          bool /*training*/, const Tensor& /*sequence_lengths*/) {
  throw Unimplemented(who() + ": has no whole-sequence path (has_fused_sequence is false)");
}

// ---------------------------------------------------------------- as a layer

void RNNCell::build(const std::vector<Shape>& shapes) {
  const Shape& in = shapes.at(0);
  EMBER_CHECK(in.rank() == 2 && in[1] > 0, InvalidArgument)
      << who() << ": expected an input of shape (batch, features), got " << in.to_keras_string();
  build(in);
}

void RNNCell::check_input_shape(const std::vector<Shape>& shapes) const {
  const Shape& in = shapes.at(0);
  const int64_t features = build_input_shapes().at(0)[1];
  EMBER_CHECK(in.rank() == 2 && in[1] == features, InvalidArgument)
      << who() << ": expected an input of shape (batch, " << features << "), got " << in.to_keras_string();
}

void RNNCell::check_states(const Tensor& input, const std::vector<Tensor>& states) const {
  const std::vector<int64_t> sizes = state_size();
  EMBER_CHECK(states.size() == sizes.size(), InvalidArgument)
      << who() << ": expected " << sizes.size() << " state tensors after the input, got " << states.size();
  for (size_t i = 0; i < states.size(); ++i) {
    const Shape want{input.shape()[0], sizes[i]};
    EMBER_CHECK(states[i].shape() == want, InvalidArgument)
        << who() << ": expected state " << i << " of shape " << want.to_keras_string() << ", got "
        << states[i].shape().to_keras_string();
  }
}

std::vector<Tensor> RNNCell::call_all(const std::vector<Tensor>& xs, bool training) {
  std::vector<Tensor> states(xs.begin() + 1, xs.end());
  if (states.empty()) states = get_initial_state(xs[0].shape()[0]);
  check_states(xs[0], states);
  reset_dropout_masks();
  std::vector<Tensor> out = step(xs[0], states, training);
  reset_dropout_masks();
  return out;
}

Tensor RNNCell::call(const Tensor& x, bool training) { return call_all({x}, training).at(0); }

Tensor RNNCell::call(const std::vector<Tensor>& xs, bool training) { return call_all(xs, training).at(0); }

Shape RNNCell::compute_output_shape(const Shape& input_shape) { return {input_shape[0], output_size()}; }

Shape RNNCell::compute_output_shape(const std::vector<Shape>& input_shapes) {
  return compute_output_shape(input_shapes.at(0));
}

std::vector<Shape> RNNCell::compute_output_shapes(const std::vector<Shape>& input_shapes) {
  std::vector<Shape> out{compute_output_shape(input_shapes.at(0))};
  for (int64_t s : state_size()) out.push_back(Shape{input_shapes[0][0], s});
  return out;
}

}  // namespace ember::layers
