#include "framework/graph/executor.h"

#include <algorithm>
#include <utility>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/device_graph.h"
#include "framework/core/profiler.h"
#include "framework/core/trace_hooks.h"
#include "framework/ops/creation.h"
#include "framework/ops/direct_kernel.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/index_checks.h"
#include "framework/ops/random.h"

namespace ember::graph {

namespace {

// In Executable::direct_ids_, on an input's value id: the node reads the value for the last time.
constexpr int32_t kMovedInput = 1 << 30;

// The CPU kernel a replay may call for op or UpdateVariables node `n` without dispatch: what execute checks on
// every call, checked once (the node and its operands on the CPU, their count, a kernel for the dtype it is
// chosen by). nullptr where run_op_into dispatches it: another kind or device, a random op, a cached cast.
KernelFn direct_kernel(const Graph& g, const Node& n) {
  const bool update = n.kind == NodeKind::UpdateVariables;
  if ((n.kind != NodeKind::Op && !update) || n.cast_cache || std::holds_alternative<RandomAttrs>(n.attrs) ||
      !n.device.is_cpu())
    return nullptr;
  // An update's operands are the variables' buffers, then its inputs.
  const size_t operands = n.updates.size() + n.inputs.size();
  const int arity = op_info(n.op).arity;
  if (arity >= 0 && static_cast<size_t>(arity) != operands) return nullptr;
  for (const Variable& v : n.updates)
    if (!v.value().device().is_cpu()) return nullptr;
  for (int v : n.inputs)
    if (v >= 0 ? !g.values[static_cast<size_t>(v)].device.is_cpu() : !update || !takes_undefined_inputs(n.op))
      return nullptr;
  // The dtype execute chooses the kernel by: the first operand's, or the first output's.
  DType key;
  if (!n.updates.empty())
    key = n.updates[0].value().dtype();
  else if (!n.inputs.empty() && n.inputs[0] >= 0)
    key = g.values[static_cast<size_t>(n.inputs[0])].dtype;
  else if (n.inputs.empty() && !n.specs.empty())
    key = n.specs[0].dtype;
  else
    return nullptr;
  return find_kernel(n.op, DeviceType::CPU, key);
}

}  // namespace

Executable::Executable(Graph graph, ExecutableOptions options) : graph_(std::move(graph)) {
  const size_t nv = graph_.values.size();
  std::vector<int> last_use(nv, -1);
  for (size_t k = 0; k < graph_.nodes.size(); ++k)
    for (int v : graph_.nodes[k].inputs)
      if (v >= 0) last_use[static_cast<size_t>(v)] = static_cast<int>(k);
  // Values never read are dropped right after the node that makes them.
  for (size_t k = 0; k < graph_.nodes.size(); ++k)
    for (int v : graph_.nodes[k].outputs)
      if (v >= 0 && last_use[static_cast<size_t>(v)] < 0) last_use[static_cast<size_t>(v)] = static_cast<int>(k);
  for (int v : graph_.outputs) last_use[static_cast<size_t>(v)] = -1;  // the caller's
  release_after_.assign(graph_.nodes.size(), {});
  for (size_t v = 0; v < nv; ++v)
    if (last_use[v] >= 0) release_after_[static_cast<size_t>(last_use[v])].push_back(static_cast<int>(v));
  for (size_t v = 0; v < nv; ++v)
    if (graph_.values[v].constant.defined()) constants_.push_back(static_cast<int>(v));
  keep_tape_.assign(graph_.nodes.size(), 0);
  drop_tape_after_.assign(graph_.nodes.size(), -1);
  std::vector<int> last_grad(graph_.nodes.size(), -1);
  for (size_t k = 0; k < graph_.nodes.size(); ++k) {
    const Node& n = graph_.nodes[k];
    if (n.kind != NodeKind::ControlFlowGrad) continue;
    EMBER_CHECK(n.forward >= 0 && n.forward < static_cast<int>(k), Internal)
        << "graph: control-flow gradient node " << k << " names node " << n.forward << " as its forward node";
    keep_tape_[static_cast<size_t>(n.forward)] = 1;
    last_grad[static_cast<size_t>(n.forward)] = static_cast<int>(k);
  }
  for (size_t f = 0; f < last_grad.size(); ++f)
    if (last_grad[f] >= 0) drop_tape_after_[static_cast<size_t>(last_grad[f])] = static_cast<int>(f);
  if (options.device_graphs) init_device_segments(options);
  plan_ = plan_memory(graph_);
  EMBER_CHECK(nv < static_cast<size_t>(kMovedInput), Internal) << "graph: " << nv << " values, more than a replay numbers";
  direct_.resize(graph_.nodes.size());
  in_place_specs_.resize(graph_.nodes.size());
  for (size_t k = 0; k < graph_.nodes.size(); ++k) {
    const Node& n = graph_.nodes[k];
    DirectNode& d = direct_[k];
    d.kernel = direct_kernel(graph_, n);
    if (n.kind != NodeKind::Op) continue;
    if (n.in_place_input >= 0) {
      in_place_specs_[k] = n.specs.at(0);
      in_place_specs_[k].alias_input = n.in_place_input;
    }
    if (!d.kernel) continue;
    // A value this node reads for the last time moves from the value table into its inputs (at its last place
    // among them), rather than being copied there and released after: no reference count taken and dropped.
    const std::vector<int>& released = release_after_[k];
    auto among = [](const auto& ids, auto begin, int v) { return std::find(begin, ids.end(), v) != ids.end(); };
    d.at = static_cast<uint32_t>(direct_ids_.size());
    d.inputs = static_cast<uint32_t>(n.inputs.size());
    d.outputs = static_cast<uint32_t>(n.outputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int v = n.inputs[i];
      const bool last = among(released, released.begin(), v) && !among(n.inputs, n.inputs.begin() + i + 1, v);
      direct_ids_.push_back(last ? v | kMovedInput : v);
    }
    direct_ids_.insert(direct_ids_.end(), n.outputs.begin(), n.outputs.end());
    for (int v : released)
      if (!among(n.inputs, n.inputs.begin(), v)) {
        direct_ids_.push_back(v);
        ++d.releases;
      }
  }
}

std::vector<Tensor> ControlFlowTape::gradients(const std::vector<Tensor>& output_gradients) {
  std::vector<Tensor> targets, seeds, watched;
  std::vector<size_t> watched_index;
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (!is_floating(outputs[j].dtype())) continue;
    targets.push_back(outputs[j]);
    seeds.push_back(j < output_gradients.size() && output_gradients[j].defined() ? output_gradients[j]
                                                                                : ops::zeros_like(outputs[j]));
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].defined()) continue;
    watched.push_back(sources[i]);
    watched_index.push_back(i);
  }
  std::vector<Tensor> result(sources.size());
  if (watched.empty()) return result;
  std::vector<Tensor> grads;
  if (targets.empty()) {
    for (const Tensor& s : watched) grads.push_back(ops::zeros_like(s));
  } else {
    grads = tape->gradient(targets, watched,
                           {.output_gradients = seeds, .unconnected_gradients = UnconnectedGradients::Zero});
  }
  for (size_t k = 0; k < watched.size(); ++k) result[watched_index[k]] = grads[k];
  return result;
}

