// relu_grad moved ahead of max_pool2d_grad: a convolution with a fused relu followed by max pooling (the Keras
// example CNN) takes its backward as
//     dx = max_pool2d_grad(x, y, dy);  g = relu_grad(dx, x)
// which keeps the convolution's output x alive past the pooling gradient, so that at max_pool2d_grad x, its
// gradient dx (both of the full activation's size) and the pooled y and dy are live at once: the step's peak.
// The same gradient is
//     r = relu_grad(dy, y);  g = max_pool2d_grad(x, y, r)
// since max_pool2d_grad routes each window's dy to one pixel p of the window, where x[p] is the window's
// maximum y, so x[p] > 0 exactly when y > 0; relu_grad selects (dy or 0), so the values are the same bits. Then x
// dies at the pooling gradient, which may write into it (write_in_place): one activation-sized buffer less.
// (They differ only where a window holds a NaN: the forward pool's y is NaN, the gradient's maximum the
// first one before it; a step with NaN activations has a NaN loss either way.)
#include <vector>

#include "framework/graph/passes.h"

namespace ember::graph {

namespace {

// Whether `v` is made by an op (not a variable's value, which an assignment between the two nodes could
// change under the moved read).
bool made_by_op(const Graph& g, int v) {
  const int p = g.values[static_cast<size_t>(v)].producer;
  return p >= 0 && g.nodes[static_cast<size_t>(p)].kind == NodeKind::Op;
}

}  // namespace

void move_relu_grad_before_pool_grad(Graph& g) {
  std::vector<int> readers = g.reader_counts();
  for (Node& b : g.nodes) {
    if (b.kind != NodeKind::Op || b.op != OpId::relu_grad || b.inputs.size() != 2 || b.specs.size() != 1) continue;
    const int dx = b.inputs[0];
    const int a_index = g.values[static_cast<size_t>(dx)].producer;
    if (a_index < 0 || readers[static_cast<size_t>(dx)] != 1) continue;
    Node& a = g.nodes[static_cast<size_t>(a_index)];
    if (a.kind != NodeKind::Op || a.op != OpId::max_pool2d_grad || a.inputs.size() != 3 || a.outputs.size() != 1 ||
        a.inputs[0] != b.inputs[1] || a.device != b.device || a.specs[0].alias_input >= 0 ||
        b.specs[0].alias_input >= 0 || a.specs[0].dtype != b.specs[0].dtype)
      continue;
    const int x = a.inputs[0], y = a.inputs[1], dy = a.inputs[2];
    if (!made_by_op(g, x) || !made_by_op(g, y)) continue;
    const Value dy_value = g.values[static_cast<size_t>(dy)];  // a copy: add_value below may move the values
    if (dy_value.dtype != b.specs[0].dtype || g.values[static_cast<size_t>(y)].shape != dy_value.shape) continue;
    // a: r = relu_grad(dy, y); b: g = max_pool2d_grad(x, y, r). Node indices stay, so nothing is renumbered.
    Value r_value = dy_value;
    r_value.producer = a_index;
    r_value.input = -1;
    r_value.constant = Tensor();
    const int r = g.add_value(std::move(r_value));
    Attrs pool_attrs = a.attrs;
    a.op = OpId::relu_grad;
    a.attrs = b.attrs;
    a.inputs = {dy, y};
    a.outputs = {r};
    a.specs = {OutputSpec{.shape = dy_value.shape, .dtype = dy_value.dtype}};
    g.values[static_cast<size_t>(dx)].producer = -1;  // made by no node now
    readers.push_back(1);
    b.op = OpId::max_pool2d_grad;
    b.attrs = std::move(pool_attrs);
    b.inputs = {x, y, r};
  }
}

}  // namespace ember::graph
