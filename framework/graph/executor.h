#pragma once
// The replay loop of a traced graph: each node's kernel or action in program order, with the front ends'
// work (shape inference, validation, attribute resolution) and the tape's bookkeeping already done at trace
// time. A value is dropped after its last reader, so its buffer returns to the allocator's cache (and a
// variable's buffer is the optimizer's alone again, for its update in place).
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/graph/graph.h"
#include "framework/graph/memory_plan.h"

namespace ember::graph {

// A cached cast (see cache_variable_casts): the variable version it was made from.
struct Node::CastCache {
  std::mutex mu;
  uint64_t version = 0;
  Tensor value;
};

// A Cond or While node run under a tape of its own, for its ControlFlowGrad node: the tape holds what the
// branch or the loop's passes computed, so the gradient is that of the very run, whatever it took.
struct ControlFlowTape {
  std::unique_ptr<GradientTape> tape;
  std::optional<GradientTape::Pause> paused;  // from the node's end: later ops are not its business
  std::vector<Tensor> sources;  // per node input: the view the run read (watched), or undefined (not floating)
  std::vector<Tensor> outputs;  // the run's outputs
  // The gradients of the node's inputs (undefined for the others) given those of its outputs (undefined: zero).
  std::vector<Tensor> gradients(const std::vector<Tensor>& output_gradients);
};

// Runs a Cond or While node on its inputs; with `tape`, under it (see ControlFlowTape).
std::vector<Tensor> run_control_flow(const Node& n, std::span<const Tensor> inputs, ControlFlowTape* tape);

// While one made with `on` lives on this thread, graphs run here skip their effect-only host calls
// (Node::effect_only: ops::print, an optimizer's host update): a control-flow node run while a trace that leaves
// no effect records it.
class EffectsOff {
 public:
  explicit EffectsOff(bool on);
  ~EffectsOff();
  EffectsOff(const EffectsOff&) = delete;
  EffectsOff& operator=(const EffectsOff&) = delete;

 private:
  bool previous_;
};

// Runs an UpdateVariables node on `inputs` (one per node input): its op on the variables' buffers, each taken
// exclusively (copied first where another tensor shares it), then the inputs; with `kernel`, that kernel on the
// CPU without dispatch (see run_kernel_into).
void run_variable_update(const Node& n, std::span<const Tensor> inputs, KernelFn kernel = nullptr);

// A run of consecutive nodes that may be captured as one device graph (a CUDA graph): ops, variable reads and
// derivations on one GPU, none random, reading nothing but values of that GPU and constants.
struct SegmentPlan {
  int begin = 0, end = 0;  // node indices [begin, end)
  Device device = Device::cpu();
  std::vector<int> inputs;     // values read but made outside: copied into the graph's own buffers per call
  std::vector<int> outputs;    // values made inside and read after it (or returned)
  std::vector<int> variables;  // its ReadVariable nodes: read at the address the variable had when captured
  std::vector<int> updates;    // its UpdateVariables nodes: written there too, the variables holding them alone
  std::vector<int> hoisted;    // ReadVariable nodes run before the graph (their buffers move): their values inputs
};
// The segments of `g` (see docs/gpu.md, "CUDA graphs"): runs of at least two op nodes. Variables the graph
// assigns are read outside them (their buffer changes on every call), and so is a variable whose value (or a
// view of it) is read after its run, so that no graph's buffer is a variable's; such reads inside a run are
// hoisted before its graph rather than ending it. An optimizer's update in place (UpdateVariables) joins a run
// unless one of its variables is read outside that run (or hoisted).
// `reads_outside` lists ReadVariable and UpdateVariables nodes to leave out (their variable changes its buffer
// between calls).
std::vector<SegmentPlan> plan_device_segments(const Graph& g, const std::set<int>& reads_outside = {});

// How a function's calls used device graphs, for tests and benchmarks.
struct DeviceGraphStats {
  int segments = 0;        // runs of nodes that may be captured (plan_device_segments)
  int64_t captures = 0;    // graphs captured (again after a variable changed its buffer, say)
  int64_t launches = 0;    // runs of a segment served by launching its graph, the capturing call's included
  int64_t plain_runs = 0;  // runs of a segment op by op: the first (warming caches), and any fallback
  int failures = 0;        // segments that gave up capturing (then they run op by op, said once in the log)
};
// Device graphs on or off for the process: on unless the environment sets EMBER_CUDA_GRAPHS=0.
void set_device_graphs_enabled(bool enabled);
bool device_graphs_enabled();
// The sums over every function of the process.
DeviceGraphStats device_graph_totals();

struct ExecutableOptions {
  // Capture the device segments as graphs on the second run and launch them from then on. Functions set it;
  // the graphs of control flow, which run inside a function's call, do not.
  bool device_graphs = false;
  std::string name = "function";  // in the log
};

class Executable {
 public:
  explicit Executable(Graph graph, ExecutableOptions options = {});
  const Graph& graph() const { return graph_; }
  // Runs the graph on `inputs` (one per graph input; the caller has checked their types) and returns
  // its outputs.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;
  DeviceGraphStats device_graph_stats() const;
  // The static memory plan of its replays (see memory_plan.h).
  MemoryPlanStats memory_plan_stats() const { return plan_.stats; }

