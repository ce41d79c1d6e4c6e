// Device graphs for a traced function's replays (CUDA graphs): which runs of nodes may be captured
// (plan_device_segments), and capturing and launching them (Executable::run_segment). See docs/gpu.md.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/allocator.h"
#include "framework/core/device_graph.h"
#include "framework/core/logging.h"
#include "framework/core/profiler.h"
#include "framework/graph/executor.h"

namespace ember::graph {

namespace {

// Fewer ops than this are not worth a graph (its launch and input copies cost about two ops' dispatch).
constexpr int kMinSegmentOps = 2;

std::atomic<int> g_enabled{-1};  // -1: from the environment, on first use

struct Totals {
  std::atomic<int> segments{0}, failures{0};
  std::atomic<int64_t> captures{0}, launches{0}, plain_runs{0};
} g_totals;

bool is_capturable(const Graph& g, const Node& n, const std::set<const void*>& assigned) {
  auto on = [&](int v, Device d) { return v >= 0 && g.values[static_cast<size_t>(v)].device == d; };
  switch (n.kind) {
    case NodeKind::Op:
    case NodeKind::Fused: {
      if (n.outputs.empty() || n.outputs[0] < 0) return false;
      const Device d = g.values[static_cast<size_t>(n.outputs[0])].device;
      if (d.is_cpu() || std::holds_alternative<RandomAttrs>(n.attrs)) return false;  // random: a new draw per call
      for (int v : n.outputs)
        if (v >= 0 && !on(v, d)) return false;
      for (int v : n.inputs) {
        if (v < 0 || on(v, d)) continue;
        // A 0-d host constant is uploaded once, at capture; any other host value would be read then only.
        const Value& val = g.values[static_cast<size_t>(v)];
        if (!val.constant.defined() || val.shape.rank() != 0) return false;
      }
      return true;
    }
    case NodeKind::UpdateVariables: {
      // Writes its variables' buffers in place, at the addresses they had when captured (run_segment checks them
      // before each launch); not a variable the graph assigns, whose buffer changes on every call.
      if (n.device.is_cpu()) return false;
      for (const Variable& v : n.updates)
        if (assigned.count(v.handle())) return false;
      for (int v : n.inputs) {
        if (v < 0 || on(v, n.device)) continue;
        const Value& val = g.values[static_cast<size_t>(v)];
        if (!val.constant.defined() || val.shape.rank() != 0) return false;
      }
      return true;
    }
    case NodeKind::ReadVariable:
      return n.outputs.size() == 1 && n.outputs[0] >= 0 &&
             !g.values[static_cast<size_t>(n.outputs[0])].device.is_cpu() && !assigned.count(n.variable.handle());
    case NodeKind::Derived:
      return n.inputs.size() == 1 && n.outputs.size() == 1 && n.inputs[0] >= 0 && n.outputs[0] >= 0 &&
             !g.values[static_cast<size_t>(n.outputs[0])].device.is_cpu() &&
             g.values[static_cast<size_t>(n.inputs[0])].device == g.values[static_cast<size_t>(n.outputs[0])].device;
    default:  // assignments, host calls and control flow run on the host on every call
      return false;
  }
}

Device node_device(const Graph& g, const Node& n) {
  return n.kind == NodeKind::UpdateVariables ? n.device : g.values[static_cast<size_t>(n.outputs[0])].device;
}

// The variables a segment reads or writes at the addresses they had when captured, with the node of each: its
// reads', then its updates'.
std::vector<std::pair<int, Variable>> captured_variables(const Graph& g, const SegmentPlan& p) {
  std::vector<std::pair<int, Variable>> out;
  for (int k : p.variables) out.emplace_back(k, g.nodes[static_cast<size_t>(k)].variable);
  for (int k : p.updates)
    for (const Variable& v : g.nodes[static_cast<size_t>(k)].updates) out.emplace_back(k, v);
  return out;
}

// Whether the segment's updates may write their variables' buffers: no other tensor holds one (the update's
// node would copy it first, which a capture records but does not make, and which a launch cannot repeat).
bool updates_alone(const Graph& g, const SegmentPlan& p) {
  for (int k : p.updates)
    for (const Variable& v : g.nodes[static_cast<size_t>(k)].updates)
      if (!v.value().is_exclusive()) return false;
  return true;
}

}  // namespace

void set_device_graphs_enabled(bool enabled) { g_enabled.store(enabled ? 1 : 0); }

bool device_graphs_enabled() {
  int e = g_enabled.load(std::memory_order_relaxed);
  if (e < 0) {
    const char* env = std::getenv("EMBER_CUDA_GRAPHS");
    e = env && (std::strcmp(env, "0") == 0 || std::strcmp(env, "false") == 0) ? 0 : 1;
    int unset = -1;
    g_enabled.compare_exchange_strong(unset, e);
    e = g_enabled.load();
  }
  return e == 1;
}

DeviceGraphStats device_graph_totals() {
  DeviceGraphStats s;
  s.segments = g_totals.segments.load();
  s.captures = g_totals.captures.load();
  s.launches = g_totals.launches.load();
  s.plain_runs = g_totals.plain_runs.load();
  s.failures = g_totals.failures.load();
  return s;
}

std::vector<SegmentPlan> plan_device_segments(const Graph& g, const std::set<int>& reads_outside) {
  const size_t n = g.nodes.size();
  std::set<const void*> assigned;  // variables the graph assigns: their buffer changes on every call
  for (const Node& node : g.nodes)
    if (node.kind == NodeKind::AssignVariable) assigned.insert(node.variable.handle());
  std::vector<char> ok(n);
  for (size_t k = 0; k < n; ++k)
    ok[k] = is_capturable(g, g.nodes[k], assigned) && !reads_outside.count(static_cast<int>(k));
  // A variable read that is not captured (its buffer changes between calls) need not end a run: it reads nothing
  // the run makes, so it runs before the run's graph is launched, its value copied in as the run's inputs are.
  std::vector<char> hoistable(n);
  for (size_t k = 0; k < n; ++k) {
    const Node& node = g.nodes[k];
    hoistable[k] = node.kind == NodeKind::ReadVariable && node.outputs.size() == 1 && node.outputs[0] >= 0 &&
                   !g.values[static_cast<size_t>(node.outputs[0])].device.is_cpu();
  }
  auto in_run = [&](size_t k) { return ok[k] || hoistable[k]; };
  auto hoisted = [&](size_t k) { return !ok[k] && hoistable[k]; };
  std::vector<int> seg_of(n);
  for (;;) {
    // Runs of capturable nodes (and reads before them) on one device.
    int count = -1;
    for (size_t k = 0; k < n; ++k) {
      const bool joins =
          in_run(k) && k > 0 && in_run(k - 1) && node_device(g, g.nodes[k]) == node_device(g, g.nodes[k - 1]);
      seg_of[k] = !in_run(k) ? -1 : joins ? count : ++count;
    }
    // A variable's buffer (its value, or a view of it) read outside the run that read the variable: that read
    // moves out of the run, which then copies the value into a buffer of its own.
    std::vector<int> root(g.values.size(), -1);  // the ReadVariable node whose buffer a value is
    bool changed = false;
    auto escapes = [&](int v, int reader_segment) {
      const size_t u = static_cast<size_t>(v);
      if (root[u] < 0 || g.values[u].producer < 0 || hoisted(static_cast<size_t>(g.values[u].producer))) return;
      const int made_in = seg_of[static_cast<size_t>(g.values[u].producer)];
      if (made_in >= 0 && made_in != reader_segment && ok[static_cast<size_t>(root[u])]) {
        ok[static_cast<size_t>(root[u])] = 0;
        changed = true;
      }
    };
    for (size_t k = 0; k < n; ++k) {
      const Node& node = g.nodes[k];
      for (int v : node.inputs)
        if (v >= 0) escapes(v, seg_of[k]);
      if (node.kind == NodeKind::ReadVariable && node.outputs[0] >= 0) {
        root[static_cast<size_t>(node.outputs[0])] = static_cast<int>(k);
      } else if (node.kind == NodeKind::Derived && node.inputs[0] >= 0 && node.outputs[0] >= 0) {
        root[static_cast<size_t>(node.outputs[0])] = root[static_cast<size_t>(node.inputs[0])];
      } else if (node.kind == NodeKind::Op) {
        for (size_t i = 0; i < node.outputs.size() && i < node.specs.size(); ++i) {
          const int a = node.specs[i].alias_input;
          if (a >= 0 && node.outputs[i] >= 0 && node.inputs[static_cast<size_t>(a)] >= 0)
            root[static_cast<size_t>(node.outputs[i])] = root[static_cast<size_t>(node.inputs[static_cast<size_t>(a)])];
        }
      }
    }
    for (int v : g.outputs) escapes(v, -1);
    // An op writing into an input made outside its run would write the run's copy of it: it runs outside.
    for (size_t k = 0; k < n; ++k) {
      const Node& node = g.nodes[k];
      if (seg_of[k] < 0 || !node.writes_input()) continue;
      for (size_t i = 0; i < node.specs.size(); ++i) {
        const int a = node.specs[i].alias_input;
        const int v = a >= 0 ? node.inputs[static_cast<size_t>(a)] : -1;
        const int producer = v >= 0 ? g.values[static_cast<size_t>(v)].producer : -1;
        if (a >= 0 && (producer < 0 || seg_of[static_cast<size_t>(producer)] != seg_of[k] ||
                       hoisted(static_cast<size_t>(producer)))) {
          ok[k] = 0;
          changed = true;
        }
      }
    }
    // An update in place whose variable is read outside its run: that read's value would share the buffer the
    // update writes (the update would copy it, which a capture cannot), so the update runs outside.
    for (size_t k = 0; k < n; ++k) {
      const Node& node = g.nodes[k];
      if (seg_of[k] < 0 || node.kind != NodeKind::UpdateVariables) continue;
      for (size_t r = 0; r < n && ok[k]; ++r) {
        const Node& read = g.nodes[r];
        if (read.kind != NodeKind::ReadVariable || (seg_of[r] == seg_of[k] && ok[r])) continue;
        for (const Variable& v : node.updates)
          if (v.is_same(read.variable)) {
            ok[k] = 0;
            changed = true;
          }
      }
    }
    if (!changed) break;
  }
  std::vector<SegmentPlan> plans;
  for (size_t k = 0; k < n;) {
    if (seg_of[k] < 0) {
      ++k;
      continue;
    }
    SegmentPlan p;
    p.begin = static_cast<int>(k);
    p.device = node_device(g, g.nodes[k]);
    int ops = 0;
    while (k < n && seg_of[k] == seg_of[static_cast<size_t>(p.begin)]) {
      const Node& node = g.nodes[k];
      ops += node.kind == NodeKind::Op || node.kind == NodeKind::Fused || node.kind == NodeKind::UpdateVariables;
      if (hoisted(k)) p.hoisted.push_back(static_cast<int>(k));
      else if (node.kind == NodeKind::ReadVariable) p.variables.push_back(static_cast<int>(k));
      if (node.kind == NodeKind::UpdateVariables) p.updates.push_back(static_cast<int>(k));
      ++k;
    }
    p.end = static_cast<int>(k);
    if (ops < kMinSegmentOps) continue;
    auto inside = [&](int v) {
      const int producer = g.values[static_cast<size_t>(v)].producer;
      return producer >= p.begin && producer < p.end && !hoisted(static_cast<size_t>(producer));
    };
    std::set<int> inputs, outputs;
    for (int j = p.begin; j < p.end; ++j)
      for (int v : g.nodes[static_cast<size_t>(j)].inputs)
        if (v >= 0 && !inside(v) && !g.values[static_cast<size_t>(v)].constant.defined()) inputs.insert(v);
    for (size_t j = static_cast<size_t>(p.end); j < n; ++j)
      for (int v : g.nodes[j].inputs)
        if (v >= 0 && inside(v)) outputs.insert(v);
    for (int v : g.outputs)
      if (inside(v)) outputs.insert(v);
    p.inputs.assign(inputs.begin(), inputs.end());
    p.outputs.assign(outputs.begin(), outputs.end());
    plans.push_back(std::move(p));
  }
  return plans;
}

// ------------------------------------------------------------------------------------------------ replay

struct Executable::DeviceSegments {
  enum class State { Warm, Captured, Off };
  struct Segment {
    SegmentPlan plan;
    std::vector<std::pair<int, Variable>> variables;  // captured_variables(plan), made with the plan
    State state = State::Warm;
    int plain_runs = 0;  // since the last capture was dropped
    bool told_held = false;  // the log said once that a buffer was held outside
    std::unique_ptr<device_graph::Graph> graph;
    std::vector<Tensor> inputs;   // the graph's own buffers for plan.inputs
    std::vector<Tensor> outputs;  // its buffers for plan.outputs
    std::vector<const void*> variable_data;  // per variables: the buffer captured
    // Per buffer of inputs and outputs: one of its tensors, and how many of them share the buffer.
    std::vector<std::pair<const Tensor*, long>> holders;
    void drop() {
      graph.reset();
      inputs.clear();
      outputs.clear();
      variable_data.clear();
      holders.clear();
    }
  };
  std::string name;
  std::mutex mu;
  std::vector<Segment> segments;
  std::vector<int> at;  // per node: the segment starting there, or -1
  DeviceGraphStats stats;
  // ReadVariable (UpdateVariables) nodes whose variable changed its buffer between calls: once, the segment is
  // captured again; twice, the read (update) moves out of the segments (a read's value is then copied in on every
  // call), at the next run.
  std::map<int, int> moved;
  std::set<int> reads_outside;
  bool replan = false;
  std::vector<char> failed;  // per node: in a segment whose capture failed (a new plan leaves it op by op)