std::vector<Tensor> run_control_flow(const Node& n, std::span<const Tensor> inputs, ControlFlowTape* tape) {
  std::vector<Tensor> in(inputs.begin(), inputs.end());
  if (tape) {
    // Each floating input as a view of its own: one tensor passed twice is two sources, each with its part.
    tape->tape = std::make_unique<GradientTape>(TapeOptions{.persistent = true, .watch_accessed_variables = false});
    tape->sources.assign(in.size(), Tensor());
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].defined() || !is_floating(in[i].dtype())) continue;
      in[i] = in[i].view(in[i].shape());
      tape->tape->watch(in[i]);
      tape->sources[i] = in[i];
    }
  }
  // The predicates' types (0-d bool) were checked when the node was traced. A tape sees the ops as traced.
  const auto& subgraphs = tape || any_tape_recording() ? n.tape_subgraphs : n.subgraphs;
  std::vector<Tensor> out;
  if (n.kind == NodeKind::Cond) {
    const bool taken = in[0].item<bool>();
    out = subgraphs[taken ? 0 : 1]->run(std::span<const Tensor>(in).subspan(1));
  } else {
    EMBER_CHECK(n.kind == NodeKind::While, Internal) << "run_control_flow: not a Cond or While node";
    const size_t nv = static_cast<size_t>(n.num_loop_vars);
    std::vector<Tensor> args = in;
    for (int64_t i = 0; n.maximum_iterations < 0 || i < n.maximum_iterations; ++i) {
      if (!subgraphs[0]->run(args)[0].item<bool>()) break;
      std::vector<Tensor> next = subgraphs[1]->run(args);
      std::move(next.begin(), next.end(), args.begin());
    }
    out.assign(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(nv));
  }
  if (tape) {
    tape->outputs = out;
    tape->paused.emplace(*tape->tape);
  }
  return out;
}

