// jit_compile's loop fusion (XLA's role): chains of elementwise ops over one shape become one node that makes
// every element of the chain in one pass over the data (ops::FusedElementwise), the intermediate values staying
// in the core's cache. Values read outside the chain are the node's outputs; its inputs are those the chain
// reads from outside, whole or broadcast (a scalar, a bias over the rows, a column over the columns).
// A chain reading a CPU matmul_bias's or conv2d_bias's output whole also takes that product into the node, as XLA
// fuses a dot's elementwise consumers into its output fusion: the product's kernel runs the chain on its rows in the
// pass that adds the bias and activation (FusedElementwise::Product), so a Dense layer with mish (z * tanh(softplus(z)))
// makes its output in one pass after the product.
#include <algorithm>
#include <memory>
#include <vector>

#include "framework/graph/passes.h"
#include "framework/ops/fused_elementwise.h"

namespace ember::graph {

namespace {

bool fusible_value(const Value& v) { return ops::fused_value_dtype(v.dtype); }

// Whether node n can be a step of a fused chain at all.
bool candidate(const Graph& g, const Node& n) {
  if (n.kind != NodeKind::Op || !ops::fused_elementwise_runs_on(n.device.type())) return false;
  if (n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  if (n.cast_cache || n.in_place_input >= 0 || n.writes_input()) return false;
  if (!ops::fusible_elementwise(n.op, n.attrs)) return false;
  const Value& out = g.values[static_cast<size_t>(n.outputs[0])];
  if (!fusible_value(out)) return false;
  // where copies its operands' storage bits (a half NaN's payload included), which a value widened to float and
  // rounded back need not keep: on the half types it stays an op of its own.
  if (n.op == OpId::where && ops::fused_rounds_to_half(out.dtype)) return false;
  for (int v : n.inputs)
    if (v < 0 || !fusible_value(g.values[static_cast<size_t>(v)])) return false;
  return true;
}

struct Group {
  std::vector<int> members;  // node indices, in program order
  Shape shape;
  int first = 0;
};

}  // namespace

void fuse_elementwise(Graph& g) {
  const size_t nn = g.nodes.size();
  std::vector<std::vector<int>> read_by(g.values.size());
  for (size_t k = 0; k < nn; ++k)
    for (int v : g.nodes[k].inputs)
      if (v >= 0) read_by[static_cast<size_t>(v)].push_back(static_cast<int>(k));
  std::vector<char> returned(g.values.size(), 0);
  for (int v : g.outputs) returned[static_cast<size_t>(v)] = 1;

  std::vector<int> group_of(nn, -1);
  std::vector<Group> groups;
  int barrier = -1;  // the last node with effects: a chain does not move its ops past one
  // Whether node k may join group gid: what it reads from outside broadcasts to the chain's shape, and nothing
  // outside the chain reads the chain's values before k (the fused node sits where its last op was).
  auto can_join = [&](int gid, int k) {
    const Group& grp = groups[static_cast<size_t>(gid)];
    const Node& n = g.nodes[static_cast<size_t>(k)];
    for (int v : n.inputs) {
      const int p = g.values[static_cast<size_t>(v)].producer;
      if (p >= 0 && group_of[static_cast<size_t>(p)] == gid) continue;
      ops::FusedElementwise::Input in;
      if (!ops::fused_broadcast(g.values[static_cast<size_t>(v)].shape, grp.shape, in)) return false;
    }
    for (int m : grp.members)
      for (int v : g.nodes[static_cast<size_t>(m)].outputs)
        for (int r : read_by[static_cast<size_t>(v)])
          if (r < k && group_of[static_cast<size_t>(r)] != gid) return false;
    return true;
  };
  for (size_t k = 0; k < nn; ++k) {
    const Node& n = g.nodes[k];
    if (n.has_effects()) barrier = static_cast<int>(k);
    if (!candidate(g, n)) continue;
    const Shape& shape = g.values[static_cast<size_t>(n.outputs[0])].shape;
    int join = -1;
    for (int v : n.inputs) {
      const int p = g.values[static_cast<size_t>(v)].producer;
      if (p < 0 || group_of[static_cast<size_t>(p)] < 0) continue;
      const int gid = group_of[static_cast<size_t>(p)];
      const Group& grp = groups[static_cast<size_t>(gid)];
      if (grp.shape == shape && grp.first > barrier && can_join(gid, static_cast<int>(k))) {
        join = gid;
        break;
      }
    }
    // An op that reads no chain's value joins the latest chain over its shape (one loop for both), when it may.
    for (int gid = static_cast<int>(groups.size()) - 1; join < 0 && gid >= 0; --gid) {
      const Group& grp = groups[static_cast<size_t>(gid)];
      if (grp.first <= barrier) break;
      if (grp.shape == shape && can_join(gid, static_cast<int>(k))) join = gid;
    }
    if (join < 0) {
      // A chain starts where its first op reads only what broadcasts to its own shape.
      ops::FusedElementwise::Input in;
      bool ok = true;
      for (int v : n.inputs) ok = ok && ops::fused_broadcast(g.values[static_cast<size_t>(v)].shape, shape, in);
      if (!ok) continue;
      join = static_cast<int>(groups.size());
      groups.push_back(Group{{}, shape, static_cast<int>(k)});
    }
    groups[static_cast<size_t>(join)].members.push_back(static_cast<int>(k));
    group_of[k] = join;
  }

  // The product a chain takes into its epilogue, or -1: a CPU matmul_bias or conv2d_bias making a value the chain
  // reads whole, with no effect between the two (the product moves to where the chain's last op is), which nothing
  // outside the chain reads before that, and not taken by another chain.
  std::vector<char> taken(nn, 0);
  auto epilogue_product = [&](int gid) {
    const Group& grp = groups[static_cast<size_t>(gid)];
    const int last = grp.members.back();
    for (int m : grp.members)
      for (int v : g.nodes[static_cast<size_t>(m)].inputs) {
        const int p = g.values[static_cast<size_t>(v)].producer;
        if (p < 0 || group_of[static_cast<size_t>(p)] == gid || taken[static_cast<size_t>(p)]) continue;
        const Node& product = g.nodes[static_cast<size_t>(p)];
        if (product.kind != NodeKind::Op || (product.op != OpId::matmul_bias && product.op != OpId::conv2d_bias) ||
            !product.device.is_cpu() || product.outputs.size() != 1 || product.cast_cache ||
            product.specs[0].alias_input >= 0)
          continue;
        ops::FusedElementwise::Input in;
        if (!ops::fused_broadcast(g.values[static_cast<size_t>(v)].shape, grp.shape, in) ||
            in.broadcast != ops::FusedElementwise::Broadcast::Full)
          continue;
        bool ok = true;
        for (int k = p + 1; ok && k < last; ++k) ok = !g.nodes[static_cast<size_t>(k)].has_effects();
        for (int r : read_by[static_cast<size_t>(v)]) ok = ok && (r >= last || group_of[static_cast<size_t>(r)] == gid);
        if (ok) return p;
      }
    return -1;
  };

  // Each chain of two ops or more becomes one node, where its last op was, with the product it takes. (One op after a
  // product stays apart: its own kernel was as fast as the chain's in the product's node, bench_function --only
  // epilogue.)
  std::vector<char> removed(nn, 0);
  for (size_t gid = 0; gid < groups.size(); ++gid) {
    const Group& grp = groups[gid];
    if (grp.members.size() < 2) {
      group_of[static_cast<size_t>(grp.members[0])] = -1;
      continue;
    }
    const int product = epilogue_product(static_cast<int>(gid));
    auto f = std::make_shared<ops::FusedElementwise>();
    f->shape = grp.shape;
    f->device = g.nodes[static_cast<size_t>(grp.members[0])].device;
    std::vector<int> external;             // value ids the chain reads from outside, in order
    std::vector<std::pair<int, int>> reg;  // value id -> register, for what the chain made or read
    auto find_reg = [&](int v) {
      for (const auto& [value, r] : reg)
        if (value == v) return r;
      return -1;
    };
    // Inputs first: registers 0 .. inputs-1.
    for (int m : grp.members)
      for (int v : g.nodes[static_cast<size_t>(m)].inputs) {
        const int p = g.values[static_cast<size_t>(v)].producer;
        if ((p >= 0 && group_of[static_cast<size_t>(p)] == static_cast<int>(gid)) ||
            std::find(external.begin(), external.end(), v) != external.end())
          continue;
        ops::FusedElementwise::Input in;
        in.dtype = g.values[static_cast<size_t>(v)].dtype;
        ops::fused_broadcast(g.values[static_cast<size_t>(v)].shape, grp.shape, in);
        f->inputs.push_back(in);
        reg.emplace_back(v, static_cast<int>(external.size()));
        external.push_back(v);
      }
    std::vector<int> outputs;
    for (int m : grp.members) {
      Node& n = g.nodes[static_cast<size_t>(m)];
      ops::FusedElementwise::Step s;
      s.op = n.op;
      s.attrs = n.attrs;
      for (int v : n.inputs) s.args.push_back(find_reg(v));
      const int out = n.outputs[0];
      s.dtype = g.values[static_cast<size_t>(out)].dtype;
      s.spec = n.specs[0];
      reg.emplace_back(out, f->num_registers());
      f->steps.push_back(std::move(s));
      bool read_outside = returned[static_cast<size_t>(out)];
      for (int r : read_by[static_cast<size_t>(out)]) read_outside = read_outside || group_of[static_cast<size_t>(r)] != static_cast<int>(gid);
      if (read_outside) {
        f->outputs.push_back(find_reg(out));
        outputs.push_back(out);
      }
    }
    std::vector<int> node_inputs = external;
    if (product >= 0) {
      // The product's inputs come first; its output is no input of the node but its first output (a value like
      // any other: planned, and released where nothing reads it).
      const Node& p = g.nodes[static_cast<size_t>(product)];
      const int z = p.outputs[0];
      const auto j = std::find(external.begin(), external.end(), z) - external.begin();
      f->product = ops::FusedElementwise::Product{p.op, p.attrs, p.specs[0], static_cast<int>(p.inputs.size()),
                                                  static_cast<int>(j)};
      node_inputs = p.inputs;
      for (size_t e = 0; e < external.size(); ++e)
        if (static_cast<std::ptrdiff_t>(e) != j) node_inputs.push_back(external[e]);
      outputs.insert(outputs.begin(), z);
      taken[static_cast<size_t>(product)] = 1;
      removed[static_cast<size_t>(product)] = 1;
    }
    for (int m : grp.members) removed[static_cast<size_t>(m)] = 1;
    Node fused;
    fused.kind = NodeKind::Fused;
    fused.inputs = std::move(node_inputs);
    fused.outputs = outputs;
    fused.device = f->device;
    fused.name = f->name();
    fused.fused = std::move(f);
    // An error on replay gets the context of the chain's first op (a layer's, a loss's).
    fused.error_context = g.nodes[static_cast<size_t>(grp.members.front())].error_context;
    fused.error_base = g.nodes[static_cast<size_t>(grp.members.front())].error_base;
    const size_t last = static_cast<size_t>(grp.members.back());
    g.nodes[last] = std::move(fused);
    removed[last] = 0;
  }

  // Renumber the nodes; the values the chains made inside them have no producer any more.
  std::vector<Node> kept;
  kept.reserve(nn);
  std::vector<int> renumbered(nn, -1);
  for (size_t k = 0; k < nn; ++k) {
    if (removed[k]) {
      for (int v : g.nodes[k].outputs)
        if (v >= 0) g.values[static_cast<size_t>(v)].producer = -1;
      continue;
    }
    renumbered[k] = static_cast<int>(kept.size());
    if (g.nodes[k].kind == NodeKind::ControlFlowGrad)
      g.nodes[k].forward = renumbered[static_cast<size_t>(g.nodes[k].forward)];
    kept.push_back(std::move(g.nodes[k]));
  }
  g.nodes = std::move(kept);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int v : g.nodes[k].outputs)
      if (v >= 0) g.values[static_cast<size_t>(v)].producer = static_cast<int>(k);
}

}  // namespace ember::graph
