// Layer converters: each Keras layer class as ONNX nodes (the forms tf2onnx gives Keras layers), read from the
// layer's Keras config and weights. Image layers compute in NHWC; ONNX's Conv and pooling take NCHW, so they
// are wrapped in transposes, which consecutive layers share (GraphBuilder::transpose).
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "framework/core/error.h"
#include "framework/export/onnx_builder.h"
#include "framework/model/layer.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"

namespace ember::onnx::detail {

namespace {

using nlohmann::json;

Unimplemented unsupported(const LayerCall& c, const std::string& why) {
  return make_error<Unimplemented>("ONNX export: layer '", c.layer.name(), "' (", c.layer.class_name(), ") ", why);
}

// A size option as n integers: an int repeats, a list is taken as it is, null or missing is `fallback`.
std::vector<int64_t> sizes(const json& c, const char* key, size_t n, const std::vector<int64_t>& fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (c[key].is_number_integer()) return std::vector<int64_t>(n, c[key].get<int64_t>());
  std::vector<int64_t> v = c[key].get<std::vector<int64_t>>();
  EMBER_CHECK(v.size() == n, InvalidArgument) << "ONNX export: config key \"" << key << "\" has " << v.size()
                                              << " values, expected " << n;
  return v;
}

bool channels_first(const json& c) { return c.value("data_format", std::string("channels_last")) == "channels_first"; }

// NHWC -> NCHW and back for `spatial` spatial axes.
std::vector<int64_t> to_channels_first(size_t spatial) {
  std::vector<int64_t> p{0, static_cast<int64_t>(spatial) + 1};
  for (size_t i = 1; i <= spatial; ++i) p.push_back(static_cast<int64_t>(i));
  return p;
}
std::vector<int64_t> to_channels_last(size_t spatial) {
  std::vector<int64_t> p{0};
  for (size_t i = 2; i <= spatial + 1; ++i) p.push_back(static_cast<int64_t>(i));
  p.push_back(1);
  return p;
}

std::string scalar(GraphBuilder& b, double v, const std::string& stem) {
  return b.floats({static_cast<float>(v)}, {}, stem);
}

std::string unary(GraphBuilder& b, const std::string& op, const std::string& x, const std::string& stem) {
  return b.add(op, {x}, stem);
}

// A Keras activation by name (keras.activations), applied to x.
std::string activation(GraphBuilder& b, const LayerCall& c, const std::string& name, const std::string& x) {
  const std::string stem = c.layer.name() + "/" + name;
  ::onnx::NodeProto* n = nullptr;
  if (name.empty() || name == "linear") return x;
  static const std::map<std::string, std::string> direct = {
      {"relu", "Relu"},        {"sigmoid", "Sigmoid"},   {"tanh", "Tanh"},         {"selu", "Selu"},
      {"softplus", "Softplus"}, {"softsign", "Softsign"}, {"exponential", "Exp"}, {"elu", "Elu"},
      {"celu", "Celu"}};
  if (auto it = direct.find(name); it != direct.end()) return unary(b, it->second, x, stem);
  if (name == "softmax" || name == "log_softmax") {
    const std::string out = b.add(name == "softmax" ? "Softmax" : "LogSoftmax", {x}, stem, &n);
    set_attr(n, "axis", int64_t{-1});
    return out;
  }
  if (name == "leaky_relu") {
    const std::string out = b.add("LeakyRelu", {x}, stem, &n);
    set_attr(n, "alpha", 0.2f);
    return out;
  }
  if (name == "relu6") return b.add("Clip", {x, scalar(b, 0, stem + "/min"), scalar(b, 6, stem + "/max")}, stem);
  if (name == "hard_tanh") return b.add("Clip", {x, scalar(b, -1, stem + "/min"), scalar(b, 1, stem + "/max")}, stem);
  if (name == "hard_sigmoid" || name == "hard_silu" || name == "hard_swish") {
    // Keras: relu6(x + 3) / 6.
    std::string h = b.add("HardSigmoid", {x}, stem, &n);
    set_attr(n, "alpha", static_cast<float>(1.0 / 6.0));
    set_attr(n, "beta", 0.5f);
    return name == "hard_sigmoid" ? h : b.add("Mul", {x, h}, stem);
  }
  if (name == "silu" || name == "swish") return b.add("Mul", {x, unary(b, "Sigmoid", x, stem)}, stem);
  if (name == "mish") return b.add("Mul", {x, unary(b, "Tanh", unary(b, "Softplus", x, stem), stem)}, stem);
  if (name == "log_sigmoid") return unary(b, "Neg", unary(b, "Softplus", unary(b, "Neg", x, stem), stem), stem);
  if (name == "tanh_shrink") return b.add("Sub", {x, unary(b, "Tanh", x, stem)}, stem);
  if (name == "gelu") {  // Keras's default, approximate=False: x/2 (1 + erf(x / sqrt 2)); Gelu is opset 20
    const std::string e = unary(b, "Erf", b.add("Div", {x, scalar(b, std::sqrt(2.0), stem + "/sqrt2")}, stem), stem);
    const std::string one_plus = b.add("Add", {e, scalar(b, 1, stem + "/one")}, stem);
    return b.add("Mul", {b.add("Mul", {x, one_plus}, stem), scalar(b, 0.5, stem + "/half")}, stem);
  }
  throw unsupported(c, "uses the activation \"" + name + "\", which has no ONNX conversion");
}

std::string config_activation(GraphBuilder& b, const LayerCall& c, const std::string& x) {
  return activation(b, c, c.config.value("activation", std::string("linear")), x);
}

std::string x_of(const LayerCall& c) { return c.inputs[0].name; }

int64_t positive_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// --- converters ---

std::string dense(GraphBuilder& b, const LayerCall& c) {
  const std::string& name = c.layer.name();
  std::string y = b.add("MatMul", {c.inputs[0].name, b.weight(layer_weight(c.layer, "kernel"), name + "/kernel")},
                        name + "/MatMul");
  const Tensor bias = layer_weight(c.layer, "bias");
  if (bias.defined()) y = b.add("Add", {y, b.weight(bias, name + "/bias")}, name + "/BiasAdd");
  return config_activation(b, c, y);
}

// Conv1D/2D/3D, DepthwiseConv2D, SeparableConv2D (a depthwise then a pointwise convolution).
std::string conv(GraphBuilder& b, const LayerCall& c) {
  const std::string& name = c.layer.name();
  const std::string& cls = c.layer.class_name();
  const size_t spatial = static_cast<size_t>(c.inputs[0].shape.rank() - 2);
  const bool cf = channels_first(c.config);
  std::string x = cf ? c.inputs[0].name : b.transpose(c.inputs[0].name, to_channels_first(spatial), name + "/to_nchw");
  const std::string padding = c.config.value("padding", std::string("valid"));
  const std::vector<int64_t> ones(spatial, 1);
  const std::vector<int64_t> strides = sizes(c.config, "strides", spatial, ones);
  const std::vector<int64_t> dilations = sizes(c.config, "dilation_rate", spatial, ones);
  const int64_t in_channels = c.inputs[0].shape[cf ? 1 : static_cast<int64_t>(spatial) + 1];

  // Keras kernels are (k..., in / groups, out); ONNX's (out, in / groups, k...).
  std::vector<int64_t> kernel_perm{static_cast<int64_t>(spatial) + 1, static_cast<int64_t>(spatial)};
  for (size_t i = 0; i < spatial; ++i) kernel_perm.push_back(static_cast<int64_t>(i));
  auto add_conv = [&](const std::string& in, Tensor kernel, const Tensor& bias, int64_t group, bool pointwise,
                      const std::string& stem) {
    const std::vector<int64_t> dims = kernel.shape().dims();
    const std::vector<int64_t> kernel_shape(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(spatial));
    std::vector<std::string> inputs{in, b.weight(ops::transpose(kernel, kernel_perm), stem + "/kernel")};
    if (bias.defined()) inputs.push_back(b.weight(bias, stem + "/bias"));
    ::onnx::NodeProto* n = nullptr;
    const std::string out = b.add("Conv", inputs, stem, &n);
    set_attr(n, "kernel_shape", kernel_shape);
    set_attr(n, "group", group);
    if (pointwise) return out;
    set_attr(n, "strides", strides);
    set_attr(n, "dilations", dilations);
    if (padding == "same") {
      set_attr(n, "auto_pad", std::string("SAME_UPPER"));  // TF's SAME: the odd pixel goes at the end
    } else if (padding == "causal") {                       // Keras pads the start by dilation * (k - 1)
      std::vector<int64_t> pads(2 * spatial, 0);
      for (size_t i = 0; i < spatial; ++i) pads[i] = dilations[i] * (kernel_shape[i] - 1);
      set_attr(n, "pads", pads);
    }
    return out;
  };
  // A depthwise kernel (k..., in, multiplier) is the grouped kernel (k..., 1, in * multiplier), groups = in.
  auto depthwise_as_grouped = [&](const Tensor& k) {
    const std::vector<int64_t> kd = k.shape().dims();
    std::vector<int64_t> dims(kd.begin(), kd.begin() + static_cast<std::ptrdiff_t>(spatial));
    dims.push_back(1);
    dims.push_back(k.shape()[static_cast<int64_t>(spatial)] * k.shape()[static_cast<int64_t>(spatial) + 1]);
    return ops::reshape(k, Shape(dims));
  };
  const Tensor bias = layer_weight(c.layer, "bias");
  std::string y;
  if (cls == "DepthwiseConv2D") {
    y = add_conv(x, depthwise_as_grouped(layer_weight(c.layer, "kernel")), bias, in_channels, false, name + "/Conv");
  } else if (cls == "SeparableConv2D") {
    y = add_conv(x, depthwise_as_grouped(layer_weight(c.layer, "depthwise_kernel")), Tensor(), in_channels, false,
                 name + "/depthwise");
    y = add_conv(y, layer_weight(c.layer, "pointwise_kernel"), bias, 1, true, name + "/pointwise");
  } else {
    y = add_conv(x, layer_weight(c.layer, "kernel"), bias, c.config.value("groups", int64_t{1}), false, name + "/Conv");
  }
  // An elementwise activation runs before the transpose back, so that a following convolution or pooling
  // layer finds its NCHW input already there (softmax, over the channels, runs after).
  const std::string act = c.config.value("activation", std::string("linear"));
  const bool elementwise = act != "softmax" && act != "log_softmax";
  if (elementwise) y = activation(b, c, act, y);
  if (!cf) y = b.transpose(y, to_channels_last(spatial), name + "/to_nhwc");
  return elementwise ? y : activation(b, c, act, y);
}

// MaxPooling1D/2D/3D, AveragePooling1D/2D/3D.
std::string pooling(GraphBuilder& b, const LayerCall& c) {
  const std::string& name = c.layer.name();
  const size_t spatial = static_cast<size_t>(c.inputs[0].shape.rank() - 2);
  const bool cf = channels_first(c.config);
  const std::string x = cf ? c.inputs[0].name : b.transpose(c.inputs[0].name, to_channels_first(spatial), name + "/to_nchw");
  const std::vector<int64_t> pool = sizes(c.config, "pool_size", spatial, std::vector<int64_t>(spatial, 2));
  const bool max = c.layer.class_name().rfind("Max", 0) == 0;
  ::onnx::NodeProto* n = nullptr;
  std::string y = b.add(max ? "MaxPool" : "AveragePool", {x}, name + (max ? "/MaxPool" : "/AveragePool"), &n);
  set_attr(n, "kernel_shape", pool);
  set_attr(n, "strides", sizes(c.config, "strides", spatial, pool));
  // TF's SAME pads the odd pixel at the end, and its average leaves the padding out (count_include_pad 0).
  if (c.config.value("padding", std::string("valid")) == "same") set_attr(n, "auto_pad", std::string("SAME_UPPER"));
  return cf ? y : b.transpose(y, to_channels_last(spatial), name + "/to_nhwc");
}

std::string global_pooling(GraphBuilder& b, const LayerCall& c) {
  const int64_t spatial = c.inputs[0].shape.rank() - 2;
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < spatial; ++i) axes.push_back(i + (channels_first(c.config) ? 2 : 1));
  const bool max = c.layer.class_name().rfind("GlobalMax", 0) == 0;
  ::onnx::NodeProto* n = nullptr;
  const std::string y = b.add(max ? "ReduceMax" : "ReduceMean", {c.inputs[0].name}, c.layer.name() + "/Reduce", &n);
  set_attr(n, "axes", axes);
  set_attr(n, "keepdims", int64_t{c.config.value("keepdims", false) ? 1 : 0});
  return y;
}

// Inference-mode batch normalization folded into x * scale + shift, per channel of `axis`.
std::string batch_normalization(GraphBuilder& b, const LayerCall& c) {
  const std::string& name = c.layer.name();
  const int64_t rank = c.inputs[0].shape.rank();
  const json& axis_json = c.config.value("axis", json(-1));
  const int64_t axis = positive_axis(axis_json.is_array() ? axis_json.at(0).get<int64_t>() : axis_json.get<int64_t>(), rank);
  EMBER_CHECK(!axis_json.is_array() || axis_json.size() == 1, Unimplemented)
      << "ONNX export: layer '" << name << "' (BatchNormalization) normalizes over several axes";
  auto host = [&](const char* w) -> std::vector<double> {
    Tensor t = layer_weight(c.layer, w);
    if (!t.defined()) return {};
    t = ops::cast(t.to(Device::cpu()), DType::Float64);
    return t.to_vector<double>();
  };
  const std::vector<double> mean = host("moving_mean"), var = host("moving_variance");
  const std::vector<double> gamma = host("gamma"), beta = host("beta");
  const double eps = c.config.value("epsilon", 1e-3);
  std::vector<float> scale(mean.size()), shift(mean.size());
  for (size_t i = 0; i < mean.size(); ++i) {
    const double s = (gamma.empty() ? 1.0 : gamma[i]) / std::sqrt(var[i] + eps);
    scale[i] = static_cast<float>(s);
    shift[i] = static_cast<float>((beta.empty() ? 0.0 : beta[i]) - mean[i] * s);
  }
  std::vector<int64_t> dims(static_cast<size_t>(rank), 1);
  dims[static_cast<size_t>(axis)] = static_cast<int64_t>(mean.size());
  const std::string y = b.add("Mul", {c.inputs[0].name, b.floats(scale, dims, name + "/scale")}, name + "/Mul");
  return b.add("Add", {y, b.floats(shift, dims, name + "/shift")}, name + "/Add");
}

std::string layer_normalization(GraphBuilder& b, const LayerCall& c) {
  const std::string& name = c.layer.name();
  const int64_t rank = c.inputs[0].shape.rank();
  if (c.config.value("rms_scaling", false)) throw unsupported(c, "uses rms_scaling, which has no ONNX conversion");
  if (b.opset() < 17) throw unsupported(c, "needs opset 17 (ONNX's LayerNormalization), got " + std::to_string(b.opset()));
  const json& a = c.config.value("axis", json(-1));
  std::vector<int64_t> axes = a.is_array() ? a.get<std::vector<int64_t>>() : std::vector<int64_t>{a.get<int64_t>()};
  std::set<int64_t> sorted;
  for (int64_t x : axes) sorted.insert(positive_axis(x, rank));
  // ONNX normalizes over the trailing axes from `axis` on.
  const int64_t first = *sorted.begin();
  if (*sorted.rbegin() != rank - 1 || static_cast<int64_t>(sorted.size()) != rank - first)
    throw unsupported(c, "normalizes over axes that are not the trailing ones, which ONNX's LayerNormalization needs");
  std::vector<int64_t> norm_dims;
  int64_t count = 1;
  for (int64_t i = first; i < rank; ++i) {
    norm_dims.push_back(c.inputs[0].shape[i]);
    count *= c.inputs[0].shape[i];
  }
  const Tensor gamma = layer_weight(c.layer, "gamma"), beta = layer_weight(c.layer, "beta");
  std::vector<std::string> inputs{c.inputs[0].name};
  inputs.push_back(gamma.defined() ? b.weight(ops::reshape(gamma, Shape(norm_dims)), name + "/gamma")
                                   : b.floats(std::vector<float>(static_cast<size_t>(count), 1.0f), norm_dims, name + "/gamma"));
  if (beta.defined()) inputs.push_back(b.weight(ops::reshape(beta, Shape(norm_dims)), name + "/beta"));
  ::onnx::NodeProto* n = nullptr;
  const std::string y = b.add("LayerNormalization", inputs, name + "/LayerNormalization", &n);
  set_attr(n, "axis", first);
  set_attr(n, "epsilon", static_cast<float>(c.config.value("epsilon", 1e-3)));
  return y;
}

std::string embedding(GraphBuilder& b, const LayerCall& c) {
  const std::string& name = c.layer.name();
  if (c.config.value("mask_zero", false))
    throw unsupported(c, "has mask_zero=True: an ONNX graph carries no Keras masks");
  std::string ids = c.inputs[0].name;
  if (is_floating(c.inputs[0].dtype)) {  // Keras casts float ids to int32
    ::onnx::NodeProto* n = nullptr;
    ids = b.add("Cast", {ids}, name + "/ids", &n);
    set_attr(n, "to", int64_t{::onnx::TensorProto::INT64});
  }
  return b.add("Gather", {b.weight(layer_weight(c.layer, "embeddings"), name + "/embeddings"), ids}, name + "/Gather");
}

std::string merge(GraphBuilder& b, const LayerCall& c) {
  static const std::map<std::string, std::string> ops = {{"Add", "Sum"}, {"Subtract", "Sub"},  {"Multiply", "Mul"},
                                                          {"Average", "Mean"}, {"Maximum", "Max"}, {"Minimum", "Min"}};
  const std::string& cls = c.layer.class_name();
  std::vector<std::string> xs;
  for (const Value& v : c.inputs) xs.push_back(v.name);
  ::onnx::NodeProto* n = nullptr;
  if (cls == "Concatenate") {
    const std::string y = b.add("Concat", xs, c.layer.name() + "/Concat", &n);
    set_attr(n, "axis", c.config.value("axis", int64_t{-1}));
    return y;
  }
  const std::string& op = ops.at(cls);
  if (op == "Sub" || op == "Mul") {  // binary ops: a chain
    std::string y = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) y = b.add(op, {y, xs[i]}, c.layer.name() + "/" + op);
    return y;
  }
  return b.add(op, xs, c.layer.name() + "/" + op);
}