void run_variable_update(const Node& n, std::span<const Tensor> inputs, KernelFn kernel) {
  std::vector<Tensor> operands;
  operands.reserve(n.updates.size() + inputs.size());
  for (const Variable& updated : n.updates) {
    Variable v = updated;
    Tensor* buffer = v.exclusive_value();
    if (!buffer) {
      // Another tensor holds the buffer (a value a caller kept): it keeps the old values. A device graph's
      // capture would record the copy without making it: the capture fails, and the update runs op by op.
      EMBER_CHECK(!device_graph::current(), FailedPrecondition)
          << n.name << ": variable '" << v.name() << "' is shared with another tensor; its copy cannot be captured";
      v.assign(v.value().clone());
      buffer = v.exclusive_value();
    }
    EMBER_CHECK(buffer, Internal) << n.name << ": variable '" << v.name() << "' is shared even after a copy";
    operands.push_back(*buffer);
  }
  operands.insert(operands.end(), inputs.begin(), inputs.end());
  std::vector<Tensor> outputs(n.specs.size());
  if (kernel)
    run_kernel_into(kernel, n.op, operands, n.specs, outputs, n.attrs);
  else
    run_op_into(n.op, operands, n.specs, outputs, n.attrs, n.device);
}

void Executable::RunState::clear() {
  std::fill(vals.begin(), vals.end(), Tensor());
  in.clear();
  out.clear();
  tapes.clear();
  held.clear();
}

std::unique_ptr<Executable::RunState> Executable::take_state() const {
  {
    std::lock_guard<std::mutex> lock(spare_->mu);
    if (!spare_->states.empty()) {
      std::unique_ptr<RunState> st = std::move(spare_->states.back());
      spare_->states.pop_back();
      return st;
    }
  }
  auto st = std::make_unique<RunState>();
  st->vals.resize(graph_.values.size());
  return st;
}

void Executable::give_back_state(std::unique_ptr<RunState> st) const {
  st->clear();
  std::lock_guard<std::mutex> lock(spare_->mu);
  spare_->states.push_back(std::move(st));
}

std::vector<Tensor> Executable::run(std::span<const Tensor> inputs) const {
  std::unique_ptr<RunState> state = take_state();
  RunState& st = *state;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) st.vals[static_cast<size_t>(graph_.inputs[i])] = inputs[i];
  for (int v : constants_) st.vals[static_cast<size_t>(v)] = graph_.values[static_cast<size_t>(v)].constant;
  st.use_plan = may_use_plan();
  st.direct = may_run_direct();
  // A concrete function checks its inputs' types, not their devices: the kernels were resolved for the traced ones.
  for (size_t i = 0; i < graph_.inputs.size() && st.direct; ++i)
    st.direct = inputs[i].device() == graph_.values[static_cast<size_t>(graph_.inputs[i])].device;
  if (st.use_plan && st.arenas.empty()) {
    for (const MemoryPlan::Arena& a : plan_.arenas)
      st.arenas.push_back(Tensor::empty({a.elements}, a.dtype, Device::cpu()));
    st.planned.resize(graph_.values.size());
    for (size_t v = 0; v < graph_.values.size(); ++v) {
      const MemoryPlan::Slot& slot = plan_.slots[v];
      if (slot.arena < 0) continue;
      const Shape& shape = graph_.values[v].shape;
      st.planned[v] = st.arenas[static_cast<size_t>(slot.arena)]
                          .slice_rows(slot.element, slot.element + shape.num_elements())
                          .view(shape);
    }
  }
  std::unique_lock<std::mutex> graphs = lock_device_segments();
  const size_t n = graph_.nodes.size();
  for (size_t k = 0; k < n;) {
    const int s = graphs.owns_lock() ? segment_at(k) : -1;
    if (s >= 0) {
      k = run_segment(static_cast<size_t>(s), st);
    } else {
      run_node(k, st, /*capturing=*/false);
      ++k;
    }
  }
  std::vector<Tensor> result;
  result.reserve(graph_.outputs.size());
  // A graph's buffers are rewritten by its next launch: the caller gets copies.
  for (int v : graph_.outputs) result.push_back(st.from_graph(st.vals[static_cast<size_t>(v)]));
  give_back_state(std::move(state));
  return result;
}

