#pragma once
// The replay loop of a traced graph: each node's kernel or action in program order, with the front ends'
// work (shape inference, validation, attribute resolution) and the tape's bookkeeping already done at trace
// time. A value is dropped after its last reader, so its buffer returns to the allocator's cache (and a
// variable's buffer is the optimizer's alone again, for its update in place).
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "framework/graph/graph.h"

namespace ember::graph {

// A cached cast (see cache_variable_casts): the variable version it was made from.
struct Node::CastCache {
  std::mutex mu;
  uint64_t version = 0;
  Tensor value;
};

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
};

}  // namespace ember::graph
