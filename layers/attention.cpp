#include "layers/attention.h"

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/attention.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

namespace {

Tensor attention_as_bool(const Tensor& t) {
  return t.dtype() == DType::Bool ? t : ops::not_equal(t, ops::zeros({}, t.dtype()));
}

// InvalidArgument naming the layer unless a mask is (batch or 1, len); unknown (symbolic) sizes match any.
void attention_check_mask(const std::string& who, const std::optional<Tensor>& mask, int64_t batch, int64_t len,
                          const char* what) {
  if (!mask) return;
  const Shape& s = mask->shape();
  auto fits = [](int64_t got, int64_t want) { return got < 0 || want < 0 || got == want; };
  EMBER_CHECK(s.rank() == 2 && (s[0] == 1 || fits(s[0], batch)) && fits(s[1], len), InvalidArgument)
      << who << ": expected a " << what << " of shape " << Shape{batch, len}.to_keras_string() << ", got "
      << s.to_keras_string() << " (" << dtype_name(mask->dtype()) << ")";
}

void attention_check_masks(const std::string& who, const AttentionMaskOptions& c, int64_t batch, int64_t query_len,
                           int64_t value_len) {
  attention_check_mask(who, c.query_mask, batch, query_len, "query mask");
  attention_check_mask(who, c.value_mask, batch, value_len, "value mask");
}

}  // namespace

Attention::Attention(const std::string& base_name, AttentionOptions options)
    : Layer(base_name, {options.name, options.dtype, options.trainable}),
      options_(std::move(options)),
      noise_(options_.seed) {
  EMBER_CHECK(options_.score_mode == "dot" || options_.score_mode == "concat", InvalidArgument)
      << who() << ": score_mode must be \"dot\" or \"concat\", got \"" << options_.score_mode << "\"";
  EMBER_CHECK(options_.dropout >= 0 && options_.dropout < 1, InvalidArgument)
      << who() << ": dropout must be in [0, 1), got " << options_.dropout;
}

Attention::Attention(AttentionOptions options) : Attention("attention", std::move(options)) {}

void Attention::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 2 || shapes.size() == 3, InvalidArgument)
      << who() << ": expected a list of 2 or 3 inputs {query, value[, key]}, got " << shapes.size();
  const char* names[] = {"query", "value", "key"};
  for (size_t i = 0; i < shapes.size(); ++i)
    EMBER_CHECK(shapes[i].rank() == 3, InvalidArgument)
        << who() << ": expected a " << names[i] << " of shape (batch, length, features), got "
        << shapes[i].to_keras_string();
  const Shape& q = shapes[0];
  const Shape& v = shapes[1];
  const Shape& k = shapes.size() > 2 ? shapes[2] : v;
  EMBER_CHECK(q[2] == k[2], InvalidArgument)
      << who() << ": query " << q.to_keras_string() << " and key " << k.to_keras_string()
      << " must have the same number of features";
  EMBER_CHECK(k[1] < 0 || v[1] < 0 || k[1] == v[1], InvalidArgument)
      << who() << ": key " << k.to_keras_string() << " and value " << v.to_keras_string() << " must have one length";
  for (const Shape& s : shapes)
    EMBER_CHECK(s[0] < 0 || q[0] < 0 || s[0] == q[0], InvalidArgument)
        << who() << ": the inputs must have one batch size, got query " << q.to_keras_string() << " and "
        << s.to_keras_string();
  if (built() && scale_.defined() && scale_.shape().rank() == 1) {
    EMBER_CHECK(q[2] == scale_.shape()[0], InvalidArgument)
        << who() << ": the layer was built for " << scale_.shape()[0] << " features, got a query of shape "
        << q.to_keras_string();
  }
}

void Attention::build(const std::vector<Shape>& shapes) {
  check_input_shape(shapes);
  if (options_.use_scale) scale_ = add_weight("scale", {}, "ones");
  if (options_.score_mode == "concat") concat_score_weight_ = add_weight("concat_score_weight", {}, "ones");
}

Shape Attention::compute_output_shape(const std::vector<Shape>& shapes) {
  check_input_shape(shapes);
  return {shapes[0][0], shapes[0][1], shapes[1][2]};
}

