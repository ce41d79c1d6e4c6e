// Every layer class, traced: ember::function without jit_compile must give eager's bits for the forward
// output, the gradients (w.r.t. the inputs and the trainable weights) and the state the call leaves behind
// (BatchNormalization's moving statistics, seeded Dropout's mask sequence), call after call.
//
// Each case makes two layers from one seed, one run eagerly and one inside ember::function, and calls both
// on the same inputs (different values on each call), with random::set_seed the same before each sequence,
// so the global random sequence (unseeded Dropout) must be consumed as eager consumes it. Between calls every
// weight of both layers is changed the same way, as an optimizer step would: a replay must read the new values.
// Each case runs with a GradientTape (forward and gradients) and without one (the forward pass alone).
// The table of cases must name every registered layer class: a new EMBER_REGISTER_LAYER without a case here
// fails the coverage test.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "layers/layers.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

constexpr uint64_t kInitSeed = 1234;  // before making each of the two layers: the same initial weights
constexpr uint64_t kRunSeed = 42;     // before each of the eager and the traced sequences of calls

struct LayerCase {
  std::string class_name;  // the registered class this case covers (checked against the layer's class_name())
  std::string label;
  std::function<LayerPtr()> make;
  std::vector<Shape> input_shapes;  // with the batch dimension
  bool training = false;
  bool list_input = false;  // call with a list of inputs (merge layers, multi-input models)
  DType input_dtype = DType::Float32;
  int64_t index_limit = 0;  // integer inputs: values in [0, index_limit)
  bool build_first = true;  // false: the layer builds on its first call (inside the trace for the traced one)
  int calls = 3;
};

template <class L, class... A>
LayerPtr make_layer(A&&... a) {
  return std::make_shared<L>(std::forward<A>(a)...);
}

Tensor input_values(const LayerCase& c, const Shape& shape, uint32_t seed) {
  std::vector<double> v = uniform_values(shape.num_elements(), seed);
  if (c.input_dtype == DType::Int32 || c.input_dtype == DType::Int64) {
    for (double& x : v) x = std::floor((x + 1) / 2 * static_cast<double>(c.index_limit));
  } else {
    for (double& x : v) x *= 2;  // [-2, 2): past ReLU's ceiling and threshold, both sides of zero
  }
  return make(v, shape, c.input_dtype);
}

std::vector<char> bytes_of(const Tensor& t) {
  const Tensor h = t.to(Device::cpu());
  const char* p = static_cast<const char*>(h.raw_data());
  return std::vector<char>(p, p + h.nbytes());
}

// memcmp equality; a failure says how many elements differ and by how much.
void check_bitwise(const Tensor& eager, const Tensor& traced, const std::string& what) {
  INFO(what);
  REQUIRE(eager.defined() == traced.defined());
  if (!eager.defined()) return;
  CHECK(eager.dtype() == traced.dtype());
  CHECK(eager.shape() == traced.shape());
  if (eager.dtype() != traced.dtype() || eager.shape() != traced.shape()) return;
  const std::vector<char> a = bytes_of(eager), b = bytes_of(traced);
  if (a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0) {
    SUCCEED();
    return;
  }
  const std::vector<double> x = values_as_double(eager), y = values_as_double(traced);
  int64_t differ = 0;
  double worst = 0;
  std::ostringstream first;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::memcmp(static_cast<const char*>(a.data()) + i * dtype_size(eager.dtype()),
                    static_cast<const char*>(b.data()) + i * dtype_size(eager.dtype()), dtype_size(eager.dtype())) == 0)
      continue;
    if (differ < 4) first << "\n  [" << i << "] eager " << x[i] << ", traced " << y[i];
    ++differ;
    worst = std::max(worst, std::abs(x[i] - y[i]));
  }
  FAIL_CHECK("not bitwise equal: " << differ << " of " << x.size() << " elements differ (largest difference "
                                   << worst << ")" << first.str());
}

// One call: y = layer(xs, training), then (with_tape) the gradients of sum(y * w) w.r.t. the floating inputs
// and the layer's trainable weights. Returns y followed by the gradients.
std::vector<Tensor> forward_backward(Layer& layer, const LayerCase& c, const std::vector<Tensor>& xs, const Tensor& w,
                                     bool with_tape) {
  if (!with_tape) return {c.list_input ? layer(xs, c.training) : layer(xs.at(0), c.training)};
  GradientTape tape;
  std::vector<Tensor> sources;
  for (const Tensor& x : xs) {
    if (!is_floating(x.dtype())) continue;
    tape.watch(x);
    sources.push_back(x);
  }
  Tensor y = c.list_input ? layer(xs, c.training) : layer(xs.at(0), c.training);
  Tensor loss = ops::reduce_sum(ops::cast(y, DType::Float32) * w);
  // After the call: a layer built by it has its weights only now.
  for (const Variable& v : layer.trainable_weights()) sources.push_back(v.value());
  std::vector<Tensor> out{y};
  for (Tensor& g : tape.gradient(loss, sources, {.unconnected_gradients = UnconnectedGradients::Zero}))
    out.push_back(std::move(g));
  return out;
}

std::string output_name(const Layer& layer, size_t n_float_inputs, size_t i) {
  if (i == 0) return "forward output";
  if (i <= n_float_inputs) return "gradient w.r.t. input " + std::to_string(i - 1);
  const std::vector<Variable> vars = layer.trainable_weights();
  const size_t k = i - 1 - n_float_inputs;
  return "gradient w.r.t. " + (k < vars.size() ? vars[k].name() : "weight " + std::to_string(k));
}

