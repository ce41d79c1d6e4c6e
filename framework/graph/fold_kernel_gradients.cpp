// A Dense kernel's gradient at a small batch, x^T @ dy, handed whole to an optimizer's update is handed over as
// its two factors instead (Optimizer::apply_factored, or Adam's update as an op, apply_adam_multi): Adam then
// makes each element of the gradient where it uses it, and the product's pass over the kernel's size goes. The
// update's bits are those of the product (see apply_adam_factored_in_place, ops::AdamSlots), so the step's are
// eager's. At larger batches the product is left to matmul, which splits it over the pool better than the update
// could (a block of rows made on each thread in the update ran the batch-128 MLP step 5-10% slower).
#include <variant>
#include <vector>

#include "framework/graph/passes.h"
#include "framework/ops/optimizer_ops.h"

namespace ember::graph {

void fold_kernel_gradients(Graph& g) {
  std::vector<int> readers = g.reader_counts();
  for (Node& n : g.nodes) {
    // An optimizer's host call takes factors on any device (and decides itself where they pay); Adam's update as
    // an op takes them on the CPU, where they pay.
    const bool op = n.kind == NodeKind::UpdateVariables;
    if (n.kind != NodeKind::HostCall && !(op && n.op == OpId::apply_adam_multi && n.device.is_cpu())) continue;
    for (size_t t = 0; t < 3 * static_cast<size_t>(n.gradient_triples); t += 3) {
      const int v = n.inputs[t];
      if (v < 0 || n.inputs[t + 1] >= 0 || n.inputs[t + 2] >= 0 || readers[static_cast<size_t>(v)] != 1) continue;
      const int producer = g.values[static_cast<size_t>(v)].producer;
      if (producer < 0) continue;
      const Node& p = g.nodes[static_cast<size_t>(producer)];
      const auto* attrs = std::get_if<MatMulAttrs>(&p.attrs);
      if (p.kind != NodeKind::Op || p.op != OpId::matmul || !attrs || !attrs->transpose_a || attrs->transpose_b ||
          attrs->activation != FusedActivation::None || p.specs[0].alias_input >= 0)
        continue;
      const Shape& a = g.values[static_cast<size_t>(p.inputs[0])].shape;
      const Shape& b = g.values[static_cast<size_t>(p.inputs[1])].shape;
      if (a.rank() != 2 || b.rank() != 2 || a[0] < 1 || a[0] > ops::kFactoredMaxRows) continue;
      if (op && !ops::factored_adam_pays(Shape{a[1], b[1]}, n.device.type())) continue;
      n.inputs[t] = -1;  // the product, read by nothing now, goes with dead-code elimination
      n.inputs[t + 1] = p.inputs[0];
      n.inputs[t + 2] = p.inputs[1];
    }
  }
}

}  // namespace ember::graph