Tensor Attention::calculate_scores(const Tensor& query, const Tensor& key) const {
  if (options_.score_mode == "dot") {
    Tensor scores = ops::matmul(query, key, {.transpose_b = true});
    return options_.use_scale ? scores * read(scale_) : scores;
  }
  // concat: (batch, Tq, 1, dim) + (batch, 1, Tv, dim), summed over the features after tanh.
  Tensor sum = ops::expand_dims(query, -2) + ops::expand_dims(key, -3);
  if (options_.use_scale) sum = read(scale_) * sum;
  return read(concat_score_weight_) * ops::reduce_sum(ops::tanh(sum), {-1});
}

std::optional<Tensor> Attention::compute_score_mask(int64_t query_len, int64_t value_len,
                                                    const AttentionMaskOptions& c) {
  std::optional<Tensor> v_mask;
  if (c.value_mask) v_mask = attention_as_bool(*c.value_mask);
  if (!c.use_causal_mask) return v_mask;
  // Keras: row index >= column index, aligned top-left, shape (1, Tq, Tv).
  Tensor rows = ops::reshape(ops::range(0, static_cast<double>(query_len), 1, DType::Int32), {1, query_len, 1});
  Tensor cols = ops::reshape(ops::range(0, static_cast<double>(value_len), 1, DType::Int32), {1, 1, value_len});
  Tensor causal = ops::greater_equal(rows, cols);
  return v_mask ? ops::logical_and(ops::expand_dims(*v_mask, -2), causal) : causal;
}

std::vector<Tensor> Attention::call_all(const std::vector<Tensor>& xs, bool training) {
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  check_input_shape(shapes);
  const Tensor& q = xs[0];
  const Tensor& v = xs[1];
  const Tensor& k = xs.size() > 2 ? xs[2] : v;
  const AttentionMaskOptions c = from_call_kwargs(call_kwargs(), who());
  const bool with_scores = call_kwargs().flag("return_attention_scores", false, who());
  attention_check_masks(who(), c, q.shape()[0], q.shape()[1], v.shape()[1]);

  if (dot_product_scores() && !c.value_mask && !with_scores && !(training && options_.dropout > 0)) {
    // softmax(scale * q . k^T) . v as one head of the fused attention op, the scale folded into the query.
    const Tensor qs = options_.use_scale ? q * read(scale_) : q;
    Tensor out = ops::squeeze(ops::dot_product_attention(ops::expand_dims(qs, 2), ops::expand_dims(k, 2),
                                                         ops::expand_dims(v, 2),
                                                         {.scale = 1.0, .is_causal = c.use_causal_mask}),
                              {2});
    if (c.query_mask) out = out * ops::expand_dims(ops::cast(attention_as_bool(*c.query_mask), out.dtype()), -1);
    return {out};
  }
  Tensor scores = calculate_scores(q, k);
  if (std::optional<Tensor> mask = compute_score_mask(q.shape()[1], v.shape()[1], c)) {
    // Keras's _apply_scores subtracts a large number where the mask is off (65504 for float16, else 1e9), so a
    // query whose every value is masked attends almost uniformly rather than giving NaN.
    Tensor padding = ops::cast(ops::logical_not(*mask), scores.dtype());
    if (padding.rank() == 2) padding = ops::expand_dims(padding, -2);
    const double max_value = scores.dtype() == DType::Float16 ? 65504.0 : 1.0e9;
    scores = scores - ops::full({}, max_value, scores.dtype()) * padding;
  }
  Tensor weights = ops::softmax(scores, -1);
  Tensor used = weights;
  if (training && options_.dropout > 0) {
    Tensor keep = ops::greater_equal(noise_.uniform(weights.shape(), DType::Float32),
                                     ops::full({}, options_.dropout, DType::Float32));
    used = weights * (ops::cast(keep, weights.dtype()) * (1.0 / (1.0 - options_.dropout)));
  }
  Tensor out = ops::matmul(used, v);
  if (c.query_mask) out = out * ops::expand_dims(ops::cast(attention_as_bool(*c.query_mask), out.dtype()), -1);
  if (with_scores) return {out, weights};
  return {out};
}

