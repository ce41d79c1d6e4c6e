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
  const nlohmann::json& js = c.contains("batch_shape") ? c.at("batch_shape") : c.at("batch_input_shape");
  Shape shape;
  for (const auto& d : js) shape.push_back(d.is_null() ? -1 : d.get<int64_t>());
  DType dtype = DType::Float32;
  if (c.contains("dtype") && c["dtype"].is_string()) dtype = dtype_from_name(c["dtype"].get<std::string>());
  return std::make_shared<InputLayer>(shape, dtype, c.value("name", std::string()));
}

EMBER_REGISTER_LAYER(InputLayer);

Tensor Input(const Shape& shape, InputOptions options) {
  Shape batch_shape{options.batch_size};
  for (int64_t d : shape) batch_shape.push_back(d);
  auto layer = std::make_shared<InputLayer>(batch_shape, options.dtype, options.name);
  auto node = std::make_shared<detail::Node>(detail::Node{layer, {}, batch_shape, options.dtype});
  return Tensor::symbolic(batch_shape, options.dtype, std::make_shared<detail::KerasHistory>(detail::KerasHistory{node}));
}

}  // namespace layers

namespace detail {

std::shared_ptr<layers::InputLayer> input_layer_of(const Tensor& t) {
  if (!t.defined() || !t.is_symbolic()) return nullptr;
  const Node& n = *t.keras_history()->node;
  return n.inputs.empty() ? std::dynamic_pointer_cast<layers::InputLayer>(n.layer) : nullptr;
}

Tensor record_node(LayerPtr layer, const std::vector<Tensor>& inputs, const Shape& output_shape, DType dtype) {
  auto node = std::make_shared<Node>(Node{std::move(layer), inputs, output_shape, dtype});
  return Tensor::symbolic(output_shape, dtype, std::make_shared<KerasHistory>(KerasHistory{node}));
}

}  // namespace detail

}  // namespace ember
