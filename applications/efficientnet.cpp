#include "applications/efficientnet.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "framework/core/error.h"
#include "framework/model/functional.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/depthwise_conv2d.h"
#include "layers/dropout.h"
#include "layers/global_average_pooling2d.h"
#include "layers/global_max_pooling2d.h"
#include "layers/multiply.h"
#include "layers/normalization.h"
#include "layers/rescaling.h"
#include "layers/reshape.h"
#include "layers/zero_padding2d.h"

namespace ember::applications {

namespace {

// Keras builds the models with activation "swish", which it saves under the function's name, "silu".
const char* const kActivation = "silu";

// Keras: CONV_KERNEL_INITIALIZER and DENSE_KERNEL_INITIALIZER.
initializers::Initializer conv_kernel_initializer() {
  return initializers::VarianceScaling({.scale = 2.0, .mode = "fan_out", .distribution = "truncated_normal"});
}
initializers::Initializer dense_kernel_initializer() {
  return initializers::VarianceScaling({.scale = 1.0 / 3.0, .mode = "fan_out", .distribution = "uniform"});
}

// Keras: DEFAULT_BLOCKS_ARGS (every block has id_skip and se_ratio 0.25).
struct BlockArgs {
  int64_t kernel_size, repeats, filters_in, filters_out, expand_ratio, strides;
};
constexpr BlockArgs kBlocksArgs[] = {{3, 1, 32, 16, 1, 1},   {3, 2, 16, 24, 6, 2},  {5, 2, 24, 40, 6, 2},
                                     {3, 3, 40, 80, 6, 2},   {5, 3, 80, 112, 6, 1}, {5, 4, 112, 192, 6, 2},
                                     {3, 1, 192, 320, 6, 1}};
constexpr double kSeRatio = 0.25;

Tensor bn(const Tensor& x, const std::string& name) {
  return layers::BatchNormalization({.axis = 3, .name = name})(x);
}

Tensor conv1x1(const Tensor& x, int64_t filters, const std::string& name) {
  return layers::Conv2D(filters, 1,
                        {.padding = "same", .use_bias = false, .kernel_initializer = conv_kernel_initializer(),
                         .name = name})(x);
}

// Keras: block, the inverted residual block: a 1x1 expansion (unless expand_ratio is 1), a depthwise
// convolution, squeeze-and-excitation, a linear 1x1 projection, and when the shape is kept a residual
// connection behind a per-sample Dropout (drop connect).
Tensor block(const Tensor& inputs, double drop_rate, const std::string& name, int64_t filters_in, int64_t filters_out,
             int64_t kernel_size, int64_t strides, int64_t expand_ratio) {
  const int64_t filters = filters_in * expand_ratio;
  Tensor x = inputs;
  if (expand_ratio != 1) {
    x = conv1x1(inputs, filters, name + "expand_conv");
    x = bn(x, name + "expand_bn");
    x = layers::Activation(kActivation, {.name = name + "expand_activation"})(x);
  }

  std::string conv_pad = "same";
  if (strides == 2) {
    const auto [pad_h, pad_w] = imagenet_utils::correct_pad(x.shape(), kernel_size);
    x = layers::ZeroPadding2D(layers::Padding2D(pad_h, pad_w), {.name = name + "dwconv_pad"})(x);
    conv_pad = "valid";
  }
  x = layers::DepthwiseConv2D(kernel_size, {.strides = strides,
                                            .padding = conv_pad,
                                            .use_bias = false,
                                            .depthwise_initializer = conv_kernel_initializer(),
                                            .name = name + "dwconv"})(x);
  x = bn(x, name + "bn");
  x = layers::Activation(kActivation, {.name = name + "activation"})(x);

  // Squeeze and excitation.
  const int64_t filters_se = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(filters_in) * kSeRatio));
  Tensor se = layers::GlobalAveragePooling2D({.name = name + "se_squeeze"})(x);
  se = layers::Reshape({1, 1, filters}, {.name = name + "se_reshape"})(se);
  se = layers::Conv2D(filters_se, 1,
                      {.padding = "same", .activation = kActivation, .kernel_initializer = conv_kernel_initializer(),
                       .name = name + "se_reduce"})(se);
  se = layers::Conv2D(filters, 1,
                      {.padding = "same", .activation = "sigmoid", .kernel_initializer = conv_kernel_initializer(),
                       .name = name + "se_expand"})(se);
  x = layers::Multiply({.name = name + "se_excite"})({x, se});

  x = conv1x1(x, filters_out, name + "project_conv");
  x = bn(x, name + "project_bn");
  if (strides == 1 && filters_in == filters_out) {
    if (drop_rate > 0)
      x = layers::Dropout(drop_rate, {.noise_shape = std::vector<int64_t>{-1, 1, 1, 1}, .name = name + "drop"})(x);
    x = layers::Add({.name = name + "add"})({x, inputs});
  }
  return x;
}