  void plan(const Graph& g) {
    std::vector<SegmentPlan> plans = plan_device_segments(g, reads_outside);
    g_totals.segments += static_cast<int>(plans.size()) - stats.segments;
    segments.clear();
    at.assign(g.nodes.size(), -1);
    for (SegmentPlan& p : plans) {
      at[static_cast<size_t>(p.begin)] = static_cast<int>(segments.size());
      segments.push_back({});
      for (int k = p.begin; k < p.end; ++k)
        if (failed[static_cast<size_t>(k)]) segments.back().state = State::Off;
      segments.back().variables = captured_variables(g, p);
      segments.back().plan = std::move(p);
      segments.back().plain_runs = 1;  // replanned: the run before was the warm-up
    }
    stats.segments = static_cast<int>(segments.size());
    replan = false;
  }
};

void Executable::init_device_segments(const ExecutableOptions& options) {
  if (plan_device_segments(graph_).empty()) return;
  device_ = std::make_shared<DeviceSegments>();
  device_->name = options.name;
  device_->failed.assign(graph_.nodes.size(), 0);
  device_->plan(graph_);
  for (auto& seg : device_->segments) seg.plain_runs = 0;
}

DeviceGraphStats Executable::device_graph_stats() const {
  if (!device_) return {};
  std::lock_guard<std::mutex> lock(device_->mu);
  return device_->stats;
}

std::unique_lock<std::mutex> Executable::lock_device_segments() const {
  if (!device_ || !device_graphs_enabled() || any_tape_recording() || profiler::detail::recording() ||
      ember::detail::has_op_hooks())
    return {};
  std::unique_lock<std::mutex> lock(device_->mu, std::try_to_lock);
  if (lock.owns_lock() && device_->replan) device_->plan(graph_);
  return lock;
}

int Executable::segment_at(size_t node) const { return device_->at[node]; }

Tensor Executable::RunState::from_graph(const Tensor& t) const {
  if (held.empty() || !t.defined() || std::find(held.begin(), held.end(), t.storage().get()) == held.end()) return t;
  return t.clone();
}

size_t Executable::run_segment(size_t s, RunState& st) const {
  using State = DeviceSegments::State;
  DeviceSegments& d = *device_;
  DeviceSegments::Segment& seg = d.segments[s];
  const SegmentPlan& p = seg.plan;
  auto val = [&](int v) -> Tensor& { return st.vals[static_cast<size_t>(v)]; };
  auto plain = [&] {
    ++seg.plain_runs;
    ++d.stats.plain_runs;
    ++g_totals.plain_runs;
    run_nodes(static_cast<size_t>(p.begin), static_cast<size_t>(p.end), st, /*capturing=*/false);
    return static_cast<size_t>(p.end);
  };
  auto give_up = [&](const std::string& why) {
    for (int k = p.begin; k < p.end; ++k) d.failed[static_cast<size_t>(k)] = 1;
    seg.drop();
    seg.state = State::Off;
    ++d.stats.failures;
    ++g_totals.failures;
    logging::info("ember::function '" + d.name + "': nodes " + std::to_string(p.begin) + " to " +
                  std::to_string(p.end - 1) + " run op by op on " + p.device.to_string() +
                  ", not as a CUDA graph: " + why);
  };
  if (seg.state == State::Off) return plain();
  // The reads that run before the graph (their variables change buffers between calls): their values are inputs.
  for (int k : p.hoisted) run_node(static_cast<size_t>(k), st, /*capturing=*/false);
  for (int v : p.inputs)
    if (!val(v).defined() || val(v).device() != p.device) return plain();  // not expected: the types were checked
  const std::vector<std::pair<int, Variable>>& variables = seg.variables;
  if (seg.state == State::Captured) {
    for (size_t i = 0; i < variables.size(); ++i) {
      const auto& [node, var] = variables[i];
      if (var.value().raw_data() == seg.variable_data[i]) continue;
      // Assigned a new buffer since (set_weights, an update that could not be in place): capture again; the
      // second time, read (update) it outside the graphs from the next call on.
      seg.drop();
      seg.state = State::Warm;
      seg.plain_runs = 0;
      if (++d.moved[node] >= 2) {
        d.reads_outside.insert(node);
        d.replan = true;
      }
      return plain();
    }
    // A buffer of the graph still held outside (a value a host call kept): the launch would change it.
    for (const auto& [tensor, holders] : seg.holders) {
      if (tensor->storage().use_count() == holders) continue;
      if (!seg.told_held)
        logging::debug("ember::function '" + d.name + "': nodes " + std::to_string(p.begin) + " to " +
                       std::to_string(p.end - 1) + " run op by op while a buffer of their CUDA graph is held outside");
      seg.told_held = true;
      return plain();
    }
    // A variable the launch would update shared with another tensor: op by op, whose update copies it first (its
    // buffer then moves, and the segment is captured again).
    if (!updates_alone(graph_, p)) return plain();
  }
  if (seg.state == State::Warm) {
    if (seg.plain_runs < 1) return plain();  // the first run warms caches (cuDNN's algorithms, workspaces, ...)
    if (!updates_alone(graph_, p)) return plain();
    // Capture: the ops are recorded, not run, with the graph's own buffers for the segment's inputs.
    std::vector<Tensor> given(p.inputs.size());
    for (size_t i = 0; i < p.inputs.size(); ++i) given[i] = val(p.inputs[i]);
    std::vector<const void*> variable_data;
    for (const auto& [node, var] : variables) variable_data.push_back(var.value().raw_data());
    std::string why;
    std::unique_ptr<device_graph::Graph> graph;
    try {
      std::unique_ptr<device_graph::Capture> capture = device_graph::begin(p.device, why);
      if (capture) {
        for (size_t i = 0; i < p.inputs.size(); ++i) {
          seg.inputs.push_back(Tensor::empty(given[i].shape(), given[i].dtype(), p.device));
          val(p.inputs[i]) = seg.inputs.back();
        }
        for (int k = p.begin; k < p.end; ++k)
          if (!std::binary_search(p.hoisted.begin(), p.hoisted.end(), k)) run_node(static_cast<size_t>(k), st, true);
        for (int v : p.outputs) {
          EMBER_CHECK(val(v).defined() && val(v).device() == p.device, Internal)
              << "value %" << v << " is not on " << p.device << " after the capture";
          seg.outputs.push_back(val(v));
        }
        graph = capture->finish(why);
      }
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!graph) {
      // Nothing ran on the device: put the inputs back and run the nodes op by op (a node stopped midway
      // leaves its scratch behind).
      st.in.clear();
      st.out.clear();
      for (int k = p.begin; k < p.end; ++k)
        for (int v : graph_.nodes[static_cast<size_t>(k)].outputs)
          if (v >= 0) val(v) = Tensor();
      for (size_t i = 0; i < p.inputs.size(); ++i) val(p.inputs[i]) = given[i];
      give_up(why.empty() ? "the capture failed" : why);
      return plain();
    }
    seg.graph = std::move(graph);
    seg.variable_data = std::move(variable_data);
    // Each distinct tensor holds its buffer once (two outputs may be one tensor).
    std::vector<const Tensor*> distinct;
    for (const std::vector<Tensor>* buffers : {&seg.inputs, &seg.outputs})
      for (const Tensor& t : *buffers)
        if (std::none_of(distinct.begin(), distinct.end(), [&](const Tensor* u) { return u->is_same(t); }))
          distinct.push_back(&t);
    for (const Tensor* t : distinct) {
      auto it = std::find_if(seg.holders.begin(), seg.holders.end(),
                             [&](const auto& h) { return h.first->storage() == t->storage(); });
      if (it == seg.holders.end()) seg.holders.emplace_back(t, 1);
      else ++it->second;
    }
    seg.state = State::Captured;
    logging::debug("ember::function '" + d.name + "': nodes " + std::to_string(p.begin) + " to " +
                   std::to_string(p.end - 1) + " captured as a CUDA graph on " + p.device.to_string() + " (" +
                   std::to_string(p.inputs.size()) + " inputs copied in per call, " +
                   std::to_string(p.outputs.size()) + " outputs)");
    ++d.stats.captures;
    ++g_totals.captures;
    // The capture's own values stay in the table until replaced by views below.
    for (size_t i = 0; i < p.inputs.size(); ++i) val(p.inputs[i]) = given[i];
  }
  // Launch: this call's inputs into the graph's buffers, then the graph.
  Allocator& alloc = allocator_for(p.device);
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const Tensor& src = val(p.inputs[i]);
    Tensor& dst = seg.inputs[i];
    if (src.shape() != dst.shape() || src.dtype() != dst.dtype()) return plain();
    alloc.copy_on_device(dst.raw_data(), src.raw_data(), src.nbytes());
  }
  // The updates write their variables' values: new versions, as an update run op by op makes (a cast cached from
  // a variable's value is then made again).
  for (int k : p.updates)
    for (Variable v : graph_.nodes[static_cast<size_t>(k)].updates) v.exclusive_value();
  seg.graph->launch();
  ++d.stats.launches;
  ++g_totals.launches;
  for (size_t j = 0; j < p.outputs.size(); ++j) {
    const Tensor& t = seg.outputs[j];
    val(p.outputs[j]) = t.view(t.shape());
    st.held.push_back(t.storage().get());
  }
  // What the segment's nodes would have released.
  for (int k = p.begin; k < p.end; ++k)
    for (int v : release_after_[static_cast<size_t>(k)]) val(v) = Tensor();
  return static_cast<size_t>(p.end);
}

}  // namespace ember::graph