// Changes every weight between calls, as an optimizer step would (and BatchNormalization's moving statistics
// too): the traced function must read the new values, not the ones it traced with.
void nudge_weights(Layer& layer) {
  for (Variable& v : layer.weights()) v.assign(v.value() * 0.75 + 0.125);
}

LayerPtr make_for(const LayerCase& c) {
  random::set_seed(kInitSeed);
  LayerPtr layer = c.make();
  if (c.build_first) {
    std::vector<Shape> shapes;
    for (Shape s : c.input_shapes) {
      s[0] = -1;
      shapes.push_back(s);
    }
    if (!layer->built()) layer->build_for(shapes);
  }
  return layer;
}

// with_tape: the forward pass and the gradients; otherwise the forward pass alone, with no tape recording
// (predict's path: mixed-precision layers may reuse a cached cast of a weight there).
void run_case(const LayerCase& c, bool with_tape) {
  INFO(c.label << (c.training ? " (training)" : " (inference)") << (with_tape ? "" : ", no tape"));
  LayerPtr eager = make_for(c), traced = make_for(c), probe = make_for(c);
  CHECK(eager->class_name() == c.class_name);
  {
    // Sanity: the two start from the same weights.
    const std::vector<Variable> a = eager->weights(), b = traced->weights();
    REQUIRE(a.size() == b.size());
    for (size_t k = 0; k < a.size(); ++k) CHECK(bytes_of(a[k].value()) == bytes_of(b[k].value()));
  }

  std::vector<std::vector<Tensor>> xs(static_cast<size_t>(c.calls));
  std::vector<Tensor> ws;
  size_t n_float_inputs = 0;
  for (int i = 0; i < c.calls; ++i) {
    for (size_t k = 0; k < c.input_shapes.size(); ++k)
      xs[i].push_back(input_values(c, c.input_shapes[k], static_cast<uint32_t>(100 * i + k + 1)));
  }
  for (const Tensor& x : xs[0]) n_float_inputs += is_floating(x.dtype()) ? 1 : 0;
  {
    // The loss weights' shape: from a third layer's output, so the compared two are untouched.
    Tensor y = c.list_input ? (*probe)(xs[0], c.training) : (*probe)(xs[0].at(0), c.training);
    for (int i = 0; i < c.calls; ++i)
      ws.push_back(make(uniform_values(y.shape().num_elements(), static_cast<uint32_t>(7000 + i)), y.shape(),
                        DType::Float32));
  }

  // Eager sequence: outputs and every weight's bytes after each call.
  std::vector<std::vector<Tensor>> eager_outs;
  std::vector<std::vector<std::vector<char>>> eager_state;
  random::set_seed(kRunSeed);
  for (int i = 0; i < c.calls; ++i) {
    eager_outs.push_back(forward_backward(*eager, c, xs[i], ws[i], with_tape));
    std::vector<std::vector<char>> state;
    for (const Variable& v : eager->weights()) state.push_back(bytes_of(v.value()));
    eager_state.push_back(std::move(state));
    nudge_weights(*eager);
  }

  auto step = ember::function([&](const std::vector<Tensor>& x, const Tensor& w) {
    return forward_backward(*traced, c, x, w, with_tape);
  });
  random::set_seed(kRunSeed);
  for (int i = 0; i < c.calls; ++i) {
    INFO("call " << i << (i == 0 ? " (traces)" : " (replays)"));
    std::vector<Tensor> outs;
    try {
      outs = step(xs[i], ws[i]);
    } catch (const std::exception& e) {
      FAIL_CHECK("the traced call threw: " << e.what());
      return;
    }
    REQUIRE(outs.size() == eager_outs[i].size());
    for (size_t k = 0; k < outs.size(); ++k)
      check_bitwise(eager_outs[i][k], outs[k], output_name(*traced, n_float_inputs, k));
    const std::vector<Variable> vars = traced->weights();
    REQUIRE(vars.size() == eager_state[i].size());
    for (size_t k = 0; k < vars.size(); ++k) {
      INFO("weight " << vars[k].name() << " after the call");
      CHECK(bytes_of(vars[k].value()) == eager_state[i][k]);
    }
    nudge_weights(*traced);
  }
  CHECK(step.tracing_count() == 1);
}

// A subclassed model (Keras: class M(keras.Model)), whose class name is "Model".
class MlpModel : public Model {
 public:
  MlpModel() : Model(ModelOptions{}) {}
  Tensor call(const Tensor& x, bool training) override {
    return out_(drop_(norm_(hidden_(x), training), training), training);
  }

 private:
  layers::Dense hidden_{8, {.activation = "tanh"}};
  layers::LayerNormalization norm_{};
  layers::Dropout drop_{0.25, {.seed = 3}};
  layers::Dense out_{3};
};

// Both modes of a case: inference and training.
void both(std::vector<LayerCase>& cases, LayerCase c) {
  c.training = false;
  cases.push_back(c);
  c.training = true;
  cases.push_back(std::move(c));
}

