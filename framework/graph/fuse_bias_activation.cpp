// An activation after a matmul_bias or conv2d_bias moved into the op's epilogue, as TF's grappler remapper makes
// _FusedMatMul and _FusedConv2D with fused_ops [BiasAdd, Tanh | Sigmoid | Relu]. A Dense or Conv2D layer with a tanh
// or sigmoid activation (or a relu its own op follows) traces as
//     z = matmul_bias(x, kernel, bias);  y = tanh(z)
// and becomes
//     y = matmul_bias[tanh](x, kernel, bias)
// whose CPU kernel applies the activation in the pass that adds the bias, on each row while it is in cache, with the
// activation op's own functor on the same rounded sums: the values are the unfused ops' bits. One pass over the
// output, one dispatch and z's buffer go. Only where nothing else reads z (a training step's backward reads y:
// tanh's and sigmoid's gradients are formulas of the output), on the CPU, whose kernels take every activation.
#include <vector>

#include "framework/graph/passes.h"

namespace ember::graph {

namespace {

FusedActivation activation_of(OpId op) {
  switch (op) {
    case OpId::relu: return FusedActivation::Relu;
    case OpId::tanh: return FusedActivation::Tanh;
    case OpId::sigmoid: return FusedActivation::Sigmoid;
    default: return FusedActivation::None;
  }
}

// The fused activation of a matmul_bias or conv2d_bias node, or nullptr for any other node.
FusedActivation* fused_activation(Node& n) {
  if (n.kind != NodeKind::Op) return nullptr;
  if (n.op == OpId::matmul_bias) return &std::get<MatMulAttrs>(n.attrs).activation;
  if (n.op == OpId::conv2d_bias) return &std::get<Conv2DAttrs>(n.attrs).activation;
  return nullptr;
}

}  // namespace

void fuse_bias_activation(Graph& g) {
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int v : g.nodes[k].inputs)
      if (v >= 0) readers[static_cast<size_t>(v)].push_back(static_cast<int>(k));
  std::vector<char> returned(g.values.size(), 0);
  for (int v : g.outputs) returned[static_cast<size_t>(v)] = 1;

  for (size_t p = 0; p < g.nodes.size(); ++p) {
    Node& product = g.nodes[p];
    FusedActivation* activation = fused_activation(product);
    if (!activation || *activation != FusedActivation::None || product.device.type() != DeviceType::CPU) continue;
    if (product.outputs.size() != 1 || product.outputs[0] < 0 || product.cast_cache) continue;
    const int z = product.outputs[0];
    const std::vector<int>& z_readers = readers[static_cast<size_t>(z)];
    if (z_readers.size() != 1 || returned[static_cast<size_t>(z)]) continue;
    Node& act = g.nodes[static_cast<size_t>(z_readers[0])];
    const FusedActivation a = act.kind == NodeKind::Op ? activation_of(act.op) : FusedActivation::None;
    if (a == FusedActivation::None || act.inputs.size() != 1 || act.outputs.size() != 1 || act.outputs[0] < 0 ||
        !(act.device == product.device) || act.cast_cache || act.in_place_input >= 0 || act.writes_input() ||
        act.specs[0].alias_input >= 0 || act.specs[0].dtype != product.specs[0].dtype ||
        act.specs[0].shape != product.specs[0].shape)
      continue;
    // The product now makes y; the activation makes a value nothing reads, for dead-code elimination to drop.
    const int y = act.outputs[0];
    *activation = a;
    product.outputs[0] = y;
    g.values[static_cast<size_t>(y)].producer = static_cast<int>(p);
    g.values[static_cast<size_t>(z)].producer = -1;
    Value orphan = g.values[static_cast<size_t>(y)];
    orphan.input = -1;
    orphan.constant = Tensor();
    orphan.producer = z_readers[0];
    act.outputs[0] = g.add_value(std::move(orphan));
  }
}

}  // namespace ember::graph