namespace {
thread_local bool t_effects_off = false;
}  // namespace

EffectsOff::EffectsOff(bool on) : previous_(t_effects_off) { t_effects_off = previous_ || on; }
EffectsOff::~EffectsOff() { t_effects_off = previous_; }

bool Executable::may_use_plan() const {
  // Op hooks see the planned values too (the tapes' hook is always there); like any op's record, what they
  // see is the op's, not to be kept past the call.
  return plan_.stats.planned_values > 0 && !any_tape_recording() && !profiler::detail::recording() &&
         !ember::detail::t_tensor_tracer && !ember::detail::t_op_tracer;
}

bool Executable::may_run_direct() const {
  // The tape's hook, the one that does not need every op, acts only while a tape records.
  return !ember::detail::has_op_hooks() && !any_tape_recording() && !profiler::detail::recording() &&
         !ember::detail::t_tensor_tracer && !ember::detail::t_op_tracer;
}

void Executable::run_direct_op(size_t k, RunState& st) const {
  // run_node's Op case for a node whose kernel was resolved (direct_kernel): never a cached cast or a random op;
  // no tape records, so an op that may write into its input always does.
  const Node& n = graph_.nodes[k];
  const DirectNode& d = direct_[k];
  const int32_t* const ids = direct_ids_.data() + d.at;
  const int32_t* const outputs = ids + d.inputs;
  std::vector<Tensor>& vals = st.vals;
  for (uint32_t i = 0; i < d.inputs; ++i) {
    Tensor& t = vals[static_cast<size_t>(ids[i] & ~kMovedInput)];
    if (ids[i] & kMovedInput)
      st.in.push_back(std::move(t));
    else
      st.in.push_back(t);
  }
  st.out.assign(d.outputs, Tensor());
  if (st.use_plan)
    for (uint32_t i = 0; i < d.outputs; ++i)
      if (outputs[i] >= 0) st.out[i] = st.planned[static_cast<size_t>(outputs[i])];  // undefined: not planned
  if (n.in_place_input >= 0) {
    // The value table's reference goes first, so that the buffer's only holders are this node's.
    vals[static_cast<size_t>(ids[n.in_place_input] & ~kMovedInput)] = Tensor();
    run_kernel_into(d.kernel, n.op, st.in, std::span<const OutputSpec>(&in_place_specs_[k], 1), st.out, n.attrs);
  } else {
    ops::detail::check_indices_of(n.op, st.in, n.attrs);  // the front end's check, on this call's indices
    run_kernel_into(d.kernel, n.op, st.in, n.specs, st.out, n.attrs);
  }
  for (uint32_t i = 0; i < d.outputs; ++i)
    if (outputs[i] >= 0) vals[static_cast<size_t>(outputs[i])] = std::move(st.out[i]);
  st.in.clear();  // before the releases: a buffer's last holders go with them
  for (uint32_t i = 0; i < d.releases; ++i) vals[static_cast<size_t>(outputs[d.outputs + i])] = Tensor();
}

void Executable::run_nodes(size_t begin, size_t end, RunState& st, bool capturing) const {
  for (size_t k = begin; k < end; ++k) run_node(k, st, capturing);
}

void Executable::run_node(size_t k, RunState& st, bool capturing) const {
  try {
    run_node_body(k, st, capturing);
  } catch (const Error&) {
    const Node& n = graph_.nodes[k];
    if (!n.error_context) throw;
    ember::detail::rethrow_in_context(n.error_context.get(), n.error_base);  // the layer's or loss's context
  }
}

