// ONNX export: walks a Sequential or functional model's layer calls in execution order (nested models inline),
// converts each (onnx_layers.cpp), declares the inputs and outputs, checks the model and writes it.
#include "framework/export/onnx.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "framework/core/error.h"
#include "framework/export/onnx_builder.h"
#include "framework/io/atomic_file.h"
#include "framework/model/model.h"

namespace ember::onnx {

namespace {

using detail::GraphBuilder;
using detail::Value;

int32_t onnx_type(DType t) {
  switch (t) {
    case DType::Int32: return ::onnx::TensorProto::INT32;
    case DType::Int64: return ::onnx::TensorProto::INT64;
    case DType::UInt8: return ::onnx::TensorProto::UINT8;
    case DType::Bool: return ::onnx::TensorProto::BOOL;
    default: return ::onnx::TensorProto::FLOAT;  // every floating dtype exports as float32
  }
}

void declare(::onnx::ValueInfoProto* info, const std::string& name, const Shape& shape, DType dtype) {
  info->set_name(name);
  ::onnx::TypeProto_Tensor* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx_type(dtype));
  ::onnx::TensorShapeProto* s = t->mutable_shape();
  for (int64_t i = 0; i < shape.rank(); ++i) {
    ::onnx::TensorShapeProto_Dimension* d = s->add_dim();
    if (shape[i] >= 0)
      d->set_dim_value(shape[i]);
    else if (i == 0)
      d->set_dim_param("N");
  }
}

DType value_dtype(DType t) { return is_floating(t) ? DType::Float32 : t; }

// The graph of `model` on `inputs` (one per model input); returns its outputs.
std::vector<Value> convert_graph(GraphBuilder& b, const Model& model, const std::vector<Value>& inputs) {
  EMBER_CHECK(model.is_graph_model(), Unimplemented)
      << "ONNX export: model '" << model.name() << "' is " << (model.class_name() == "Sequential"
                                                                  ? "a Sequential without a known input shape: "
                                                                    "start it with layers::Input or build it first"
                                                                  : "subclassed: only Sequential and functional "
                                                                    "models have a graph to export");
  std::map<const ::ember::detail::Node*, std::vector<Value>> values;
  auto value_of = [&](const Tensor& t) {
    const auto& h = t.keras_history();
    return values.at(h->node.get()).at(static_cast<size_t>(h->tensor_index));
  };
  for (size_t i = 0; i < inputs.size(); ++i) values[model.inputs()[i].keras_history()->node.get()] = {inputs[i]};
  for (const std::shared_ptr<::ember::detail::Node>& n : model.nodes()) {
    if (values.count(n.get())) continue;
    const Layer& layer = *n->layer;
    EMBER_CHECK(!n->training.value_or(false), Unimplemented)
        << "ONNX export: layer '" << layer.name() << "' (" << layer.class_name()
        << ") is called with training=True, which an inference graph cannot reproduce";
    EMBER_CHECK(n->kwargs.empty(), Unimplemented)
        << "ONNX export: layer '" << layer.name() << "' (" << layer.class_name() << ") is called with keyword arguments "
        << n->kwargs.dump().substr(0, 200) << ", which the export does not support";
    std::vector<Value> args;
    for (const Tensor& in : n->inputs) args.push_back(value_of(in));
    if (const auto* sub = dynamic_cast<const Model*>(&layer)) {
      values[n.get()] = convert_graph(b, *sub, args);
      continue;
    }
    EMBER_CHECK(n->more_output_shapes.empty(), Unimplemented)
        << "ONNX export: layer '" << layer.name() << "' (" << layer.class_name() << ") has several outputs";
    const nlohmann::json config = layer.get_config();
    const std::string out = detail::convert_layer(b, {layer, config, args, n->output_shape});
    values[n.get()] = {Value{out, n->output_shape, value_dtype(n->output_dtype)}};
  }
  std::vector<Value> outs;
  for (const Tensor& t : model.outputs()) outs.push_back(value_of(t));
  return outs;
}

}  // namespace

void export_model(const Model& model, const std::string& path, ExportOptions options) {
  EMBER_CHECK(options.opset >= 13 && options.opset <= 17, InvalidArgument)
      << "ONNX export: opset " << options.opset << " is not supported; expected 13 to 17";
  EMBER_CHECK(options.overwrite || !std::filesystem::exists(path), FailedPrecondition)
      << "ONNX export: '" << path << "' exists and overwrite is false";
  ::onnx::ModelProto proto;
  proto.set_ir_version(8);  // ONNX 1.12's, which opsets up to 17 need at most
  proto.set_producer_name("ember");
  ::onnx::OperatorSetIdProto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  ::onnx::GraphProto* graph = proto.mutable_graph();
  graph->set_name(model.name());
  GraphBuilder b(graph, options.opset);

  std::vector<Value> inputs;
  for (const Tensor& t : model.inputs()) {
    const std::string name = b.fresh(t.keras_history()->node->layer->name());
    declare(graph->add_input(), name, t.shape(), t.dtype());
    inputs.push_back({name, t.shape(), value_dtype(t.dtype())});
  }
  const std::vector<Value> outs = convert_graph(b, model, inputs);
  std::vector<std::string> output_names;
  for (size_t i = 0; i < outs.size(); ++i) {
    // Outputs are named after the layers that give them, as Keras names them in predict's dict.
    const std::string name = b.fresh(model.outputs()[i].keras_history()->node->layer->name());
    graph->add_node()->CopyFrom([&] {
      ::onnx::NodeProto n;
      n.set_op_type("Identity");
      n.set_name(name);
      n.add_input(outs[i].name);
      n.add_output(name);
      return n;
    }());
    declare(graph->add_output(), name, model.outputs()[i].shape(), value_dtype(model.outputs()[i].dtype()));
    output_names.push_back(name);
  }
  b.prune(output_names);

  try {
    ::onnx::checker::check_model(proto);
    // Strict shape inference also catches a node whose input shapes do not fit (a kernel in the wrong layout).
    ::onnx::ModelProto inferred = proto;
    ::onnx::ShapeInferenceOptions strict{/*check_type=*/true, /*error_mode=*/1};
    ::onnx::shape_inference::InferShapes(inferred, ::onnx::OpSchemaRegistry::Instance(), strict);
  } catch (const std::exception& e) {
    throw Internal(std::string("ONNX export: the model built for '") + model.name() + "' fails ONNX's checker: " + e.what());
  }
  std::string bytes;
  EMBER_CHECK(proto.SerializeToString(&bytes), Internal) << "ONNX export: cannot serialize the model";
  io::write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    EMBER_CHECK(out.good(), Internal) << "ONNX export: cannot write '" << tmp << "'";
  });
}

}  // namespace ember::onnx