std::string relu_layer(GraphBuilder& b, const LayerCall& c) {
  const std::string& name = c.layer.name();
  if (c.config.value("threshold", 0.0) != 0.0) throw unsupported(c, "has a nonzero threshold, which has no ONNX conversion");
  const double slope = c.config.value("negative_slope", 0.0);
  ::onnx::NodeProto* n = nullptr;
  std::string y;
  if (slope != 0.0) {
    y = b.add("LeakyRelu", {c.inputs[0].name}, name + "/LeakyRelu", &n);
    set_attr(n, "alpha", static_cast<float>(slope));
  } else {
    y = b.add("Relu", {c.inputs[0].name}, name + "/Relu");
  }
  if (c.config.contains("max_value") && !c.config["max_value"].is_null())
    y = b.add("Min", {y, scalar(b, c.config["max_value"].get<double>(), name + "/max_value")}, name + "/Min");
  return y;
}

std::string with_attr_alpha(GraphBuilder& b, const LayerCall& c, const std::string& op, const char* key, double fallback) {
  ::onnx::NodeProto* n = nullptr;
  const std::string y = b.add(op, {x_of(c)}, c.layer.name() + "/" + op, &n);
  set_attr(n, "alpha", static_cast<float>(c.config.value(key, fallback)));
  return y;
}

