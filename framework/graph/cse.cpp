// Common-subexpression elimination: a traced step can compute one thing twice (a layer's activation that its
// gradient's formula computes again, the same cast of a weight in two places, one variable read twice), each a
// kernel run and a buffer on every call. Kernels are deterministic, so two ops with the same op, inputs,
// attributes, output specs and device give the same bits: the readers of the second's outputs read the first's,
// and dead-code elimination then drops the second.
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "framework/graph/passes.h"

namespace ember::graph {

namespace {

// Constants of at most this size are merged by their bytes: each `x * 2.0f` captures its own 2.0f.
constexpr size_t kMaxMergedConstantBytes = 1024;

std::string constant_bytes_key(const Tensor& t) {
  std::string key(1, static_cast<char>(t.dtype()));
  for (int64_t d : t.shape()) key.append(reinterpret_cast<const char*>(&d), sizeof d);
  key.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return key;
}

bool same_output_specs(const std::vector<OutputSpec>& a, const std::vector<OutputSpec>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].shape != b[i].shape || a[i].dtype != b[i].dtype || a[i].alias_input != b[i].alias_input) return false;
  return true;
}

// Whether a node may be replaced by an earlier one that computes the same. Not: a node with effects (a random
// op draws its own numbers), one writing into an input, a cached cast or an op already writing in place (other
// passes' marks), a host call or an assignment. Of the tensors remade outside ops, only a view is merged: it is
// its input's buffer seen with its output's shape; a copy (clone, to) may be made for a buffer of its own.
bool may_merge(const Node& n) {
  switch (n.kind) {
    case NodeKind::Op:
      return !n.has_effects() && !n.cast_cache && n.in_place_input < 0;
    case NodeKind::ReadVariable:
      return true;
    case NodeKind::Derived:
      return n.name == "view";
    default:
      return false;
  }
}

// Nodes that may compute the same share a key: kind, then op or variable, then inputs.
std::vector<intptr_t> merge_key(const Node& n) {
  std::vector<intptr_t> key{static_cast<intptr_t>(n.kind)};
  if (n.kind == NodeKind::Op) key.push_back(static_cast<intptr_t>(n.op));
  if (n.kind == NodeKind::ReadVariable) key.push_back(reinterpret_cast<intptr_t>(n.variable.handle()));
  key.insert(key.end(), n.inputs.begin(), n.inputs.end());
  return key;
}

bool same_computation(const Graph& g, const Node& a, const Node& b) {
  if (a.kind != b.kind || a.inputs != b.inputs || a.outputs.size() != b.outputs.size()) return false;
  switch (a.kind) {
    case NodeKind::Op:
      return a.op == b.op && a.attrs == b.attrs && same_output_specs(a.specs, b.specs) && a.device == b.device;
    case NodeKind::ReadVariable:
      return a.variable.is_same(b.variable);
    case NodeKind::Derived: {
      const Value& x = g.values[static_cast<size_t>(a.outputs[0])];
      const Value& y = g.values[static_cast<size_t>(b.outputs[0])];
      return a.name == b.name && x.shape == y.shape && x.dtype == y.dtype && x.device == y.device;
    }
    default:
      return false;
  }
}

}  // namespace

void eliminate_common_subexpressions(Graph& g) {
  const size_t nv = g.values.size();
  std::vector<int> same(nv);  // the value each value is read as
  std::iota(same.begin(), same.end(), 0);
  // A constant held outside the graph keeps its own value: a tape may watch it.
  std::map<std::string, int> constants;
  for (size_t v = 0; v < nv; ++v) {
    const Tensor& c = g.values[v].constant;
    if (!c.defined() || !c.device().is_cpu() || c.nbytes() > kMaxMergedConstantBytes || !c.is_exclusive()) continue;
    auto [it, fresh] = constants.emplace(constant_bytes_key(c), static_cast<int>(v));
    if (!fresh) same[v] = it->second;
  }
  // Two returned values stay two tensors, as eager execution returns them.
  std::vector<char> returned(nv, 0);
  for (int v : g.outputs) returned[static_cast<size_t>(v)] = 1;
  std::map<std::vector<intptr_t>, std::vector<int>> seen;  // key -> the nodes kept with it
  const std::vector<intptr_t> reads_key{static_cast<intptr_t>(NodeKind::ReadVariable)};
  const std::vector<intptr_t> after_reads_key{static_cast<intptr_t>(NodeKind::ReadVariable) + 1};
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& n = g.nodes[k];
    for (int& v : n.inputs)
      if (v >= 0) v = same[static_cast<size_t>(v)];
    // After a write into a buffer, what read it before is no longer what reads it after.
    if (n.writes_input()) seen.clear();
    // A host call may assign any variable (so may a branch or loop with effects), an assignment or an update its
    // own: a read after it reads anew.
    const bool control_flow_effects = (n.kind == NodeKind::Cond || n.kind == NodeKind::While) && n.has_effects();
    if (n.kind == NodeKind::HostCall || control_flow_effects) seen.erase(seen.lower_bound(reads_key), seen.lower_bound(after_reads_key));
    for (const Variable& updated : n.updates)
      seen.erase(std::vector<intptr_t>{static_cast<intptr_t>(NodeKind::ReadVariable),
                                       reinterpret_cast<intptr_t>(updated.handle())});
    if (n.kind == NodeKind::AssignVariable)
      seen.erase(std::vector<intptr_t>{static_cast<intptr_t>(NodeKind::ReadVariable),
                                       reinterpret_cast<intptr_t>(n.variable.handle())});
    if (!may_merge(n)) continue;
    std::vector<int>& kept = seen[merge_key(n)];
    int match = -1;
    bool is_returned = false;
    for (int v : n.outputs) is_returned = is_returned || (v >= 0 && returned[static_cast<size_t>(v)]);
    if (!is_returned)
      for (int c : kept)
        if (same_computation(g, g.nodes[static_cast<size_t>(c)], n)) {
          match = c;
          break;
        }
    if (match < 0) {
      kept.push_back(static_cast<int>(k));
      continue;
    }
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] >= 0) same[static_cast<size_t>(n.outputs[i])] = g.nodes[static_cast<size_t>(match)].outputs[i];
  }
  for (int& v : g.outputs) v = same[static_cast<size_t>(v)];
}

}  // namespace ember::graph
