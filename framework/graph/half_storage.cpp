// Mixed precision on a CPU whose half kernels compute in float32: a float16 or bfloat16 matmul widens both operands
// to float32, runs float32's kernel and rounds the product to its type (ops::cpu_matmul_widens_half), so a weight
// cast to half in the forward is widened again by every product that reads it, forward and backward, and so is
// each activation. This pass keeps such products' operands and results in float32 buffers holding values that half
// can hold exactly (a value's "twin"): the product runs as float32's op on the twins, then one pass rounds it to the
// half type and back (a fused chain: cast to half, cast to float32), with the values the half op would store.
// - cast(x: float32 -> half) gives its twin as the rounding pass over x; but where x is a variable's value that the
//   graph does not change (a prediction's weights), whose cast cache_variable_casts keeps across calls, the twin is
//   that cast widened;
// - cast(h -> float32) of a value with a twin is the twin (it has the same bits);
// - matmul and matmul_bias of half operands run on twins (widening, once, an operand that has none); matmul_bias's
//   bias and relu follow as the half ops add and relu (what the half kernel computes), then a widening for the twin;
// - every other reader of a half value (ops not listed here, views, graph outputs, variables, host calls such as a
//   loss scale optimizer's update, which takes half gradients as they are: fold_gradient_casts runs first) reads a
//   real half tensor: the twin narrowed (exactly), or, where nothing reads a product's twin, the product rounded
//   straight into the half type.
// Twins are made only where a product or a cast to float32 reads them. So the step's values are bit for bit the half
// ops'; what changes is that the products' operands and results that feed products take float32 space.
#include <memory>
#include <utility>
#include <vector>

#include "framework/graph/passes.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/half_products.h"

namespace ember::graph {

namespace {

bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

const Value& value_of(const Graph& g, int v) { return g.values[static_cast<size_t>(v)]; }

// A product whose half kernel computes as float32's: all its tensor inputs of one half type on the CPU.
bool widening_product(const Graph& g, const Node& n) {
  if (n.kind != NodeKind::Op || (n.op != OpId::matmul && n.op != OpId::matmul_bias)) return false;
  if (n.device != Device::cpu() || n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  const DType dtype = value_of(g, n.outputs[0]).dtype;
  if (!is_half(dtype) || !ops::cpu_matmul_widens_half(dtype)) return false;
  for (int v : n.inputs)
    if (v < 0 || value_of(g, v).dtype != dtype || value_of(g, v).device != Device::cpu()) return false;
  return true;
}

// A cast on the CPU from `from` to `to`.
bool is_cast(const Graph& g, const Node& n, DType from, DType to) {
  return n.kind == NodeKind::Op && n.op == OpId::cast && n.device == Device::cpu() && n.inputs.size() == 1 &&
         n.inputs[0] >= 0 && value_of(g, n.inputs[0]).dtype == from && n.outputs.size() == 1 && n.outputs[0] >= 0 &&
         value_of(g, n.outputs[0]).dtype == to;
}

// Whether running g may change variable v: an assignment or an update of it, or any host call (an optimizer's step
// run on the host, as a loss scale optimizer's is, updates variables the graph does not name).
bool may_change(const Graph& g, const Variable& v) {
  for (const Node& n : g.nodes) {
    if (n.kind == NodeKind::HostCall || n.kind == NodeKind::Cond || n.kind == NodeKind::While) return true;
    if (n.kind == NodeKind::AssignVariable && n.variable.is_same(v)) return true;
    if (n.kind == NodeKind::UpdateVariables)
      for (const Variable& u : n.updates)
        if (u.is_same(v)) return true;
  }
  return false;
}

Node cast_node(int in, int out, DType dtype, const Shape& shape) {
  Node n;
  n.kind = NodeKind::Op;
  n.op = OpId::cast;
  n.attrs = CastAttrs{dtype};
  n.specs = {OutputSpec{shape, dtype}};
  n.inputs = {in};
  n.outputs = {out};
  return n;
}

ops::FusedElementwise::Step step(OpId op, Attrs attrs, std::vector<int> args, DType dtype, const Shape& shape) {
  ops::FusedElementwise::Step s;
  s.op = op;
  s.attrs = std::move(attrs);
  s.args = std::move(args);
  s.dtype = dtype;
  s.spec = OutputSpec{shape, dtype};
  return s;
}

}  // namespace

void store_half_in_float32(Graph& g) {
  const bool any = [&] {
    for (const Node& n : g.nodes)
      if (widening_product(g, n)) return true;
    return false;
  }();
  if (!any) return;

  std::vector<int> twin(g.values.size(), -1);    // half value -> its float32 twin
  std::vector<int> remap(g.values.size(), -1);   // a cast's output -> the twin that replaces it
  auto read = [&](int v) { return v >= 0 && remap[static_cast<size_t>(v)] >= 0 ? remap[static_cast<size_t>(v)] : v; };
  auto new_value = [&](const Shape& shape, DType dtype) {
    Value value;
    value.shape = shape;
    value.dtype = dtype;
    const int v = g.add_value(std::move(value));
    twin.push_back(-1);
    remap.push_back(-1);
    return v;
  };

  // Per original half value: whether a product or a cast to float32 reads it (it is worth a twin), and whether
  // anything else does (a real half tensor is needed).
  std::vector<char> twin_readers(g.values.size(), 0), half_readers(g.values.size(), 0);
  for (const Node& n : g.nodes) {
    const bool widening = widening_product(g, n) || is_cast(g, n, DType::Float16, DType::Float32) ||
                          is_cast(g, n, DType::BFloat16, DType::Float32);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int v = n.inputs[i];
      if (v < 0 || !is_half(value_of(g, v).dtype)) continue;
      // (matmul_bias's bias is read as a half tensor, by the rounding pass.)
      const bool as_twin = widening && !(n.op == OpId::matmul_bias && i == 2);
      (as_twin ? twin_readers : half_readers)[static_cast<size_t>(v)] = 1;
    }
  }
  for (int v : g.outputs) half_readers[static_cast<size_t>(v)] = 1;