std::string softmax_layer(GraphBuilder& b, const LayerCall& c) {
  const json& a = c.config.value("axis", json(-1));
  if (a.is_array() && a.size() != 1) throw unsupported(c, "takes the softmax over several axes");
  ::onnx::NodeProto* n = nullptr;
  const std::string y = b.add("Softmax", {x_of(c)}, c.layer.name() + "/Softmax", &n);
  set_attr(n, "axis", a.is_array() ? a[0].get<int64_t>() : a.get<int64_t>());
  return y;
}

std::string rescaling(GraphBuilder& b, const LayerCall& c) {
  const std::string& name = c.layer.name();
  std::string x = x_of(c);
  if (!is_floating(c.inputs[0].dtype)) {  // integer images come out floating
    ::onnx::NodeProto* n = nullptr;
    x = b.add("Cast", {x}, name + "/Cast", &n);
    set_attr(n, "to", int64_t{::onnx::TensorProto::FLOAT});
  }
  if (!c.config["scale"].is_number() || !c.config.value("offset", json(0.0)).is_number())
    throw unsupported(c, "has a per-channel scale or offset");
  const std::string y = b.add("Mul", {x, scalar(b, c.config["scale"].get<double>(), name + "/scale")}, name + "/Mul");
  return b.add("Add", {y, scalar(b, c.config.value("offset", 0.0), name + "/offset")}, name + "/Add");
}

