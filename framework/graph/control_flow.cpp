#include "framework/graph/control_flow.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "framework/autodiff/gradient_tape.h"
#include "framework/graph/executor.h"
#include "framework/graph/passes.h"
#include "framework/graph/trace.h"

namespace ember::ops {

namespace {

using graph::Node;
using graph::NodeKind;
using graph::detail::SubTrace;

std::string type_of(const Tensor& t) {
  std::string s = std::string(dtype_name(t.dtype())) + t.shape().to_string();
  if (!t.device().is_cpu()) s += "@" + t.device().to_string();
  return s;
}

bool same_type(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.device() == b.device();
}

void check_predicate(const Tensor& t, const char* what) {
  EMBER_CHECK(t.defined(), InvalidArgument) << what << " is undefined";
  EMBER_CHECK(t.dtype() == DType::Bool && t.rank() == 0, InvalidArgument)
      << what << " must be a 0-d bool tensor, got " << type_of(t);
}

// The captures of several sub-graphs as one list: each graph's inputs become its `num_args` arguments, then
// every capture of the list (one it does not read is an input it ignores).
std::vector<Tensor> merge_captures(std::vector<SubTrace*> subs, size_t num_args) {
  std::vector<Tensor> all;
  std::unordered_map<uint64_t, size_t> index;
  for (SubTrace* s : subs)
    for (const Tensor& t : s->captures)
      if (index.emplace(t.id(), all.size()).second) all.push_back(t);
  for (SubTrace* s : subs) {
    graph::Graph& g = s->graph;
    std::vector<int> inputs(g.inputs.begin(), g.inputs.begin() + static_cast<std::ptrdiff_t>(num_args));
    std::unordered_map<uint64_t, int> own;
    for (size_t c = 0; c < s->captures.size(); ++c) own[s->captures[c].id()] = g.inputs[num_args + c];
    for (const Tensor& t : all) {
      auto it = own.find(t.id());
      inputs.push_back(it != own.end() ? it->second
                                       : g.add_value(graph::Value{t.shape(), t.dtype(), t.device(), -1, -1, Tensor()}));
    }
    for (size_t i = 0; i < inputs.size(); ++i) g.values[static_cast<size_t>(inputs[i])].input = static_cast<int>(i);
    g.inputs = std::move(inputs);
  }
  return all;
}

// A branch's or loop's graphs, optimised for the node's runs and as traced for its runs under a tape.
void set_subgraphs(Node& n, std::vector<graph::Graph> graphs) {
  for (graph::Graph& g : graphs) {
    n.tape_subgraphs.push_back(std::make_shared<const graph::Executable>(graph::traced_copy(g)));
    graph::optimize(g);
    n.subgraphs.push_back(std::make_shared<const graph::Executable>(std::move(g)));
  }
}

// The variables that AssignVariable and UpdateVariables nodes of n's graphs (and theirs) write.
void assigned_variables(const Node& n, std::vector<Variable>& out) {
  for (const auto& sub : n.subgraphs)
    for (const Node& inner : sub->graph().nodes) {
      if (inner.kind == NodeKind::AssignVariable) out.push_back(inner.variable);
      if (inner.kind == NodeKind::UpdateVariables) out.insert(out.end(), inner.updates.begin(), inner.updates.end());
      assigned_variables(inner, out);
    }
}

// Runs a traced Cond or While node now (the traced call's results, as a replay computes them) and records it,
// as one node on the tapes that watch its inputs, with the gradient that replays compute.
std::vector<Tensor> run_and_record(Node node, const std::vector<Tensor>& inputs) {
  std::shared_ptr<graph::ControlFlowTape> tape;
  if (any_tape_records(inputs)) tape = std::make_shared<graph::ControlFlowTape>();
  std::vector<Variable> assigned;
  assigned_variables(node, assigned);
  std::sort(assigned.begin(), assigned.end(),
            [](const Variable& a, const Variable& b) { return std::less<const void*>()(a.handle(), b.handle()); });
  assigned.erase(std::unique(assigned.begin(), assigned.end(),
                             [](const Variable& a, const Variable& b) { return a.handle() == b.handle(); }),
                 assigned.end());
  // In a trace that leaves no effect (a branch's or loop's, get_concrete_function's, a probe), what the node
  // assigns or updates in place as it runs now is put back when that trace ends (copies: an update writes the
  // buffer), and its host calls with no results (ops::print) do not run.
  const bool records_only = graph::detail::records_only();
  if (records_only) {
    std::vector<Tensor> before;
    {
      graph::SuspendTracing suspend;
      for (const Variable& v : assigned) before.push_back(v.value().clone());
    }
    for (size_t i = 0; i < assigned.size(); ++i) graph::detail::undo_at_trace_end(assigned[i], before[i]);
  }
  std::vector<Tensor> outputs;
  {
    graph::SuspendTracing suspend;
    ember::detail::PauseTapes pause;
    graph::EffectsOff effects_off(records_only);
    outputs = graph::run_control_flow(node, inputs, tape.get());
    for (Tensor& t : outputs) t = t.view(t.shape());  // tensors of the node's own
  }
  const int index = graph::detail::record_node(std::move(node), inputs, outputs);
  // A variable the node may assign is read again after it (as after any assignment), whichever branch ran now.
  {
    graph::SuspendTracing suspend;
    for (Variable& v : assigned) v.assign(v.value().view(v.shape()));
  }
  if (!tape) return outputs;
  const uint64_t trace = graph::detail::current_trace_id();
  ember::detail::record_custom(inputs, outputs, [tape, trace, index](const std::vector<Tensor>& dys) {
    std::vector<Tensor> grads;
    {
      graph::SuspendTracing suspend;
      grads = tape->gradients(dys);
      for (Tensor& g : grads)
        if (g.defined()) g = g.view(g.shape());
    }
    const uint64_t now = graph::detail::current_trace_id();
    if (now == trace) {
      Node g;
      g.kind = NodeKind::ControlFlowGrad;
      g.forward = index;
      graph::detail::record_node(std::move(g), dys, grads);
    } else {
      EMBER_CHECK(now == 0, Unimplemented)
          << "GradientTape.gradient: the gradient of an ops::cond or ops::while_loop is taken inside another "
             "function, or a branch, than the one that ran it; take it in the same one";
    }
    return grads;
  });
  return outputs;
}

}  // namespace

namespace detail {

std::vector<Tensor> cond(const Tensor& pred, const std::function<std::vector<Tensor>()>& true_fn,
                         const std::function<std::vector<Tensor>()>& false_fn) {
  check_predicate(pred, "ops::cond: pred");
  if (!graph::is_traced(pred)) return pred.item<bool>() ? true_fn() : false_fn();
  auto branch = [](const std::function<std::vector<Tensor>()>& fn) {
    return [&fn](const std::vector<Tensor>&) { return fn(); };
  };
  SubTrace t = graph::detail::trace_subgraph("ops::cond: true_fn", {}, branch(true_fn));
  SubTrace f = graph::detail::trace_subgraph("ops::cond: false_fn", {}, branch(false_fn));
  EMBER_CHECK(t.outputs.size() == f.outputs.size(), InvalidArgument)
      << "ops::cond: true_fn returned " << t.outputs.size() << " tensor(s) and false_fn " << f.outputs.size()
      << "; both branches must return the same structure";
  for (size_t i = 0; i < t.outputs.size(); ++i)
    EMBER_CHECK(same_type(t.outputs[i], f.outputs[i]), InvalidArgument)
        << "ops::cond: output " << i << " is " << type_of(t.outputs[i]) << " in true_fn and "
        << type_of(f.outputs[i]) << " in false_fn; both branches must return the same shapes and dtypes";
  std::vector<Tensor> inputs{pred};
  for (Tensor& c : merge_captures({&t, &f}, 0)) inputs.push_back(std::move(c));
  Node n;
  n.kind = NodeKind::Cond;
  std::vector<graph::Graph> graphs;
  graphs.push_back(std::move(t.graph));
  graphs.push_back(std::move(f.graph));
  set_subgraphs(n, std::move(graphs));
  return run_and_record(std::move(n), inputs);
}

}  // namespace detail

std::vector<Tensor> while_loop(const std::function<Tensor(const std::vector<Tensor>&)>& cond,
                               const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& body,
                               const std::vector<Tensor>& loop_vars, WhileLoopOptions options) {
  EMBER_CHECK(!loop_vars.empty(), InvalidArgument) << "ops::while_loop: loop_vars is empty; give at least one tensor";
  for (size_t i = 0; i < loop_vars.size(); ++i)
    EMBER_CHECK(loop_vars[i].defined(), InvalidArgument) << "ops::while_loop: loop_vars[" << i << "] is undefined";
  EMBER_CHECK(!options.maximum_iterations || *options.maximum_iterations >= 0, InvalidArgument)
      << "ops::while_loop: maximum_iterations is " << *options.maximum_iterations << "; expected 0 or more";
  auto check_body = [&](const std::vector<Tensor>& in, const std::vector<Tensor>& out, bool traced) {
    EMBER_CHECK(out.size() == in.size(), InvalidArgument)
        << "ops::while_loop: body returned " << out.size() << " tensor(s) for " << in.size() << " loop variable(s)";
    for (size_t i = 0; i < out.size(); ++i) {
      EMBER_CHECK(out[i].defined(), InvalidArgument) << "ops::while_loop: body returned an undefined loop_vars[" << i << "]";
      EMBER_CHECK(!traced || same_type(in[i], out[i]), InvalidArgument)
          << "ops::while_loop: loop_vars[" << i << "] enters the loop as " << type_of(in[i]) << " but is "
          << type_of(out[i]) << " after one iteration; a traced loop keeps each variable's shape, dtype and device";
    }
  };
  if (!graph::is_tracing()) {
    std::vector<Tensor> vars = loop_vars;
    for (int64_t i = 0; !options.maximum_iterations || i < *options.maximum_iterations; ++i) {
      Tensor c = cond(vars);
      check_predicate(c, "ops::while_loop: cond's result");
      if (!c.item<bool>()) break;
      std::vector<Tensor> next = body(vars);
      check_body(vars, next, false);
      vars = std::move(next);
    }
    return vars;
  }
  // A variable that the cond or the body assigns and the other reads is read by the loop's graphs on every pass
  // (traced again so), not once before the loop.
  std::unordered_set<const void*> read_inside;
  SubTrace c, b;
  for (;;) {
    c = graph::detail::trace_subgraph(
        "ops::while_loop: cond", loop_vars, [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{cond(v)}; },
        read_inside);
    check_predicate(c.outputs[0], "ops::while_loop: cond's result");
    b = graph::detail::trace_subgraph("ops::while_loop: body", loop_vars, body, read_inside);
    check_body(loop_vars, b.outputs, true);
    const size_t before = read_inside.size();
    for (const SubTrace* reader : {&c, &b})
      for (const SubTrace* writer : {&c, &b})
        for (const void* v : writer->assigned)
          if (reader->read_outside.contains(v)) read_inside.insert(v);
    if (read_inside.size() == before) break;
  }
  std::vector<Tensor> inputs = loop_vars;
  for (Tensor& t : merge_captures({&c, &b}, loop_vars.size())) inputs.push_back(std::move(t));
  Node n;
  n.kind = NodeKind::While;
  n.num_loop_vars = static_cast<int>(loop_vars.size());
  n.maximum_iterations = options.maximum_iterations.value_or(-1);
  std::vector<graph::Graph> graphs;
  graphs.push_back(std::move(c.graph));
  graphs.push_back(std::move(b.graph));
  set_subgraphs(n, std::move(graphs));
  return run_and_record(std::move(n), inputs);
}

}  // namespace ember::ops
