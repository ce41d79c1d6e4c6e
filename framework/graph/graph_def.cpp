#include "framework/graph/graph_def.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>

#include "framework/core/error.h"
#include "framework/io/proto_wire.h"

namespace ember::graph {
namespace {

using io::proto::Decoder;
using io::proto::Encoder;
using io::proto::Field;
using io::proto::WireType;

// Field numbers from tensorflow/core/framework/graph.proto, node_def.proto, attr_value.proto,
// tensor_shape.proto, versions.proto and types.proto.
namespace graph_field {
constexpr int kNode = 1, kVersions = 4;
}
constexpr int kVersionProducer = 1;
namespace node_field {
constexpr int kName = 1, kOp = 2, kInput = 3, kDevice = 4, kAttr = 5;
}
constexpr int kMapKey = 1, kMapValue = 2;  // a map<string, AttrValue> entry
namespace attr_field {
constexpr int kList = 1, kS = 2, kType = 6, kShape = 7;
}
constexpr int kListS = 2, kListShape = 7;  // AttrValue.ListValue
constexpr int kShapeDim = 2, kDimSize = 1;

uint64_t tf_data_type(DType t) {
  switch (t) {
    case DType::Float32: return 1;    // DT_FLOAT
    case DType::Float64: return 2;    // DT_DOUBLE
    case DType::Int32: return 3;      // DT_INT32
    case DType::UInt8: return 4;      // DT_UINT8
    case DType::Int64: return 9;      // DT_INT64
    case DType::Bool: return 10;      // DT_BOOL
    case DType::BFloat16: return 14;  // DT_BFLOAT16
    case DType::Float16: return 19;   // DT_HALF
    case DType::String: return 7;     // DT_STRING
  }
  return 0;  // DT_INVALID
}

std::string shape_proto(const Shape& shape) {
  Encoder s;
  for (int64_t d : shape.dims()) {
    Encoder dim;
    if (d != 0) dim.add_int64(kDimSize, d);
    s.add_bytes(kShapeDim, dim.bytes());
  }
  return std::move(s).take();
}

// A NodeDef being written: fields in field-number order, as TF's serializer writes them.
class NodeWriter {
 public:
  NodeWriter(std::string_view name, std::string_view op) {
    e_.add_bytes(node_field::kName, name);
    e_.add_bytes(node_field::kOp, op);
  }
  void input(std::string_view name) { e_.add_bytes(node_field::kInput, name); }
  void device(const Device& d) {
    if (!d.is_cpu()) e_.add_bytes(node_field::kDevice, "/device:GPU:" + std::to_string(d.index()));
  }
  // One attr: value is a serialized AttrValue.
  void attr(std::string_view key, const Encoder& value) {
    Encoder entry;
    entry.add_bytes(kMapKey, key);
    entry.add_bytes(kMapValue, value.bytes());
    e_.add_bytes(node_field::kAttr, entry.bytes());
  }
  void attr_bytes(std::string_view key, int field, std::string_view bytes) {
    Encoder value;
    value.add_bytes(field, bytes);
    attr(key, value);
  }
  void dtype(DType t) {
    Encoder value;
    value.add_varint(attr_field::kType, tf_data_type(t));
    attr("dtype", value);
  }
  void string_list(std::string_view key, const std::vector<std::string>& strings) {
    Encoder list;
    for (const std::string& s : strings) list.add_bytes(kListS, s);
    attr_bytes(key, attr_field::kList, list.bytes());
  }
  void output_shapes(const std::vector<Shape>& shapes) {
    if (shapes.empty()) return;
    Encoder list;
    for (const Shape& s : shapes) list.add_bytes(kListShape, shape_proto(s));
    attr_bytes("_output_shapes", attr_field::kList, list.bytes());
  }
  std::string take() && { return std::move(e_).take(); }

