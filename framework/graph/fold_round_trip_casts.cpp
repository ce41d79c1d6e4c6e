// Under a mixed precision policy a model's input is cast three times before its first layer reads it: to the
// model's compute dtype by the model's own call, back to its Input's dtype (float32) by the functional model, and
// to the compute dtype again by the first layer, as Keras's calls do. The last cast gives back the first one's
// value: a float32 holds every bfloat16 and float16 value exactly, and narrowing a value a narrowing made returns
// it bit for bit (NaNs included). So readers of cast_T(cast_U(a)) read a, where a is itself a cast's output of
// type T and U holds every value of T; the casts between go with dead-code elimination if nothing else reads them.
#include <variant>
#include <vector>

#include "framework/graph/passes.h"

namespace ember::graph {
namespace {

// Whether every value of `from` is a value of `to` (and a cast there and back returns it).
bool widens_exactly(DType from, DType to) {
  switch (from) {
    case DType::Float16:
    case DType::BFloat16: return to == DType::Float32 || to == DType::Float64;
    case DType::Float32: return to == DType::Float64;
    default: return false;
  }
}

}  // namespace

void fold_round_trip_casts(Graph& g) {
  // An op writing into an input could change the first cast's buffer before a reader of the last: then the two
  // differ, and the graph is left as it is (as common-subexpression elimination starts over there).
  for (const Node& n : g.nodes)
    if (n.writes_input()) return;
  std::vector<int> same(g.values.size());
  for (size_t v = 0; v < same.size(); ++v) same[v] = static_cast<int>(v);
  std::vector<char> returned(g.values.size(), 0);
  for (int v : g.outputs) returned[static_cast<size_t>(v)] = 1;  // a returned value stays a tensor of its own
  for (Node& n : g.nodes) {
    for (int& v : n.inputs)
      if (v >= 0) v = same[static_cast<size_t>(v)];
    const bool cast = n.kind == NodeKind::Op && n.op == OpId::cast && n.inputs.size() == 1 && n.inputs[0] >= 0 &&
                      n.outputs.size() == 1 && n.outputs[0] >= 0;
    if (!cast || returned[static_cast<size_t>(n.outputs[0])]) continue;
    const Node* middle = cast_producing(g, n.inputs[0]);
    if (middle == nullptr || cast_producing(g, middle->inputs[0]) == nullptr) continue;
    const Value& out = g.values[static_cast<size_t>(n.outputs[0])];
    const Value& wide = g.values[static_cast<size_t>(n.inputs[0])];
    const Value& first = g.values[static_cast<size_t>(middle->inputs[0])];
    if (first.dtype != out.dtype || !widens_exactly(first.dtype, wide.dtype) || first.device != out.device) continue;
    same[static_cast<size_t>(n.outputs[0])] = middle->inputs[0];
  }
}

}  // namespace ember::graph
