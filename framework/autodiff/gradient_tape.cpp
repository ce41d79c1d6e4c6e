#include "framework/autodiff/gradient_tape.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "framework/autodiff/grad_registry.h"
#include "framework/ops/creation.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"

namespace ember {

using CustomBackward = detail::CustomBackward;

// One recorded op (outside the anonymous namespace: GradientTape::Impl, a member of a public class, holds
// them). Non-differentiable ops keep no tensors: they are recorded only so that what they
// produce stays tracked and a gradient asked through them is an error rather than silently zero.
// Recording is on every op's path, so a node costs few allocations: one vector of ids, and the tensors or
// the output dtypes, whichever the node needs.
struct TapeNode {
  OpId op;
  Attrs attrs;
  bool differentiable;
  std::vector<Tensor> inputs, outputs;  // differentiable nodes only
  std::vector<uint64_t> ids;            // the inputs' ids, then the outputs'
  size_t num_inputs;
  std::vector<DType> output_dtypes;  // non-differentiable nodes only: the error of a gradient asked through them
  CustomBackward custom;             // custom_gradient's backward (op is then meaningless)

  std::span<const uint64_t> input_ids() const { return {ids.data(), num_inputs}; }
  std::span<const uint64_t> output_ids() const { return {ids.data() + num_inputs, ids.size() - num_inputs}; }
};

namespace {

thread_local std::vector<GradientTape::Impl*> t_tapes;
thread_local int t_no_record = 0;
thread_local int t_backward = 0;

void record_hook(const OpRecord& r);

void install_hook() {
  static std::once_flag once;
  // Not one that needs every op: it records only while a tape does, which any_tape_recording() tells.
  std::call_once(once, [] { add_op_hook(&record_hook, /*needs_every_op=*/false); });
}

}  // namespace

struct GradientTape::Impl {
  TapeOptions options;
  std::vector<TapeNode> nodes;
  std::unordered_set<uint64_t> tracked;  // watched tensors and everything recorded ops produced
  int paused = 0;
  bool used = false;

  bool recording() const { return paused == 0 && !used && t_no_record == 0; }

  bool any_tracked(std::span<const Tensor> inputs) const {
    for (const Tensor& t : inputs)  // an optional input may be undefined (apply_adam_multi's unused factors)
      if (t.defined() && tracked.count(t.id())) return true;
    return false;
  }

  void record(OpId op, const Attrs& attrs, bool differentiable, std::span<const Tensor> inputs,
              std::span<const Tensor> outputs, CustomBackward custom = {}) {
    TapeNode n{op, differentiable ? attrs : Attrs{}, differentiable, {}, {}, {}, inputs.size(), {}, std::move(custom)};
    n.ids.reserve(inputs.size() + outputs.size());
    for (const Tensor& t : inputs) n.ids.push_back(t.defined() ? t.id() : 0);  // ids start at 1
    for (const Tensor& t : outputs) {
      n.ids.push_back(t.id());
      tracked.insert(t.id());
    }
    if (differentiable) {
      n.inputs.assign(inputs.begin(), inputs.end());
      n.outputs.assign(outputs.begin(), outputs.end());
    } else {
      for (const Tensor& t : outputs) n.output_dtypes.push_back(t.dtype());
    }
    nodes.push_back(std::move(n));
  }
};

namespace {

void record_hook(const OpRecord& r) {
  if (t_tapes.empty() || t_no_record) return;
  const bool differentiable = op_info(r.op).differentiable;
  for (GradientTape::Impl* tape : t_tapes)
    if (tape->recording() && tape->any_tracked(r.inputs)) tape->record(r.op, r.attrs, differentiable, r.inputs, r.outputs);
}

void accumulate(std::unordered_map<uint64_t, Tensor>& grads, uint64_t id, const Tensor& g) {
  auto [it, inserted] = grads.try_emplace(id, g);
  if (!inserted) it->second = ops::add(it->second, g);
}

struct BackwardScope {
  GradientTape::Impl& tape;
  explicit BackwardScope(GradientTape::Impl& t) : tape(t) {
    ++tape.paused;
    ++t_backward;
  }
  ~BackwardScope() {
    --tape.paused;
    --t_backward;
  }
};

void check_backward_arguments(const GradientTape::Impl& tape, const std::vector<Tensor>& targets,
                              const std::vector<Tensor>& sources, const GradientOptions& options) {
  EMBER_CHECK(!tape.used, FailedPrecondition)
      << "GradientTape.gradient: a non-persistent tape can only compute gradients once; create it with "
         "{.persistent = true} to call gradient several times";
  EMBER_CHECK(options.output_gradients.empty() || options.output_gradients.size() == targets.size(), InvalidArgument)
      << "GradientTape.gradient: got " << options.output_gradients.size() << " output_gradients for "
      << targets.size() << " target(s)";
  for (const Tensor& s : sources) EMBER_CHECK(s.defined(), InvalidArgument) << "GradientTape.gradient: a source is undefined";
}

// One backward pass over a tape, run_backward's steps: the nodes on a path from a source and the gradients
// accumulated so far by tensor id.
class BackwardPass {
 public:
  BackwardPass(GradientTape::Impl& tape, const std::vector<Tensor>& sources) : tape_(tape) {
    mark_reachable(sources);
    for (const Tensor& s : sources) source_ids_.insert(s.id());
  }