 private:
  // One run's values and scratch.
  struct RunState {
    std::vector<Tensor> vals, in, out;
    std::vector<std::unique_ptr<ControlFlowTape>> tapes;  // per node, for those that keep one
    std::vector<const Storage*> held;  // the buffers of device graphs whose values this run handed out
    // The memory plan's arenas and, per value, its planned buffer (a view of an arena), kept from run to run.
    std::vector<Tensor> arenas, planned;
    bool use_plan = false;  // this run writes planned values into their buffers
    bool direct = false;    // this run calls the kernels resolved when planned (direct_)
    // `t`, or a copy of it when it is a device graph's buffer (which the graph's next launch rewrites).
    Tensor from_graph(const Tensor& t) const;
    // Drops what the run held (values, tapes, buffers), keeping the vectors' capacity and the arenas for the
    // next run.
    void clear();
  };
  // Run states of finished runs, kept for the next (a run's vectors then allocate nothing); one per run at a
  // time, so that runs on several threads, or one inside another, each take their own.
  struct SpareStates {
    std::mutex mu;
    std::vector<std::unique_ptr<RunState>> states;
  };
  std::unique_ptr<RunState> take_state() const;
  void give_back_state(std::unique_ptr<RunState> st) const;
  struct DeviceSegments;
  void init_device_segments(const ExecutableOptions& options);
  // The segments' lock when this run may use device graphs (owns_lock() false otherwise: a tape records, the
  // profiler or an op hook watches, another thread runs the graphs, or they are off).
  std::unique_lock<std::mutex> lock_device_segments() const;
  int segment_at(size_t node) const;  // the segment starting at this node, or -1
  // Whether this run may write the planned values into the arenas: not when a tape records (it may keep a value
  // past the run), nor while the profiler or a trace watches ops.
  bool may_use_plan() const;
  // Whether this run may call the op nodes' kernels directly (direct_): nothing observes ops, neither a hook
  // that needs every op, nor a tape recording, a trace or the profiler.
  bool may_run_direct() const;
  // Runs op node k in a direct run, by its DirectNode.
  void run_direct_op(size_t k, RunState& st) const;
  void run_nodes(size_t begin, size_t end, RunState& st, bool capturing) const;
  // Runs node k; an Error it raises gets the error context the node was traced in.
  void run_node(size_t k, RunState& st, bool capturing) const;
  void run_node_body(size_t k, RunState& st, bool capturing) const;
  // Runs segment `s` (op by op, by capturing it or by launching its graph); returns the node after it.
  size_t run_segment(size_t s, RunState& st) const;

  Graph graph_;
  std::shared_ptr<DeviceSegments> device_;  // with device_graphs and at least one segment
  std::vector<std::vector<int>> release_after_;  // per node: values whose last reader it is
  std::vector<int> constants_;
  std::vector<char> keep_tape_;          // per node: a Cond or While whose ControlFlowGrad node follows
  std::vector<int> drop_tape_after_;     // per node: the forward node whose tape its last gradient node frees
  MemoryPlan plan_;
  // What a direct run needs of a node, packed: the CPU kernel an op or UpdateVariables node calls (see
  // direct_kernel; nullptr: dispatched), and an op's value ids, all nodes' in one array (direct_ids_), so that
  // after an update streaming more than the caches hold, a node's lists cost one cache miss rather than one each.
  struct DirectNode {
    KernelFn kernel = nullptr;
    uint32_t at = 0;  // in direct_ids_: the op's inputs, outputs (-1: unread), then the values it releases
    uint32_t inputs = 0, outputs = 0, releases = 0;
  };
  std::vector<DirectNode> direct_;  // per node
  std::vector<int32_t> direct_ids_;
  // Per node: an op written into its input (in_place_input >= 0), the output's spec aliasing that input.
  std::vector<OutputSpec> in_place_specs_;
  std::unique_ptr<SpareStates> spare_ = std::make_unique<SpareStates>();
};

}  // namespace ember::graph