// ZeroPadding2D's and Cropping2D's ((top, bottom), (left, right)) from an int, [h, w] or [[t, b], [l, r]].
std::array<int64_t, 4> four_sides(const json& p) {
  if (p.is_number_integer()) return {p.get<int64_t>(), p.get<int64_t>(), p.get<int64_t>(), p.get<int64_t>()};
  if (p[0].is_number_integer())
    return {p[0].get<int64_t>(), p[0].get<int64_t>(), p[1].get<int64_t>(), p[1].get<int64_t>()};
  return {p[0][0].get<int64_t>(), p[0][1].get<int64_t>(), p[1][0].get<int64_t>(), p[1][1].get<int64_t>()};
}

std::string zero_padding2d(GraphBuilder& b, const LayerCall& c) {
  const auto [t, bo, l, r] = four_sides(c.config.value("padding", json(1)));
  const std::vector<int64_t> pads = channels_first(c.config) ? std::vector<int64_t>{0, 0, t, l, 0, 0, bo, r}
                                                             : std::vector<int64_t>{0, t, l, 0, 0, bo, r, 0};
  return b.add("Pad", {x_of(c), b.int64s(pads, c.layer.name() + "/pads")}, c.layer.name() + "/Pad");
}

std::string cropping2d(GraphBuilder& b, const LayerCall& c) {
  const auto [t, bo, l, r] = four_sides(c.config.value("cropping", json(0)));
  const int64_t h = channels_first(c.config) ? 2 : 1;
  auto end = [](int64_t crop) { return crop == 0 ? std::numeric_limits<int64_t>::max() : -crop; };
  const std::string& name = c.layer.name();
  return b.add("Slice", {x_of(c), b.int64s({t, l}, name + "/starts"), b.int64s({end(bo), end(r)}, name + "/ends"),
                         b.int64s({h, h + 1}, name + "/axes")},
               name + "/Slice");
}