  // Per cast to a half type, read before the nodes move: whether it casts a variable the graph leaves unchanged,
  // which stays the twin's source (widened once for all its products): cache_variable_casts keeps it across calls
  // (a prediction's weights).
  std::vector<char> cached_cast(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (!is_cast(g, n, DType::Float32, DType::Float16) && !is_cast(g, n, DType::Float32, DType::BFloat16)) continue;
    const int from = value_of(g, n.inputs[0]).producer;
    cached_cast[k] = from >= 0 && g.nodes[static_cast<size_t>(from)].kind == NodeKind::ReadVariable &&
                     !may_change(g, g.nodes[static_cast<size_t>(from)].variable);
  }

  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() * 2);
  std::vector<int> renumbered(g.nodes.size(), -1);
  // The rounding pass over `in` (float32): a fused chain, its cast to `dtype` and back (one vectorised pass on the
  // CPU), into a new float32 value, which it returns.
  auto round_pass = [&](int in, DType dtype) -> int {
    const Shape shape = value_of(g, in).shape;
    auto f = std::make_shared<ops::FusedElementwise>();
    f->shape = shape;
    f->inputs.push_back({DType::Float32, ops::FusedElementwise::Broadcast::Full, 1});
    f->steps.push_back(step(OpId::cast, CastAttrs{dtype}, {0}, dtype, shape));
    f->steps.push_back(step(OpId::cast, CastAttrs{DType::Float32}, {1}, DType::Float32, shape));
    f->outputs = {2};
    Node n;
    n.kind = NodeKind::Fused;
    n.inputs = {in};
    n.outputs = {new_value(shape, DType::Float32)};
    n.name = f->name();
    n.fused = std::move(f);
    nodes.push_back(std::move(n));
    return nodes.back().outputs[0];
  };
  // An elementwise op of `dtype` on the CPU, into value `out` (-1: a new one), which it returns.
  auto elementwise = [&](OpId op, std::vector<int> inputs, DType dtype, const Shape& shape, int out) {
    Node n;
    n.kind = NodeKind::Op;
    n.op = op;
    n.specs = {OutputSpec{shape, dtype}};
    n.inputs = std::move(inputs);
    n.outputs = {out >= 0 ? out : new_value(shape, dtype)};
    nodes.push_back(std::move(n));
    return nodes.back().outputs[0];
  };
  // The twin of half value v, widening it (a pass before the node being rewritten) where it has none.
  auto twin_of = [&](int v) {
    if (twin[static_cast<size_t>(v)] < 0) {
      const int w = new_value(value_of(g, v).shape, DType::Float32);
      nodes.push_back(cast_node(v, w, DType::Float32, value_of(g, v).shape));
      twin[static_cast<size_t>(v)] = w;
    }
    return twin[static_cast<size_t>(v)];
  };

  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node n = std::move(g.nodes[k]);
    for (int& v : n.inputs) v = read(v);
    if (is_cast(g, n, DType::Float32, DType::Float16) || is_cast(g, n, DType::Float32, DType::BFloat16)) {
      // The cast stays for real half readers (dead code elimination drops it where it has none).
      const int out = n.outputs[0], in = n.inputs[0];
      const DType dtype = value_of(g, out).dtype;
      renumbered[k] = static_cast<int>(nodes.size());
      nodes.push_back(std::move(n));
      if (ops::cpu_matmul_widens_half(dtype) && twin_readers[static_cast<size_t>(out)] && !cached_cast[k])
        twin[static_cast<size_t>(out)] = round_pass(in, dtype);
      continue;
    }
    if ((is_cast(g, n, DType::Float16, DType::Float32) || is_cast(g, n, DType::BFloat16, DType::Float32)) &&
        twin[static_cast<size_t>(n.inputs[0])] >= 0) {
      remap[static_cast<size_t>(n.outputs[0])] = twin[static_cast<size_t>(n.inputs[0])];
      continue;  // read by nothing now
    }
    if (widening_product(g, n)) {
      const int out = n.outputs[0];
      const DType dtype = value_of(g, out).dtype;
      const Shape shape = value_of(g, out).shape;
      const int a = twin_of(n.inputs[0]), b = twin_of(n.inputs[1]);
      auto attrs = std::get<MatMulAttrs>(n.attrs);
      const int bias = n.op == OpId::matmul_bias ? n.inputs[2] : -1;
      const bool relu = bias >= 0 && attrs.activation == FusedActivation::Relu;
      attrs.activation = FusedActivation::None;
      const int product = new_value(shape, DType::Float32);
      Node mm;
      mm.kind = NodeKind::Op;
      mm.op = OpId::matmul;
      mm.attrs = attrs;
      mm.specs = {OutputSpec{shape, DType::Float32}};
      mm.inputs = {a, b};
      mm.outputs = {product};
      mm.error_context = n.error_context;
      mm.error_base = n.error_base;
      nodes.push_back(std::move(mm));
      renumbered[k] = static_cast<int>(nodes.size());
      const bool wants_twin = twin_readers[static_cast<size_t>(out)];
      const bool wants_half = half_readers[static_cast<size_t>(out)] || !wants_twin;
      if (bias < 0) {
        // The product rounded: into a twin, narrowed (exactly) for half readers; or straight into the half value.
        if (!wants_twin) {
          nodes.push_back(cast_node(product, out, dtype, shape));
          continue;
        }
        twin[static_cast<size_t>(out)] = round_pass(product, dtype);
        if (wants_half) nodes.push_back(cast_node(twin[static_cast<size_t>(out)], out, dtype, shape));
        continue;
      }
      // matmul_bias's epilogue as the half ops: the product rounded to the half type, the bias added, the relu, each
      // rounding as the half kernel does; widened (exactly) for the twin's readers.
      int y = new_value(shape, dtype);
      nodes.push_back(cast_node(product, y, dtype, shape));
      y = elementwise(OpId::add, {y, bias}, dtype, shape, !relu && wants_half ? out : -1);
      if (relu) y = elementwise(OpId::relu, {y}, dtype, shape, wants_half ? out : -1);
      if (wants_twin) {
        const int w = new_value(shape, DType::Float32);
        nodes.push_back(cast_node(y, w, DType::Float32, shape));
        twin[static_cast<size_t>(out)] = w;
      }
      continue;
    }
    if (n.kind == NodeKind::ControlFlowGrad) n.forward = renumbered[static_cast<size_t>(n.forward)];
    renumbered[k] = static_cast<int>(nodes.size());
    nodes.push_back(std::move(n));
  }
  for (int& v : g.outputs) v = read(v);
  g.nodes = std::move(nodes);
  for (Value& v : g.values)
    if (v.input < 0 && !v.constant.defined()) v.producer = -1;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int v : g.nodes[k].outputs)
      if (v >= 0) g.values[static_cast<size_t>(v)].producer = static_cast<int>(k);
}

}  // namespace ember::graph
