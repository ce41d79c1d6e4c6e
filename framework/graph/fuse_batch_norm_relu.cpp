// A batch norm's relu, and a residual add before it, moved into the batch norm (cuDNN's BN_ACTIVATION and
// BN_ADD_ACTIVATION; TF's grappler remapper makes _FusedBatchNormEx of the same patterns). A training step of
// Conv2D, BatchNormalization, Activation("relu") (ResNet's blocks, with Add() before the relu at a block's end)
// traces as
//     [y, mean, var, inv, saved] = fused_batch_norm(x, scale, offset)       relu alone:
//     s = add(z, y);  a = relu(s)                                             a = relu(y)
//     ...
//     ds = relu_grad(da, s)                                                   dy = relu_grad(da, y)
//     [dx, dscale, doffset] = fused_batch_norm_grad(ds, x, ..., saved)       (dy in place of ds)
//     ... z's gradient reads ds too
// and becomes
//     [a, mean, var, inv, saved] = fused_batch_norm{BnAddRelu}(x, scale, offset, z)
//     [dx, dscale, doffset, dz] = fused_batch_norm_grad{BnAddRelu}(da, x, ..., saved, a)
// with z's gradient reading dz (the same values as ds: relu's mask applied to da). The relu's mask is read from
// a, which is positive exactly where the sum was. Two activation-sized passes (the add or relu and relu_grad)
// and the buffers of y and s go. Only where nothing else reads y, s or ds, z is made before the batch norm by an
// op or is an input (the read moves earlier), the readers of ds other than the backward come after it, and the
// device's kernel takes the fusion (ops::fused_batch_norm_fuses). The replaced nodes are left without readers for
// dead-code elimination.
#include <algorithm>
#include <vector>

#include "framework/graph/passes.h"
#include "framework/ops/batch_norm.h"

namespace ember::graph {

namespace {

struct BnFusion {
  Graph& g;
  std::vector<std::vector<int>> readers;  // per value: the nodes reading it (once per read)
  std::vector<char> returned;             // per value: a graph output

  explicit BnFusion(Graph& graph) : g(graph), readers(graph.values.size()), returned(graph.values.size(), 0) {
    for (size_t k = 0; k < g.nodes.size(); ++k)
      for (int v : g.nodes[k].inputs)
        if (v >= 0) readers[static_cast<size_t>(v)].push_back(static_cast<int>(k));
    for (int v : g.outputs) returned[static_cast<size_t>(v)] = 1;
  }

  Node& node(int k) { return g.nodes[static_cast<size_t>(k)]; }
  const Value& value(int v) const { return g.values[static_cast<size_t>(v)]; }
  const std::vector<int>& read_by(int v) const { return readers[static_cast<size_t>(v)]; }

  // Leaves node k without readers: it writes a value nothing reads, and dead-code elimination drops it.
  void orphan(int k) {
    Node& n = node(k);
    for (int& out : n.outputs) {
      if (value(out).producer == k) g.values[static_cast<size_t>(out)].producer = -1;  // made by no node now
      Value v = value(out);
      v.input = -1;
      v.constant = Tensor();
      v.producer = k;
      out = g.add_value(std::move(v));
      readers.emplace_back();
      returned.push_back(0);
    }
  }

  // Makes node `bn` produce `a` (the relu's output) in place of y.
  void take_output(int bn, int a) {
    const int y = node(bn).outputs[0];
    g.values[static_cast<size_t>(y)].producer = -1;
    node(bn).outputs[0] = a;
    g.values[static_cast<size_t>(a)].producer = bn;
  }