std::string reshape(GraphBuilder& b, const LayerCall& c) {
  std::vector<int64_t> shape{0};  // 0: the batch dimension, copied
  for (int64_t d : c.config.at("target_shape").get<std::vector<int64_t>>()) shape.push_back(d);
  return b.add("Reshape", {x_of(c), b.int64s(shape, c.layer.name() + "/shape")}, c.layer.name() + "/Reshape");
}

std::string flatten(GraphBuilder& b, const LayerCall& c) {
  std::string x = x_of(c);
  const int64_t rank = c.inputs[0].shape.rank();
  if (channels_first(c.config) && rank > 2)  // Keras moves the channels last first
    x = b.transpose(x, to_channels_last(static_cast<size_t>(rank - 2)), c.layer.name() + "/to_nhwc");
  ::onnx::NodeProto* n = nullptr;
  const std::string y = b.add("Flatten", {x}, c.layer.name() + "/Flatten", &n);
  set_attr(n, "axis", int64_t{1});
  return y;
}

std::string permute(GraphBuilder& b, const LayerCall& c) {
  std::vector<int64_t> perm{0};
  for (int64_t d : c.config.at("dims").get<std::vector<int64_t>>()) perm.push_back(d);
  return b.transpose(x_of(c), perm, c.layer.name() + "/Transpose");
}

