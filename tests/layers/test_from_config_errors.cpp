// Layers read their Keras configs through the checked readers (framework/core/config_reader.h): a value of
// the wrong type, or a missing required argument, is an InvalidArgument naming the layer and the key, not
// a JSON library exception.
#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/ember.h"

using namespace ember;
using nlohmann::json;

TEST_CASE("layers' from_config reject malformed values naming the layer and key", "[layers][config]") {
  // class, config, what the message must name besides the class
  const std::vector<std::tuple<std::string, json, std::string>> cases = {
      {"Dense", {{"units", "ten"}}, "\"units\" must be an integer"},
      {"Dense", json::object(), "\"units\" is required"},
      {"Dense", {{"units", 3}, {"use_bias", "yes"}}, "\"use_bias\" must be true or false"},
      {"Dense", {{"units", 3}, {"activation", 1}}, "\"activation\" must be a string"},
      {"Dense", {{"units", 3}, {"name", "my_dense"}, {"trainable", "no"}}, "\"trainable\" must be true or false"},
      {"Conv2D", {{"filters", 2}, {"kernel_size", 3}, {"padding", 5}}, "\"padding\" must be a string"},
      {"Conv2D", {{"filters", 2.5}, {"kernel_size", 3}}, "\"filters\" must be an integer"},
      {"DepthwiseConv2D", {{"kernel_size", 3}, {"depth_multiplier", "2"}}, "\"depth_multiplier\" must be an integer"},
      {"BatchNormalization", {{"momentum", "high"}}, "\"momentum\" must be a number"},
      {"BatchNormalization", {{"axis", json::array({"x"})}}, "axis must be an integer"},
      {"LayerNormalization", {{"axis", "last"}}, "\"axis\" must be an integer or a list of integers"},
      {"Softmax", {{"axis", json::array({1, "x"})}}, "\"axis\" must be an integer or a list of integers"},
      {"Embedding", {{"input_dim", 3}}, "\"output_dim\" is required"},
      {"Embedding", {{"input_dim", 3}, {"output_dim", 2}, {"mask_zero", 0}}, "\"mask_zero\" must be true or false"},
      {"Dropout", {{"rate", "half"}}, "\"rate\" must be a number"},
      {"Dropout", {{"rate", 0.5}, {"seed", "s"}}, "\"seed\" must be an integer"},
      {"Dropout", {{"rate", 0.5}, {"noise_shape", 3}}, "\"noise_shape\" must be a list"},
      {"ReLU", {{"max_value", "big"}}, "\"max_value\" must be a number"},
      {"Concatenate", {{"axis", "x"}}, "\"axis\" must be an integer"},
      {"MaxPooling2D", {{"padding", false}}, "\"padding\" must be a string"},
      {"GlobalAveragePooling2D", {{"keepdims", "yes"}}, "\"keepdims\" must be true or false"},
      {"Flatten", {{"name", "my_flatten"}, {"data_format", 1}}, "\"data_format\" must be a string"},
      {"Activation", {{"activation", 3}}, "\"activation\" must be a name"},
      {"Reshape", json::object(), "\"target_shape\" is required"},
      // Keras 3's simple layers.
      {"LeakyReLU", {{"negative_slope", "x"}}, "\"negative_slope\" must be a number"},
      {"PReLU", {{"shared_axes", "x"}}, "\"shared_axes\" must be an integer or a list of integers"},
      {"ELU", {{"alpha", "x"}}, "\"alpha\" must be a number"},
      {"GaussianNoise", json::object(), "\"stddev\" is required"},
      {"GaussianDropout", {{"rate", 0.5}, {"seed", "s"}}, "\"seed\" must be an integer"},
      {"SpatialDropout2D", {{"name", "my_spatial"}, {"rate", 0.5}, {"data_format", 1}}, "\"data_format\" must be a string"},
      {"ActivityRegularization", {{"l1", "x"}}, "\"l1\" must be a number"},
      {"GroupNormalization", {{"groups", 2.5}}, "\"groups\" must be an integer"},
      {"RepeatVector", json::object(), "\"n\" is required"},
      {"Permute", {{"dims", json::array({1, "x"})}}, "\"dims\" must be an integer or a list of integers"},
      {"Dot", {{"axes", "x"}}, "\"axes\" must be an integer or a list of integers"},
      {"Dot", {{"axes", 1}, {"normalize", "yes"}}, "\"normalize\" must be true or false"},
      {"LSTM", json::object(), "\"units\" is required"},
      {"GRU", {{"units", 2}, {"reset_after", "yes"}}, "\"reset_after\" must be true or false"},
      {"SimpleRNN", {{"units", 2}, {"return_sequences", 1}}, "\"return_sequences\" must be true or false"},
      {"LSTMCell", {{"units", 2}, {"dropout", "x"}}, "\"dropout\" must be a number"},
      {"RNN", json::object(), "\"cell\" is required"},
  };
  for (const auto& [cls, config, what] : cases) {
    INFO(cls << " " << config.dump());
    const json j = {{"class_name", cls}, {"config", config}};
    CHECK_THROWS_AS(deserialize_layer(j), InvalidArgument);
    try {
      deserialize_layer(j);
    } catch (const InvalidArgument& e) {
      const std::string msg = e.what();
      CHECK_THAT(msg, Catch::Contains(what));
      // The keys every layer shares (read by the base and a helper of several layers) name the layer by
      // its name; the others name its class.
      CHECK_THAT(msg, Catch::Contains(config.contains("name") ? config["name"].get<std::string>() : cls));
    } catch (...) {
    }
  }
}

TEST_CASE("well-formed layer configs still read, null as Keras's None", "[layers][config]") {
  LayerPtr dense = deserialize_layer(
      {{"class_name", "Dense"}, {"config", {{"units", 3}, {"use_bias", nullptr}, {"activation", "relu"}, {"name", "d"}}}});
  CHECK(dense->name() == "d");
  CHECK(dense->get_config()["units"] == 3);
  CHECK(dense->get_config()["use_bias"] == true);
  LayerPtr ln = deserialize_layer({{"class_name", "LayerNormalization"}, {"config", {{"axis", json::array({1, 2})}}}});
  CHECK(ln->get_config()["axis"] == json::array({1, 2}));
  LayerPtr drop = deserialize_layer({{"class_name", "Dropout"}, {"config", {{"rate", 0.25}, {"seed", 7}}}});
  CHECK(drop->get_config()["seed"] == 7);
}
