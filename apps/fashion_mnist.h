#pragma once
// The Fashion-MNIST models and input pipeline, shared by apps/train_fashion_mnist and bench/bench_train so
// the benchmark measures exactly what the app trains.
#include <memory>
#include <string>

#include "framework/ember.h"

namespace ember::fashion_mnist {

// "mlp" (784-256-256-10), "cnn" (the classic Keras example CNN), "seed_cnn" (the seeds' model) or "lstm" (the
// classic Keras example RNN: each image read as 28 rows of 28 pixels by LSTM(128)); the logits layer stays
// float32 under mixed precision.
inline std::unique_ptr<Sequential> make_model(const std::string& kind) {
  auto model = std::make_unique<Sequential>(std::vector<SequentialEntry>{}, ModelOptions{.name = kind});
  if (kind == "mlp") {
    model->add(layers::Input({784}));
    model->add(layers::Dense(256, {.activation = "relu"}));
    model->add(layers::Dense(256, {.activation = "relu"}));
    model->add(layers::Dense(10, {.dtype = "float32"}));
  } else if (kind == "cnn") {  // the classic Keras example
    model->add(layers::Input({28, 28, 1}));
    model->add(layers::Conv2D(32, 3, {.activation = "relu"}));
    model->add(layers::MaxPooling2D(2));
    model->add(layers::Conv2D(64, 3, {.activation = "relu"}));
    model->add(layers::MaxPooling2D(2));
    model->add(layers::Flatten());
    model->add(layers::Dropout(0.3));
    model->add(layers::Dense(128, {.activation = "relu"}));
    model->add(layers::Dense(10, {.dtype = "float32"}));
  } else if (kind == "lstm") {  // the classic Keras example: rows as time steps
    model->add(layers::Input({28, 28}));
    model->add(layers::LSTM(128));
    model->add(layers::Dense(10, {.dtype = "float32"}));
  } else {  // seed_cnn: the seeds' model
    model->add(layers::Input({28, 28, 1}));
    model->add(layers::Conv2D(32, 3, {.activation = "relu"}));
    model->add(layers::GlobalAveragePooling2D());
    model->add(layers::Dense(10, {.dtype = "float32"}));
  }
  return model;
}

// Batches of (uint8 images, labels) scaled to [0, 1] float32 in the pipeline, shaped for the model.
inline data::Dataset pipeline(const datasets::Split& split, const Shape& image_shape, int64_t batch_size,
                              bool shuffle, uint64_t seed) {
  auto ds = data::Dataset::from_tensor_slices({split.x, split.y});
  if (shuffle) ds = ds.shuffle(split.x.shape()[0], {.seed = seed});
  std::vector<int64_t> dims = {-1};
  dims.insert(dims.end(), image_shape.begin(), image_shape.end());
  return ds.batch(batch_size)
      .map(
          [dims](const Tensor& x, const Tensor& y) {
            return data::Element{ops::reshape(ops::cast(x, DType::Float32) * (1.0f / 255.0f), Shape(dims)), y};
          },
          {.num_parallel_calls = data::AUTOTUNE})
      .prefetch(data::AUTOTUNE);
}

// Image shape one sample of `kind`'s model takes.
inline Shape image_shape(const std::string& kind) {
  if (kind == "mlp") return {784};
  return kind == "lstm" ? Shape{28, 28} : Shape{28, 28, 1};
}

}  // namespace ember::fashion_mnist
