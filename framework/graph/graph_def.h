#pragma once
// A traced graph as a serialized tensorflow.GraphDef (TF: tensorflow/core/framework/graph.proto), the form
// TensorBoard's Graphs tab reads from an event file's graph_def (callbacks::TensorBoard's write_graph).
// The GraphDef describes the graph for display only: TensorFlow could not run it (Ember's ops are not TF's).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "framework/graph/graph.h"

namespace ember::graph {

// The graph as a GraphDef, one NodeDef each for:
//   every input:    "input_<k>", op "Placeholder";
//   every constant: "const_<value id>", op "Const";
//   every variable: its name made unique, op "VarHandleOp", read by the nodes below;
//   every node:     "<op>_<node index>", op the Ember op's name ("matmul_bias"), "ReadVariableOp",
//                   "AssignVariableOp", "HostCall" or, for a tensor remade outside any op, its kind ("view");
//                   a host call is named after what it runs instead ("SGD.apply_17").
// A node's inputs name their producers as TF does: "name" for output 0, "name:k" for output k. Nodes carry
// "_output_shapes" (and "dtype" where TF's op of that name has it) and a device when not on the CPU; matmul_bias
// and conv2d_bias also carry TF's "fused_ops" of _FusedMatMul / _FusedConv2D: ["BiasAdd"], then the activation
// the op applies ("Relu", "Tanh" or "Sigmoid").
std::string to_graph_def(const Graph& g);

// One NodeDef read back from a serialized GraphDef (for tests and tools; other fields are skipped).
struct NodeDef {
  std::string name, op, device;
  std::vector<std::string> inputs;
  std::vector<std::string> attrs;  // the attr names, sorted
  std::map<std::string, std::vector<std::string>> string_lists;  // the attrs holding a list of strings
};
// The nodes of a serialized GraphDef in order; DataLoss when it is malformed.
std::vector<NodeDef> decode_graph_def(std::string_view graph_def);

}  // namespace ember::graph
