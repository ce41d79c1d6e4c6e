#include "framework/graph/graph.h"

#include <ostream>
#include <sstream>

#include "framework/graph/executor.h"

namespace ember::graph {

bool Node::writes_input() const {
  if (kind != NodeKind::Op || op == OpId::reshape) return false;
  for (const OutputSpec& s : specs)
    if (s.alias_input >= 0) return true;
  return false;
}

FusedActivation Node::fused_activation() const {
  return kind == NodeKind::Op ? fused_activation_of(attrs) : FusedActivation::None;
}

const Node* cast_producing(const Graph& g, int v) {
  const int producer = g.values[static_cast<size_t>(v)].producer;
  if (producer < 0) return nullptr;
  const Node& n = g.nodes[static_cast<size_t>(producer)];
  if (n.kind != NodeKind::Op || n.op != OpId::cast || n.inputs.size() != 1 || n.inputs[0] < 0) return nullptr;
  return &n;
}

bool Node::has_effects() const {
  if (kind == NodeKind::AssignVariable || kind == NodeKind::UpdateVariables || kind == NodeKind::HostCall ||
      writes_input())
    return true;
  if (kind == NodeKind::Cond || kind == NodeKind::While) {
    for (const auto& sub : subgraphs)
      for (const Node& n : sub->graph().nodes)
        if (n.has_effects()) return true;
    return false;
  }
  // Random ops advance the generator: a traced function draws what eager execution would, used or not.
  return kind == NodeKind::Op && (op == OpId::random_uniform || op == OpId::random_normal ||
                                  op == OpId::truncated_normal);
}

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

std::vector<int> Graph::reader_counts() const {
  std::vector<int> readers(values.size(), 0);
  for (const Node& n : nodes)
    for (int v : n.inputs)
      if (v >= 0) ++readers[static_cast<size_t>(v)];
  for (int v : outputs) ++readers[static_cast<size_t>(v)];
  return readers;
}

size_t Graph::count(NodeKind kind) const {
  size_t n = 0;
  for (const Node& node : nodes) n += node.kind == kind;
  return n;
}

size_t Graph::count(OpId op) const {
  size_t n = 0;
  for (const Node& node : nodes) n += node.kind == NodeKind::Op && node.op == op;
  return n;
}

namespace {

std::string node_label(const Node& n) {
  switch (n.kind) {
    case NodeKind::Op: {
      // matmul_bias and conv2d_bias name their fused activation: "matmul_bias[tanh]".
      const FusedActivation a = n.fused_activation();
      const std::string name = op_name(n.op, n.attrs);
      return a == FusedActivation::None ? name : name + "[" + fused_activation_name(a) + "]";
    }
    case NodeKind::ReadVariable:
      return "read_variable['" + n.variable.name() + "']";
    case NodeKind::AssignVariable:
      return "assign_variable['" + n.variable.name() + "']";
    case NodeKind::Derived:
      return n.name;
    case NodeKind::UpdateVariables:
      return "update_variables['" + n.name + "': " + op_name(n.op, n.attrs) + " of " + std::to_string(n.updates.size()) +
             "]";
    case NodeKind::HostCall:
      return "host_call['" + n.name + "']";
    case NodeKind::Cond:
      return "cond";
    case NodeKind::While:
      return n.maximum_iterations >= 0 ? "while[maximum_iterations=" + std::to_string(n.maximum_iterations) + "]"
                                       : std::string("while");
    case NodeKind::ControlFlowGrad:
      return "control_flow_grad[of node " + std::to_string(n.forward) + "]";
    case NodeKind::Fused:
      return n.name;
  }
  return "?";
}

std::string value_type(const Value& v) {
  std::ostringstream os;
  os << dtype_name(v.dtype) << v.shape.to_string();
  if (!v.device.is_cpu()) os << "@" << v.device;
  return os.str();
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Graph& g) {
  os << "graph(";
  for (size_t i = 0; i < g.inputs.size(); ++i)
    os << (i ? ", " : "") << "%" << g.inputs[i] << ":" << value_type(g.values[static_cast<size_t>(g.inputs[i])]);
  os << ") {\n";
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant.defined()) os << "  %" << v << ":" << value_type(g.values[v]) << " = constant\n";
  for (const Node& n : g.nodes) {
    os << "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] < 0) os << (i ? ", " : "") << "none";
      else os << (i ? ", " : "") << "%" << n.outputs[i] << ":" << value_type(g.values[static_cast<size_t>(n.outputs[i])]);
    if (!n.outputs.empty()) os << " = ";
    os << node_label(n) << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      os << (i ? ", " : "");
      if (n.inputs[i] >= 0) os << "%" << n.inputs[i];
      else os << "none";
    }
    os << ")\n";
    // A control-flow node's graphs, indented below it.
    static const char* const kCondNames[] = {"true", "false"};
    static const char* const kWhileNames[] = {"cond", "body"};
    for (size_t i = 0; i < n.subgraphs.size(); ++i) {
      std::ostringstream sub;
      sub << n.subgraphs[i]->graph();
      std::istringstream lines(sub.str());
      os << "    " << (n.kind == NodeKind::Cond ? kCondNames[i] : kWhileNames[i]) << ": ";
      bool first = true;
      for (std::string line; std::getline(lines, line); first = false) os << (first ? "" : "    ") << line << "\n";
    }
  }
  os << "  return";
  for (size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", " : " ") << "%" << g.outputs[i];
  return os << "\n}\n";
}

namespace {
// A label's text in a DOT string: quotes and backslashes escaped, line breaks as DOT's \n.
std::string dot_escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

std::string Graph::to_dot() const {
  std::ostringstream os;
  os << "digraph ember_function {\n  node [shape=box, fontname=\"monospace\"];\n";
  // A value's source: an input or constant (its own node) or the node that makes it.
  auto source = [&](int v) {
    const Value& val = values[static_cast<size_t>(v)];
    std::string name(1, val.producer >= 0 ? 'n' : 'v');
    name += std::to_string(val.producer >= 0 ? val.producer : v);
    return name;
  };
  for (size_t v = 0; v < values.size(); ++v) {
    const Value& val = values[v];
    if (val.input >= 0)
      os << "  v" << v << " [shape=ellipse, label=\"input " << val.input << "\\n" << value_type(val) << "\"];\n";
    else if (val.constant.defined())
      os << "  v" << v << " [shape=ellipse, style=dashed, label=\"constant\\n" << value_type(val) << "\"];\n";
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    os << "  n" << i << " [label=\"" << dot_escaped(node_label(n));
    for (int out : n.outputs)
      if (out >= 0) os << "\\n" << value_type(values[static_cast<size_t>(out)]);
    os << "\"" << (n.has_effects() ? ", style=bold" : "") << "];\n";
    for (int in : n.inputs)
      if (in >= 0) os << "  " << source(in) << " -> n" << i << ";\n";
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    os << "  out" << i << " [shape=ellipse, label=\"output " << i << "\"];\n  " << source(outputs[i]) << " -> out" << i
       << ";\n";
  os << "}\n";
  return os.str();
}

}  // namespace ember::graph
