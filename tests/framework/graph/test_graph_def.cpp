// graph::to_graph_def: a traced graph as the tensorflow.GraphDef TensorBoard's Graphs tab reads, checked by
// decoding it back (graph::decode_graph_def, on the repository's protobuf decoder).
#include <catch2/catch.hpp>

#include <iostream>
#include <sstream>

#include "framework/ember.h"
#include "framework/graph/graph_def.h"

using namespace ember;
using graph::NodeDef;

namespace {

const NodeDef& find(const std::vector<NodeDef>& nodes, const std::string& name) {
  for (const NodeDef& n : nodes)
    if (n.name == name) return n;
  FAIL("no node " << name);
  throw;
}

std::string describe(const std::vector<NodeDef>& nodes) {
  std::ostringstream os;
  for (const NodeDef& n : nodes) {
    os << "  " << n.name << " = " << n.op << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << n.inputs[i];
    os << ")\n";
  }
  return os.str();
}

}  // namespace

TEST_CASE("to_graph_def: inputs, constants, variables, reads, ops and assignments", "[graph_def]") {
  Variable v(Tensor::from_vector<float>({1, 2}), {.name = "v"});
  auto step = ember::function([&](const Tensor& x) {
    Tensor y = x * v.read_value();
    v.assign(y);
    return y + 1.0f;
  });
  step(Tensor::from_vector<float>({3, 4}));
  const graph::Graph& g = step.concrete_functions()[0]->graph();
  std::ostringstream printed;
  printed << g;
  const std::vector<NodeDef> nodes = graph::decode_graph_def(graph::to_graph_def(g));
  INFO(printed.str() << "GraphDef:\n" << describe(nodes));
  // Placeholders and constants first, then one handle per variable, then the nodes in program order.
  REQUIRE(nodes.size() == 7);
  CHECK(describe(nodes) ==
        "  input_0 = Placeholder()\n"
        "  const_4 = Const()\n"
        "  v = VarHandleOp()\n"
        "  ReadVariableOp_0 = ReadVariableOp(v)\n"
        "  mul_1 = mul(input_0, ReadVariableOp_0)\n"
        "  AssignVariableOp_2 = AssignVariableOp(v, mul_1)\n"
        "  add_3 = add(mul_1, const_4)\n");
  using Attrs = std::vector<std::string>;
  CHECK(find(nodes, "input_0").attrs == Attrs{"_output_shapes", "dtype", "shape"});
  CHECK(find(nodes, "const_4").attrs == Attrs{"_output_shapes", "dtype"});
  CHECK(find(nodes, "v").attrs == Attrs{"_output_shapes", "dtype", "shape", "shared_name"});
  CHECK(find(nodes, "ReadVariableOp_0").attrs == Attrs{"_output_shapes", "dtype"});
  CHECK(find(nodes, "AssignVariableOp_2").attrs == Attrs{"dtype"});  // no outputs
  CHECK(find(nodes, "mul_1").attrs == Attrs{"_output_shapes"});
  for (const NodeDef& n : nodes) CHECK(n.device.empty());  // all on the CPU
}

TEST_CASE("to_graph_def: a Dense layer's matmul_bias reads the input and the layer's variables", "[graph_def]") {
  layers::Dense dense(3);
  dense.build(Shape({4, 2}));
  auto forward = ember::function([&](const Tensor& x) { return dense(x); });
  forward(Tensor::from_vector<float>(std::vector<float>(8, 1.0f), {4, 2}));
  const std::vector<NodeDef> nodes = graph::decode_graph_def(graph::to_graph_def(forward.concrete_functions()[0]->graph()));
  INFO(describe(nodes));
  const NodeDef* matmul = nullptr;
  for (const NodeDef& n : nodes)
    if (n.op == "matmul_bias") matmul = &n;
  REQUIRE(matmul != nullptr);
  REQUIRE(matmul->inputs.size() == 3);
  CHECK(matmul->inputs[0] == "input_0");
  std::vector<std::string> read_variables;
  for (size_t i = 1; i < 3; ++i) {
    const NodeDef& read = find(nodes, matmul->inputs[i]);
    CHECK(read.op == "ReadVariableOp");
    REQUIRE(read.inputs.size() == 1);
    CHECK(find(nodes, read.inputs[0]).op == "VarHandleOp");
    read_variables.push_back(read.inputs[0]);
  }
  CHECK_THAT(read_variables[0], Catch::Matchers::Contains("kernel"));
  CHECK_THAT(read_variables[1], Catch::Matchers::Contains("bias"));
}

