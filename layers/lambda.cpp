#include "layers/lambda.h"

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/config_reader.h"
#include "framework/ops/creation.h"

namespace ember::layers {

Lambda::Lambda(Function function, LambdaOptions options)
    : Layer("lambda", {options.name, options.dtype, options.trainable}),
      function_(std::move(function)),
      options_(std::move(options)) {
  EMBER_CHECK(function_ != nullptr, InvalidArgument) << "Lambda '" << name() << "': the function is empty";
}

Lambda::Lambda(ListFunction function, LambdaOptions options)
    : Layer("lambda", {options.name, options.dtype, options.trainable}),
      list_function_(std::move(function)),
      options_(std::move(options)) {
  EMBER_CHECK(list_function_ != nullptr, InvalidArgument) << "Lambda '" << name() << "': the function is empty";
}

Tensor Lambda::call(const Tensor& x, bool training) {
  return function_ ? function_(x) : list_function_(std::vector<Tensor>{x});
}

Tensor Lambda::call(const std::vector<Tensor>& xs, bool training) {
  if (list_function_) return list_function_(xs);
  EMBER_CHECK(xs.size() == 1, InvalidArgument)
      << "Lambda '" << name() << "': its function takes one tensor, got a list of " << xs.size()
      << " (construct it from a function of a std::vector<Tensor> to take a list)";
  return function_(xs[0]);
}

Shape Lambda::compute_output_shape(const Shape& input_shape) {
  if (!options_.output_shape) return Layer::compute_output_shape(input_shape);
  Shape out{input_shape.rank() > 0 ? input_shape[0] : -1};
  for (int64_t d : *options_.output_shape) out.push_back(d);
  return out;
}

Shape Lambda::compute_output_shape(const std::vector<Shape>& input_shapes) {
  if (input_shapes.size() == 1) return compute_output_shape(input_shapes[0]);
  if (options_.output_shape) return compute_output_shape(input_shapes[0]);
  // Keras 3's compute_output_spec: run the function on zeros (unknown dimensions as 1), outside any tape.
  std::vector<Tensor> probes;
  for (const Shape& s : input_shapes) {
    Shape p = s;
    for (int64_t i = 0; i < p.rank(); ++i)
      if (p[i] < 0) p[i] = 1;
    probes.push_back(ops::zeros(p, compute_dtype()));
  }
  Tensor y;
  {
    NoRecordScope no_record;
    y = call(probes, false);
  }
  Shape out = y.shape();
  if (!input_shapes.empty() && input_shapes[0].rank() > 0 && input_shapes[0][0] < 0 && out.rank() > 0) out[0] = -1;
  return out;
}

nlohmann::json Lambda::get_config() const {
  throw Unimplemented("Lambda '" + name() +
                      "': a Lambda layer wraps a C++ function, which cannot be serialized, so a model containing it "
                      "cannot be saved with its architecture (save, to_json); save_weights works. Write a Layer "
                      "subclass registered with EMBER_REGISTER_LAYER for a layer that saves");
}

LayerPtr Lambda::from_config(const nlohmann::json& c) {
  const std::string name = c.is_object() ? ::ember::detail::config_string(c, "name", "", "Lambda") : "";
  throw InvalidArgument("Lambda '" + name +
                        "': cannot load a Lambda layer from a config: its function is code (a Python lambda or a C++ "
                        "function), which Ember cannot restore (Keras also refuses it unless safe_mode is off). "
                        "Rebuild the model in code, then load its weights with load_weights");
}

EMBER_REGISTER_LAYER(Lambda);

}  // namespace ember::layers
