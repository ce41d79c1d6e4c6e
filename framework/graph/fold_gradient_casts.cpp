// Under a mixed precision policy each layer reads its float32 weights cast to the compute dtype, so each weight's
// gradient is a half value cast to float32 by the cast's gradient. A loss scale optimizer's update (a host call)
// then unscales them in one op that widens half gradients itself, with the cast's bits (ops::unscale_gradients):
// handing it the half value spares the cast's pass (a read of the half value and a write of the float32 one) and
// makes the unscaling read 2 bytes an element instead of 4. The step's bits are unchanged.
#include <variant>
#include <vector>

#include "framework/graph/passes.h"

namespace ember::graph {

void fold_gradient_casts(Graph& g) {
  std::vector<int> readers = g.reader_counts();
  for (Node& n : g.nodes) {
    if (n.kind != NodeKind::HostCall || !n.widens_half_gradients) continue;
    for (int& v : n.inputs) {
      if (v < 0 || readers[static_cast<size_t>(v)] != 1) continue;
      const int producer = g.values[static_cast<size_t>(v)].producer;
      if (producer < 0) continue;
      const Node& p = g.nodes[static_cast<size_t>(producer)];
      const auto* cast = std::get_if<CastAttrs>(&p.attrs);
      if (p.kind != NodeKind::Op || p.op != OpId::cast || !cast || cast->dtype != DType::Float32 || p.inputs[0] < 0)
        continue;
      const DType from = g.values[static_cast<size_t>(p.inputs[0])].dtype;
      if (from != DType::Float16 && from != DType::BFloat16) continue;
      v = p.inputs[0];  // the cast, read by nothing now, goes with dead-code elimination
    }
  }
}

}  // namespace ember::graph
