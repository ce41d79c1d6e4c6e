// Casts of variables' values, cached across calls: under a mixed-precision policy each layer casts its
// float32 weights to the compute dtype on every call; between optimizer steps (every call of an evaluation
// or a prediction) the weights do not change, so neither do their casts.
#include <mutex>

#include "framework/graph/executor.h"
#include "framework/graph/passes.h"

namespace ember::graph {

void cache_variable_casts(Graph& g) {
  for (Node& n : g.nodes) {
    if (n.kind != NodeKind::Op || n.op != OpId::cast) continue;
    const int producer = g.values[static_cast<size_t>(n.inputs[0])].producer;
    if (producer < 0 || g.nodes[static_cast<size_t>(producer)].kind != NodeKind::ReadVariable) continue;
    n.cast_of = g.nodes[static_cast<size_t>(producer)].variable;
    n.cast_cache = std::make_shared<Node::CastCache>();
  }
}

}  // namespace ember::graph
