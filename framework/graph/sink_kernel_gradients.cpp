// A kernel gradient x^T @ dy that only an optimizer's update reads is made right before the update instead of where
// the backward pass reached it, so that its buffer is not held through the rest of the backward pass (in the Keras
// example CNN's step, the dense layer's 800 KB gradient through the convolutions' gradients, where the step's
// memory peaks), and the update reads it while it is still in cache. Products are moved only past nodes without
// effects, and keep their order; the values are the same.
#include <variant>
#include <vector>

#include "framework/graph/passes.h"

namespace ember::graph {

void sink_kernel_gradients(Graph& g) {
  const std::vector<int> readers = g.reader_counts();
  std::vector<Node> out;
  out.reserve(g.nodes.size());
  std::vector<size_t> sunk;  // indices into g.nodes of the products moved, in order
  std::vector<char> moved(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& p = g.nodes[k];
    const auto* attrs = std::get_if<MatMulAttrs>(&p.attrs);
    if (p.kind != NodeKind::Op || p.op != OpId::matmul || !attrs || !attrs->transpose_a || p.outputs.size() != 1 ||
        p.outputs[0] < 0 || readers[static_cast<size_t>(p.outputs[0])] != 1)
      continue;
    // Its one reader: an update of variables, with no node between that has effects (an assignment could change a
    // variable the product reads).
    for (size_t r = k + 1; r < g.nodes.size(); ++r) {
      const Node& u = g.nodes[r];
      bool reads = false;
      for (int v : u.inputs) reads = reads || v == p.outputs[0];
      if (!reads) {
        if (u.has_effects()) break;
        continue;
      }
      if (u.kind == NodeKind::UpdateVariables) moved[k] = 1;
      break;
    }
  }
  std::vector<int> renumbered(g.nodes.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (moved[k]) continue;
    if (g.nodes[k].kind == NodeKind::UpdateVariables)
      for (size_t m = 0; m < g.nodes.size(); ++m)
        if (moved[m] == 1) {
          bool reads = false;
          for (int v : g.nodes[k].inputs) reads = reads || v == g.nodes[m].outputs[0];
          if (reads) {
            renumbered[m] = static_cast<int>(out.size());
            out.push_back(std::move(g.nodes[m]));
            moved[m] = 2;
          }
        }
    renumbered[k] = static_cast<int>(out.size());
    out.push_back(std::move(g.nodes[k]));
  }
  g.nodes = std::move(out);
  for (Node& n : g.nodes)
    if (n.kind == NodeKind::ControlFlowGrad) n.forward = renumbered[static_cast<size_t>(n.forward)];
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int v : g.nodes[k].outputs)
      if (v >= 0) g.values[static_cast<size_t>(v)].producer = static_cast<int>(k);
}

}  // namespace ember::graph
