#pragma once
// Graph: what tracing a function records (TF: FuncGraph). Values are numbered; nodes read and write them
// in program order. A node is an op, a read or an assignment of a variable, an op updating variables in place
// (an optimizer's step), a tensor remade from another outside any op (a view, a copy), a host call (eager code run
// on every call, e.g. ops::print), or control flow (ops::cond, ops::while_loop) holding graphs of its own, with the
// gradient node of one.
#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "framework/autodiff/variable.h"
#include "framework/core/error_context.h"
#include "framework/core/tensor.h"
#include "framework/ops/dispatch.h"

namespace ember::ops {
struct FusedElementwise;
}

namespace ember::graph {

enum class NodeKind {
  Op,
  ReadVariable,
  AssignVariable,
  UpdateVariables,
  Derived,
  HostCall,
  Cond,
  While,
  ControlFlowGrad,
  Fused
};

class Executable;

// One value of the graph: its type, and where it comes from.
struct Value {
  Shape shape;
  DType dtype = DType::Float32;
  Device device = Device::cpu();
  int producer = -1;  // the node making it; -1 for inputs and constants
  int input = -1;     // >= 0: the function's input with this index
  Tensor constant;    // defined: a tensor captured by value while tracing
};

using HostFn = std::function<std::vector<Tensor>(std::span<const Tensor>)>;

struct Node {
  NodeKind kind = NodeKind::Op;
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids
  // Op
  OpId op{};
  Attrs attrs{};
  std::vector<OutputSpec> specs;
  Device device = Device::cpu();
  // >= 0: the output may be written into this input's buffer, which nothing reads after (write_in_place).
  int in_place_input = -1;
  // ReadVariable, AssignVariable
  Variable variable;
  // UpdateVariables (graph::update_variables): the op (op, attrs, specs, device) runs on these variables' buffers,
  // taken exclusively when it runs, followed by the node's inputs; its outputs (specs) are the buffers, in order.
  std::vector<Variable> updates;
  // Derived
  std::function<Tensor(const Tensor&)> remake;
  // Op cast of a variable's value (set by cache_variable_casts): the cast is made again only when the
  // variable's version changes.
  struct CastCache;
  Variable cast_of;
  std::shared_ptr<CastCache> cast_cache;
  // HostCall
  HostFn host;
  bool effect_only = false;  // HostCall made by host_effect: no results, run for what it changes
  std::string name;  // what the node is called in printouts (host calls, derivations, variable updates)
  // HostCall, UpdateVariables: its first 3 * gradient_triples inputs are gradients as (value, a, b) triples, as
  // Optimizer::apply_factored takes them: a pass may replace a value made by matmul(a, b, {.transpose_a = true})
  // with its factors (fold_kernel_gradients).
  int gradient_triples = 0;
  // HostCall: its host function widens float16 and bfloat16 inputs to float32 itself, with the cast's bits (a loss
  // scale optimizer's update, in its unscaling pass), so fold_gradient_casts may hand it a half value where a
  // cast to float32 made its input.
  bool widens_half_gradients = false;
  // Cond: {true branch, false branch}; inputs = {pred, captures...}, each branch taking the captures.
  // While: {cond, body}; inputs = {loop variables..., captures...}, both taking all of them.
  std::vector<std::shared_ptr<const Executable>> subgraphs;
  // The same graphs as traced, not optimised: what runs where a tape records the node, so that the gradients
  // are those of the ops eager execution ran (a pass that merges or fuses ops changes how gradients sum).
  std::vector<std::shared_ptr<const Executable>> tape_subgraphs;
  int num_loop_vars = 0;             // While
  int64_t maximum_iterations = -1;   // While: -1 for no limit
  // ControlFlowGrad: the index of the Cond or While node whose gradient it is; inputs = the gradients of that
  // node's outputs (-1: none), outputs = those of its inputs (-1: an input without one, not floating point).
  int forward = -1;
  // Fused (jit_compile's fuse_elementwise): a chain of elementwise ops run as one pass; inputs and outputs are
  // the chain's, in the program's order.
  std::shared_ptr<const ops::FusedElementwise> fused;
  // The error context the node was traced in (with_error_context: a layer's, a loss's), from the innermost frame
  // out to `error_base`, the frame its trace began in: a replay's error gets those frames, as eager's did.
  ErrorContext error_context;
  const ErrorContextFrame* error_base = nullptr;

  // Whether the node changes state outside its outputs, so it runs even when nothing reads them.
  bool has_effects() const;
  // Whether it is an op writing into one of its inputs' buffers (an update in place; a reshape only views).
  bool writes_input() const;
  // The activation a matmul_bias or conv2d_bias applies to its biased output (None for other nodes).
  FusedActivation fused_activation() const;
};

class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // value ids of the function's tensor inputs, in order
  std::vector<int> outputs;  // value ids the function returns, in order

  int add_value(Value v);
  // Per value: how many node inputs and graph outputs read it.
  std::vector<int> reader_counts() const;
  // Nodes that are not ops, by kind, and ops (all kinds when kind is empty): for tests and printouts.
  size_t count(NodeKind kind) const;
  size_t count(OpId op) const;
  // GraphViz DOT: one box per node, an edge per value read.
  std::string to_dot() const;
};

// The cast op that makes value v (v >= 0), or null.
const Node* cast_producing(const Graph& g, int v);

// One line per node, in program order: `%3:float32[8, 10] = matmul(%1, %2)`.
std::ostream& operator<<(std::ostream& os, const Graph& g);

}  // namespace ember::graph