  // The targets' gradients: output_gradients, or ones.
  void seed(const std::vector<Tensor>& targets, const GradientOptions& options) {
    for (size_t k = 0; k < targets.size(); ++k) {
      const Tensor& t = targets[k];
      EMBER_CHECK(t.defined(), InvalidArgument) << "GradientTape.gradient: a target is undefined";
      Tensor seed = options.output_gradients.empty() ? ops::ones_like(t) : options.output_gradients[k];
      EMBER_CHECK(seed.shape() == t.shape() && seed.dtype() == t.dtype(), InvalidArgument)
          << "GradientTape.gradient: output_gradients[" << k << "] is " << seed.dtype() << " " << seed.shape()
          << " but target " << k << " is " << t.dtype() << " " << t.shape();
      accumulate(grads_, t.id(), seed);
    }
  }

  // The tape's nodes last to first, each needed one turning its outputs' gradients into its inputs'; with
  // options.on_gradient_ready, each source's gradient is handed out once its last reader's backward has run.
  void run(const std::vector<Tensor>& sources, const GradientOptions& options) {
    // Per node: the sources whose earliest reader it is (their gradient is final once its backward has run).
    std::unordered_map<size_t, std::vector<size_t>> final_after;
    std::vector<size_t> unread;
    if (options.on_gradient_ready) {
      std::unordered_map<uint64_t, std::vector<size_t>> unseen;  // source id -> its indices, until a reader
      for (size_t k = 0; k < sources.size(); ++k) unseen[sources[k].id()].push_back(k);
      for (size_t i = 0; i < tape_.nodes.size() && !unseen.empty(); ++i) {
        if (!needed_[i]) continue;
        for (uint64_t id : tape_.nodes[i].input_ids())
          if (auto it = unseen.find(id); it != unseen.end()) {
            auto& ks = final_after[i];
            ks.insert(ks.end(), it->second.begin(), it->second.end());
            unseen.erase(it);
          }
      }
      for (const auto& [id, ks] : unseen) unread.insert(unread.end(), ks.begin(), ks.end());
      std::sort(unread.begin(), unread.end());
    }
    for (size_t i = tape_.nodes.size(); i-- > 0;) {
      if (!needed_[i]) continue;
      backward(tape_.nodes[i]);
      if (options.on_backward_op) options.on_backward_op();
      if (auto it = final_after.find(i); it != final_after.end())
        for (size_t k : it->second) options.on_gradient_ready(k, result(sources[k], options));
    }
    for (size_t k : unread) options.on_gradient_ready(k, result(sources[k], options));
  }

  // Each source's gradient: its sum, zeros or none (options.unconnected_gradients).
  std::vector<Tensor> results(const std::vector<Tensor>& sources, const GradientOptions& options) const {
    std::vector<Tensor> out(sources.size());
    for (size_t k = 0; k < sources.size(); ++k) out[k] = result(sources[k], options);
    return out;
  }

 private:
  // Only nodes on a path from a source can contribute: mark them going forward.
  void mark_reachable(const std::vector<Tensor>& sources) {
    for (const Tensor& s : sources) reach_.insert(s.id());
    needed_.assign(tape_.nodes.size(), 0);
    for (size_t i = 0; i < tape_.nodes.size(); ++i) {
      const TapeNode& n = tape_.nodes[i];
      const auto in_ids = n.input_ids(), out_ids = n.output_ids();
      if (std::none_of(in_ids.begin(), in_ids.end(), [&](uint64_t id) { return reach_.count(id); })) continue;
      needed_[i] = 1;
      reach_.insert(out_ids.begin(), out_ids.end());
    }
  }

