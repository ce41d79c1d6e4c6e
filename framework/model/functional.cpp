#include "framework/model/functional.h"

namespace ember {

namespace layers {

InputLayer::InputLayer(const Shape& batch_shape, DType dtype, const std::string& name)
    : Layer("input_layer", {name, "", true}), batch_shape_(batch_shape), dtype_(dtype) {
  for (int64_t d : batch_shape_)
    EMBER_CHECK(d >= -1, InvalidArgument) << "Input: bad dimension " << d << " in shape " << batch_shape_;
  build_for({batch_shape_});
}

nlohmann::json InputLayer::get_config() const {
  nlohmann::json shape = nlohmann::json::array();
  for (int64_t d : batch_shape_) shape.push_back(d < 0 ? nlohmann::json(nullptr) : nlohmann::json(d));
  return {{"batch_shape", shape}, {"dtype", dtype_name(dtype_)}, {"sparse", false}, {"ragged", false},
          {"name", name()}, {"optional", false}};
}

LayerPtr InputLayer::from_config(const nlohmann::json& c) {
  // Keras 3 "batch_shape", Keras 2 "batch_input_shape".
  const char* key = c.contains("batch_shape") ? "batch_shape" : "batch_input_shape";
  EMBER_CHECK(c.contains(key) && c[key].is_array(), InvalidArgument)
      << "InputLayer.from_config: expected \"batch_shape\" (Keras 3) or \"batch_input_shape\" (Keras 2) as a list, got "
      << c.dump().substr(0, 200);
  Shape shape;
  for (const auto& d : c[key]) {
    EMBER_CHECK(d.is_null() || d.is_number_integer(), InvalidArgument)
        << "InputLayer.from_config: " << key << " entries must be integers or null, got " << c[key].dump();
    shape.push_back(d.is_null() ? -1 : d.get<int64_t>());
  }
  DType dtype = DType::Float32;
  // A dtype name, or a serialized policy ({"class_name": "DTypePolicy"|"Policy", "config": {"name"}}),
  // whose variable dtype is the input's (Keras 3's InputLayer standardizes it the same way).
  if (c.contains("dtype") && c["dtype"].is_string()) {
    dtype = dtype_from_name(c["dtype"].get<std::string>());
  } else if (c.contains("dtype") && c["dtype"].is_object()) {
    dtype = mixed_precision::Policy(c["dtype"].at("config").at("name").get<std::string>()).variable_dtype();
  }
  return std::make_shared<InputLayer>(shape, dtype, c.value("name", std::string()));
}

EMBER_REGISTER_LAYER(InputLayer);

Tensor Input(const Shape& shape, InputOptions options) {
  Shape batch_shape{options.batch_size};
  for (int64_t d : shape) batch_shape.push_back(d);
  auto layer = std::make_shared<InputLayer>(batch_shape, options.dtype, options.name);
  auto node = std::make_shared<detail::Node>(detail::Node{layer, {}, batch_shape, options.dtype, std::nullopt, {}});
  return Tensor::symbolic(batch_shape, options.dtype, std::make_shared<detail::KerasHistory>(detail::KerasHistory{node, 0}));
}

}  // namespace layers

namespace detail {

std::vector<Tensor> Node::call_inputs(const std::vector<Tensor>& values) const {
  return {values.begin(), values.end() - static_cast<std::ptrdiff_t>(kwarg_tensors)};
}

CallKwargs Node::call_kwargs(const std::vector<Tensor>& values) const {
  CallKwargs out;
  if (!kwargs.is_null()) out.values = kwargs;
  out.tensors.assign(values.end() - static_cast<std::ptrdiff_t>(kwarg_tensors), values.end());
  return out;
}

std::shared_ptr<layers::InputLayer> input_layer_of(const Tensor& t) {
  if (!t.defined() || !t.is_symbolic()) return nullptr;
  const Node& n = *t.keras_history()->node;
  return n.inputs.empty() ? std::dynamic_pointer_cast<layers::InputLayer>(n.layer) : nullptr;
}

Tensor record_node(LayerPtr layer, const std::vector<Tensor>& inputs, const Shape& output_shape, DType dtype) {
  return record_node(std::move(layer), inputs, std::vector<Shape>{output_shape}, dtype).at(0);
}

std::vector<Tensor> record_node(LayerPtr layer, const std::vector<Tensor>& inputs, const std::vector<Shape>& output_shapes,
                                DType dtype, const CallKwargs& kwargs) {
  std::vector<Tensor> all = inputs;
  all.insert(all.end(), kwargs.tensors.begin(), kwargs.tensors.end());
  auto node = std::make_shared<Node>(Node{std::move(layer), std::move(all), output_shapes.at(0), dtype, std::nullopt,
                                          output_shapes.size() > 1 ? output_shapes : std::vector<Shape>{},
                                          kwargs.values, kwargs.tensors.size()});
  std::vector<Tensor> out;
  for (size_t i = 0; i < output_shapes.size(); ++i)
    out.push_back(Tensor::symbolic(output_shapes[i], dtype,
                                   std::make_shared<KerasHistory>(KerasHistory{node, static_cast<int64_t>(i)})));
  return out;
}

}  // namespace detail

}  // namespace ember
