#include "framework/graph/trace.h"

#include <atomic>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/trace_hooks.h"
#include "framework/graph/executor.h"
#include "framework/graph/specialize.h"
#include "framework/ops/random.h"

namespace ember::graph {

namespace {
// The generator states that traces running on this thread will put back (a dry trace's, a branch's being
// traced), outermost first: an InitScope draws from and advances the first.
thread_local std::vector<random::GeneratorState*> t_rewind_points;
}  // namespace

class Trace::Impl final : public ember::detail::TensorTracer, public OpTracer, public VariableTracer {
 public:
  // A trace of its own (parent == nullptr), or a graph traced inside `parent`'s (a branch, a loop body), which
  // reads the variables in `local_variables` (and those it assigned before) itself and the others through the
  // parent.
  explicit Impl(std::string name, Impl* parent = nullptr, std::unordered_set<const void*> local_variables = {})
      : name_(std::move(name)),
        parent_(parent),
        local_variables_(std::move(local_variables)),
        error_base_(ember::detail::current_error_context().get()) {
    static std::atomic<uint64_t> next_id{1};
    id_ = next_id.fetch_add(1);
  }
  // A dry trace of its own (see Trace): the generator's state to put back, and the tapes paused meanwhile.
  void start_dry() {
    dry_.emplace();
    dry_->generator = random::get_global_generator_state();
    t_rewind_points.push_back(&dry_->generator);
  }
  // Ends a dry trace's run (once; nothing for other traces): assignments undone, the generator put back.
  void end_dry() {
    if (!dry_) return;
    undo_assignments();
    random::set_global_generator_state(dry_->generator);
    if (!t_rewind_points.empty() && t_rewind_points.back() == &dry_->generator) t_rewind_points.pop_back();
    dry_.reset();
  }

  // The value `t` holds in this graph: made here, or made by an enclosing trace and captured now (then an
  // input of this graph, and of the nodes holding it up to that trace). -1 when no trace made it.
  int find(const Tensor& t) {
    auto it = ids_.find(t.id());
    if (it != ids_.end()) return it->second;
    if (!parent_ || !parent_->traced(t)) return -1;
    parent_->find(t);
    const int index = static_cast<int>(graph_.inputs.size());
    int v = graph_.add_value(Value{t.shape(), t.dtype(), t.device(), -1, index, Tensor()});
    ids_[t.id()] = v;
    graph_.inputs.push_back(v);
    captures_.push_back(t);
    return v;
  }
  // The value `t` holds: known to this trace, or captured now as a constant (a tensor made outside).
  int value_of(const Tensor& t) {
    if (int v = find(t); v >= 0) return v;
    EMBER_CHECK(!made_inside(t), InvalidArgument)
        << "ember::function '" << name_ << "': a " << dtype_name(t.dtype()) << " tensor of shape " << t.shape()
        << " made inside a branch of ops::cond or the cond or body of ops::while_loop is used outside it; return "
        << "it from the branch (or make it a loop variable) instead";
    int v = graph_.add_value(Value{t.shape(), t.dtype(), t.device(), -1, -1, t});
    ids_[t.id()] = v;
    return v;
  }
  int output_of(const Tensor& t, int node) {
    int v = graph_.add_value(Value{t.shape(), t.dtype(), t.device(), node, -1, Tensor()});
    ids_[t.id()] = v;
    return v;
  }
  // A value of this trace or of an enclosing one (not a constant).
  bool traced(const Tensor& t) const {
    auto it = ids_.find(t.id());
    if (it != ids_.end()) return !graph_.values[static_cast<size_t>(it->second)].constant.defined();
    return parent_ && parent_->traced(t);
  }
  bool made_inside(const Tensor& t) const { return inner_.contains(t.id()) || (parent_ && parent_->made_inside(t)); }
  int next_node() const { return static_cast<int>(graph_.nodes.size()); }

  void add_input(const Tensor& t) {
    const int index = static_cast<int>(graph_.inputs.size());
    int v = graph_.add_value(Value{t.shape(), t.dtype(), t.device(), -1, index, Tensor()});
    ids_[t.id()] = v;
    graph_.inputs.push_back(v);
  }

