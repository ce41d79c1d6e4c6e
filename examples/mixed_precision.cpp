// Mixed precision (Keras: keras.mixed_precision): layers compute in float16 and keep float32 weights;
// a LossScaleOptimizer keeps small float16 gradients from underflowing to zero. Faster on GPUs with
// tensor cores (on a CPU without float16 arithmetic it saves memory, not time).
#include <iostream>

#include "framework/ember.h"
using namespace ember;

int main() {
  // Every layer made from now on computes in float16 and stores its variables in float32.
  mixed_precision::set_global_policy("mixed_float16");

  auto [train, test] = datasets::fashion_mnist::load_data();
  Tensor x_train = ops::reshape(ops::cast(train.x, DType::Float32) / 255.0, {-1, 28, 28, 1});  // NHWC images
  Tensor x_test = ops::reshape(ops::cast(test.x, DType::Float32) / 255.0, {-1, 28, 28, 1});

  auto conv = std::make_shared<layers::Conv2D>(32, 3, layers::Conv2DOptions{.activation = "relu"});
  Sequential model({
      layers::Input({28, 28, 1}),
      conv,  // kept by a shared_ptr so we can inspect it below
      layers::GlobalAveragePooling2D(),
      // The last layer stays float32: the softmax and the loss of float16 logits lose precision.
      layers::Dense(10, {.dtype = "float32"}),
  });
  std::cout << "Conv2D computes in " << conv->compute_dtype() << ", stores its kernel in "
            << conv->variable_dtype() << "\n";

  // The loss is multiplied by a scale (2^15 to start) before the gradients are taken and the gradients
  // divided by it before the update; steps whose gradients overflow are skipped and halve the scale.
  auto optimizer = std::make_shared<mixed_precision::LossScaleOptimizer>(optimizers::Adam({.learning_rate = 1e-2}));
  model.compile({
      .optimizer = optimizer,
      .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
      .metrics = {"accuracy"},
  });
  History history = model.fit(x_train, train.y, {.batch_size = 128, .epochs = 2, .validation_data = {x_test, test.y}});

  Tensor logits = model.predict(ops::slice(x_test, {0, 0, 0, 0}, {8, 28, 28, 1}), {.verbose = 0});
  std::cout << "predictions are " << logits.dtype() << "; loss scale now " << optimizer->dynamic_scale() << "\n";
  const std::vector<double>& val_loss = history.history.at("val_loss");
  std::cout << "validation loss " << val_loss.front() << " -> " << val_loss.back() << "\n";

  mixed_precision::set_global_policy("float32");  // back to the default for layers made later
  bool ok = conv->compute_dtype() == DType::Float16 && conv->variable_dtype() == DType::Float32 &&
            logits.dtype() == DType::Float32 && val_loss.back() < val_loss.front();
  return ok ? 0 : 1;
}
