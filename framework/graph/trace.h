#pragma once
// Tracing: while a function is traced, every op, variable access and tensor derivation on this thread is
// recorded into a Graph as it runs (the ops still execute: the traced call's results are those of an
// eager call). A host read of a traced value is refused, as TF refuses a symbolic tensor as a Python bool.
#include <memory>
#include <string>
#include <vector>

#include "framework/graph/graph.h"

namespace ember::graph {

// True while a function is being traced on this thread (and not suspended).
bool is_tracing();

// Runs `fn` on `inputs` now and returns its results; while a function is being traced, also records it as
// one node that runs `fn` again, eagerly, on every call of the function (TF: tf.py_function). For code whose
// ops depend on host state that changes between calls (an optimizer's step count, a seeded layer's call
// counter) and for host effects (ops::print). Undefined inputs are passed through as undefined.
std::vector<Tensor> host_call(const std::string& name, const std::vector<Tensor>& inputs, HostFn fn);

// Stops recording on this thread while it lives: ops run then are part of no graph (a layer's weight
// initialisers, run once when it is built during a trace, as TF lifts them out of the function).
class SuspendTracing {
 public:
  SuspendTracing();
  ~SuspendTracing();
  SuspendTracing(const SuspendTracing&) = delete;
  SuspendTracing& operator=(const SuspendTracing&) = delete;

 private:
  void* saved_;
};

// Records one trace into a Graph while it lives and is the thread's active tracer.
class Trace {
 public:
  // `function_name` names the function in errors.
  explicit Trace(std::string function_name);
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

}  // namespace ember::graph
