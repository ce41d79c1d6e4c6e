// Dead-code elimination: what a traced function computed but never used (the views a variable assignment
// makes, a forward value only the discarded branch of a gradient read) is not run again on replay.
#include <vector>

#include "framework/graph/passes.h"

namespace ember::graph {

void eliminate_dead_code(Graph& g) {
  std::vector<char> needed(g.values.size(), 0);
  for (int v : g.outputs) needed[static_cast<size_t>(v)] = 1;
  std::vector<char> live(g.nodes.size(), 0);
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    bool keep = n.has_effects() || live[k];  // live already: a kept gradient node's forward node
    for (int v : n.outputs) keep = keep || (v >= 0 && needed[static_cast<size_t>(v)]);
    if (!keep) continue;
    live[k] = 1;
    if (n.kind == NodeKind::ControlFlowGrad) live[static_cast<size_t>(n.forward)] = 1;
    for (int v : n.inputs)
      if (v >= 0) needed[static_cast<size_t>(v)] = 1;
  }
  // Renumber nodes; value ids stay (a producer index is rewritten, unused values remain as entries).
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  std::vector<int> renumbered(g.nodes.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!live[k]) continue;
    renumbered[k] = static_cast<int>(kept.size());
    if (g.nodes[k].kind == NodeKind::ControlFlowGrad)
      g.nodes[k].forward = renumbered[static_cast<size_t>(g.nodes[k].forward)];
    for (int v : g.nodes[k].outputs)
      if (v >= 0) g.values[static_cast<size_t>(v)].producer = static_cast<int>(kept.size());
    kept.push_back(std::move(g.nodes[k]));
  }
  g.nodes = std::move(kept);
  // A constant only a dead node read is let go.
  for (size_t v = 0; v < g.values.size(); ++v)
    if (!needed[v] && g.values[v].constant.defined()) g.values[v].constant = Tensor();
}

Graph traced_copy(const Graph& g) {
  // Only the constants the graph alone holds: one held outside it (a captured tensor, which a tape may watch)
  // stays that very tensor.
  std::vector<char> own(g.values.size(), 0);
  for (size_t v = 0; v < g.values.size(); ++v)
    own[v] = g.values[v].constant.defined() && g.values[v].constant.is_exclusive();
  Graph traced = g;
  for (size_t v = 0; v < traced.values.size(); ++v)
    if (own[v]) traced.values[v].constant = traced.values[v].constant.clone();
  // The passes that leave every gradient as it was: ops of constants the graph alone holds (no tape watches
  // them), and ops nothing reads.
  fold_constants(traced);
  eliminate_dead_code(traced);
  return traced;
}

void optimize(Graph& g, OptimizeOptions options) {
  fold_constants(g);
  eliminate_common_subexpressions(g);
  fold_round_trip_casts(g);
  fold_kernel_gradients(g);
  fold_gradient_casts(g);
  store_half_in_float32(g);
  fuse_batch_norm_relu(g);
  fuse_bias_activation(g);
  view_size_one_reductions(g);
  eliminate_dead_code(g);
  cache_variable_casts(g);
  move_relu_grad_before_pool_grad(g);
  sink_kernel_gradients(g);
  if (options.jit_compile) fuse_elementwise(g);
  write_in_place(g);
}

}  // namespace ember::graph