  // One node's backward: its outputs' gradients into its inputs'.
  void backward(TapeNode& n) {
    std::vector<Tensor> out_grads;
    if (!gather_output_gradients(n, out_grads)) return;
    if (!n.differentiable) {
      check_no_gradient_through(n);
      return;  // floor, round, sign...: zero almost everywhere, no gradient (TF returns None)
    }
    for (size_t j = 0; j < out_grads.size(); ++j)
      if (!out_grads[j].defined()) out_grads[j] = ops::zeros_like(n.outputs[j]);
    add_input_gradients(n, n.custom ? custom_gradients(n, out_grads) : formula_gradients(n, out_grads));
    release(n);
  }

  // A source's gradient: its sum, zeros or none (options.unconnected_gradients).
  Tensor result(const Tensor& source, const GradientOptions& options) const {
    if (auto it = grads_.find(source.id()); it != grads_.end()) return it->second;
    if (options.unconnected_gradients == UnconnectedGradients::Zero) return ops::zeros_like(source);
    return Tensor();
  }

  // The gradients that reached n's outputs (undefined where none did); false when none did.
  bool gather_output_gradients(const TapeNode& n, std::vector<Tensor>& out_grads) {
    const auto out_ids = n.output_ids();
    out_grads.assign(out_ids.size(), Tensor());
    bool any = false;
    for (size_t j = 0; j < out_ids.size(); ++j) {
      auto it = grads_.find(out_ids[j]);
      if (it != grads_.end()) {
        out_grads[j] = it->second;
        any = true;
      }
    }
    return any;
  }

  static void check_no_gradient_through(const TapeNode& n) {
    for (size_t j = 0; j < n.output_dtypes.size(); ++j)
      EMBER_CHECK(is_floating(n.output_dtypes[j]), InvalidArgument)
          << "GradientTape.gradient: a gradient was asked through op '" << op_name(n.op) << "', whose output is "
          << n.output_dtypes[j] << ": integer and bool tensors carry no gradient";
  }

  static std::vector<Tensor> custom_gradients(const TapeNode& n, const std::vector<Tensor>& out_grads) {
    std::vector<Tensor> in_grads = n.custom(out_grads);
    EMBER_CHECK(in_grads.size() == n.num_inputs, InvalidArgument)
        << "custom_gradient: backward returned " << in_grads.size() << " gradient(s) for " << n.num_inputs
        << " input(s)";
    return in_grads;
  }

  // The op's registered formula.
  std::vector<Tensor> formula_gradients(const TapeNode& n, const std::vector<Tensor>& out_grads) {
    const auto in_ids = n.input_ids();
    GradFn fn = gradient_function(n.op);
    EMBER_CHECK(fn, Unimplemented) << "GradientTape.gradient: op '" << op_name(n.op) << "' has no gradient formula";
    wanted_.resize(in_ids.size());
    for (size_t j = 0; j < wanted_.size(); ++j) wanted_[j] = reach_.count(in_ids[j]) ? 1 : 0;
    return fn(GradContext{n.op, n.attrs, n.inputs, n.outputs, out_grads, wanted_});
  }

  void add_input_gradients(const TapeNode& n, const std::vector<Tensor>& in_grads) {
    const auto in_ids = n.input_ids();
    for (size_t j = 0; j < in_ids.size() && j < in_grads.size(); ++j) {
      if (!in_grads[j].defined() || !reach_.count(in_ids[j])) continue;
      EMBER_CHECK(in_grads[j].shape() == n.inputs[j].shape(), Internal)
          << "gradient of op '" << (n.custom ? "custom_gradient" : op_name(n.op)) << "' for input " << j
          << " has shape " << in_grads[j].shape() << ", expected " << n.inputs[j].shape();
      accumulate(grads_, in_ids[j], in_grads[j]);
    }
  }

  // Every consumer of n's outputs comes later on the tape, so their gradients are complete: drop those not
  // asked for, and their buffers go back to the allocator (still in cache) for the next node's gradients
  // instead of staying alive to the end of the pass.
  void release(TapeNode& n) {
    for (uint64_t id : n.output_ids())
      if (!source_ids_.count(id)) grads_.erase(id);
    if (!tape_.options.persistent) {
      n.inputs.clear();
      n.outputs.clear();
      n.custom = nullptr;
    }
  }