  int add_node(Node n, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
    for (const Tensor& t : inputs) n.inputs.push_back(t.defined() ? value_of(t) : -1);
    const int node = next_node();
    for (const Tensor& t : outputs) n.outputs.push_back(t.defined() ? output_of(t, node) : -1);
    // The frames entered since the trace began (those outside it wrap the call itself).
    if (const ErrorContext& context = ember::detail::current_error_context(); context.get() != error_base_) {
      n.error_context = context;
      n.error_base = error_base_;
    }
    // A host call may write any variable on a replay, whatever it did while traced (an optimizer that
    // accumulates updates on every n-th call only), and so may a branch or loop with effects: reads after it
    // are read again (as CSE keeps them apart).
    // So does an update in place, which a dry trace or a branch's records without running (the version stays).
    const bool may_write = n.kind == NodeKind::HostCall || n.kind == NodeKind::UpdateVariables ||
                           ((n.kind == NodeKind::Cond || n.kind == NodeKind::While) && n.has_effects());
    if (n.kind == NodeKind::UpdateVariables)
      for (const Variable& v : n.updates) {
        assigned_.insert(v.handle());
        if (parent_ && captured_variables_.contains(v.handle())) retrace_reading_.insert(v.handle());  // as assigned()
      }
    graph_.nodes.push_back(std::move(n));
    if (may_write) versions_.clear();
    return node;
  }

  // ---- TensorTracer
  void derived(const char* what, const Tensor& source, const Tensor& result,
               std::function<Tensor(const Tensor&)> remake) override {
    if (find(source) < 0) return;  // made from a constant: captured as one if used
    Node n;
    n.kind = NodeKind::Derived;
    n.name = what;
    n.remake = std::move(remake);
    add_node(std::move(n), {source}, {result});
  }
  void host_read(const Tensor& t, const char* what) override {
    if (!traced(t)) return;
    throw make_error<InvalidArgument>(
        what, ": a ", dtype_name(t.dtype()), " tensor of shape ", t.shape(), " is traced inside ember::function '",
        name_, "': its values exist only when the function runs, not while it is traced. Branch or loop on it "
        "with ops::cond / ops::while_loop, show it with ops::print, or return it and read it after the call (in a "
        "step that fit, evaluate or predict traces: compile with .run_eagerly = true to run it op by op)");
  }

  Tensor host_value(const char* what, std::function<Tensor()> make) override {
    return host_call(what, {}, [make = std::move(make)](std::span<const Tensor>) {
      return std::vector<Tensor>{make()};
    })[0];
  }

  // ---- OpTracer
  void op(OpId op, std::span<const Tensor> inputs, std::span<const OutputSpec> specs, std::span<const Tensor> outputs,
          const Attrs& attrs, Device device) override {
    Node n;
    n.kind = NodeKind::Op;
    n.op = op;
    n.attrs = attrs;
    n.specs.assign(specs.begin(), specs.end());
    n.device = device;
    add_node(std::move(n), {inputs.begin(), inputs.end()}, {outputs.begin(), outputs.end()});
  }

  // ---- VariableTracer
  void created(const Variable& v, const Tensor& initial_value) override {
    EMBER_CHECK(!traced(initial_value), InvalidArgument)
        << "Variable '" << v.name() << "' is created inside ember::function '" << name_
        << "' from a value computed there; create variables before calling the function (build the model first), "
        << "or give the variable a value made outside it";
  }
  void read(const Variable& v, const Tensor& current) override {
    // Known here (read before, or assigned here) and not written since: the same value. A tensor captured by
    // value before is read again by reference from here on; so is a buffer written in place outside the
    // trace's ops (an optimizer's fused update in a host call keeps the tensor, not the version), so that a
    // second step in one function reads the weights the first one updated.
    const auto known = versions_.find(v.handle());
    if (auto it = ids_.find(current.id()); it != ids_.end() &&
                                           !graph_.values[static_cast<size_t>(it->second)].constant.defined() &&
                                           known != versions_.end() && known->second == v.version())
      return;
    // Inside a branch or loop, a variable it does not assign is read once by the enclosing graph and captured:
    // its value is then an input of the control-flow node, so gradients reach it (a loop's weights). One that it
    // (or control flow inside it) assigned before is read here.
    if (parent_ && !local_variables_.contains(v.handle()) && !assigned_.contains(v.handle())) {
      parent_->read(v, current);
      captured_variables_.insert(v.handle());
      if (v.trainable()) read_through_parent_.push_back(current);
      return;
    }
    Node n;
    n.kind = NodeKind::ReadVariable;
    n.variable = v;
    add_node(std::move(n), {}, {current});
    versions_[v.handle()] = v.version();
  }
  void assigned(const Variable& v, const Tensor& source, const Tensor& stored, const Tensor& previous) override {
    if (parent_ || dry_) undo_.emplace_back(v, previous);
    assigned_.insert(v.handle());
    if (parent_) {
      // Read through the parent, then written: each pass of a loop must read what the last one wrote.
      if (captured_variables_.contains(v.handle())) retrace_reading_.insert(v.handle());
    }
    const int value = value_of(source);
    Node n;
    n.kind = NodeKind::AssignVariable;
    n.variable = v;
    n.inputs = {value};
    graph_.nodes.push_back(std::move(n));
    ids_[stored.id()] = value;
    versions_[v.handle()] = v.version();
  }