// Keras: EfficientNet, with Keras's drop_connect_rate 0.2, depth_divisor 8 and the swish activation.
Model efficient_net(const std::string& who, double width_coefficient, double depth_coefficient, int64_t default_size,
                    double dropout_rate, const std::string& default_name, const ApplicationOptions& o) {
  constexpr double drop_connect_rate = 0.2;
  constexpr int64_t divisor = 8;
  imagenet_utils::validate_arguments(who, o.include_top, o.weights, o.pooling, o.classes, o.classifier_activation);
  const Shape input_shape = imagenet_utils::obtain_input_shape(who, o.input_shape, default_size, 32, o.include_top);

  // Keras: round_filters (to a multiple of the divisor, never more than 10% down) and round_repeats.
  auto round_filters = [&](int64_t filters) {
    const double scaled = static_cast<double>(filters) * width_coefficient;
    int64_t new_filters =
        std::max(divisor, static_cast<int64_t>(scaled + static_cast<double>(divisor) / 2) / divisor * divisor);
    if (static_cast<double>(new_filters) < 0.9 * scaled) new_filters += divisor;
    return new_filters;
  };
  auto round_repeats = [&](int64_t repeats) {
    return static_cast<int64_t>(std::ceil(depth_coefficient * static_cast<double>(repeats)));
  };

  Tensor img_input = layers::Input(input_shape);
  // The stem: the preprocessing, then a strided 3x3 convolution.
  Tensor x = layers::Rescaling(1.0 / 255.0)(img_input);
  x = layers::Normalization({.axis = {3}})(x);
  const auto [pad_h, pad_w] = imagenet_utils::correct_pad(x.shape(), 3);
  x = layers::ZeroPadding2D(layers::Padding2D(pad_h, pad_w), {.name = "stem_conv_pad"})(x);
  x = layers::Conv2D(round_filters(32), 3,
                     {.strides = 2, .padding = "valid", .use_bias = false,
                      .kernel_initializer = conv_kernel_initializer(), .name = "stem_conv"})(x);
  x = bn(x, "stem_bn");
  x = layers::Activation(kActivation, {.name = "stem_activation"})(x);

  // The blocks: the drop-connect rate grows linearly with the block's index, from 0 to drop_connect_rate.
  double blocks = 0;
  for (const BlockArgs& a : kBlocksArgs) blocks += static_cast<double>(round_repeats(a.repeats));
  int64_t b = 0;
  for (size_t i = 0; i < std::size(kBlocksArgs); ++i) {
    const BlockArgs& a = kBlocksArgs[i];
    int64_t filters_in = round_filters(a.filters_in);
    const int64_t filters_out = round_filters(a.filters_out);
    int64_t strides = a.strides;
    const int64_t repeats = round_repeats(a.repeats);
    for (int64_t j = 0; j < repeats; ++j) {
      if (j > 0) {
        strides = 1;
        filters_in = filters_out;
      }
      const std::string name = "block" + std::to_string(i + 1) + static_cast<char>('a' + j) + "_";
      x = block(x, drop_connect_rate * static_cast<double>(b) / blocks, name, filters_in, filters_out, a.kernel_size,
                strides, a.expand_ratio);
      ++b;
    }
  }

  // The top.
  x = conv1x1(x, round_filters(1280), "top_conv");
  x = bn(x, "top_bn");
  x = layers::Activation(kActivation, {.name = "top_activation"})(x);
  if (o.include_top) {
    x = layers::GlobalAveragePooling2D({.name = "avg_pool"})(x);
    if (dropout_rate > 0) x = layers::Dropout(dropout_rate, {.name = "top_dropout"})(x);
    x = layers::Dense(o.classes, {.activation = o.classifier_activation,
                                  .kernel_initializer = dense_kernel_initializer(),
                                  .name = "predictions"})(x);
  } else if (o.pooling == "avg") {
    x = layers::GlobalAveragePooling2D({.name = "avg_pool"})(x);
  } else if (o.pooling == "max") {
    x = layers::GlobalMaxPooling2D({.name = "max_pool"})(x);
  }

  Model model(img_input, x, {.name = o.name.empty() ? default_name : o.name});
  imagenet_utils::load_weights_argument(model, o.weights);
  return model;
}

}  // namespace

// Keras's (width_coefficient, depth_coefficient, default_size, dropout_rate) of each model.
Model EfficientNetB0(ApplicationOptions o) { return efficient_net("EfficientNetB0", 1.0, 1.0, 224, 0.2, "efficientnetb0", o); }
Model EfficientNetB1(ApplicationOptions o) { return efficient_net("EfficientNetB1", 1.0, 1.1, 240, 0.2, "efficientnetb1", o); }
Model EfficientNetB2(ApplicationOptions o) { return efficient_net("EfficientNetB2", 1.1, 1.2, 260, 0.3, "efficientnetb2", o); }
Model EfficientNetB3(ApplicationOptions o) { return efficient_net("EfficientNetB3", 1.2, 1.4, 300, 0.3, "efficientnetb3", o); }
Model EfficientNetB4(ApplicationOptions o) { return efficient_net("EfficientNetB4", 1.4, 1.8, 380, 0.4, "efficientnetb4", o); }
Model EfficientNetB5(ApplicationOptions o) { return efficient_net("EfficientNetB5", 1.6, 2.2, 456, 0.4, "efficientnetb5", o); }
Model EfficientNetB6(ApplicationOptions o) { return efficient_net("EfficientNetB6", 1.8, 2.6, 528, 0.5, "efficientnetb6", o); }
Model EfficientNetB7(ApplicationOptions o) { return efficient_net("EfficientNetB7", 2.0, 3.1, 600, 0.5, "efficientnetb7", o); }

namespace efficientnet {
Tensor preprocess_input(const Tensor& x) { return x; }
}  // namespace efficientnet

}  // namespace ember::applications
