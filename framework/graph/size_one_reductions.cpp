// A reduction over axes of size 1 only (a batch-1 step's bias gradients and loss sum, a keepdims over a size-1
// axis) sums, averages or compares one element: the CPU kernel copies its input (reduce.cpp's count == 1). As a
// view of its input the node makes no buffer and runs no kernel, with the same bits.
#include "framework/graph/passes.h"

namespace ember::graph {

namespace {

bool copies_when_size_one(OpId op) {
  switch (op) {
    case OpId::reduce_sum:
    case OpId::reduce_mean:
    case OpId::reduce_max:
    case OpId::reduce_min:
    case OpId::reduce_prod:
      return true;
    default:
      return false;
  }
}

}  // namespace

void view_size_one_reductions(Graph& g) {
  for (Node& n : g.nodes) {
    if (n.kind != NodeKind::Op || !copies_when_size_one(n.op) || !n.device.is_cpu() || n.in_place_input >= 0 ||
        n.inputs.size() != 1 || n.outputs.size() != 1 || n.inputs[0] < 0 || n.outputs[0] < 0)
      continue;
    const Value& in = g.values[static_cast<size_t>(n.inputs[0])];
    const Value& out = g.values[static_cast<size_t>(n.outputs[0])];
    auto known = [](const Shape& s) {
      for (int64_t d : s)
        if (d < 0) return false;
      return true;
    };
    if (in.dtype != out.dtype || !known(in.shape) || !known(out.shape) ||
        in.shape.num_elements() != out.shape.num_elements() || n.specs[0].alias_input >= 0)
      continue;
    Node view;
    view.kind = NodeKind::Derived;
    view.name = "view";
    view.inputs = n.inputs;
    view.outputs = n.outputs;
    view.remake = [shape = out.shape](const Tensor& t) { return t.view(shape); };
    n = std::move(view);
  }
}

}  // namespace ember::graph