 private:
  Encoder e_;
};

// TF's node names match [A-Za-z0-9.][A-Za-z0-9_>./]*; other characters become '_'.
std::string node_name(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '/' && c != '>') c = '_';
  if (out.empty() || out[0] == '_' || out[0] == '/' || out[0] == '>') out.insert(out.begin(), 'v');
  return out;
}

std::string kind_op(const Node& n) {
  switch (n.kind) {
    case NodeKind::Op: return op_name(n.op, n.attrs);
    case NodeKind::ReadVariable: return "ReadVariableOp";
    case NodeKind::AssignVariable: return "AssignVariableOp";
    case NodeKind::Derived: return n.name.empty() ? std::string("Derived") : n.name;
    case NodeKind::UpdateVariables: return op_name(n.op, n.attrs);
    case NodeKind::HostCall: return "HostCall";
    case NodeKind::Cond: return "If";  // TF's names for the same nodes
    case NodeKind::While: return "While";
    case NodeKind::ControlFlowGrad: return "SymbolicGradient";
    case NodeKind::Fused: return "FusedElementwise";
  }
  return "?";
}

// What a matmul_bias or conv2d_bias node computes after its product, in TF's terms (the fused_ops attr of its
// _FusedMatMul and _FusedConv2D): {"BiasAdd"} and the activation ("Relu", "Tanh", "Sigmoid"); empty for other
// nodes.
std::vector<std::string> fused_ops(const Node& n) {
  if (n.kind != NodeKind::Op || (n.op != OpId::matmul_bias && n.op != OpId::conv2d_bias)) return {};
  const FusedActivation a = n.fused_activation();
  std::vector<std::string> ops = {"BiasAdd"};
  if (a != FusedActivation::None) {
    std::string name = fused_activation_name(a);
    name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
    ops.push_back(std::move(name));
  }
  return ops;
}

}  // namespace

std::string to_graph_def(const Graph& g) {
  Encoder graph;
  std::set<std::string> used;
  const auto unique = [&](const std::string& base) {
    std::string name = base;
    for (int k = 1; !used.insert(name).second; ++k) name = base + "_" + std::to_string(k);
    return name;
  };
  // What each node is called, then what each value is called as an input ("name" or "name:k").
  std::vector<std::string> node_names(g.nodes.size());
  std::vector<std::string> value_names(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (val.input >= 0) value_names[v] = unique("input_" + std::to_string(val.input));
    else if (val.producer < 0 && val.constant.defined()) value_names[v] = unique("const_" + std::to_string(v));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    // A host call or a variable update is named after what it runs ("SGD.apply"): its op alone would not say.
    const bool named = (n.kind == NodeKind::HostCall || n.kind == NodeKind::UpdateVariables) && !n.name.empty();
    node_names[i] = unique(node_name(named ? n.name : kind_op(n)) + "_" + std::to_string(i));
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] < 0) continue;
      std::string& name = value_names[static_cast<size_t>(n.outputs[k])];
      name = node_names[i];
      if (k > 0) name.append(":").append(std::to_string(k));
    }
  }
  // One handle per variable, named after it, so that TensorBoard groups its reads and writes.
  std::unordered_map<const void*, std::string> handles;
  for (const Node& n : g.nodes)
    if ((n.kind == NodeKind::ReadVariable || n.kind == NodeKind::AssignVariable) && n.variable.defined() &&
        !handles.contains(n.variable.handle()))
      handles[n.variable.handle()] = unique(node_name(n.variable.name()));

  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (value_names[v].empty() || val.producer >= 0) continue;
    NodeWriter w(value_names[v], val.input >= 0 ? "Placeholder" : "Const");
    w.device(val.device);
    w.output_shapes({val.shape});
    w.dtype(val.dtype);
    if (val.input >= 0) w.attr_bytes("shape", attr_field::kShape, shape_proto(val.shape));
    graph.add_bytes(graph_field::kNode, std::move(w).take());
  }
  std::set<const void*> written;
  for (const Node& n : g.nodes) {
    if (!n.variable.defined() || !handles.contains(n.variable.handle()) || !written.insert(n.variable.handle()).second)
      continue;
    NodeWriter w(handles[n.variable.handle()], "VarHandleOp");
    w.device(n.variable.device());
    w.output_shapes({Shape()});  // a handle is a scalar (of TF's resource type)
    w.dtype(n.variable.dtype());
    w.attr_bytes("shape", attr_field::kShape, shape_proto(n.variable.shape()));
    w.attr_bytes("shared_name", attr_field::kS, n.variable.name());
    graph.add_bytes(graph_field::kNode, std::move(w).take());
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    NodeWriter w(node_names[i], kind_op(n));
    if (n.variable.defined() && handles.contains(n.variable.handle())) w.input(handles[n.variable.handle()]);
    for (int in : n.inputs)
      if (in >= 0 && !value_names[static_cast<size_t>(in)].empty()) w.input(value_names[static_cast<size_t>(in)]);
    // Ops carry their device; other nodes run where their output or variable lives.
    Device device = n.kind == NodeKind::Op ? n.device : Device::cpu();
    if (n.kind != NodeKind::Op && !n.outputs.empty() && n.outputs[0] >= 0)
      device = g.values[static_cast<size_t>(n.outputs[0])].device;
    else if (n.kind != NodeKind::Op && n.variable.defined()) device = n.variable.device();
    w.device(device);
    std::vector<Shape> shapes;
    for (int out : n.outputs) shapes.push_back(out >= 0 ? g.values[static_cast<size_t>(out)].shape : Shape());
    w.output_shapes(shapes);
    if (n.kind == NodeKind::ReadVariable || n.kind == NodeKind::AssignVariable) w.dtype(n.variable.dtype());
    if (const std::vector<std::string> fused = fused_ops(n); !fused.empty()) w.string_list("fused_ops", fused);
    graph.add_bytes(graph_field::kNode, std::move(w).take());
  }
  Encoder versions;
  versions.add_varint(kVersionProducer, 1);
  graph.add_bytes(graph_field::kVersions, versions.bytes());
  return std::move(graph).take();
}

