// A layer of your own (Keras: subclassing keras.layers.Layer): weights made in build(), the computation
// in call(), a config so that a saved model can be loaded again.
#include <cmath>
#include <filesystem>
#include <iostream>

#include "framework/ember.h"
using namespace ember;

// y = x @ w + b, as Keras's guide writes its first custom layer.
class Linear : public Layer {
  EMBER_LAYER(Linear)  // the class name used in saved files, and what lets Ember move the layer into a model
  explicit Linear(int64_t units, LayerOptions options = {}) : Layer("linear", options), units_(units) {}

  // Called once, with the shape of the first input (-1 for the batch dimension).
  void build(const Shape& input_shape) override {
    w_ = add_weight("kernel", {input_shape[input_shape.rank() - 1], units_}, "random_normal");
    b_ = add_weight("bias", {units_}, "zeros");
  }
  // Only forward code: the gradients come from the ops. read() casts a weight for mixed precision.
  Tensor call(const Tensor& x, bool /*training*/) override { return ops::matmul(x, read(w_)) + read(b_); }

  Shape compute_output_shape(const Shape& input_shape) override {
    Shape out = input_shape;
    out[out.rank() - 1] = units_;
    return out;
  }
  // What a saved model stores about the layer, and how it is made again from that.
  nlohmann::json get_config() const override {
    nlohmann::json config = base_config();  // name, trainable, dtype
    config["units"] = units_;
    return config;
  }
  static LayerPtr from_config(const nlohmann::json& config) {
    return std::make_shared<Linear>(config.at("units").get<int64_t>(), options_from_config(config));
  }

 private:
  int64_t units_;
  Variable w_, b_;
};
// Lets models::load_model find the class by the name in the file.
EMBER_REGISTER_LAYER(Linear);

int main() {
  // Learn y = 3x - 1 with a single Linear unit.
  Tensor x = random::uniform({256, 1}, {.minval = -1, .maxval = 1, .seed = 1});
  Tensor y = 3.0 * x - 1.0;
  Sequential model({layers::Input({1}), Linear(1)});
  model.summary();
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  model.fit(x, y, {.batch_size = 16, .epochs = 20, .verbose = 0});

  std::vector<Tensor> w = model.get_weights();  // kernel, bias
  float slope = w[0].item<float>(), intercept = w[1].item<float>();
  std::cout << "learned slope " << slope << ", intercept " << intercept << " (true: 3, -1)\n";

  // Save the whole model and load it back: the registered from_config rebuilds the Linear layer.
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "ember_custom_layer";
  std::filesystem::create_directories(dir);
  model.save((dir / "linear.keras").string());
  Model loaded = models::load_model((dir / "linear.keras").string());
  Tensor probe = Tensor::from_vector<float>({0.5f}, {1, 1});
  float original = model.predict(probe, {.verbose = 0}).item<float>();
  float reloaded = loaded.predict(probe, {.verbose = 0}).item<float>();
  std::cout << "prediction at 0.5: " << original << " (reloaded model: " << reloaded << ")\n";
  std::filesystem::remove_all(dir);

  bool ok = std::abs(slope - 3.0f) < 0.01f && std::abs(intercept + 1.0f) < 0.01f && original == reloaded &&
            loaded.layers()[0]->class_name() == "Linear";
  return ok ? 0 : 1;
}