  // ---- host calls
  // Records a host call; runs it now (returning its results) unless `run_now` is false (an effect inside a
  // branch being traced: nothing to return).
  std::vector<Tensor> host_call(const std::string& name, const std::vector<Tensor>& inputs, HostFn fn,
                                bool gradient_triples = false, bool run_now = true, bool widens_half_gradients = false,
                                std::function<void()> undo = {});

  Graph finish(const std::vector<Tensor>& outputs) {
    for (const Tensor& t : outputs) {
      EMBER_CHECK(t.defined(), InvalidArgument)
          << "ember::function '" << name_ << "': returned an undefined tensor (a gradient that does not exist?)";
      graph_.outputs.push_back(value_of(t));
    }
    return std::move(graph_);
  }

  // A finished sub-trace's tensors (`graph`: its graph): known to this trace as made inside it, an error to use
  // here. Not the constants it captured that were made before it began (`first_id`: the id of the first tensor
  // made since; tensors made outside the function, which any graph may use).
  void adopt_inner(const Impl& child, const Graph& graph, uint64_t first_id) {
    for (const auto& [id, v] : child.ids_)
      if (!ids_.contains(id) && (id >= first_id || !graph.values[static_cast<size_t>(v)].constant.defined()))
        inner_.insert(id);
    inner_.insert(child.inner_.begin(), child.inner_.end());
  }

  // Puts back what the variables held before this sub-trace assigned them, last assignment first, and what its
  // host calls changed.
  void undo_assignments() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
      Variable v = it->first;
      v.assign(it->second);
    }
    undo_.clear();
    for (auto it = undo_host_.rbegin(); it != undo_host_.rend(); ++it) (*it)();
    undo_host_.clear();
  }
  void add_host_undo(std::function<void()> undo) { undo_host_.push_back(std::move(undo)); }
  void add_undo(const Variable& v, const Tensor& previous) { undo_.emplace_back(v, previous); }
  void mark_last_effect_only() { graph_.nodes.back().effect_only = true; }
  // The variables a finished sub-trace may assign: assigned here too, so read here from now on; one this trace
  // read through its parent before is read again on every run (traced again, reading it here).
  void adopt_assigned(const std::unordered_set<const void*>& inner) {
    for (const void* h : inner) {
      assigned_.insert(h);
      if (parent_ && captured_variables_.contains(h)) retrace_reading_.insert(h);
    }
  }
  const std::unordered_set<const void*>& assigned() const { return assigned_; }
  const std::unordered_set<const void*>& captured_variables() const { return captured_variables_; }

  const std::string& name() const { return name_; }
  uint64_t id() const { return id_; }
  Impl* parent() const { return parent_; }
  bool is_subtrace() const { return parent_ != nullptr; }
  // Whether effects are recorded without running (a branch, a loop, a dry trace).
  bool records_only() const { return parent_ != nullptr || dry_.has_value(); }
  const std::vector<Tensor>& captures() const { return captures_; }
  const std::unordered_set<const void*>& local_variables() const { return local_variables_; }
  const std::unordered_set<const void*>& retrace_reading() const { return retrace_reading_; }
  const std::vector<Tensor>& read_through_parent() const { return read_through_parent_; }

 private:
  std::string name_;
  uint64_t id_ = 0;
  Graph graph_;
  std::unordered_map<uint64_t, int> ids_;               // Tensor::id() -> value
  std::unordered_map<const void*, uint64_t> versions_;  // Variable::handle() -> the version its known value has
  // Sub-traces only.
  Impl* parent_ = nullptr;
  std::unordered_set<const void*> local_variables_;    // variables read here, not through the parent
  const ErrorContextFrame* error_base_;                 // the error context the trace began in
  std::unordered_set<const void*> captured_variables_;  // variables read through the parent
  std::unordered_set<const void*> retrace_reading_;     // of those, the ones assigned here
  std::unordered_set<const void*> assigned_;            // variables assigned here or in control flow inside
  std::vector<Tensor> read_through_parent_;             // trainable variables' values read so
  std::vector<Tensor> captures_;                        // per input after the arguments: the parent's tensor
  std::vector<std::pair<Variable, Tensor>> undo_;       // assignments, with the value before
  std::vector<std::function<void()>> undo_host_;        // host calls' undo, in the order they ran
  std::unordered_set<uint64_t> inner_;                  // ids of tensors made in finished sub-traces
  struct Dry {
    random::GeneratorState generator;
    ember::detail::PauseTapes pause;
  };
  std::optional<Dry> dry_;  // while a dry trace runs
};