std::string prelu(GraphBuilder& b, const LayerCall& c) {
  return b.add("PRelu", {x_of(c), b.weight(layer_weight(c.layer, "alpha"), c.layer.name() + "/alpha")},
               c.layer.name() + "/PRelu");
}

using Converter = std::function<std::string(GraphBuilder&, const LayerCall&)>;

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> table = [] {
    std::map<std::string, Converter> t;
    t["Dense"] = dense;
    for (const char* k : {"Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2D", "SeparableConv2D"}) t[k] = conv;
    for (const char* k : {"MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D", "AveragePooling2D",
                          "AveragePooling3D"})
      t[k] = pooling;
    for (const char* k : {"GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D",
                          "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D"})
      t[k] = global_pooling;
    t["BatchNormalization"] = batch_normalization;
    t["LayerNormalization"] = layer_normalization;
    t["Embedding"] = embedding;
    for (const char* k : {"Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate"}) t[k] = merge;
    t["Activation"] = [](GraphBuilder& b, const LayerCall& c) { return config_activation(b, c, x_of(c)); };
    t["ReLU"] = relu_layer;
    t["LeakyReLU"] = [](GraphBuilder& b, const LayerCall& c) { return with_attr_alpha(b, c, "LeakyRelu", "negative_slope", 0.3); };
    t["ELU"] = [](GraphBuilder& b, const LayerCall& c) { return with_attr_alpha(b, c, "Elu", "alpha", 1.0); };
    t["Softmax"] = softmax_layer;
    t["PReLU"] = prelu;
    t["Rescaling"] = rescaling;
    t["ZeroPadding2D"] = zero_padding2d;
    t["Cropping2D"] = cropping2d;
    t["Reshape"] = reshape;
    t["Flatten"] = flatten;
    t["Permute"] = permute;
    // Layers that pass their input through at inference (Keras's predict runs with training=False).
    for (const char* k : {"Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise",
                          "GaussianDropout", "AlphaDropout", "ActivityRegularization", "RandomFlip",
                          "RandomRotation", "RandomTranslation", "RandomZoom", "RandomContrast", "RandomBrightness"})
      t[k] = [](GraphBuilder&, const LayerCall& c) { return x_of(c); };
    return t;
  }();
  return table;
}

}  // namespace

std::string convert_layer(GraphBuilder& b, const LayerCall& call) {
  auto it = converters().find(call.layer.class_name());
  if (it == converters().end()) throw unsupported(call, "has no ONNX conversion");
  return it->second(b, call);
}

}  // namespace ember::onnx::detail