Tensor Attention::call(const std::vector<Tensor>& xs, bool training) { return call_all(xs, training).at(0); }

std::vector<Shape> Attention::compute_output_shapes(const std::vector<Shape>& shapes) {
  const Shape out = compute_output_shape(shapes);
  if (!call_kwargs().flag("return_attention_scores", false, who())) return {out};
  return {out, Shape{shapes[0][0], shapes[0][1], shapes[1][1]}};
}

void Attention::check_call_kwargs(const CallKwargs& kw, const std::vector<Shape>& shapes) const {
  kw.check_keys({"mask", "use_causal_mask", "return_attention_scores"}, who());
  kw.flag("return_attention_scores", false, who());
  const nlohmann::json& mask = kw.values.contains("mask") ? kw.values["mask"] : nlohmann::json();
  EMBER_CHECK(mask.is_null() || (mask.is_array() && (mask.size() == 2 || mask.size() == 3)), InvalidArgument)
      << who() << ": keyword argument mask must be a list [query_mask, value_mask], got " << mask.dump().substr(0, 100);
  const AttentionMaskOptions c = from_call_kwargs(kw, who());
  if (shapes.size() < 2 || shapes[0].rank() != 3 || shapes[1].rank() != 3) return;  // check_input_shape reports these
  attention_check_masks(who(), c, shapes[0][0], shapes[0][1], shapes[1][1]);
}

CallKwargs Attention::to_call_kwargs(const AttentionMaskOptions& c, bool return_attention_scores) {
  CallKwargs kw;
  if (c.query_mask || c.value_mask) kw.set("mask", std::vector<std::optional<Tensor>>{c.query_mask, c.value_mask});
  if (c.use_causal_mask) kw.set("use_causal_mask", true);
  if (return_attention_scores) kw.set("return_attention_scores", true);
  return kw;
}

AttentionMaskOptions Attention::from_call_kwargs(const CallKwargs& kw, const std::string& who) {
  AttentionMaskOptions c;
  c.query_mask = kw.tensor("mask", 0, who);
  c.value_mask = kw.tensor("mask", 1, who);
  c.use_causal_mask = kw.flag("use_causal_mask", false, who);
  return c;
}

Tensor Attention::attend(const std::vector<Tensor>& inputs, const AttentionMaskOptions& call) & {
  return call_outputs(inputs, to_call_kwargs(call, false), call.training).at(0);
}

Tensor Attention::attend(const std::vector<Tensor>& inputs, const AttentionMaskOptions& call) && {
  return std::move(*this).call_outputs(inputs, to_call_kwargs(call, false), call.training).at(0);
}

std::pair<Tensor, Tensor> Attention::attend_with_scores(const std::vector<Tensor>& inputs,
                                                        const AttentionMaskOptions& call) & {
  std::vector<Tensor> out = call_outputs(inputs, to_call_kwargs(call, true), call.training);
  return {out.at(0), out.at(1)};
}

std::pair<Tensor, Tensor> Attention::attend_with_scores(const std::vector<Tensor>& inputs,
                                                        const AttentionMaskOptions& call) && {
  std::vector<Tensor> out = std::move(*this).call_outputs(inputs, to_call_kwargs(call, true), call.training);
  return {out.at(0), out.at(1)};
}

nlohmann::json Attention::get_config() const {
  nlohmann::json c = base_config();
  c["use_scale"] = options_.use_scale;
  c["score_mode"] = options_.score_mode;
  c["dropout"] = options_.dropout;
  c["seed"] = seed_to_config(options_.seed);
  return c;
}

LayerPtr Attention::from_config(const nlohmann::json& c) {
  using namespace ::ember::detail;
  LayerOptions base = options_from_config(c);
  const std::string who = "Attention '" + base.name + "'";
  AttentionOptions o;
  o.use_scale = config_bool(c, "use_scale", false, who);
  o.score_mode = config_string(c, "score_mode", "dot", who);
  o.dropout = config_double(c, "dropout", 0.0, who);
  o.seed = seed_from_config(c, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<Attention>(o);
}

EMBER_REGISTER_LAYER(Attention);

}  // namespace ember::layers