namespace {

// The trace recording on this thread (nullptr when none, or while suspended).
thread_local Trace::Impl* t_trace = nullptr;

void install(Trace::Impl* impl) {
  t_trace = impl;
  ember::detail::t_tensor_tracer = impl;
  ember::detail::t_op_tracer = impl;
  ember::detail::t_variable_tracer = impl;
}

}  // namespace

bool is_tracing() { return t_trace != nullptr; }

bool is_traced(const Tensor& t) { return t_trace && t.defined() && t_trace->traced(t); }

SuspendTracing::SuspendTracing() : saved_(t_trace) { install(nullptr); }
SuspendTracing::~SuspendTracing() { install(static_cast<Trace::Impl*>(saved_)); }

InitScope::InitScope() {
  if (t_rewind_points.empty()) return;
  outer_ = t_rewind_points.front();
  inner_ = random::get_global_generator_state();
  random::set_global_generator_state(*outer_);
}
InitScope::~InitScope() {
  if (!outer_) return;
  *outer_ = random::get_global_generator_state();
  random::set_global_generator_state(inner_);
}

std::vector<Tensor> Trace::Impl::host_call(const std::string& name, const std::vector<Tensor>& inputs, HostFn fn,
                                           bool gradient_triples, bool run_now, bool widens_half_gradients,
                                           std::function<void()> undo) {
  std::vector<Tensor> outputs;
  if (run_now && detail::probing()) throw detail::ProbeStopped{};
  if (run_now) {
    SuspendTracing suspend;
    outputs = fn(inputs);
    if (undo && records_only()) add_host_undo(std::move(undo));
  }
  Node n;
  n.kind = NodeKind::HostCall;
  n.name = name;
  n.host = std::move(fn);
  n.gradient_triples = gradient_triples ? static_cast<int>(inputs.size() / 3) : 0;
  n.widens_half_gradients = widens_half_gradients;
  add_node(std::move(n), inputs, outputs);
  return outputs;
}

std::vector<Tensor> host_call(const std::string& name, const std::vector<Tensor>& inputs, HostFn fn,
                              std::function<void()> undo) {
  if (!t_trace) return fn(inputs);
  return t_trace->host_call(name, inputs, std::move(fn), false, true, false, std::move(undo));
}

void host_effect(const std::string& name, const std::vector<Tensor>& inputs,
                 std::function<void(std::span<const Tensor>)> fn, HostEffectOptions options) {
  if (!t_trace) return fn(inputs);
  HostFn host = [fn = std::move(fn)](std::span<const Tensor> in) {
    fn(in);
    return std::vector<Tensor>{};
  };
  t_trace->host_call(name, inputs, std::move(host), options.gradient_triples, /*run_now=*/!t_trace->records_only(),
                     options.widens_half_gradients);
  t_trace->mark_last_effect_only();
}

void update_variables(const std::string& name, OpId op, const std::vector<Variable>& variables,
                      const std::vector<Tensor>& inputs, const std::vector<OutputSpec>& outputs, const Attrs& attrs,
                      int gradient_triples) {
  EMBER_CHECK(!variables.empty() && outputs.size() == variables.size(), Internal)
      << "graph::update_variables '" << name << "': " << variables.size() << " variables and " << outputs.size()
      << " outputs; expected one output per variable, at least one";
  Node n;
  n.kind = NodeKind::UpdateVariables;
  n.name = name;
  n.op = op;
  n.attrs = attrs;
  n.specs = outputs;
  n.device = variables[0].device();
  n.updates = variables;
  n.gradient_triples = gradient_triples;
  Trace::Impl* const trace = t_trace;
  if (!trace || !trace->records_only()) {
    if (trace && detail::probing()) throw detail::ProbeStopped{};
    SuspendTracing suspend;
    run_variable_update(n, inputs);
  }
  if (trace) trace->add_node(std::move(n), inputs, {});
}