std::vector<NodeDef> decode_graph_def(std::string_view graph_def) {
  const auto expect = [](const Field& f, WireType type, const char* what) {
    EMBER_CHECK(f.type == type, DataLoss) << "GraphDef: " << what << " (field " << f.field << ") has wire type "
                                          << int(f.type) << ", expected " << int(type);
  };
  std::vector<NodeDef> nodes;
  Decoder d(graph_def);
  for (Field f; d.next(f);) {
    if (f.field != graph_field::kNode) continue;
    expect(f, WireType::LengthDelimited, "GraphDef.node");
    NodeDef node;
    Decoder nd(f.bytes);
    for (Field g; nd.next(g);) {
      if (g.field < node_field::kName || g.field > node_field::kAttr) continue;
      expect(g, WireType::LengthDelimited, "NodeDef field");
      switch (g.field) {
        case node_field::kName: node.name = std::string(g.bytes); break;
        case node_field::kOp: node.op = std::string(g.bytes); break;
        case node_field::kInput: node.inputs.emplace_back(g.bytes); break;
        case node_field::kDevice: node.device = std::string(g.bytes); break;
        case node_field::kAttr: {
          Decoder entry(g.bytes);
          std::string key;
          std::vector<std::string> strings;
          for (Field h; entry.next(h);) {
            if (h.field != kMapKey && h.field != kMapValue) continue;
            expect(h, WireType::LengthDelimited, h.field == kMapKey ? "NodeDef.attr key" : "NodeDef.attr value");
            if (h.field == kMapKey) {
              key = std::string(h.bytes);
              continue;
            }
            Decoder value(h.bytes);  // an AttrValue: keep a list's strings
            for (Field v; value.next(v);) {
              if (v.field != attr_field::kList) continue;
              expect(v, WireType::LengthDelimited, "AttrValue.list");
              Decoder list(v.bytes);
              for (Field item; list.next(item);)
                if (item.field == kListS) {
                  expect(item, WireType::LengthDelimited, "AttrValue.ListValue.s");
                  strings.emplace_back(item.bytes);
                }
            }
          }
          node.attrs.push_back(key);
          if (!strings.empty()) node.string_lists[key] = std::move(strings);
          break;
        }
      }
    }
    std::sort(node.attrs.begin(), node.attrs.end());
    nodes.push_back(std::move(node));
  }
  return nodes;
}

}  // namespace ember::graph
