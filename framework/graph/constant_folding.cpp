// Constant folding: an op whose inputs are all constants (the scalars of `x * 2.0f + 1.0f` combined, a
// `zeros` mask, a reshaped or cast constant) gives the same bits on every call, so it runs once here and its
// outputs become constants; in program order, so that a chain folds whole. Dead-code elimination then drops
// the folded ops and the constants only they read.
//
// Not folded: ops with effects (random ops draw new numbers on every call), ops writing into an input, ops whose
// outputs the function returns (each call returns tensors of its own, as eager calls do), ops reading a constant
// held outside the graph (a tape may watch that tensor, and sees its gradient only if the op runs), and ops
// whose outputs hold more than kMaxFoldedBytes (a graph keeps its constants for its lifetime; a large one is
// better made on each call and freed). Creation ops (fill, range, linspace) have no inputs: all of them are
// constants, so they fold too.
#include <numeric>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/graph/passes.h"
#include "framework/graph/trace.h"

namespace ember::graph {

namespace {

constexpr size_t kMaxFoldedBytes = size_t{1} << 20;  // per node, all outputs together

bool foldable(const Graph& g, const Node& n, const std::vector<char>& returned) {
  if (n.kind != NodeKind::Op || n.has_effects() || n.cast_cache || n.in_place_input >= 0)
    return false;
  for (int v : n.inputs) {
    if (v < 0) return false;
    const Tensor& c = g.values[static_cast<size_t>(v)].constant;
    if (!c.defined() || !c.is_exclusive()) return false;
  }
  size_t bytes = 0;
  for (const OutputSpec& s : n.specs) bytes += static_cast<size_t>(s.shape.num_elements()) * dtype_size(s.dtype);
  if (bytes > kMaxFoldedBytes) return false;
  for (int v : n.outputs)
    if (v < 0 || returned[static_cast<size_t>(v)]) return false;
  return true;
}

}  // namespace

void fold_constants(Graph& g) {
  std::vector<int> same(g.values.size());  // the value each value is read as: a folded output's constant
  std::iota(same.begin(), same.end(), 0);
  std::vector<char> returned(g.values.size(), 0);
  for (int v : g.outputs) returned[static_cast<size_t>(v)] = 1;
  // The ops run here belong to no trace and no tape.
  SuspendTracing untraced;
  NoRecordScope unrecorded;
  for (Node& n : g.nodes) {
    for (int& v : n.inputs)
      if (v >= 0) v = same[static_cast<size_t>(v)];
    if (!foldable(g, n, returned)) continue;
    std::vector<Tensor> outputs(n.specs.size());
    {
      std::vector<Tensor> inputs;
      for (int v : n.inputs) inputs.push_back(g.values[static_cast<size_t>(v)].constant);
      run_op_into(n.op, inputs, n.specs, outputs, n.attrs, n.device);
    }
    bool fits = true;
    for (size_t i = 0; i < outputs.size(); ++i) {
      // A view of an input (reshape) becomes a buffer of its own: a constant the graph alone holds.
      if (n.specs[i].alias_input >= 0) outputs[i] = outputs[i].clone();
      const Value& old = g.values[static_cast<size_t>(n.outputs[i])];
      fits = fits && outputs[i].shape() == old.shape && outputs[i].dtype() == old.dtype &&
             outputs[i].device() == old.device;
    }
    if (!fits) continue;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Value old = g.values[static_cast<size_t>(n.outputs[i])];
      const int c = g.add_value(Value{old.shape, old.dtype, old.device, -1, -1, std::move(outputs[i])});
      same[static_cast<size_t>(n.outputs[i])] = c;
      same.push_back(c);
      returned.push_back(0);
    }
  }
}

}  // namespace ember::graph