Trace::Trace(std::string function_name, bool dry) : impl_(std::make_unique<Impl>(std::move(function_name))) {
  EMBER_CHECK(!t_trace, Internal) << "ember::function '" << impl_->name() << "': a trace is already recording here";
  if (dry) impl_->start_dry();
  install(impl_.get());
}

Trace::~Trace() {
  if (t_trace == impl_.get()) install(nullptr);
  impl_->end_dry();  // a dry trace that threw
}

void Trace::add_input(const Tensor& t) { impl_->add_input(t); }

Graph Trace::finish(const std::vector<Tensor>& outputs) {
  install(nullptr);
  impl_->end_dry();
  return impl_->finish(outputs);
}

namespace detail {

namespace {
thread_local bool t_probing = false;
}  // namespace

ProbeScope::ProbeScope() : saved_(t_probing) { t_probing = true; }
ProbeScope::~ProbeScope() { t_probing = saved_; }
bool probing() { return t_probing; }

namespace {

// While a sub-trace records: it is the thread's tracer, the tapes recording outside it are paused, and on the
// way out (returning or throwing) its assignments are undone and the random generator is where it was.
class SubTraceScope {
 public:
  explicit SubTraceScope(Trace::Impl& child)
      : child_(child), parent_(child.parent()), generator_(random::get_global_generator_state()) {
    install(&child_);
    t_rewind_points.push_back(&generator_);
  }
  ~SubTraceScope() {
    install(nullptr);
    child_.undo_assignments();
    t_rewind_points.pop_back();
    random::set_global_generator_state(generator_);
    install(parent_);
  }
  SubTraceScope(const SubTraceScope&) = delete;
  SubTraceScope& operator=(const SubTraceScope&) = delete;

 private:
  Trace::Impl& child_;
  Trace::Impl* parent_;
  random::GeneratorState generator_;
  ember::detail::PauseTapes pause_;
};

}  // namespace

SubTrace trace_subgraph(const std::string& what, const std::vector<Tensor>& args,
                        const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                        const std::unordered_set<const void*>& read_inside) {
  Trace::Impl* parent = t_trace;
  EMBER_CHECK(parent, Internal) << what << ": traced outside a function";
  std::unordered_set<const void*> local = read_inside;
  const uint64_t first_id = Tensor::next_id();
  for (;;) {
    Trace::Impl child(parent->name(), parent, local);
    std::vector<Tensor> views;
    {
      SuspendTracing suspend;  // not a view the parent records
      for (const Tensor& a : args) views.push_back(a.view(a.shape()));
    }
    std::vector<Tensor> outputs;
    {
      SubTraceScope scope(child);
      for (const Tensor& v : views) child.add_input(v);
      outputs = fn(views);
    }
    // A variable read through the parent and then assigned: trace again, reading it inside.
    const size_t before = local.size();
    local.insert(child.retrace_reading().begin(), child.retrace_reading().end());
    if (local.size() != before) continue;
    for (const Tensor& t : outputs)
      EMBER_CHECK(t.defined(), InvalidArgument) << what << ": returned an undefined tensor";
    // The tapes outside watch what the parent read for the branch, as if it had read it itself.
    for (const Tensor& t : child.read_through_parent()) ember::detail::on_variable_read(t);
    SubTrace result;
    result.graph = child.finish(outputs);  // may capture more: a branch returning an outer tensor
    result.captures = child.captures();
    result.outputs = outputs;
    result.assigned = child.assigned();
    result.read_outside = child.captured_variables();
    parent->adopt_inner(child, result.graph, first_id);
    parent->adopt_assigned(child.assigned());
    return result;
  }
}

bool records_only() { return t_trace && t_trace->records_only(); }

void undo_at_trace_end(const Variable& v, const Tensor& previous) {
  EMBER_CHECK(t_trace, Internal) << "graph::detail::undo_at_trace_end: no trace records here";
  t_trace->add_undo(v, previous);
}

int record_node(Node node, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  EMBER_CHECK(t_trace, Internal) << "graph::detail::record_node: no trace records here";
  return t_trace->add_node(std::move(node), inputs, outputs);
}

uint64_t current_trace_id() { return t_trace ? t_trace->id() : 0; }

}  // namespace detail

}  // namespace ember::graph
