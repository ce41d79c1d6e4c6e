#include "framework/graph/memory_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace ember::graph {

void BufferGroups::join(int a, int b) {
  a = find(a);
  b = find(b);
  if (a == b) return;
  parent[static_cast<size_t>(b)] = a;
  last_use[static_cast<size_t>(a)] = std::max(last_use[static_cast<size_t>(a)], last_use[static_cast<size_t>(b)]);
  pinned[static_cast<size_t>(a)] = pinned[static_cast<size_t>(a)] || pinned[static_cast<size_t>(b)];
}

BufferGroups buffer_groups(const Graph& g) {
  const size_t nv = g.values.size();
  BufferGroups b{std::vector<int>(nv), std::vector<int>(nv, -1), std::vector<char>(nv, 0)};
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
  for (const Node& n : g.nodes) {
    if (n.kind == NodeKind::Derived && n.name != "clone" && n.name != "to") b.join(n.inputs[0], n.outputs[0]);
    if (n.kind != NodeKind::Op) continue;
    for (size_t i = 0; i < n.specs.size(); ++i)
      if (n.specs[i].alias_input >= 0)
        b.join(n.inputs[static_cast<size_t>(n.specs[i].alias_input)], n.outputs[i]);
    if (n.in_place_input >= 0) b.join(n.inputs[static_cast<size_t>(n.in_place_input)], n.outputs[0]);
  }
  return b;
}

namespace {

constexpr int64_t kArenaAlignment = 64;  // the allocators' alignment, which vectorised kernels expect

bool shape_fully_known(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
}

// A buffer to place: its bytes (rounded up to the alignment) and the nodes [first, last] it lives through.
struct PlannedBuffer {
  int value;
  DType dtype;
  int64_t bytes;
  int first, last;
};

// The buffers plan_memory places: each op's own output that no group member above it made, known in size, on
// the CPU, and not pinned.
std::vector<PlannedBuffer> planned_buffers(const Graph& g) {
  BufferGroups groups = buffer_groups(g);
  // A group's buffer is made by the one member not joined to another: planned when that is an op's own output.
  std::vector<PlannedBuffer> buffers;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.kind != NodeKind::Op || n.cast_cache) continue;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const int v = n.outputs[i];
      if (v < 0 || n.specs[i].alias_input >= 0 || (i == 0 && n.in_place_input >= 0)) continue;
      const int root = groups.find(v);
      const Value& val = g.values[static_cast<size_t>(v)];
      if (groups.pinned[static_cast<size_t>(root)] || !val.device.is_cpu() || val.dtype == DType::String ||
          !shape_fully_known(val.shape) || val.shape != n.specs[i].shape || val.dtype != n.specs[i].dtype ||
          val.shape.num_elements() == 0)
        continue;
      const int64_t bytes = val.shape.num_elements() * static_cast<int64_t>(dtype_size(val.dtype));
      const int last = std::max(static_cast<int>(k), groups.last_use[static_cast<size_t>(root)]);
      const int64_t aligned = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
      buffers.push_back({v, val.dtype, aligned, static_cast<int>(k), last});
    }
  }
  return buffers;
}

}  // namespace

int64_t liveness_peak_bytes(const Graph& g) {
  const std::vector<PlannedBuffer> buffers = planned_buffers(g);
  std::vector<int64_t> change(g.nodes.size() + 1, 0);  // bytes born at node k, minus those that died before it
  for (const PlannedBuffer& b : buffers) {
    change[static_cast<size_t>(b.first)] += b.bytes;
    change[static_cast<size_t>(b.last) + 1] -= b.bytes;
  }
  int64_t live = 0, peak = 0;
  for (int64_t c : change) peak = std::max(peak, live += c);
  return peak;
}

MemoryPlan plan_memory(const Graph& g) {
  MemoryPlan plan;
  plan.slots.assign(g.values.size(), {});
  std::vector<PlannedBuffer> buffers = planned_buffers(g);
  std::stable_sort(buffers.begin(), buffers.end(),
                   [](const PlannedBuffer& a, const PlannedBuffer& b) { return a.bytes > b.bytes; });
  // Per arena, the buffers placed so far with their offsets.
  struct Placed {
    int64_t offset;
    const PlannedBuffer* buffer;
  };
  std::vector<std::vector<Placed>> placed;
  std::vector<int64_t> ends;  // per arena: its size in bytes
  std::vector<Placed> live;
  for (const PlannedBuffer& buf : buffers) {
    size_t a = 0;
    while (a < plan.arenas.size() && plan.arenas[a].dtype != buf.dtype) ++a;
    if (a == plan.arenas.size()) {
      plan.arenas.push_back({buf.dtype, 0});
      placed.emplace_back();
      ends.push_back(0);
    }
    // Best fit: the smallest gap between the buffers alive at the same time that holds it, else the end.
    live.clear();
    for (const Placed& p : placed[a])
      if (p.buffer->first <= buf.last && buf.first <= p.buffer->last) live.push_back(p);
    std::sort(live.begin(), live.end(), [](const Placed& x, const Placed& y) { return x.offset < y.offset; });
    int64_t best = -1, best_gap = std::numeric_limits<int64_t>::max(), end = 0;
    for (const Placed& p : live) {
      const int64_t gap = p.offset - end;
      if (gap >= buf.bytes && gap < best_gap) {
        best = end;
        best_gap = gap;
      }
      end = std::max(end, p.offset + p.buffer->bytes);
    }
    if (best < 0) best = end;
    placed[a].push_back({best, &buf});
    ends[a] = std::max(ends[a], best + buf.bytes);
    const int64_t element_size = static_cast<int64_t>(dtype_size(buf.dtype));
    plan.slots[static_cast<size_t>(buf.value)] = {static_cast<int>(a), best / element_size};
    plan.stats.planned_values += 1;
    plan.stats.naive_bytes += buf.bytes;
  }
  for (size_t a = 0; a < plan.arenas.size(); ++a) {
    plan.arenas[a].elements = ends[a] / static_cast<int64_t>(dtype_size(plan.arenas[a].dtype));
    plan.stats.arena_bytes += ends[a];
  }
  return plan;
}

}  // namespace ember::graph
