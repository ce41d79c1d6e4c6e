#pragma once
// A graph written by hand (framework/graph), for what a trace never records or a test needs exactly: values on a
// chosen device, two identical random ops, two reads of a variable.
#include <utility>
#include <vector>

#include "framework/ember.h"
#include "framework/graph/graph.h"

namespace ember::testing {

struct GraphBuilder {
  graph::Graph g;
  Device device = Device::cpu();  // of the values made from here on

  int value(const Shape& s) { return g.add_value(graph::Value{s, DType::Float32, device, -1, -1, Tensor()}); }
  int input(const Shape& s) {
    const int v = value(s);
    g.values[static_cast<size_t>(v)].input = static_cast<int>(g.inputs.size());
    g.inputs.push_back(v);
    return v;
  }
  int node(graph::Node n, const Shape& out) {
    const int v = value(out);
    g.values[static_cast<size_t>(v)].producer = static_cast<int>(g.nodes.size());
    n.outputs = {v};
    n.device = device;
    g.nodes.push_back(std::move(n));
    return v;
  }
  int read(const Variable& var) {
    graph::Node n;
    n.kind = graph::NodeKind::ReadVariable;
    n.variable = var;
    return node(std::move(n), var.shape());
  }
  void assign(const Variable& var, int v) {
    graph::Node n;
    n.kind = graph::NodeKind::AssignVariable;
    n.variable = var;
    n.inputs = {v};
    g.nodes.push_back(std::move(n));
  }
  int op(OpId op, std::vector<int> inputs, const Shape& out, Attrs attrs = {}) {
    graph::Node n;
    n.op = op;
    n.inputs = std::move(inputs);
    n.specs = {OutputSpec{out, DType::Float32}};
    n.attrs = std::move(attrs);
    return node(std::move(n), out);
  }
};

}  // namespace ember::testing