void Executable::run_node_body(size_t k, RunState& st, bool capturing) const {
  if (st.direct && direct_[k].kernel && graph_.nodes[k].kind == NodeKind::Op) return run_direct_op(k, st);
  std::vector<Tensor>& vals = st.vals;
  std::vector<Tensor>& in = st.in;
  std::vector<Tensor>& out = st.out;
  const Node& n = graph_.nodes[k];
  for (int v : n.inputs) in.push_back(v >= 0 ? vals[static_cast<size_t>(v)] : Tensor());
  switch (n.kind) {
    case NodeKind::Op: {
      out.assign(n.outputs.size(), Tensor());
      if (st.use_plan)
        for (size_t i = 0; i < n.outputs.size(); ++i)
          if (n.outputs[i] >= 0 && plan_.slots[static_cast<size_t>(n.outputs[i])].arena >= 0)
            out[i] = st.planned[static_cast<size_t>(n.outputs[i])];
      // A captured graph casts on every launch: a cached cast would be read at its address after the cache
      // moved on.
      if (n.cast_cache && !capturing && !any_tape_records(in)) {
        std::lock_guard<std::mutex> lock(n.cast_cache->mu);
        if (!n.cast_cache->value.defined() || n.cast_cache->version != n.cast_of.version()) {
          run_op_into(n.op, in, n.specs, out, n.attrs, n.device);
          n.cast_cache->value = out[0];
          n.cast_cache->version = n.cast_of.version();
        }
        out[0] = n.cast_cache->value;
      } else if (const auto* random = std::get_if<RandomAttrs>(&n.attrs)) {
        RandomAttrs fresh = *random;
        random::detail::redraw(fresh);
        run_op_into(n.op, in, n.specs, out, Attrs(std::move(fresh)), n.device);
      } else if (n.in_place_input >= 0 && !any_tape_records(in)) {
        // The value table's reference goes first, so that the buffer's only holders are this node's.
        vals[static_cast<size_t>(n.inputs[static_cast<size_t>(n.in_place_input)])] = Tensor();
        run_op_into(n.op, in, std::span<const OutputSpec>(&in_place_specs_[k], 1), out, n.attrs, n.device);
      } else {
        ops::detail::check_indices_of(n.op, in, n.attrs);  // the front end's check, on this call's indices
        run_op_into(n.op, in, n.specs, out, n.attrs, n.device);
      }
      break;
    }
    case NodeKind::ReadVariable:
      // Moved in, not copied from a list: no reference count taken and dropped.
      out.clear();
      out.push_back(n.variable.read_value());
      break;
    case NodeKind::AssignVariable: {
      Variable v = n.variable;
      // Not a graph's buffer, which its next launch rewrites.
      v.assign(st.from_graph(in[0]));
      out.clear();
      break;
    }
    case NodeKind::UpdateVariables:
      run_variable_update(n, in, st.direct ? direct_[k].kernel : nullptr);
      out.clear();
      break;
    case NodeKind::Derived:
      out.clear();
      out.push_back(n.remake(in[0]));
      break;
    case NodeKind::Cond:
    case NodeKind::While: {
      ControlFlowTape* tape = nullptr;
      if (keep_tape_[k]) {
        if (st.tapes.empty()) st.tapes.resize(graph_.nodes.size());
        st.tapes[k] = std::make_unique<ControlFlowTape>();
        tape = st.tapes[k].get();
      }
      out = run_control_flow(n, in, tape);
      break;
    }
    case NodeKind::ControlFlowGrad:
      out = st.tapes[static_cast<size_t>(n.forward)]->gradients(in);
      if (drop_tape_after_[k] >= 0) st.tapes[static_cast<size_t>(drop_tape_after_[k])].reset();
      break;
    case NodeKind::Fused:
      // A tape recording its inputs records each op of the chain, for their gradients.
      out = ops::run_fused_elementwise(*n.fused, in, /*op_by_op=*/any_tape_records(in));
      break;
    case NodeKind::HostCall:
      if (n.effect_only && t_effects_off) {
        out.clear();
        break;
      }
      out = n.host(in);
      EMBER_CHECK(out.size() == n.outputs.size(), Internal)
          << "host_call '" << n.name << "': returned " << out.size() << " tensors on replay, " << n.outputs.size()
          << " while traced";
      break;
  }
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] >= 0) vals[static_cast<size_t>(n.outputs[i])] = std::move(out[i]);
  in.clear();  // before the releases: a buffer's last holders go with them
  for (int v : release_after_[k]) vals[static_cast<size_t>(v)] = Tensor();
}

}  // namespace ember::graph