std::vector<LayerCase> all_cases() {
  using namespace layers;
  std::vector<LayerCase> cs;
  const Shape image{2, 7, 6, 4};

  // --- core ---
  both(cs, {"Dense", "Dense(5)", [] { return make_layer<Dense>(5); }, {{4, 6}}});
  cs.push_back({"Dense", "Dense(4, relu, no bias) on rank 3", [] {
                  return make_layer<Dense>(4, DenseOptions{.activation = "relu", .use_bias = false});
                }, {{2, 3, 6}}});
  cs.push_back({"Dense", "Dense(5, tanh) mixed_bfloat16",
                [] { return make_layer<Dense>(5, DenseOptions{.activation = "tanh", .dtype = "mixed_bfloat16"}); },
                {{4, 6}}, true});
  cs.push_back({"Dense", "Dense(5, gelu) mixed_float16",
                [] { return make_layer<Dense>(5, DenseOptions{.activation = "gelu", .dtype = "mixed_float16"}); },
                {{4, 6}}, true});
  cs.push_back({"Dense", "Dense(5) built by its first call (inside the trace)", [] { return make_layer<Dense>(5); },
                {{4, 6}}, true, false, DType::Float32, 0, /*build_first=*/false});
  for (const std::string& a : activations::names())
    cs.push_back({"Activation", "Activation(" + a + ")", [a] { return make_layer<Activation>(a); }, {{3, 5}}});
  both(cs, {"Embedding", "Embedding(10, 4) on int32", [] { return make_layer<Embedding>(10, 4); }, {{3, 5}}, false,
            false, DType::Int32, 10});
  cs.push_back({"Embedding", "Embedding(10, 4, mask_zero) on int64",
                [] { return make_layer<Embedding>(10, 4, EmbeddingOptions{.mask_zero = true}); }, {{3, 5}}, true, false,
                DType::Int64, 10});
  cs.push_back({"Embedding", "Embedding(10, 4) mixed_bfloat16",
                [] { return make_layer<Embedding>(10, 4, EmbeddingOptions{.dtype = "mixed_bfloat16"}); }, {{3, 5}},
                true, false, DType::Int32, 10});
  cs.push_back({"InputLayer", "InputLayer((None, 5)) called directly",
                [] { return make_layer<InputLayer>(Shape{-1, 5}); }, {{3, 5}}});

  // --- convolution and pooling ---
  both(cs, {"Conv2D", "Conv2D(3, 3)", [] { return make_layer<Conv2D>(3, 3); }, {image}});
  cs.push_back({"Conv2D", "Conv2D(4, 3, strides 2, same, relu)", [] {
                  return make_layer<Conv2D>(4, 3, Conv2DOptions{.strides = 2, .padding = "same", .activation = "relu"});
                }, {image}, true});
  cs.push_back({"Conv2D", "Conv2D(2, (2, 3), dilation 2, groups 2, no bias)", [] {
                  return make_layer<Conv2D>(
                      2, Size2(2, 3), Conv2DOptions{.dilation_rate = 2, .groups = 2, .use_bias = false});
                }, {image}, true});
  cs.push_back({"Conv2D", "Conv2D(3, 3, same) mixed_bfloat16", [] {
                  return make_layer<Conv2D>(3, 3, Conv2DOptions{.padding = "same", .dtype = "mixed_bfloat16"});
                }, {image}, true});
  both(cs, {"DepthwiseConv2D", "DepthwiseConv2D(3, same, depth_multiplier 2)", [] {
              return make_layer<DepthwiseConv2D>(3, DepthwiseConv2DOptions{.padding = "same", .depth_multiplier = 2});
            }, {image}});
  cs.push_back({"DepthwiseConv2D", "DepthwiseConv2D(2, strides 2, relu)", [] {
                  return make_layer<DepthwiseConv2D>(2, DepthwiseConv2DOptions{.strides = 2, .activation = "relu"});
                }, {image}, true});
  both(cs, {"MaxPooling2D", "MaxPooling2D(2)", [] { return make_layer<MaxPooling2D>(2); }, {image}});
  cs.push_back({"MaxPooling2D", "MaxPooling2D(3, strides 2, same)", [] {
                  return make_layer<MaxPooling2D>(3, MaxPooling2DOptions{.strides = 2, .padding = "same"});
                }, {image}, true});
  both(cs, {"AveragePooling2D", "AveragePooling2D(2)", [] { return make_layer<AveragePooling2D>(2); }, {image}});
  cs.push_back({"AveragePooling2D", "AveragePooling2D(3, strides 2, same)", [] {
                  return make_layer<AveragePooling2D>(3, AveragePooling2DOptions{.strides = 2, .padding = "same"});
                }, {image}, true});
  cs.push_back({"GlobalAveragePooling2D", "GlobalAveragePooling2D()",
                [] { return make_layer<GlobalAveragePooling2D>(); }, {image}, true});
  cs.push_back({"GlobalAveragePooling2D", "GlobalAveragePooling2D(keepdims)", [] {
                  return make_layer<GlobalAveragePooling2D>(GlobalPooling2DOptions{.keepdims = true});
                }, {image}});
  cs.push_back({"GlobalMaxPooling2D", "GlobalMaxPooling2D()", [] { return make_layer<GlobalMaxPooling2D>(); },
                {image}, true});
  cs.push_back({"GlobalMaxPooling2D", "GlobalMaxPooling2D(keepdims)", [] {
                  return make_layer<GlobalMaxPooling2D>(GlobalPooling2DOptions{.keepdims = true});
                }, {image}});
  cs.push_back({"ZeroPadding2D", "ZeroPadding2D(1)", [] { return make_layer<ZeroPadding2D>(1); }, {image}, true});
  cs.push_back({"ZeroPadding2D", "ZeroPadding2D(((1, 2), (0, 3)))", [] {
                  return make_layer<ZeroPadding2D>(Padding2D({1, 2}, {0, 3}));
                }, {image}});

  // --- 1-D convolution and pooling ---
  const Shape sequence{2, 7, 4};
  both(cs, {"Conv1D", "Conv1D(3, 3)", [] { return make_layer<Conv1D>(3, 3); }, {sequence}});
  cs.push_back({"Conv1D", "Conv1D(4, 2, causal, dilation 2, relu)", [] {
                  return make_layer<Conv1D>(
                      4, 2, Conv1DOptions{.padding = "causal", .dilation_rate = 2, .activation = "relu"});
                }, {sequence}, true});
  cs.push_back({"Conv1D", "Conv1D(2, 3, strides 2, same, groups 2) mixed_bfloat16", [] {
                  return make_layer<Conv1D>(
                      2, 3, Conv1DOptions{.strides = 2, .padding = "same", .groups = 2, .dtype = "mixed_bfloat16"});
                }, {sequence}, true});
  both(cs, {"MaxPooling1D", "MaxPooling1D(2)", [] { return make_layer<MaxPooling1D>(2); }, {sequence}});
  cs.push_back({"AveragePooling1D", "AveragePooling1D(3, strides 2, same)", [] {
                  return make_layer<AveragePooling1D>(3, AveragePooling1DOptions{.strides = 2, .padding = "same"});
                }, {sequence}, true});
  cs.push_back({"GlobalAveragePooling1D", "GlobalAveragePooling1D()",
                [] { return make_layer<GlobalAveragePooling1D>(); }, {sequence}, true});
  cs.push_back({"GlobalMaxPooling1D", "GlobalMaxPooling1D(keepdims)", [] {
                  return make_layer<GlobalMaxPooling1D>(GlobalMaxPooling1DOptions{.keepdims = true});
                }, {sequence}});

  // --- transposed, separable and 3-D convolution, upsampling and cropping ---
  both(cs, {"Conv2DTranspose", "Conv2DTranspose(3, 3, strides 2, same)", [] {
              return make_layer<Conv2DTranspose>(3, 3, Conv2DTransposeOptions{.strides = 2, .padding = "same"});
            }, {image}});
  cs.push_back({"Conv2DTranspose", "Conv2DTranspose(2, (2, 3), output_padding 1, relu, no bias)", [] {
                  return make_layer<Conv2DTranspose>(2, Size2(2, 3), Conv2DTransposeOptions{
                      .strides = 2, .output_padding = Size2(1), .activation = "relu", .use_bias = false});
                }, {image}, true});
  both(cs, {"SeparableConv2D", "SeparableConv2D(3, 3, same, depth_multiplier 2)", [] {
              return make_layer<SeparableConv2D>(3, 3,
                                                 SeparableConv2DOptions{.padding = "same", .depth_multiplier = 2});
            }, {image}});
  both(cs, {"UpSampling2D", "UpSampling2D((2, 3))", [] { return make_layer<UpSampling2D>(Size2(2, 3)); }, {image}});
  cs.push_back({"UpSampling2D", "UpSampling2D(2, bilinear)", [] {
                  return make_layer<UpSampling2D>(2, UpSampling2DOptions{.interpolation = "bilinear"});
                }, {image}, true});
  cs.push_back({"Cropping2D", "Cropping2D(((1, 2), (0, 3)))", [] {
                  return make_layer<Cropping2D>(Padding2D({1, 2}, {0, 3}));
                }, {image}, true});

  both(cs, {"Conv3D", "Conv3D(3, (2, 3, 3), strides (1, 2, 2), same)", [] {
              return make_layer<Conv3D>(3, Size3(2, 3, 3), Conv3DOptions{.strides = Size3(1, 2, 2), .padding = "same"});
            }, {{2, 3, 5, 4, 2}}});
  cs.push_back({"Conv3D", "Conv3D(4, 2, groups 2, relu)", [] {
                  return make_layer<Conv3D>(4, 2, Conv3DOptions{.groups = 2, .activation = "relu"});
                }, {{2, 3, 4, 4, 2}}, true});

  // --- reshaping ---
  cs.push_back({"Flatten", "Flatten() on rank 4", [] { return make_layer<Flatten>(); }, {image}, true});
  cs.push_back({"Reshape", "Reshape((3, 4))", [] { return make_layer<Reshape>(Shape{3, 4}); }, {{2, 12}}, true});
  cs.push_back({"Reshape", "Reshape((-1, 2))", [] { return make_layer<Reshape>(Shape{-1, 2}); }, {{2, 3, 4}}});

  // --- activations and normalization ---
  both(cs, {"ReLU", "ReLU()", [] { return make_layer<ReLU>(); }, {{4, 6}}});
  cs.push_back({"ReLU", "ReLU(max_value 1.5, negative_slope 0.1, threshold 0.5)", [] {
                  return make_layer<ReLU>(ReLUOptions{.max_value = 1.5, .negative_slope = 0.1, .threshold = 0.5});
                }, {{4, 6}}, true});
  both(cs, {"Softmax", "Softmax()", [] { return make_layer<Softmax>(); }, {{4, 6}}});
  cs.push_back({"Softmax", "Softmax(axis (1, 2))",
                [] { return make_layer<Softmax>(SoftmaxOptions{.axis = {1, 2}}); }, {{2, 3, 4}}, true});
  both(cs, {"LayerNormalization", "LayerNormalization()", [] {
              return make_layer<LayerNormalization>(LayerNormalizationOptions{
                  .beta_initializer = "random_normal", .gamma_initializer = "random_uniform"});
            }, {{4, 6}}});
  cs.push_back({"LayerNormalization", "LayerNormalization(axis (1, 2), no center)", [] {
                  return make_layer<LayerNormalization>(LayerNormalizationOptions{.axis = {1, 2}, .center = false});
                }, {{2, 3, 4}}, true});
  cs.push_back({"LayerNormalization", "LayerNormalization(rms_scaling)", [] {
                  return make_layer<LayerNormalization>(LayerNormalizationOptions{.rms_scaling = true});
                }, {{4, 6}}, true});
  cs.push_back({"LayerNormalization", "LayerNormalization() mixed_bfloat16", [] {
                  return make_layer<LayerNormalization>(LayerNormalizationOptions{.dtype = "mixed_bfloat16"});
                }, {{4, 6}}, true});
  // Training updates the moving statistics on every call: compared after each one.
  both(cs, {"BatchNormalization", "BatchNormalization()", [] {
              return make_layer<BatchNormalization>(BatchNormalizationOptions{
                  .momentum = 0.5, .beta_initializer = "random_normal", .gamma_initializer = "random_uniform",
                  .moving_mean_initializer = "random_normal"});
            }, {{5, 6}}});
  both(cs, {"BatchNormalization", "BatchNormalization(axis 1) on rank 4",
            [] { return make_layer<BatchNormalization>(BatchNormalizationOptions{.axis = 1, .momentum = 0.9}); },
            {{2, 3, 4, 5}}});
  cs.push_back({"BatchNormalization", "BatchNormalization(no center, no scale)", [] {
                  return make_layer<BatchNormalization>(BatchNormalizationOptions{.center = false, .scale = false});
                }, {image}, true});
  cs.push_back({"BatchNormalization", "BatchNormalization() frozen (trainable = false)", [] {
                  return make_layer<BatchNormalization>(BatchNormalizationOptions{.trainable = false});
                }, {{5, 6}}, true});
  both(cs, {"BatchNormalization", "BatchNormalization() mixed_bfloat16", [] {
              return make_layer<BatchNormalization>(BatchNormalizationOptions{.momentum = 0.5, .dtype = "mixed_bfloat16"});
            }, {image}});
  cs.push_back({"BatchNormalization", "BatchNormalization() mixed_float16", [] {
                  return make_layer<BatchNormalization>(BatchNormalizationOptions{.momentum = 0.5, .dtype = "mixed_float16"});
                }, {image}, true});

  // --- dropout: a fresh mask on every call, eager's sequence ---
  both(cs, {"Dropout", "Dropout(0.5, seed 7)", [] { return make_layer<Dropout>(0.5, DropoutOptions{.seed = 7}); },
            {{6, 8}}});
  cs.push_back({"Dropout", "Dropout(0.4) unseeded (the global sequence)", [] { return make_layer<Dropout>(0.4); },
                {{6, 8}}, true});
  cs.push_back({"Dropout", "Dropout(0.3, noise_shape (None, 1, 4)) unseeded", [] {
                  return make_layer<Dropout>(0.3, DropoutOptions{.noise_shape = std::vector<int64_t>{-1, 1, 4}});
                }, {{3, 5, 4}}, true});
  cs.push_back({"Dropout", "Dropout(0.3, noise_shape (None, 1, 4), seed 9)", [] {
                  return make_layer<Dropout>(0.3, DropoutOptions{.noise_shape = std::vector<int64_t>{-1, 1, 4}, .seed = 9});
                }, {{3, 5, 4}}, true});
  cs.push_back({"Dropout", "Dropout(0.5, seed 7) mixed_bfloat16",
                [] { return make_layer<Dropout>(0.5, DropoutOptions{.seed = 7, .dtype = "mixed_bfloat16"}); },
                {{6, 8}}, true});
  cs.push_back({"Dropout", "Dropout(0)", [] { return make_layer<Dropout>(0.0); }, {{6, 8}}, true});

  // --- preprocessing and augmentation: the random layers draw fresh numbers on every replay, eager's sequence ---
  both(cs, {"Rescaling", "Rescaling(1/255, offset -0.5)",
            [] { return make_layer<Rescaling>(1.0 / 255, RescalingOptions{.offset = -0.5}); }, {image}});
  both(cs, {"Normalization", "Normalization() (weights)", [] { return make_layer<Normalization>(); }, {image}});
  cs.push_back({"Normalization", "Normalization(axis None, mean 0.5, variance 2, invert)", [] {
                  return make_layer<Normalization>(NormalizationOptions{
                      .axis = {}, .mean = std::vector<double>{0.5}, .variance = std::vector<double>{2.0}, .invert = true});
                }, {image}});
  both(cs, {"Resizing", "Resizing(4, 9)", [] { return make_layer<Resizing>(4, 9); }, {image}});
  cs.push_back({"Resizing", "Resizing(3, 3, nearest, crop_to_aspect_ratio)", [] {
                  return make_layer<Resizing>(3, 3, ResizingOptions{.interpolation = "nearest", .crop_to_aspect_ratio = true});
                }, {image}});
  both(cs, {"CenterCrop", "CenterCrop(5, 3)", [] { return make_layer<CenterCrop>(5, 3); }, {image}});
  both(cs, {"RandomFlip", "RandomFlip(seed 3)",
            [] { return make_layer<RandomFlip>("horizontal_and_vertical", RandomFlipOptions{.seed = 3}); }, {image}});
  cs.push_back({"RandomFlip", "RandomFlip(horizontal) unseeded", [] { return make_layer<RandomFlip>("horizontal"); },
                {image}, true});
  both(cs, {"RandomRotation", "RandomRotation(0.2, seed 4)",
            [] { return make_layer<RandomRotation>(0.2, RandomRotationOptions{.seed = 4}); }, {image}});
  cs.push_back({"RandomRotation", "RandomRotation(0.3, constant, nearest) unseeded", [] {
                  return make_layer<RandomRotation>(0.3, RandomRotationOptions{.fill_mode = "constant",
                                                                                .interpolation = "nearest"});
                }, {image}, true});
  both(cs, {"RandomZoom", "RandomZoom(0.3, width (-0.2, 0.1), seed 5)", [] {
              return make_layer<RandomZoom>(0.3, RandomZoomOptions{.width_factor = Factor{-0.2, 0.1}, .seed = 5});
            }, {image}});
  both(cs, {"RandomTranslation", "RandomTranslation(0.2, 0.3, wrap, seed 6)", [] {
              return make_layer<RandomTranslation>(0.2, 0.3, RandomTranslationOptions{.fill_mode = "wrap", .seed = 6});
            }, {image}});
  both(cs, {"RandomCrop", "RandomCrop(4, 3, seed 7)",
            [] { return make_layer<RandomCrop>(4, 3, RandomCropOptions{.seed = 7}); }, {image}});
  both(cs, {"RandomContrast", "RandomContrast(0.5, seed 8)",
            [] { return make_layer<RandomContrast>(0.5, RandomContrastOptions{.value_range = {-2, 2}, .seed = 8}); },
            {image}});
  both(cs, {"RandomBrightness", "RandomBrightness(0.3, value_range (-2, 2), seed 9)", [] {
              return make_layer<RandomBrightness>(0.3, RandomBrightnessOptions{.value_range = {-2, 2}, .seed = 9});
            }, {image}});
  cs.push_back({"RandomBrightness", "RandomBrightness(0.3) unseeded",
                [] { return make_layer<RandomBrightness>(0.3, RandomBrightnessOptions{.value_range = {-2, 2}}); },
                {image}, true});

  // --- recurrent (stateful: each call starts from the last one's states, so the states are compared too) ---
  const Shape seq{3, 5, 4};
  both(cs, {"SimpleRNN", "SimpleRNN(4)", [] { return make_layer<SimpleRNN>(4); }, {seq}});
  both(cs, {"SimpleRNN", "SimpleRNN(3, relu, return_sequences, dropout 0.3 seed 2, recurrent_dropout 0.2)", [] {
              return make_layer<SimpleRNN>(3, SimpleRNNOptions{.activation = "relu", .dropout = 0.3,
                                                               .recurrent_dropout = 0.2, .seed = 2, .return_sequences = true});
            }, {seq}});
  both(cs, {"LSTM", "LSTM(4)", [] { return make_layer<LSTM>(4); }, {seq}});
  both(cs, {"LSTM", "LSTM(3, return_sequences, go_backwards, dropout 0.3, recurrent_dropout 0.2, seed 5)", [] {
              return make_layer<LSTM>(3, LSTMOptions{.dropout = 0.3, .recurrent_dropout = 0.2, .seed = 5,
                                                     .return_sequences = true, .go_backwards = true});
            }, {seq}});
  both(cs, {"LSTM", "LSTM(3) mixed_bfloat16", [] { return make_layer<LSTM>(3, LSTMOptions{.dtype = "mixed_bfloat16"}); },
            {seq}});
  cs.push_back({"LSTM", "LSTM(3, stateful)", [] { return make_layer<LSTM>(3, LSTMOptions{.stateful = true}); }, {seq}});
  cs.push_back({"LSTM", "LSTM(3) from initial states", [] { return make_layer<LSTM>(3); }, {seq, {3, 3}, {3, 3}},
                false, true});
  both(cs, {"GRU", "GRU(4)", [] { return make_layer<GRU>(4); }, {seq}});
  both(cs, {"GRU", "GRU(3, reset_after false, return_sequences, dropout 0.25 unseeded)", [] {
              return make_layer<GRU>(3, GRUOptions{.dropout = 0.25, .reset_after = false, .return_sequences = true});
            }, {seq}});
  both(cs, {"GRU", "GRU(3, recurrent_dropout 0.3 seed 4, stateful)", [] {
              return make_layer<GRU>(3, GRUOptions{.recurrent_dropout = 0.3, .seed = 4, .stateful = true});
            }, {seq}});
  both(cs, {"RNN", "RNN(GRUCell(3), return_sequences)",
            [] { return make_layer<RNN>(GRUCell(3), RNNOptions{.return_sequences = true}); }, {seq}});
  both(cs, {"SimpleRNNCell", "SimpleRNNCell(5) on {x, h}", [] { return make_layer<SimpleRNNCell>(5); },
            {{3, 4}, {3, 5}}, false, true});
  both(cs, {"LSTMCell", "LSTMCell(3) on {x, h, c}", [] { return make_layer<LSTMCell>(3); }, {{3, 4}, {3, 3}, {3, 3}},
            false, true});
  both(cs, {"GRUCell", "GRUCell(3, reset_after false) on {x, h}",
            [] { return make_layer<GRUCell>(3, GRUCellOptions{.reset_after = false}); }, {{3, 4}, {3, 3}}, false, true});

  // --- masks and the sequence wrappers ---
  both(cs, {"Masking", "Masking()", [] { return make_layer<Masking>(); }, {seq}});
  both(cs, {"Bidirectional", "Bidirectional(LSTM(3, return_sequences))",
            [] { return make_layer<Bidirectional>(LSTM(3, LSTMOptions{.return_sequences = true})); }, {seq}});
  both(cs, {"Bidirectional", "Bidirectional(GRU(2), sum)",
            [] { return make_layer<Bidirectional>(GRU(2), BidirectionalOptions{.merge_mode = "sum"}); }, {seq}});
  both(cs, {"TimeDistributed", "TimeDistributed(Dense(3))", [] { return make_layer<TimeDistributed>(Dense(3)); },
            {seq}});
  // Index 0 is a third of the tokens: the mask skips steps in every recurrent layer, and the loss sees it too.
  both(cs, {"Sequential", "Sequential(Embedding(mask_zero), LSTM, Bidirectional(GRU), TimeDistributed) on int32", [] {
              return std::make_shared<Sequential>(std::vector<SequentialEntry>{
                  Input({5}, {.dtype = DType::Int32}), Embedding(3, 4, EmbeddingOptions{.mask_zero = true}),
                  LSTM(3, LSTMOptions{.return_sequences = true}),
                  Bidirectional(GRU(2, GRUOptions{.return_sequences = true})), TimeDistributed(Dense(2))});
            }, {{3, 5}}, false, false, DType::Int32, 3});

  // --- merging ---
  cs.push_back({"Add", "Add() of 3", [] { return make_layer<Add>(); }, {{3, 4}, {3, 4}, {3, 4}}, true, true});
  cs.push_back({"Add", "Add() mixed_bfloat16", [] { return make_layer<Add>(LayerOptions{.dtype = "mixed_bfloat16"}); },
                {{3, 4}, {3, 4}}, true, true});
  cs.push_back({"Subtract", "Subtract()", [] { return make_layer<Subtract>(); }, {{3, 4}, {3, 4}}, true, true});
  cs.push_back({"Multiply", "Multiply() of 3", [] { return make_layer<Multiply>(); }, {{3, 4}, {3, 4}, {3, 4}},
                true, true});
  cs.push_back({"Average", "Average()", [] { return make_layer<Average>(); }, {{3, 4}, {3, 4}}, true, true});
  cs.push_back({"Concatenate", "Concatenate()", [] { return make_layer<Concatenate>(); },
                {{3, 4}, {3, 2}, {3, 5}}, true, true});
  cs.push_back({"Concatenate", "Concatenate(axis 1) on rank 3", [] { return make_layer<Concatenate>(1); },
                {{2, 3, 4}, {2, 1, 4}}, false, true});

  // --- activation, noise, normalization, reshaping and merge layers (Keras 3's simple layers) ---
  both(cs, {"LeakyReLU", "LeakyReLU()", [] { return make_layer<LeakyReLU>(); }, {{4, 6}}});
  both(cs, {"PReLU", "PReLU(random alpha, shared_axes {1})", [] {
              return make_layer<PReLU>(PReLUOptions{.alpha_initializer = "random_uniform", .shared_axes = {1}});
            }, {{2, 3, 4}}});
  both(cs, {"ELU", "ELU(alpha 0.5)", [] { return make_layer<ELU>(ELUOptions{.alpha = 0.5}); }, {{4, 6}}});
  cs.push_back({"Identity", "Identity()", [] { return make_layer<Identity>(); }, {{4, 6}}, true});
  // Training draws fresh noise on every call, in eager's sequence.
  both(cs, {"GaussianNoise", "GaussianNoise(0.3, seed 5)",
            [] { return make_layer<GaussianNoise>(0.3, GaussianNoiseOptions{.seed = 5}); }, {{6, 8}}});
  cs.push_back({"GaussianNoise", "GaussianNoise(0.3) unseeded (the global sequence)",
                [] { return make_layer<GaussianNoise>(0.3); }, {{6, 8}}, true});
  both(cs, {"GaussianDropout", "GaussianDropout(0.4, seed 6)",
            [] { return make_layer<GaussianDropout>(0.4, GaussianDropoutOptions{.seed = 6}); }, {{6, 8}}});
  cs.push_back({"GaussianDropout", "GaussianDropout(0.4) unseeded mixed_bfloat16",
                [] { return make_layer<GaussianDropout>(0.4, GaussianDropoutOptions{.dtype = "mixed_bfloat16"}); },
                {{6, 8}}, true});
  both(cs, {"SpatialDropout2D", "SpatialDropout2D(0.5, seed 8)",
            [] { return make_layer<SpatialDropout2D>(0.5, SpatialDropout2DOptions{.seed = 8}); }, {image}});
  cs.push_back({"SpatialDropout2D", "SpatialDropout2D(0.5) unseeded", [] { return make_layer<SpatialDropout2D>(0.5); },
                {image}, true});
  both(cs, {"ActivityRegularization", "ActivityRegularization(l1 0.1, l2 0.01)", [] {
              return make_layer<ActivityRegularization>(ActivityRegularizationOptions{.l1 = 0.1, .l2 = 0.01});
            }, {{4, 6}}});
  both(cs, {"GroupNormalization", "GroupNormalization(groups 2)", [] {
              return make_layer<GroupNormalization>(GroupNormalizationOptions{
                  .groups = 2, .beta_initializer = "random_normal", .gamma_initializer = "random_uniform"});
            }, {image}});
  cs.push_back({"GroupNormalization", "GroupNormalization(groups 3, axis 1) mixed_bfloat16", [] {
                  return make_layer<GroupNormalization>(
                      GroupNormalizationOptions{.groups = 3, .axis = 1, .dtype = "mixed_bfloat16"});
                }, {{2, 6, 5}}, true});
  cs.push_back({"RepeatVector", "RepeatVector(3)", [] { return make_layer<RepeatVector>(3); }, {{4, 6}}, true});
  cs.push_back({"Permute", "Permute((3, 1, 2))", [] { return make_layer<Permute>(std::vector<int64_t>{3, 1, 2}); },
                {image}, true});
  cs.push_back({"Dot", "Dot(axes (2, 1))", [] { return make_layer<Dot>(std::array<int64_t, 2>{2, 1}); },
                {{2, 3, 4}, {2, 4, 5}}, true, true});
  cs.push_back({"Dot", "Dot(axes 1, normalize)", [] { return make_layer<Dot>(1, DotOptions{.normalize = true}); },
                {{3, 4}, {3, 4}}, false, true});
  cs.push_back({"Maximum", "Maximum() of 3", [] { return make_layer<Maximum>(); }, {{3, 4}, {3, 4}, {3, 4}}, true, true});
  cs.push_back({"Minimum", "Minimum()", [] { return make_layer<Minimum>(); }, {{3, 4}, {3, 4}}, true, true});
  both(cs, {"MultiHeadAttention", "MultiHeadAttention(2, 3, dropout 0.3 seed 5) on {query, value, key}",
            [] { return make_layer<MultiHeadAttention>(2, 3, MultiHeadAttentionOptions{.dropout = 0.3, .seed = 5}); },
            {{2, 4, 5}, {2, 3, 5}, {2, 3, 4}}, false, true});
  both(cs, {"Attention", "Attention(use_scale, concat, dropout 0.2 seed 2)",
            [] {
              return make_layer<Attention>(
                  AttentionOptions{.use_scale = true, .score_mode = "concat", .dropout = 0.2, .seed = 2});
            },
            {{2, 3, 4}, {2, 5, 4}}, false, true});
  cs.push_back({"AdditiveAttention", "AdditiveAttention()", [] { return make_layer<AdditiveAttention>(); },
                {{2, 3, 4}, {2, 5, 4}}, true, true});
  cs.push_back({"Lambda", "Lambda(x * sigmoid(x))",
                [] { return make_layer<Lambda>(Lambda::Function([](const Tensor& x) { return x * ops::sigmoid(x); })); },
                {{4, 6}}, true});

  // --- models: layers of layers ---
  both(cs, {"Sequential", "Sequential(Conv2D, BatchNormalization, MaxPooling2D, Flatten, Dropout, Dense)", [] {
              auto m = std::make_shared<Sequential>();
              m->add(Input({7, 6, 4}));
              m->add(Conv2D(3, 3, {.padding = "same", .activation = "relu"}));
              m->add(BatchNormalization({.momentum = 0.5}));
              m->add(MaxPooling2D(2));
              m->add(Flatten());
              m->add(Dropout(0.25));
              m->add(Dense(3));
              return m;
            }, {image}});
  both(cs, {"Functional", "functional Model: two inputs, Dense, Concatenate, Dropout(seed), Add", [] {
              Tensor a = Input({6}), b = Input({4});
              Tensor h = Dense(5, {.activation = "relu"})(a);
              Tensor cat = Concatenate()({h, b});
              Tensor d = Dropout(0.3, {.seed = 11})(cat);
              Tensor out = Add()({Dense(3)(d), Dense(3, {.activation = "sigmoid"})(cat)});
              return std::make_shared<Model>(std::vector<Tensor>{a, b}, out);
            }, {{4, 6}, {4, 4}}, false, true});
  both(cs, {"Model", "subclassed Model(Dense, LayerNormalization, Dropout(seed), Dense)",
            [] { return std::make_shared<MlpModel>(); }, {{4, 6}}, false, false, DType::Float32, 0,
            /*build_first=*/false});
  return cs;
}

}  // namespace

TEST_CASE("every registered layer class has a traced-vs-eager case", "[function][layers]") {
  std::set<std::string> covered;
  for (const LayerCase& c : all_cases()) covered.insert(c.class_name);
  for (const std::string& name : registered_layers()) {
    INFO("registered layer class " << name);
    CHECK(covered.count(name) == 1);
  }
}

TEST_CASE("every layer: ember::function gives eager's bits, forward, gradients and state", "[function][layers]") {
  for (const LayerCase& c : all_cases()) {
    const std::string mode = c.training ? " (training)" : " (inference)";
    DYNAMIC_SECTION(c.label << mode) { run_case(c, /*with_tape=*/true); }
    DYNAMIC_SECTION(c.label << mode << ", forward only, no tape") { run_case(c, /*with_tape=*/false); }
  }
}
