#pragma once
// The replay loop of a traced graph: each node's kernel or action in program order, with the front ends'
// work (shape inference, validation, attribute resolution) and the tape's bookkeeping already done at trace
// time. A value is dropped after its last reader, so its buffer returns to the allocator's cache (and a
// variable's buffer is the optimizer's alone again, for its update in place).
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/graph/graph.h"

namespace ember::graph {

// A cached cast (see cache_variable_casts): the variable version it was made from.
struct Node::CastCache {
  std::mutex mu;
  uint64_t version = 0;
  Tensor value;
};

// A Cond or While node run under a tape of its own, for its ControlFlowGrad node: the tape holds what the
// branch or the loop's passes computed, so the gradient is that of the very run, whatever it took.
struct ControlFlowTape {
  std::unique_ptr<GradientTape> tape;
  std::optional<GradientTape::Pause> paused;  // from the node's end: later ops are not its business
  std::vector<Tensor> sources;  // per node input: the view the run read (watched), or undefined (not floating)
  std::vector<Tensor> outputs;  // the run's outputs
  // The gradients of the node's inputs (undefined for the others) given those of its outputs (undefined: zero).
  std::vector<Tensor> gradients(const std::vector<Tensor>& output_gradients);
};

// Runs a Cond or While node on its inputs; with `tape`, under it (see ControlFlowTape).
std::vector<Tensor> run_control_flow(const Node& n, std::span<const Tensor> inputs, ControlFlowTape* tape);

// Runs an UpdateVariables node on `inputs` (one per node input): its op on the variables' buffers, each taken
// exclusively (copied first where another tensor shares it), then the inputs.
void run_variable_update(const Node& n, std::span<const Tensor> inputs);

class Executable {
 public:
  explicit Executable(Graph graph);
  const Graph& graph() const { return graph_; }
  // Runs the graph on `inputs` (one per graph input; the caller has checked their types) and returns
  // its outputs.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;

 private:
  Graph graph_;
  std::vector<std::vector<int>> release_after_;  // per node: values whose last reader it is
  std::vector<int> constants_;
  std::vector<char> keep_tape_;          // per node: a Cond or While whose ControlFlowGrad node follows
  std::vector<int> drop_tape_after_;     // per node: the forward node whose tape its last gradient node frees
};

}  // namespace ember::graph