TEST_CASE("to_graph_def: matmul_bias and conv2d_bias name their fused ops as TF's _FusedMatMul does", "[graph_def]") {
  // A Dense(tanh) traced: the compiler moves the tanh into the matmul_bias; the plain Dense keeps BiasAdd alone.
  layers::Dense hidden(3, {.activation = "tanh"}), out(2);
  auto forward = ember::function([&](const Tensor& x) { return out(hidden(x)); });
  forward(Tensor::from_vector<float>(std::vector<float>(8, 1.0f), {4, 2}));
  const std::vector<NodeDef> nodes = graph::decode_graph_def(graph::to_graph_def(forward.concrete_functions()[0]->graph()));
  INFO(describe(nodes));
  std::vector<std::vector<std::string>> fused;
  for (const NodeDef& n : nodes) {
    if (n.op != "matmul_bias") {
      CHECK_FALSE(n.string_lists.contains("fused_ops"));
      continue;
    }
    REQUIRE(n.string_lists.contains("fused_ops"));
    fused.push_back(n.string_lists.at("fused_ops"));
  }
  CHECK(fused == std::vector<std::vector<std::string>>{{"BiasAdd", "Tanh"}, {"BiasAdd"}});
}

TEST_CASE("to_graph_def: output k is named name:k; names are unique and TF-valid; devices", "[graph_def]") {
  // A hand-made graph: a node with two outputs, a variable whose name TF would refuse, and a name clash.
  graph::Graph g;
  const int x = g.add_value({Shape({2}), DType::Float32, Device::cpu(), -1, 0, Tensor()});
  g.inputs = {x};
  Variable var(Tensor::from_vector<float>({1, 2}), {.name = "input_0"});  // clashes with the placeholder
  Variable odd(Tensor::from_vector<float>({1, 2}), {.name = "my var:0"});
  graph::Node read;
  read.kind = graph::NodeKind::ReadVariable;
  read.variable = var;
  read.outputs = {g.add_value({Shape({2}), DType::Float32, Device::cpu(), 0, -1, Tensor()})};
  g.nodes.push_back(read);
  graph::Node split;
  split.op = OpId::add;  // any op: only its name and arity matter here
  split.inputs = {x, read.outputs[0]};
  split.outputs = {g.add_value({Shape({2}), DType::Float32, Device::cpu(), 1, -1, Tensor()}),
                   g.add_value({Shape({2}), DType::Float32, Device::cpu(), 1, -1, Tensor()})};
  split.device = Device::cuda(1);
  g.nodes.push_back(split);
  graph::Node use;
  use.op = OpId::mul;
  use.inputs = {split.outputs[1], split.outputs[0]};
  use.outputs = {g.add_value({Shape({2}), DType::Float32, Device::cpu(), 2, -1, Tensor()})};
  g.nodes.push_back(use);
  graph::Node read_odd;
  read_odd.kind = graph::NodeKind::ReadVariable;
  read_odd.variable = odd;
  read_odd.outputs = {g.add_value({Shape({2}), DType::Float32, Device::cpu(), 3, -1, Tensor()})};
  g.nodes.push_back(read_odd);
  g.outputs = {use.outputs[0]};

  const std::vector<NodeDef> nodes = graph::decode_graph_def(graph::to_graph_def(g));
  INFO(describe(nodes));
  CHECK(describe(nodes) ==
        "  input_0 = Placeholder()\n"
        "  input_0_1 = VarHandleOp()\n"
        "  my_var_0 = VarHandleOp()\n"
        "  ReadVariableOp_0 = ReadVariableOp(input_0_1)\n"
        "  add_1 = add(input_0, ReadVariableOp_0)\n"
        "  mul_2 = mul(add_1:1, add_1)\n"
        "  ReadVariableOp_3 = ReadVariableOp(my_var_0)\n");
  CHECK(find(nodes, "add_1").device == "/device:GPU:1");
  CHECK(find(nodes, "mul_2").device.empty());
}

TEST_CASE("decode_graph_def: malformed bytes are DataLoss", "[graph_def]") {
  CHECK(graph::decode_graph_def("").empty());
  CHECK_THROWS_AS(graph::decode_graph_def(std::string("\x0a\x05" "ab", 4)), DataLoss);  // node longer than the message
}