  void fuse(int bn);
};

void BnFusion::fuse(int bn) {
  const Node& fwd = node(bn);
  const Device device = fwd.device;
  const int y = fwd.outputs[0];
  const Value y_value = value(y);
  if (!ops::fused_batch_norm_fuses(device.type(), y_value.dtype, y_value.shape[y_value.shape.rank() - 1])) return;
  auto is_relu_of = [&](int k, int v) {
    return k >= 0 && node(k).op == OpId::relu && node(k).inputs[0] == v && node(k).specs[0].dtype == y_value.dtype &&
           node(k).specs[0].shape == y_value.shape && node(k).device == device;
  };

  // The forward: y -> relu, or y -> add with z -> relu; the relu's input (y or s) is read by relu_grad only.
  int add = -1, z = -1, pre = y;  // pre: the relu's input
  if (read_by(y).size() == 1 && !returned[static_cast<size_t>(y)]) {
    const int k = read_by(y)[0];
    const Node& n = node(k);
    if (n.kind == NodeKind::Op && n.op == OpId::add && n.inputs.size() == 2 && n.device == device &&
        n.specs[0].alias_input < 0) {
      const int other = n.inputs[0] == y ? n.inputs[1] : n.inputs[0];
      const Value& o = value(other);
      const bool early = (o.producer >= 0 && o.producer < bn && node(o.producer).kind == NodeKind::Op) || o.input >= 0;
      if (other != y && early && o.shape == y_value.shape && o.dtype == y_value.dtype && o.device == device) {
        add = k;
        z = other;
        pre = n.outputs[0];
      }
    }
  }
  const std::vector<int>& pre_readers = read_by(pre);
  if (returned[static_cast<size_t>(pre)] || pre_readers.empty() || pre_readers.size() > 2) return;
  int relu = -1, relu_grad = -1;
  for (int k : pre_readers) {
    const Node& n = node(k);
    if (n.kind != NodeKind::Op) return;
    if (is_relu_of(k, pre) && relu < 0)
      relu = k;
    else if (n.op == OpId::relu_grad && n.inputs.size() == 2 && n.inputs[1] == pre && n.inputs[0] != pre &&
             n.device == device && n.specs[0].alias_input < 0 && relu_grad < 0)
      relu_grad = k;
    else
      return;
  }
  if (relu < 0) return;
  const int a = node(relu).outputs[0];

  // The backward, when there is one: relu_grad's output goes to this batch norm's gradient (and to z's).
  int bwd = -1;
  if (relu_grad >= 0) {
    const int ds = node(relu_grad).outputs[0];
    if (returned[static_cast<size_t>(ds)]) return;
    for (int k : read_by(ds)) {
      const Node& n = node(k);
      const bool ours = n.kind == NodeKind::Op && n.op == OpId::fused_batch_norm_grad && n.inputs.size() == 7 &&
                        n.inputs[0] == ds && n.inputs[1] == fwd.inputs[0] && n.inputs[6] == fwd.outputs[4] &&
                        std::get<BatchNormAttrs>(n.attrs).ops == BatchNormOps::Bn && n.device == device;
      if (ours && bwd < 0)
        bwd = k;
      else if (add < 0 || n.kind == NodeKind::ControlFlowGrad)
        return;  // relu alone: the backward is the only reader
    }
    if (bwd < 0) return;
    for (int k : read_by(ds))  // z's gradient reads dz, made by the backward
      if (k != bwd && k < bwd) return;
  }  // else a forward without a gradient (training-mode inference): fused the same

  const BatchNormOps fusion = add >= 0 ? BatchNormOps::BnAddRelu : BatchNormOps::BnRelu;
  Node& f = node(bn);
  std::get<BatchNormAttrs>(f.attrs).ops = fusion;
  if (add >= 0) {
    f.inputs.push_back(z);
    readers[static_cast<size_t>(z)].push_back(bn);
  }
  take_output(bn, a);
  orphan(relu);
  if (add >= 0) orphan(add);
  if (relu_grad < 0) return;

  const int da = node(relu_grad).inputs[0];
  const int ds = node(relu_grad).outputs[0];
  Node& b = node(bwd);
  std::get<BatchNormAttrs>(b.attrs).ops = fusion;
  b.inputs[0] = da;
  b.inputs.push_back(a);
  readers[static_cast<size_t>(da)].push_back(bwd);
  readers[static_cast<size_t>(a)].push_back(bwd);
  if (add >= 0) {
    Value dz = value(ds);
    dz.producer = bwd;
    const int dz_id = g.add_value(std::move(dz));
    readers.emplace_back();
    returned.push_back(0);
    node(bwd).outputs.push_back(dz_id);
    node(bwd).specs.push_back(OutputSpec{.shape = value(dz_id).shape, .dtype = value(dz_id).dtype});
    for (int k : read_by(ds))
      if (k != bwd)
        for (int& v : node(k).inputs)
          if (v == ds) v = dz_id;
  }
  orphan(relu_grad);
}

}  // namespace

void fuse_batch_norm_relu(Graph& g) {
  BnFusion fusion(g);
  const size_t n = g.nodes.size();  // the nodes orphan() adds no node
  for (size_t k = 0; k < n; ++k) {
    const Node& node = g.nodes[k];
    if (node.kind == NodeKind::Op && node.op == OpId::fused_batch_norm && node.inputs.size() == 3 &&
        node.outputs.size() == 5 && std::get<BatchNormAttrs>(node.attrs).ops == BatchNormOps::Bn)
      fusion.fuse(static_cast<int>(k));
  }
}

}  // namespace ember::graph
