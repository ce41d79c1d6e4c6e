#include "layers/multi_head_attention.h"

#include <algorithm>
#include <cmath>

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/attention.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"

namespace ember::layers {

namespace attention_detail {

// Keras's EinsumDense in the two forms MultiHeadAttention uses: "abc,cde->abde" (features -> heads x size, kernel
// (features, heads, size), bias (heads, size)) and "abcd,cde->abe" (heads x size -> features, kernel (heads, size,
// features), bias (features,)). Internal to MultiHeadAttention, so not registered for deserialisation.
class EinsumDense : public Layer {
  EMBER_LAYER(EinsumDense)
  // heads > 0: the projection into (heads, size); heads == 0: the output projection into `size` features.
  EinsumDense(const std::string& name, int64_t heads, int64_t size, const MultiHeadAttentionOptions& o)
      : Layer("einsum_dense", {name, o.dtype, true}), heads_(heads), size_(size), options_(o) {}

  void build(const Shape& in) override {
    const Shape kernel = heads_ > 0 ? Shape{in[in.rank() - 1], heads_, size_} : Shape{in[2], in[3], size_};
    const Shape bias = heads_ > 0 ? Shape{heads_, size_} : Shape{size_};
    kernel_ = add_weight("kernel", kernel, options_.kernel_initializer, true, options_.kernel_regularizer);
    if (options_.use_bias) bias_ = add_weight("bias", bias, options_.bias_initializer, true, options_.bias_regularizer);
  }

  // The output projection's features, when they come from the query's shape at build time.
  void set_size(int64_t size) { size_ = size; }

  Tensor call(const Tensor& x, bool /*training*/) override {
    const Shape& k = kernel_.shape();
    const Shape& s = x.shape();
    Tensor y;
    if (heads_ > 0) {  // (b, t, c) . (c, h*d) -> (b, t, h, d)
      y = ops::reshape(ops::matmul(x, ops::reshape(read(kernel_), {k[0], k[1] * k[2]})), {s[0], s[1], k[1], k[2]});
    } else {  // (b, t, h*d) . (h*d, e) -> (b, t, e)
      y = ops::matmul(ops::reshape(x, {s[0], s[1], s[2] * s[3]}), ops::reshape(read(kernel_), {k[0] * k[1], k[2]}));
    }
    return options_.use_bias ? y + read(bias_) : y;
  }

  // Only the contracted dimensions are fixed by the build; the lengths may change from call to call.
  void check_input_shape(const std::vector<Shape>& shapes) const override {
    const Shape& k = kernel_.shape();
    const Shape& s = shapes.at(0);
    const bool ok = heads_ > 0 ? s.rank() == 3 && s[2] == k[0] : s.rank() == 4 && s[2] == k[0] && s[3] == k[1];
    EMBER_CHECK(ok, InvalidArgument) << "EinsumDense '" << name() << "': input shape " << s.to_keras_string()
                                     << " does not match the kernel of shape " << k.to_keras_string();
  }

