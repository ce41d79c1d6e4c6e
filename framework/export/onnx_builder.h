#pragma once
// The ONNX graph under construction (framework/export only): fresh tensor names, nodes with attributes,
// float32 initializers, cached NHWC <-> NCHW transposes, and the layer converters' shared interface.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "framework/core/shape.h"
#include "framework/core/tensor.h"

namespace ember {
class Layer;
}

namespace ember::onnx::detail {

// A tensor of the ONNX graph: its name, its Keras shape (batch -1) and its dtype (floating ones are float32
// in the graph).
struct Value {
  std::string name;
  Shape shape;
  DType dtype = DType::Float32;
};

class GraphBuilder {
 public:
  GraphBuilder(::onnx::GraphProto* graph, int64_t opset) : graph_(graph), opset_(opset) {}
  int64_t opset() const { return opset_; }

  // A name no other tensor of the graph has: stem, or stem_1, stem_2, ...
  std::string fresh(const std::string& stem);
  // Adds a node of op_type reading `inputs` and writing one fresh output named after `stem`; returns the output
  // name and, through `node`, the node for attributes.
  std::string add(const std::string& op_type, const std::vector<std::string>& inputs, const std::string& stem,
                  ::onnx::NodeProto** node = nullptr);
  // Initializers: a tensor's values as float32 (whatever its dtype), float32 or int64 constants.
  std::string weight(const Tensor& value, const std::string& stem);
  std::string floats(const std::vector<float>& values, const std::vector<int64_t>& dims, const std::string& stem);
  std::string int64s(const std::vector<int64_t>& values, const std::string& stem);
  // x transposed by perm, made once per (x, perm).
  std::string transpose(const std::string& x, const std::vector<int64_t>& perm, const std::string& stem);
  // Drops the nodes whose outputs nothing reads (a cached transpose that no later layer used).
  void prune(const std::vector<std::string>& graph_outputs);

 private:
  ::onnx::GraphProto* graph_;
  int64_t opset_;
  std::map<std::string, int> counters_;
  std::set<std::string> taken_;
  std::map<std::pair<std::string, std::vector<int64_t>>, std::string> transposes_;
};

void set_attr(::onnx::NodeProto* node, const std::string& name, int64_t v);
void set_attr(::onnx::NodeProto* node, const std::string& name, float v);
void set_attr(::onnx::NodeProto* node, const std::string& name, const std::string& v);
void set_attr(::onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& v);

// One layer call to convert: the layer, its config, its inputs and its output's shape.
struct LayerCall {
  const Layer& layer;
  const nlohmann::json& config;
  std::vector<Value> inputs;
  Shape output_shape;
};

// The layer's weight called `name` ("kernel", "bias", ...), or an undefined tensor when it has none.
Tensor layer_weight(const Layer& layer, const std::string& name);

// Converts one call of a layer that Keras's predict would run: returns the output's tensor name. A class
// without an ONNX form is Unimplemented naming the layer.
std::string convert_layer(GraphBuilder& b, const LayerCall& call);

}  // namespace ember::onnx::detail