  GradientTape::Impl& tape_;
  std::unordered_set<uint64_t> reach_;  // sources and what ops produced from them
  std::vector<char> needed_;            // per node: on a path from a source
  std::unordered_set<uint64_t> source_ids_;
  std::unordered_map<uint64_t, Tensor> grads_;
  std::vector<char> wanted_;  // per input of the node at hand: does it lead to a source (reused across nodes)
};

}  // namespace

GradientTape::GradientTape(TapeOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  install_hook();
  t_tapes.push_back(impl_.get());
}

GradientTape::~GradientTape() { std::erase(t_tapes, impl_.get()); }

void GradientTape::watch(const Tensor& t) {
  EMBER_CHECK(t.defined(), InvalidArgument) << "GradientTape.watch: the tensor is undefined";
  impl_->tracked.insert(t.id());
}

void GradientTape::watch(const Variable& v) { watch(v.value()); }

GradientTape::Pause::Pause(GradientTape& tape) : tape_(tape) { ++tape_.impl_->paused; }
GradientTape::Pause::~Pause() { --tape_.impl_->paused; }

NoRecordScope::NoRecordScope() { ++t_no_record; }
NoRecordScope::~NoRecordScope() { --t_no_record; }

bool in_backward_pass() { return t_backward > 0; }

bool any_tape_recording() {
  if (t_no_record) return false;
  for (const GradientTape::Impl* tape : t_tapes)
    if (tape->recording()) return true;
  return false;
}

bool any_tape_records(std::span<const Tensor> inputs) {
  if (t_no_record) return false;
  for (const GradientTape::Impl* tape : t_tapes)
    if (tape->recording() && tape->any_tracked(inputs)) return true;
  return false;
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources,
                                           GradientOptions options) {
  return gradient(std::vector<Tensor>{target}, sources, std::move(options));
}

std::vector<Tensor> GradientTape::gradient(const std::vector<Tensor>& targets, const std::vector<Tensor>& sources,
                                           GradientOptions options) {
  Impl& tape = *impl_;
  check_backward_arguments(tape, targets, sources, options);
  BackwardScope scope(tape);
  BackwardPass pass(tape, sources);
  pass.seed(targets, options);
  pass.run(sources, options);
  std::vector<Tensor> result = pass.results(sources, options);
  if (!tape.options.persistent) {
    tape.used = true;
    tape.nodes.clear();
    tape.nodes.shrink_to_fit();
    tape.tracked.clear();
  }
  return result;
}

std::vector<Tensor> GradientTape::variable_values(const std::vector<Variable>& variables) {
  std::vector<Tensor> values;
  values.reserve(variables.size());
  for (const Variable& v : variables) {
    EMBER_CHECK(v.defined(), InvalidArgument) << "GradientTape.gradient: a source variable is default-constructed (holds no value)";
    values.push_back(v.value());
  }
  return values;
}

namespace detail {

void record_custom(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, CustomBackward backward) {
  if (t_no_record) return;
  for (GradientTape::Impl* tape : t_tapes)
    if (tape->recording() && tape->any_tracked(inputs)) tape->record(OpId::neg, {}, true, inputs, outputs, backward);
}

PauseTapes::PauseTapes() {
  for (GradientTape::Impl* tape : t_tapes) {
    ++tape->paused;
    paused_.push_back(tape);
  }
}

PauseTapes::~PauseTapes() {
  for (void* p : paused_) --static_cast<GradientTape::Impl*>(p)->paused;
}

void on_variable_read(const Tensor& value) {
  for (GradientTape::Impl* tape : t_tapes)
    if (tape->options.watch_accessed_variables && tape->recording()) tape->tracked.insert(value.id());
}
}  // namespace detail

Tensor custom_gradient(const std::vector<Tensor>& inputs,
                       const std::function<Tensor(const std::vector<Tensor>&)>& forward,
                       const std::function<std::vector<Tensor>(const Tensor& dy)>& backward) {
  Tensor out;
  {
    NoRecordScope no_record;
    out = forward(inputs);
  }
  EMBER_CHECK(out.defined(), InvalidArgument) << "custom_gradient: forward returned an undefined tensor";
  out = out.view(out.shape());  // a tensor of its own, even when forward returned an input
  detail::record_custom(inputs, {out}, [backward](const std::vector<Tensor>& dys) { return backward(dys[0]); });
  return out;
}

Tensor custom_gradient(const Tensor& x, const std::function<Tensor(const Tensor&)>& forward,
                       const std::function<Tensor(const Tensor& dy)>& backward) {
  return custom_gradient(
      std::vector<Tensor>{x}, [&](const std::vector<Tensor>& in) { return forward(in[0]); },
      [backward](const Tensor& dy) { return std::vector<Tensor>{backward(dy)}; });
}

namespace ops {
Tensor stop_gradient(const Tensor& x) { return x.view(x.shape()); }
}  // namespace ops

}  // namespace ember