 private:
  int64_t heads_, size_;
  MultiHeadAttentionOptions options_;
  Variable kernel_, bias_;
};

}  // namespace attention_detail

namespace {

Tensor mha_as_bool(const Tensor& t) { return t.dtype() == DType::Bool ? t : ops::not_equal(t, ops::zeros({}, t.dtype())); }

// InvalidArgument naming the layer unless a mask has `expected`'s rank, each dimension 1, the expected size, or
// unknown on either side (symbolic shapes).
void mha_check_mask(const std::string& who, const std::optional<Tensor>& mask, const Shape& expected, const char* what,
                    const char* layout) {
  if (!mask) return;
  const Shape& s = mask->shape();
  bool ok = s.rank() == expected.rank();
  for (int64_t i = 0; ok && i < s.rank(); ++i) ok = s[i] == 1 || s[i] < 0 || expected[i] < 0 || s[i] == expected[i];
  EMBER_CHECK(ok, InvalidArgument) << who << ": " << what << " of shape " << s.to_keras_string() << " ("
                                   << dtype_name(mask->dtype()) << ") does not match the expected shape " << layout
                                   << " = " << expected.to_keras_string();
}

// Every mask of a call against a query (batch b, length t) and a value of length s.
void mha_check_masks(const std::string& who, const AttentionCallOptions& c, int64_t b, int64_t t, int64_t s) {
  mha_check_mask(who, c.query_mask, {b, t}, "query_mask", "(batch, query_len)");
  mha_check_mask(who, c.value_mask, {b, s}, "value_mask", "(batch, value_len)");
  mha_check_mask(who, c.key_mask, {b, s}, "key_mask", "(batch, key_len)");
  mha_check_mask(who, c.attention_mask, {b, t, s}, "attention_mask", "(batch, query_len, key_len)");
}

}  // namespace

namespace {
int64_t required_option(const std::optional<int64_t>& value, const char* name) {
  EMBER_CHECK(value.has_value(), InvalidArgument)
      << "MultiHeadAttention: " << name << " is required: MultiHeadAttention({.num_heads = H, .key_dim = K}) or "
      << "MultiHeadAttention(H, K)";
  return *value;
}
}  // namespace

MultiHeadAttention::MultiHeadAttention(MultiHeadAttentionOptions options)
    : MultiHeadAttention(required_option(options.num_heads, "num_heads"), required_option(options.key_dim, "key_dim"),
                         options) {}

MultiHeadAttention::MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options)
    : Layer("multi_head_attention", {options.name, options.dtype, options.trainable}),
      num_heads_(num_heads),
      key_dim_(key_dim),
      options_(std::move(options)) {
  EMBER_CHECK((!options_.num_heads || *options_.num_heads == num_heads_) && (!options_.key_dim || *options_.key_dim == key_dim_),
              InvalidArgument)
      << who() << ": num_heads and key_dim given twice: " << num_heads_ << " and " << key_dim_
      << " as arguments, " << (options_.num_heads ? std::to_string(*options_.num_heads) : "unset") << " and "
      << (options_.key_dim ? std::to_string(*options_.key_dim) : "unset") << " in the options; give them once";
  EMBER_CHECK(num_heads_ > 0 && key_dim_ > 0, InvalidArgument)
      << who() << ": num_heads and key_dim must be positive, got num_heads=" << num_heads_ << ", key_dim=" << key_dim_;
  EMBER_CHECK(!options_.value_dim || *options_.value_dim > 0, InvalidArgument)
      << who() << ": value_dim must be positive, got " << *options_.value_dim;
  EMBER_CHECK(!options_.output_shape || *options_.output_shape > 0, InvalidArgument)
      << who() << ": output_shape must be positive, got " << *options_.output_shape;
  EMBER_CHECK(options_.dropout >= 0 && options_.dropout < 1, InvalidArgument)
      << who() << ": dropout must be in [0, 1), got " << options_.dropout;
  EMBER_CHECK(options_.attention_axes.empty() ||
                  (options_.attention_axes.size() == 1 && (options_.attention_axes[0] == 1 || options_.attention_axes[0] == -2)),
              Unimplemented)
      << who() << ": only the default attention_axes (the sequence axis 1 of rank-3 inputs) is supported, got "
      << Shape(options_.attention_axes).to_keras_string();
  using attention_detail::EinsumDense;
  query_dense_ = std::make_shared<EinsumDense>("query", num_heads_, key_dim_, options_);
  key_dense_ = std::make_shared<EinsumDense>("key", num_heads_, key_dim_, options_);
  value_dense_ = std::make_shared<EinsumDense>("value", num_heads_, value_dim(), options_);
  output_dense_ = std::make_shared<EinsumDense>("attention_output", 0, options_.output_shape.value_or(0), options_);
  dropout_layer_ = std::make_shared<Dropout>(options_.dropout, DropoutOptions{.seed = options_.seed, .dtype = options_.dtype});
  for (const LayerPtr& l : std::vector<LayerPtr>{query_dense_, key_dense_, value_dense_, output_dense_, dropout_layer_}) {
    // Keras names them inside the layer: "multi_head_attention/query/kernel".
    l->set_weight_name_scope(name());
    track(l);
  }
}

std::vector<std::pair<std::string, LayerPtr>> MultiHeadAttention::attribute_sublayers() const {
  return {{"query_dense", query_dense_},
          {"key_dense", key_dense_},
          {"value_dense", value_dense_},
          {"output_dense", output_dense_},
          {"_dropout_layer", dropout_layer_}};
}

