#pragma once
// Tracing: while a function is traced, every op, variable access and tensor derivation on this thread is
// recorded into a Graph as it runs (the ops still execute: the traced call's results are those of an
// eager call). A host read of a traced value is refused, as TF refuses a symbolic tensor as a Python bool.
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "framework/graph/graph.h"
#include "framework/ops/random.h"

namespace ember::graph {

// True while a function is being traced on this thread (and not suspended).
bool is_tracing();
// Whether `t` is a value of the trace recording on this thread (or of one enclosing it): its values exist
// only when the function runs.
bool is_traced(const Tensor& t);

// Runs `fn` on `inputs` now and returns its results; while a function is being traced, also records it as
// one node that runs `fn` again, eagerly, on every call of the function (TF: tf.py_function). For code whose
// ops depend on host state that changes between calls (an optimizer's step count, a seeded layer's call
// counter) and for host effects (ops::print). Undefined inputs are passed through as undefined.
// `undo`, when given, takes back what running `fn` changed on the host (a call counter); it runs where the run
// left no effect behind: in a dry trace and in a branch or loop body being traced, whose node runs `fn` again.
std::vector<Tensor> host_call(const std::string& name, const std::vector<Tensor>& inputs, HostFn fn,
                              std::function<void()> undo = {});
// host_call for code that returns nothing (an optimizer's update, ops::print): inside a branch of ops::cond
// or a while_loop being traced it is recorded without running, so that it runs only where the graph takes it.
struct HostEffectOptions {
  // The inputs are gradients as (value, a, b) triples (see Node::gradient_triples).
  bool gradient_triples = false;
  // fn takes a float16 or bfloat16 input for a float32 one made by a cast and widens it itself (see
  // Node::widens_half_gradients).
  bool widens_half_gradients = false;
};
void host_effect(const std::string& name, const std::vector<Tensor>& inputs,
                 std::function<void(std::span<const Tensor>)> fn, HostEffectOptions options = {});

// Runs `op` on the buffers of `variables`, updated in place, followed by `inputs`: an optimizer's fused update,
// whose outputs (`outputs`, one per variable, in order) view the buffers. Each buffer is taken exclusively when
// the op runs (Variable::exclusive_value), copied first where another tensor shares it, so that tensor keeps
// the old values. While a function is traced, also records it as one node that does the same on every call,
// reading `inputs` as the graph's values (a step count or a learning rate as a tensor: nothing is read on the
// host); inside a branch or loop being traced, or in a dry trace, it is recorded without running, as host
// effects are. The first 3 * gradient_triples inputs are gradients as (value, a, b) triples (see
// Node::gradient_triples); `name` names the node.
void update_variables(const std::string& name, OpId op, const std::vector<Variable>& variables,
                      const std::vector<Tensor>& inputs, const std::vector<OutputSpec>& outputs, const Attrs& attrs,
                      int gradient_triples = 0);

// TF's init_scope, for a layer's weight initialisers, run once when it is built during a trace: ops run while it
// lives are part of no graph, and what they draw from the random generator is drawn as if outside every trace
// (a dry trace or a branch being traced puts the generator back when it ends, but not past these draws).
class InitScope;

// Stops recording on this thread while it lives: ops run then are part of no graph.
class SuspendTracing {
 public:
  SuspendTracing();
  ~SuspendTracing();
  SuspendTracing(const SuspendTracing&) = delete;
  SuspendTracing& operator=(const SuspendTracing&) = delete;

 private:
  void* saved_;
};

class InitScope {
 public:
  InitScope();
  ~InitScope();
  InitScope(const InitScope&) = delete;
  InitScope& operator=(const InitScope&) = delete;

 private:
  SuspendTracing untraced_;
  random::GeneratorState* outer_ = nullptr;  // what the outermost trace that puts the generator back restores
  random::GeneratorState inner_;             // the trace's own state, put back after
};

// Records one trace into a Graph while it lives and is the thread's active tracer.
class Trace {
 public:
  // `function_name` names the function in errors. A dry trace (get_concrete_function before any call) leaves
  // no effect behind, as a branch's does: variable assignments are undone when it ends, the random generator
  // is put back, host effects are recorded without running, and tapes recording outside do not see it.
  explicit Trace(std::string function_name, bool dry = false);
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  // Registers `t` as the function's next tensor input.
  void add_input(const Tensor& t);
  // Ends recording: `outputs` become the graph's outputs. Returns the graph.
  Graph finish(const std::vector<Tensor>& outputs);

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

namespace detail {

// A graph traced inside the trace recording on this thread (a branch of ops::cond, a loop's cond or body),
// with what running it changed undone: variables assigned, the random generator, host effects (recorded,
// not run). Tapes recording outside it do not see it.
struct SubTrace {
  Graph graph;                   // inputs: one per argument, then the captures
  std::vector<Tensor> captures;  // tensors of the enclosing traces it reads, in the order of its inputs
  std::vector<Tensor> outputs;   // what it returned while traced
  // Variables (Variable::handle()) it, or control flow inside it, may assign; and those it reads once through
  // the enclosing trace (their values are captures).
  std::unordered_set<const void*> assigned, read_outside;
};
// Traces `fn` on fresh views of `args`. `what` names it in errors. The variables in `read_inside` are read
// by the graph itself on every run (a loop's cond reading what its body assigns), not captured.
SubTrace trace_subgraph(const std::string& what, const std::vector<Tensor>& args,
                        const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                        const std::unordered_set<const void*>& read_inside = {});

// Whether the trace recording on this thread leaves no effect behind: a branch's or loop's, or a dry trace
// (get_concrete_function, reduce_retracing's probes).
bool records_only();
// In such a trace: puts `previous` back into `v` when the trace ends (an effect a control-flow node had as it
// ran while traced).
void undo_at_trace_end(const Variable& v, const Tensor& previous);

// Records `node` in the trace recording on this thread, reading `inputs` and making `outputs` (tensors of
// its own; undefined ones are no value). Returns its index.
int record_node(Node node, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);

// Which trace records on this thread: a number no other trace had, 0 when none.
uint64_t current_trace_id();

}  // namespace detail

}  // namespace ember::graph
