#pragma once
// Optimizers by name and by config (Keras: keras.optimizers.get / serialize / deserialize).
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimizers/optimizer.h"

namespace ember::optimizers {

// A new optimizer with default options from a Keras name ("adam", "SGD", "rmsprop"; case-insensitive,
// as Keras's lower-cased class names). An unknown name is InvalidArgument listing the known ones.
OptimizerPtr get(const std::string& identifier);
// Keras's serialized form: {"module": "keras.optimizers", "class_name", "config", "registered_name": null}.
nlohmann::json serialize(const Optimizer& optimizer);
// Rebuilds an optimizer from serialize()'s form (also {"class_name", "config"} alone, any case).
OptimizerPtr deserialize(const nlohmann::json& j);

using OptimizerFactory = std::function<OptimizerPtr(const nlohmann::json& config)>;
// Makes a class known to get/deserialize (EMBER_REGISTER_OPTIMIZER does it for built-in classes).
void register_optimizer(const std::string& class_name, OptimizerFactory factory);
// Registered class names, sorted.
std::vector<std::string> registered_optimizers();

// In an optimizer's .cpp: EMBER_REGISTER_OPTIMIZER(Adam) registers Adam::from_config under "Adam".
#define EMBER_REGISTER_OPTIMIZER(ClassName)                                                          \
  static const bool ember_optimizer_registered_##ClassName = [] {                                    \
    ::ember::optimizers::register_optimizer(                                                         \
        #ClassName, [](const nlohmann::json& c) -> ::ember::optimizers::OptimizerPtr {               \
          return std::make_shared<ClassName>(ClassName::from_config(c));                             \
        });                                                                                          \
    return true;                                                                                     \
  }()

}  // namespace ember::optimizers