void MultiHeadAttention::check_input_shape(const std::vector<Shape>& shapes) const {
  const char* names[] = {"query", "value", "key"};
  EMBER_CHECK(shapes.size() == 2 || shapes.size() == 3, InvalidArgument)
      << who() << ": expected {query, value} or {query, value, key}, got " << shapes.size() << " inputs";
  for (size_t i = 0; i < shapes.size(); ++i) {
    EMBER_CHECK(shapes[i].rank() <= 3, Unimplemented)
        << who() << ": attention over several axes (inputs of rank > 3) is not supported; got a " << names[i]
        << " of shape " << shapes[i].to_keras_string();
    EMBER_CHECK(shapes[i].rank() == 3 && shapes[i][2] > 0, InvalidArgument)
        << who() << ": expected a " << names[i] << " of shape (batch, length, features), got "
        << shapes[i].to_keras_string();
  }
  if (!built()) return;
  const std::vector<Shape>& b = build_input_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& built_as = b[std::min(i, b.size() - 1)];  // without a key, the key was built as the value
    EMBER_CHECK(shapes[i][2] == built_as[2], InvalidArgument)
        << who() << ": the layer was built for a " << names[i] << " with " << built_as[2] << " features, got shape "
        << shapes[i].to_keras_string();
  }
}

void MultiHeadAttention::build(const std::vector<Shape>& shapes) {
  check_input_shape(shapes);
  const Shape& q = shapes[0];
  const Shape& v = shapes[1];
  const Shape& k = shapes.size() > 2 ? shapes[2] : v;
  query_dense_->build_for({q});
  key_dense_->build_for({k});
  value_dense_->build_for({v});
  // The output projection's size is the query's features unless output_shape says otherwise.
  output_dense_->set_size(options_.output_shape.value_or(q[2]));
  output_dense_->build_for({Shape{-1, -1, num_heads_, value_dim()}});
}

Shape MultiHeadAttention::compute_output_shape(const std::vector<Shape>& shapes) {
  check_input_shape(shapes);
  return {shapes[0][0], shapes[0][1], options_.output_shape.value_or(shapes[0][2])};
}

std::optional<Tensor> MultiHeadAttention::compute_attention_mask(const Tensor& query, const Tensor& value,
                                                                 const AttentionCallOptions& c) {
  const int64_t b = query.shape()[0], t = query.shape()[1], s = value.shape()[1];
  mha_check_masks("MultiHeadAttention", c, b, t, s);
  std::optional<Tensor> mask;
  auto combine = [&](const Tensor& m) { mask = mask ? ops::logical_and(*mask, m) : m; };
  if (c.query_mask) combine(ops::expand_dims(mha_as_bool(*c.query_mask), -1));  // (b, t, 1)
  if (c.value_mask) combine(ops::expand_dims(mha_as_bool(*c.value_mask), -2));  // (b, 1, s)
  if (c.key_mask) combine(ops::expand_dims(mha_as_bool(*c.key_mask), -2));
  if (c.use_causal_mask) {
    // Keras's _compute_causal_mask: query i sees keys 0..i, aligned top-left.
    Tensor rows = ops::reshape(ops::range(0, static_cast<double>(t), 1, DType::Int32), {1, t, 1});
    Tensor cols = ops::reshape(ops::range(0, static_cast<double>(s), 1, DType::Int32), {1, 1, s});
    combine(ops::greater_equal(rows, cols));
  }
  if (c.attention_mask) combine(mha_as_bool(*c.attention_mask));
  return mask;
}

