// Elementwise ops written into a dying input's buffer: in a replayed step an activation's gradient (relu_grad,
// the dropout mask's mul, the bias and residual adds) usually reads a temporary that nothing reads after it,
// of its own shape and dtype, so the op can overwrite it instead of allocating: fewer buffers live at once.
// Each element is read before it is written, at the same index, which the elementwise loops (CPU and CUDA)
// allow. So may a max-pool gradient whose windows do not overlap write into the pooled image, when the image
// dies there (after move_relu_grad_before_pool_grad, a fused conv-relu's output does). Replay keeps the copy
// where a tape records the op (it may have saved the input).
#include <numeric>
#include <vector>

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

// Values sharing one buffer (an op's output aliasing its input, a view), with what the whole buffer allows.
struct Buffers {
  std::vector<int> parent;
  std::vector<int> last_use;  // per root: the last node reading any member
  std::vector<char> pinned;   // per root: held outside the replay's values (input, constant, variable, ...)
  int find(int v) { return parent[v] == v ? v : parent[v] = find(parent[v]); }
  void join(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    parent[b] = a;
    last_use[a] = std::max(last_use[a], last_use[b]);
    pinned[a] = pinned[a] || pinned[b];
  }
};

}  // namespace

void write_in_place(Graph& g) {
  const size_t nv = g.values.size();
  Buffers b{std::vector<int>(nv), std::vector<int>(nv, -1), std::vector<char>(nv, 0)};
  std::iota(b.parent.begin(), b.parent.end(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int v : g.nodes[k].inputs)
      if (v >= 0) b.last_use[static_cast<size_t>(v)] = static_cast<int>(k);
  for (size_t v = 0; v < nv; ++v)
    if (g.values[v].input >= 0 || g.values[v].constant.defined()) b.pinned[v] = 1;
  for (int v : g.outputs) b.pinned[static_cast<size_t>(v)] = 1;
  for (const Node& n : g.nodes) {
    // A variable's value, a host call's results and a cached cast are held beyond the replay's values; a
    // control-flow node's results may be its inputs themselves, or held by its tape.
    const bool control_flow =
        n.kind == NodeKind::Cond || n.kind == NodeKind::While || n.kind == NodeKind::ControlFlowGrad;
    const bool holds =
        n.kind == NodeKind::ReadVariable || n.kind == NodeKind::HostCall || n.cast_cache != nullptr || control_flow;
    for (int v : n.outputs)
      if (v >= 0 && holds) b.pinned[static_cast<size_t>(v)] = 1;
    if (n.kind == NodeKind::AssignVariable || n.kind == NodeKind::HostCall || control_flow)
      for (int v : n.inputs)
        if (v >= 0) b.pinned[static_cast<size_t>(v)] = 1;
  }
  for (Node& n : g.nodes) {
    if (n.kind == NodeKind::Derived && n.name != "clone" && n.name != "to") b.join(n.inputs[0], n.outputs[0]);
    if (n.kind != NodeKind::Op) continue;
    for (size_t i = 0; i < n.specs.size(); ++i)
      if (n.specs[i].alias_input >= 0)
        b.join(n.inputs[static_cast<size_t>(n.specs[i].alias_input)], n.outputs[i]);
  }
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
      n.in_place_input = static_cast<int>(p);
      b.join(v, n.outputs[0]);
      break;
    }
  }
}

}  // namespace ember::graph
