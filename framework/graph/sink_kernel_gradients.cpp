// A kernel gradient x^T @ dy that only an optimizer's update reads may be made right before the update instead of
// where the backward pass reached it: its buffer is then not held through the rest of the backward pass (in the
// Keras example CNN's step at batch 128, the dense layer's 800 KB gradient through the convolutions' gradients,
// where the step's memory peaks), but its operands are held until then instead, which at larger batches is more.
// So each product is moved only where that lowers the memory plan's peak (liveness_peak_bytes), one at a time in
// the backward pass's order, and only past nodes without effects; the values are the same.
#include <variant>
#include <vector>

#include "framework/graph/memory_plan.h"
#include "framework/graph/passes.h"

namespace ember::graph {

namespace {

// Moves node `from` to just before node `to` (from < to), renumbering what refers to nodes by index.
void move_before(Graph& g, size_t from, size_t to) {
  std::vector<int> renumbered(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    renumbered[k] = static_cast<int>(k < from || k >= to ? k : k == from ? to - 1 : k - 1);
  Node moved = std::move(g.nodes[from]);
  g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(from));
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(to - 1), std::move(moved));
  for (Node& n : g.nodes)
    if (n.kind == NodeKind::ControlFlowGrad) n.forward = renumbered[static_cast<size_t>(n.forward)];
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int v : g.nodes[k].outputs)
      if (v >= 0) g.values[static_cast<size_t>(v)].producer = static_cast<int>(k);
}

bool reads(const Node& n, int value) {
  for (int v : n.inputs)
    if (v == value) return true;
  return false;
}

// The index of the update node that reads the kernel gradient made by node k, when it is the product's only reader
// and no node between has effects; 0 otherwise.
size_t sink_target(const Graph& g, const std::vector<int>& readers, size_t k) {
  const Node& p = g.nodes[k];
  const auto* attrs = std::get_if<MatMulAttrs>(&p.attrs);
  if (p.kind != NodeKind::Op || p.op != OpId::matmul || !attrs || !attrs->transpose_a || p.outputs.size() != 1 ||
      p.outputs[0] < 0 || readers[static_cast<size_t>(p.outputs[0])] != 1)
    return 0;
  for (size_t r = k + 1; r < g.nodes.size(); ++r) {
    const Node& u = g.nodes[r];
    if (reads(u, p.outputs[0])) return u.kind == NodeKind::UpdateVariables && r > k + 1 ? r : 0;
    if (u.has_effects()) return 0;
  }
  return 0;
}

}  // namespace

void sink_kernel_gradients(Graph& g) {
  const std::vector<int> readers = g.reader_counts();
  std::vector<int> products;  // the candidates' output values, in the backward pass's order
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (sink_target(g, readers, k)) products.push_back(g.nodes[k].outputs[0]);
  if (products.empty()) return;
  // The peak as the plan will see it: after the ops that may are written in place (a pass that comes later).
  auto peak_of = [](Graph copy) {
    write_in_place(copy);
    return liveness_peak_bytes(copy);
  };
  int64_t best = peak_of(g);
  for (int v : products) {
    const size_t k = static_cast<size_t>(g.values[static_cast<size_t>(v)].producer);
    const size_t target = sink_target(g, readers, k);
    if (!target) continue;
    Graph trial = g;
    move_before(trial, k, target);
    const int64_t peak = peak_of(trial);
    if (peak < best) {
      g = std::move(trial);
      best = peak;
    }
  }
}

}  // namespace ember::graph