std::vector<Tensor> MultiHeadAttention::call_all(const std::vector<Tensor>& xs, bool training) {
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  check_input_shape(shapes);
  const Tensor& query = xs[0];
  const Tensor& value = xs[1];
  const Tensor& key = xs.size() > 2 ? xs[2] : value;
  EMBER_CHECK(query.shape()[0] == value.shape()[0] && key.shape()[0] == value.shape()[0] &&
                  key.shape()[1] == value.shape()[1],
              InvalidArgument)
      << who() << ": query " << query.shape().to_keras_string() << ", value " << value.shape().to_keras_string()
      << " and key " << key.shape().to_keras_string()
      << " must have one batch size, and key and value one length";
  const AttentionCallOptions c = from_call_kwargs(call_kwargs());
  const bool with_scores = call_kwargs().flag("return_attention_scores", false, who());
  ops::DotProductAttentionOptions o{.scale = 1.0 / std::sqrt(static_cast<double>(key_dim_))};
  // A causal mask alone is the attention op's own, which its fused kernel applies without a mask tensor.
  if (c.use_causal_mask && !c.query_mask && !c.value_mask && !c.key_mask && !c.attention_mask)
    o.is_causal = true;
  else if (std::optional<Tensor> m = compute_attention_mask(query, value, c))
    o.mask = ops::expand_dims(*m, 1);
  const Tensor q = (*query_dense_)(query, training);
  const Tensor k = (*key_dense_)(key, training);
  const Tensor v = (*value_dense_)(value, training);
  if (!with_scores && !(training && options_.dropout > 0))
    return {(*output_dense_)(ops::dot_product_attention(q, k, v, o), training)};
  // Keras's _compute_attention: the dropout acts on the attention weights, which are also the scores returned.
  const Tensor scores = ops::dot_product_attention_weights(q, k, o);
  const Tensor dropped = (*dropout_layer_)(scores, training);
  const Tensor heads = ops::transpose(ops::matmul(dropped, ops::transpose(v, {0, 2, 1, 3})), {0, 2, 1, 3});
  const Tensor out = (*output_dense_)(heads, training);
  if (with_scores) return {out, scores};
  return {out};
}

Tensor MultiHeadAttention::call(const std::vector<Tensor>& xs, bool training) { return call_all(xs, training).at(0); }

std::vector<Shape> MultiHeadAttention::compute_output_shapes(const std::vector<Shape>& shapes) {
  const Shape out = compute_output_shape(shapes);
  if (!call_kwargs().flag("return_attention_scores", false, who())) return {out};
  return {out, Shape{shapes[0][0], num_heads_, shapes[0][1], shapes[1][1]}};
}

void MultiHeadAttention::check_call_kwargs(const CallKwargs& kw, const std::vector<Shape>& shapes) const {
  kw.check_keys({"query_mask", "value_mask", "key_mask", "attention_mask", "use_causal_mask", "return_attention_scores"},
                who());
  kw.flag("return_attention_scores", false, who());
  const AttentionCallOptions c = from_call_kwargs(kw, who());
  if (shapes.size() < 2 || shapes[0].rank() != 3 || shapes[1].rank() != 3) return;  // check_input_shape reports these
  mha_check_masks(who(), c, shapes[0][0], shapes[0][1], shapes[1][1]);
}

CallKwargs MultiHeadAttention::to_call_kwargs(const AttentionCallOptions& c, bool return_attention_scores) {
  CallKwargs kw;
  if (c.query_mask) kw.set("query_mask", *c.query_mask);
  if (c.value_mask) kw.set("value_mask", *c.value_mask);
  if (c.key_mask) kw.set("key_mask", *c.key_mask);
  if (c.attention_mask) kw.set("attention_mask", *c.attention_mask);
  if (c.use_causal_mask) kw.set("use_causal_mask", true);
  if (return_attention_scores) kw.set("return_attention_scores", true);
  return kw;
}

AttentionCallOptions MultiHeadAttention::from_call_kwargs(const CallKwargs& kw, const std::string& who) {
  AttentionCallOptions c;
  c.query_mask = kw.tensor("query_mask", who);
  c.value_mask = kw.tensor("value_mask", who);
  c.key_mask = kw.tensor("key_mask", who);
  c.attention_mask = kw.tensor("attention_mask", who);
  c.use_causal_mask = kw.flag("use_causal_mask", false, who);
  return c;
}

namespace {
std::vector<Tensor> mha_inputs(const Tensor& query, const Tensor& value, const AttentionCallOptions& call) {
  std::vector<Tensor> xs{query, value};
  if (call.key) xs.push_back(*call.key);
  return xs;
}
}  // namespace

Tensor MultiHeadAttention::attend(const Tensor& query, const Tensor& value, const AttentionCallOptions& call) & {
  return call_outputs(mha_inputs(query, value, call), to_call_kwargs(call, false), call.training).at(0);
}

Tensor MultiHeadAttention::attend(const Tensor& query, const Tensor& value, const AttentionCallOptions& call) && {
  return std::move(*this).call_outputs(mha_inputs(query, value, call), to_call_kwargs(call, false), call.training).at(0);
}

