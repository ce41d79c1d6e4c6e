#include "framework/graph/trace.h"

#include <unordered_map>
#include <utility>

#include "framework/core/trace_hooks.h"

namespace ember::graph {

class Trace::Impl final : public detail::TensorTracer, public OpTracer, public VariableTracer {
 public:
  explicit Impl(std::string name) : name_(std::move(name)) {}

  // The value `t` holds: known from this trace, or captured now as a constant (a tensor made outside).
  int value_of(const Tensor& t) {
    auto it = ids_.find(t.id());
    if (it != ids_.end()) return it->second;
    int v = graph_.add_value(Value{t.shape(), t.dtype(), t.device(), -1, -1, t});
    ids_[t.id()] = v;
    return v;
  }
  int output_of(const Tensor& t, int node) {
    int v = graph_.add_value(Value{t.shape(), t.dtype(), t.device(), node, -1, Tensor()});
    ids_[t.id()] = v;
    return v;
  }
  bool traced(const Tensor& t) const {
    auto it = ids_.find(t.id());
    return it != ids_.end() && !graph_.values[static_cast<size_t>(it->second)].constant.defined();
  }
  int next_node() const { return static_cast<int>(graph_.nodes.size()); }

  void add_input(const Tensor& t) {
    const int index = static_cast<int>(graph_.inputs.size());
    int v = graph_.add_value(Value{t.shape(), t.dtype(), t.device(), -1, index, Tensor()});
    ids_[t.id()] = v;
    graph_.inputs.push_back(v);
  }

  // ---- TensorTracer
  void derived(const char* what, const Tensor& source, const Tensor& result,
               std::function<Tensor(const Tensor&)> remake) override {
    if (!ids_.contains(source.id())) return;  // made from a constant: captured as one if used
    Node n;
    n.kind = NodeKind::Derived;
    n.name = what;
    n.remake = std::move(remake);
    n.inputs = {value_of(source)};
    n.outputs = {output_of(result, next_node())};
    graph_.nodes.push_back(std::move(n));
  }
  void host_read(const Tensor& t, const char* what) override {
    if (!traced(t)) return;
    throw make_error<InvalidArgument>(
        what, ": a ", dtype_name(t.dtype()), " tensor of shape ", t.shape(), " is traced inside ember::function '",
        name_, "': its values exist only when the function runs, not while it is traced. Branch or loop on it "
        "with ops::cond / ops::while_loop, show it with ops::print, or return it and read it after the call (in a "
        "step that fit, evaluate or predict traces: compile with .run_eagerly = true to run it op by op)");
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
    for (const Tensor& t : inputs) n.inputs.push_back(value_of(t));
    const int node = next_node();
    for (const Tensor& t : outputs) n.outputs.push_back(output_of(t, node));
    graph_.nodes.push_back(std::move(n));
  }

  // ---- VariableTracer
  void created(const Variable& v, const Tensor& initial_value) override {
    EMBER_CHECK(!traced(initial_value), InvalidArgument)
        << "Variable '" << v.name() << "' is created inside ember::function '" << name_
        << "' from a value computed there; create variables before calling the function (build the model first), "
        << "or give the variable a value made outside it";
  }
  void read(const Variable& v, const Tensor& current) override {
    // Known from this trace (read before, or assigned here): the same value. A tensor captured by value
    // before is read again by reference from here on.
    if (traced(current)) return;
    Node n;
    n.kind = NodeKind::ReadVariable;
    n.variable = v;
    n.outputs = {output_of(current, next_node())};
    graph_.nodes.push_back(std::move(n));
  }
  void assigned(const Variable& v, const Tensor& source, const Tensor& stored) override {
    Node n;
    n.kind = NodeKind::AssignVariable;
    n.variable = v;
    n.inputs = {value_of(source)};
    ids_[stored.id()] = n.inputs[0];
    graph_.nodes.push_back(std::move(n));
  }

  // ---- host calls
  std::vector<Tensor> host_call(const std::string& name, const std::vector<Tensor>& inputs, HostFn fn);

  Graph finish(const std::vector<Tensor>& outputs) {
    for (const Tensor& t : outputs) {
      EMBER_CHECK(t.defined(), InvalidArgument)
          << "ember::function '" << name_ << "': returned an undefined tensor (a gradient that does not exist?)";
      graph_.outputs.push_back(value_of(t));
    }
    return std::move(graph_);
  }

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  Graph graph_;
  std::unordered_map<uint64_t, int> ids_;  // Tensor::id() -> value
};

namespace {

// The trace recording on this thread (nullptr when none, or while suspended).
thread_local Trace::Impl* t_trace = nullptr;

void install(Trace::Impl* impl) {
  t_trace = impl;
  detail::t_tensor_tracer = impl;
  ember::detail::t_op_tracer = impl;
  ember::detail::t_variable_tracer = impl;
}

}  // namespace

bool is_tracing() { return t_trace != nullptr; }

SuspendTracing::SuspendTracing() : saved_(t_trace) { install(nullptr); }
SuspendTracing::~SuspendTracing() { install(static_cast<Trace::Impl*>(saved_)); }

std::vector<Tensor> Trace::Impl::host_call(const std::string& name, const std::vector<Tensor>& inputs, HostFn fn) {
  Node n;
  n.kind = NodeKind::HostCall;
  n.name = name;
  for (const Tensor& t : inputs) n.inputs.push_back(t.defined() ? value_of(t) : -1);
  std::vector<Tensor> outputs;
  {
    SuspendTracing suspend;
    outputs = fn(inputs);
  }
  const int node = next_node();
  for (const Tensor& t : outputs) n.outputs.push_back(t.defined() ? output_of(t, node) : -1);
  n.host = std::move(fn);
  graph_.nodes.push_back(std::move(n));
  return outputs;
}

std::vector<Tensor> host_call(const std::string& name, const std::vector<Tensor>& inputs, HostFn fn) {
  if (!t_trace) return fn(inputs);
  return t_trace->host_call(name, inputs, std::move(fn));
}

Trace::Trace(std::string function_name) : impl_(std::make_unique<Impl>(std::move(function_name))) {
  EMBER_CHECK(!t_trace, Internal) << "ember::function '" << impl_->name() << "': a trace is already recording here";
  install(impl_.get());
}

Trace::~Trace() {
  if (t_trace == impl_.get()) install(nullptr);
}

void Trace::add_input(const Tensor& t) { impl_->add_input(t); }

Graph Trace::finish(const std::vector<Tensor>& outputs) {
  install(nullptr);
  return impl_->finish(outputs);
}

}  // namespace ember::graph
