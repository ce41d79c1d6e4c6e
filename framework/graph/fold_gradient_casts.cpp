// Under a mixed precision policy each layer reads its float32 weights cast to the compute dtype, so each weight's
// gradient is a half value cast to float32 by the cast's gradient. A loss scale optimizer's update (a host call)
// then unscales them in one op that widens half gradients itself, with the cast's bits (ops::unscale_gradients):
// handing it the half value spares the cast's pass (a read of the half value and a write of the float32 one) and
// makes the unscaling read 2 bytes an element instead of 4. The same for Adam's fused update on the CPU
// (apply_adam_multi of float32 variables), which widens a half gradient as it reads it. The step's bits are
// unchanged: widening to float32 is exact.
#include <variant>
#include <vector>

#include "framework/graph/passes.h"
#include "framework/ops/half_products.h"

namespace ember::graph {

namespace {

// The half value v is a cast to float32 of, where v's producer is such a cast; -1 otherwise.
int half_before_cast(const Graph& g, int v) {
  const Node* p = cast_producing(g, v);
  if (p == nullptr || g.values[static_cast<size_t>(v)].dtype != DType::Float32) return -1;
  const DType from = g.values[static_cast<size_t>(p->inputs[0])].dtype;
  return from == DType::Float16 || from == DType::BFloat16 ? p->inputs[0] : -1;
}

}  // namespace

void fold_gradient_casts(Graph& g) {
  std::vector<int> readers = g.reader_counts();
  for (Node& n : g.nodes) {
    if (n.kind == NodeKind::HostCall && n.widens_half_gradients) {
      for (int& v : n.inputs) {
        if (v < 0 || readers[static_cast<size_t>(v)] != 1) continue;
        if (const int h = half_before_cast(g, v); h >= 0) v = h;  // the cast, read by nothing now, goes with DCE
      }
    } else if (n.kind == NodeKind::UpdateVariables && n.op == OpId::apply_adam_multi && n.device.is_cpu()) {
      // Inputs (g, a, b) per variable, then the step, the condition and the learning rate.
      const size_t count = n.updates.size() / 3;
      for (size_t k = 0; k < count && 3 * k < n.inputs.size(); ++k) {
        int& v = n.inputs[3 * k];
        const Variable& variable = n.updates[3 * k];
        if (v < 0 || readers[static_cast<size_t>(v)] != 1 || variable.dtype() != DType::Float32 ||
            !variable.device().is_cpu())
          continue;
        // Where the CPU's half products compute as float32's, store_half_in_float32 keeps them in float32
        // buffers and drops these casts itself: the update reads those.
        const int h = half_before_cast(g, v);
        if (h >= 0 && g.values[static_cast<size_t>(h)].device.is_cpu() &&
            !ops::cpu_matmul_widens_half(g.values[static_cast<size_t>(h)].dtype))
          v = h;
      }
    }
  }
}

}  // namespace ember::graph