std::pair<Tensor, Tensor> MultiHeadAttention::attend_with_scores(const Tensor& query, const Tensor& value,
                                                                 const AttentionCallOptions& call) & {
  std::vector<Tensor> out = call_outputs(mha_inputs(query, value, call), to_call_kwargs(call, true), call.training);
  return {out.at(0), out.at(1)};
}

std::pair<Tensor, Tensor> MultiHeadAttention::attend_with_scores(const Tensor& query, const Tensor& value,
                                                                 const AttentionCallOptions& call) && {
  std::vector<Tensor> out =
      std::move(*this).call_outputs(mha_inputs(query, value, call), to_call_kwargs(call, true), call.training);
  return {out.at(0), out.at(1)};
}

nlohmann::json MultiHeadAttention::get_config() const {
  nlohmann::json c = base_config();
  c["num_heads"] = num_heads_;
  c["key_dim"] = key_dim_;
  c["value_dim"] = value_dim();
  c["dropout"] = options_.dropout;
  c["use_bias"] = options_.use_bias;
  c["use_gate"] = false;
  c["output_shape"] = options_.output_shape ? nlohmann::json(*options_.output_shape) : nlohmann::json(nullptr);
  // As given (Keras writes (1,) once built; both mean the sequence axis here).
  c["attention_axes"] = options_.attention_axes.empty() ? nlohmann::json(nullptr) : nlohmann::json(options_.attention_axes);
  c["sliding_window"] = nullptr;
  c["kernel_initializer"] = options_.kernel_initializer.to_json();
  c["bias_initializer"] = options_.bias_initializer.to_json();
  c["kernel_regularizer"] = options_.kernel_regularizer.to_json();
  c["bias_regularizer"] = options_.bias_regularizer.to_json();
  c["activity_regularizer"] = nullptr;
  c["kernel_constraint"] = nullptr;
  c["bias_constraint"] = nullptr;
  c["seed"] = seed_to_config(options_.seed);
  return c;
}

LayerPtr MultiHeadAttention::from_config(const nlohmann::json& c) {
  using namespace ::ember::detail;
  LayerOptions base = options_from_config(c);
  const std::string who = "MultiHeadAttention '" + base.name + "'";
  MultiHeadAttentionOptions o;
  if (auto v = config_optional_int(c, "value_dim", who)) o.value_dim = *v;
  o.dropout = config_double(c, "dropout", 0.0, who);
  o.use_bias = config_bool(c, "use_bias", true, who);
  EMBER_CHECK(!config_bool(c, "use_gate", false, who), Unimplemented) << who << ": use_gate=True is not supported";
  for (const char* key : {"sliding_window", "activity_regularizer", "kernel_constraint", "bias_constraint"})
    EMBER_CHECK(!c.contains(key) || c[key].is_null(), Unimplemented)
        << who << ": config \"" << key << "\" is not supported (only null), got " << c[key].dump();
  if (c.contains("output_shape") && !c["output_shape"].is_null()) {
    const std::vector<int64_t> s = config_int_list(c, "output_shape", {}, who);
    EMBER_CHECK(s.size() == 1, Unimplemented)
        << who << ": only an integer output_shape is supported, got " << c["output_shape"].dump();
    o.output_shape = s[0];
  }
  if (c.contains("attention_axes") && !c["attention_axes"].is_null())
    o.attention_axes = config_int_list(c, "attention_axes", {}, who);
  if (c.contains("kernel_initializer")) o.kernel_initializer = Initializer::from_json(c["kernel_initializer"]);
  if (c.contains("bias_initializer")) o.bias_initializer = Initializer::from_json(c["bias_initializer"]);
  if (c.contains("kernel_regularizer")) o.kernel_regularizer = Regularizer::from_json(c["kernel_regularizer"]);
  if (c.contains("bias_regularizer")) o.bias_regularizer = Regularizer::from_json(c["bias_regularizer"]);
  o.seed = seed_from_config(c, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<MultiHeadAttention>(config_required_int(c, "num_heads", who),
                                              config_required_int(c, "key_dim", who), o);
}

EMBER_REGISTER_LAYER(MultiHeadAttention);

}  // namespace ember::layers
