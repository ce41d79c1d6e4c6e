// Elementwise ops written into a dying input's buffer: in a replayed step an activation's gradient (relu_grad,
// the dropout mask's mul, the bias and residual adds) usually reads a temporary that nothing reads after it,
// of its own shape and dtype, so the op can overwrite it instead of allocating: fewer buffers live at once.
// Each element is read before it is written, at the same index, which the elementwise loops (CPU and CUDA)
// allow; so not where another input views the same buffer (`a - a.slice_rows(0, 1)`). So may a max-pool
// gradient whose windows do not overlap write into the pooled image, when the image dies there (after
// move_relu_grad_before_pool_grad, a fused conv-relu's output does). Replay keeps the copy where a tape
// records the op (it may have saved the input).
#include <vector>

#include "framework/graph/memory_plan.h"
#include "framework/graph/passes.h"

namespace ember::graph {

namespace {

bool elementwise_same_type(OpId op) {
  switch (op) {
    case OpId::neg: case OpId::abs: case OpId::exp: case OpId::log: case OpId::log1p: case OpId::sqrt:
    case OpId::rsqrt: case OpId::square: case OpId::reciprocal: case OpId::sin: case OpId::cos: case OpId::tanh:
    case OpId::sigmoid: case OpId::relu: case OpId::relu6: case OpId::elu: case OpId::selu: case OpId::softplus:
    case OpId::softsign: case OpId::swish:
    case OpId::add: case OpId::sub: case OpId::mul: case OpId::div: case OpId::div_no_nan: case OpId::maximum:
    case OpId::minimum: case OpId::squared_difference: case OpId::relu_grad:
      return true;
    default:
      return false;
  }
}

// The inputs whose buffer the node's one output may take: any input of an elementwise op of one dtype; the
// input image of a max-pool gradient whose windows do not overlap (the CPU kernel reads each window whole
// before writing its pixels, and writes nothing a later window reads; the CUDA kernel reads the image into
// argmax positions before writing any gradient).
bool may_overwrite(const Node& n, size_t input) {
  if (n.op == OpId::max_pool2d_grad) {
    const auto& a = std::get<Pool2DAttrs>(n.attrs);
    return input == 0 && a.strides[0] >= a.ksize[0] && a.strides[1] >= a.ksize[1];
  }
  return elementwise_same_type(n.op);
}

}  // namespace

void write_in_place(Graph& g) {
  BufferGroups b = buffer_groups(g);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& n = g.nodes[k];
    if (n.kind != NodeKind::Op || n.specs.size() != 1 || n.specs[0].alias_input >= 0) continue;
    for (size_t p = 0; p < n.inputs.size(); ++p) {
      const int v = n.inputs[p];
      if (v < 0 || !may_overwrite(n, p)) continue;
      const Value& in = g.values[static_cast<size_t>(v)];
      const int root = b.find(v);
      if (b.pinned[static_cast<size_t>(root)] || b.last_use[static_cast<size_t>(root)] != static_cast<int>(k) ||
          in.shape != n.specs[0].shape || in.dtype != n.specs[0].dtype || in.device != n.device)
        continue;
      // Another view of the buffer among the inputs (a row of it, broadcast) would read elements already written.
      bool other_view = false;
      for (const int w : n.inputs) other_view = other_view || (w >= 0 && w != v && b.find(w) == root);
      if (other_view) continue;
      n.in_place_input = static_cast<int>(p);
      b.join(v, n.outputs[0]);
      break;
    }
  }
}

}  // namespace ember::graph
