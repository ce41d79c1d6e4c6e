#include "framework/graph/function.h"

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/logging.h"
#include "framework/graph/passes.h"
#include "framework/graph/specialize.h"
#include "framework/ops/creation.h"

namespace ember {

namespace {

// TF's FREQUENT_TRACING_WARNING_* constants: a warning when at least 5 of the last 10 calls traced, at most
// twice per function.
constexpr size_t kCallHistory = 10;
constexpr int kTracesToWarn = 5;
constexpr int kMaxWarnings = 2;

std::string tensor_type(const Tensor& t) { return TensorSpec(t.shape(), t.dtype()).to_string(); }

}  // namespace

std::string TensorSpec::to_string() const {
  std::string out = "TensorSpec(shape=" + shape.to_keras_string() + ", dtype=" + dtype_name(dtype);
  if (!name.empty()) out += ", name='" + name + "'";
  return out + ")";
}

ConcreteFunction::ConcreteFunction(std::string name, std::vector<TensorSpec> inputs, graph::Graph graph,
                                   graph::Graph traced)
    : name_(std::move(name)),
      inputs_(std::move(inputs)),
      executable_(std::move(graph), {.device_graphs = true, .name = name_}),
      traced_(std::move(traced)) {}

std::vector<Tensor> ConcreteFunction::operator()(const std::vector<Tensor>& inputs) const {
  EMBER_CHECK(inputs.size() == inputs_.size(), InvalidArgument)
      << "ember::function '" << name_ << "': the concrete function takes " << inputs_.size() << " tensors, got "
      << inputs.size();
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].defined(), InvalidArgument)
        << "ember::function '" << name_ << "': tensor argument " << i << " is undefined";
    EMBER_CHECK(inputs[i].shape() == inputs_[i].shape && inputs[i].dtype() == inputs_[i].dtype, InvalidArgument)
        << "ember::function '" << name_ << "': tensor argument " << i << " is " << tensor_type(inputs[i])
        << ", but this concrete function was traced for " << inputs_[i].to_string();
  }
  if (any_tape_recording()) {
    const graph::Executable* as_traced = nullptr;
    {
      std::lock_guard<std::mutex> lock(tape_mu_);
      if (!tape_executable_)
        tape_executable_ = std::make_unique<const graph::Executable>(traced_, graph::ExecutableOptions{.name = name_});
      as_traced = tape_executable_.get();
    }
    return as_traced->run(inputs);
  }
  return executable_.run(inputs);
}

namespace detail {

Tensor trace_arg(graph::Trace& trace, const Tensor& t) {
  Tensor v = t.view(t.shape());
  trace.add_input(v);
  // A tape outside the function differentiates the traced call too: the view passes its gradient on.
  record_custom({t}, {v}, [](const std::vector<Tensor>& dys) { return dys; });
  return v;
}

Tensor probe_tensor(const Tensor& like, const std::vector<Shape>& shapes, size_t& k) {
  Tensor t = ops::zeros(shapes.at(k++), like.dtype());
  return t.device() == like.device() ? t : t.to(like.device());
}

std::vector<int64_t> probe_sizes(int64_t traced, int64_t size) {
  // Where the two sizes are both even or both odd, the small one is of the other parity: code that rounds a
  // size to even (a pad of n % 2) shows in the graphs.
  const bool one_parity = traced % 2 == size % 2;
  int64_t m = 2;
  while (m == traced || m == size || (one_parity && m % 2 == traced % 2)) ++m;
  return {size, m};
}

std::vector<Shape> shapes_at(const std::vector<Shape>& pattern, int64_t size) {
  std::vector<Shape> out = pattern;
  for (Shape& s : out)
    for (int64_t i = 0; i < s.rank(); ++i)
      if (s[i] < 0) s[i] = size;
  return out;
}

Tensor placeholder_of(const TensorSpec& spec) {
  for (int64_t d : spec.shape)
    EMBER_CHECK(d >= 0, Unimplemented)
        << "get_concrete_function: " << spec.to_string() << " has an unknown dimension; give every dimension (a "
        << "graph is made for the sizes a call has)";
  return ops::zeros(spec.shape, spec.dtype);
}

void CallSignature::add(const Tensor& t) {
  EMBER_CHECK(t.defined(), InvalidArgument) << "ember::function: a tensor argument is undefined";
  t.check_concrete("ember::function");
  put('T', t.dtype());
  put('@', static_cast<int>(t.device().type()));
  put(':', t.device().index());
  put('#', t.rank());
  const size_t begin = key.size();
  for (int64_t d : t.shape()) put(',', d);
  dims_at.emplace_back(begin, key.size());
  tensors.push_back(t);
}

std::string CallSignature::shapeless() const {
  std::string out;
  size_t at = 0;
  for (const auto& [begin, end] : dims_at) {
    out.append(key, at, begin - at);
    at = end;
  }
  out.append(key, at, std::string::npos);
  return out;
}

void CallSignature::add(const std::vector<Tensor>& ts) {
  put('L', ts.size());
  for (const Tensor& t : ts) add(t);
}

FunctionCore::FunctionCore(FunctionOptions options) : options_(std::move(options)) {
  if (!options_.input_signature) return;
  for (const TensorSpec& s : *options_.input_signature)
    for (int64_t d : s.shape)
      EMBER_CHECK(d >= -1, InvalidArgument)
          << "ember::function '" << options_.name << "': input_signature " << s.to_string() << " has dimension " << d
          << "; a dimension is a size, or -1 for an unknown one";
}

namespace {

// The size every unknown dimension of `pattern` has in `tensors` (which match it elsewhere), or nullopt when
// they have several sizes (or none is unknown): one graph is made per size of a single unknown.
std::optional<int64_t> size_in(const std::vector<Shape>& pattern, const std::vector<Tensor>& tensors) {
  if (pattern.size() != tensors.size()) return std::nullopt;
  std::optional<int64_t> size;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const Shape& p = pattern[i];
    const Shape& s = tensors[i].shape();
    if (p.rank() != s.rank()) return std::nullopt;
    for (int64_t d = 0; d < p.rank(); ++d) {
      if (p[d] >= 0) {
        if (p[d] != s[d]) return std::nullopt;
      } else if (size && *size != s[d]) {
        return std::nullopt;
      } else {
        size = s[d];
      }
    }
  }
  return size;
}

}  // namespace

CallPlan FunctionCore::plan(const CallSignature& sig) {
  const std::string shapeless = sig.shapeless();
  std::lock_guard<std::mutex> lock(mu_);
  for (const Generalised& g : generalised_) {
    if (g.shapeless != shapeless) continue;
    const std::optional<int64_t> size = size_in(g.pattern, sig.tensors);
    if (!size) continue;
    if (g.traced)
      return {.cf = nullptr, .pattern = g.pattern, .size = *size, .base = g.traced, .base_size = g.traced_size};
    if (!g.graphs) return {};
    std::optional<graph::Graph> specialised = g.graphs->specialize(*size);
    if (!specialised) return {};
    graph::Graph traced = graph::traced_copy(*specialised);
    graph::optimize(*specialised, {.jit_compile = options_.jit_compile});
    std::vector<TensorSpec> specs;
    for (const Tensor& t : sig.tensors) specs.emplace_back(t.shape(), t.dtype());
    auto cf = std::make_shared<ConcreteFunction>(options_.name, std::move(specs), std::move(*specialised),
                                                 std::move(traced));
    std::vector<Shape> shapes;
    for (const Tensor& t : sig.tensors) shapes.push_back(t.shape());
    cache_.push_back({sig.key, shapeless, std::move(shapes), cf});
    note_call(false);
    return {.cf = cf, .pattern = {}, .size = 0, .base = nullptr, .base_size = 0};
  }
  // No generalised trace takes the call: which dimensions its trace leaves unknown.
  std::vector<Shape> pattern;
  if (options_.input_signature) {
    for (const TensorSpec& s : *options_.input_signature) pattern.push_back(s.shape);
  } else if (options_.unknown_batch_dimension) {
    for (const Tensor& t : sig.tensors) {
      pattern.push_back(t.shape());
      if (t.rank() > 0) pattern.back()[0] = -1;
    }
  } else if (options_.reduce_retracing) {
    // TF's: the dimensions in which the call differs from an earlier trace of the same ranks and dtypes (and
    // those an earlier generalisation left unknown).
    for (const Entry& e : cache_) {
      if (e.shapeless != shapeless) continue;
      if (pattern.empty())
        for (const Tensor& t : sig.tensors) pattern.push_back(t.shape());
      for (size_t i = 0; i < pattern.size(); ++i)
        for (int64_t d = 0; d < pattern[i].rank(); ++d)
          if (e.shapes[i][d] != pattern[i][d]) pattern[i][d] = -1;
    }
    for (const Generalised& g : generalised_)
      if (g.shapeless == shapeless && !pattern.empty())
        for (size_t i = 0; i < pattern.size(); ++i)
          for (int64_t d = 0; d < pattern[i].rank(); ++d)
            if (g.pattern[i][d] < 0) pattern[i][d] = -1;
  }
  const std::optional<int64_t> size = size_in(pattern, sig.tensors);
  if (!size) return {};
  return {.cf = nullptr, .pattern = std::move(pattern), .size = *size, .base = nullptr, .base_size = 0};
}

void FunctionCore::add_generalised(const CallSignature& sig, const CallPlan& plan, const graph::Graph& traced) {
  auto copy = std::make_shared<const graph::Graph>(traced);
  std::lock_guard<std::mutex> lock(mu_);
  generalised_.push_back({sig.shapeless(), plan.pattern, std::move(copy), plan.size, nullptr});
}

void FunctionCore::set_template(const CallSignature& sig, const CallPlan& plan,
                                std::shared_ptr<const graph::ShapeTemplate> t) {
  const std::string shapeless = sig.shapeless();
  std::lock_guard<std::mutex> lock(mu_);
  for (Generalised& g : generalised_) {
    if (g.shapeless != shapeless || g.pattern != plan.pattern || g.traced != plan.base) continue;
    g.traced.reset();
    g.graphs = std::move(t);
    return;
  }
}

void FunctionCore::check_signature(const std::vector<Tensor>& tensors) const {
  if (!options_.input_signature) return;
  const std::vector<TensorSpec>& specs = *options_.input_signature;
  EMBER_CHECK(tensors.size() == specs.size(), InvalidArgument)
      << "ember::function '" << options_.name << "': input_signature has " << specs.size()
      << " tensors, the call passed " << tensors.size();
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string arg =
        specs[i].name.empty() ? "argument " + std::to_string(i) : "argument '" + specs[i].name + "'";
    const Shape& got = tensors[i].shape();
    bool same = got.rank() == specs[i].shape.rank() && tensors[i].dtype() == specs[i].dtype;
    for (int64_t d = 0; same && d < got.rank(); ++d) same = specs[i].shape[d] < 0 || specs[i].shape[d] == got[d];
    EMBER_CHECK(same, InvalidArgument)
        << "ember::function '" << options_.name << "': " << arg << " is " << tensor_type(tensors[i])
        << ", which does not match the input_signature's " << specs[i].to_string();
  }
}

void FunctionCore::note_call(bool traced) {
  recent_.push_back(traced ? 1 : 0);
  if (recent_.size() > kCallHistory) recent_.erase(recent_.begin());
  int traces = 0;
  for (char c : recent_) traces += c;
  if (!traced || traces < kTracesToWarn || warnings_ >= kMaxWarnings) return;
  ++warnings_;
  logging::warn(std::to_string(traces) + " out of the last " + std::to_string(recent_.size()) + " calls to '" +
                options_.name +
                "' triggered ember::function retracing. Tracing is expensive and the excessive number of tracings "
                "could be due to (1) creating an ember::function repeatedly in a loop, (2) passing tensors with "
                "different shapes, (3) passing C++ values or objects that change between calls instead of tensors.");
}

std::shared_ptr<ConcreteFunction> FunctionCore::find(const std::string& key, bool count_call) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : cache_) {
    if (e.key != key) continue;
    if (count_call) note_call(false);
    return e.cf;
  }
  return nullptr;
}

std::shared_ptr<ConcreteFunction> FunctionCore::add(const CallSignature& sig, graph::Graph graph, bool count_call) {
  graph::Graph traced = graph::traced_copy(graph);
  graph::optimize(graph, {.jit_compile = options_.jit_compile});
  std::vector<TensorSpec> specs;
  std::vector<Shape> shapes;
  for (const Tensor& t : sig.tensors) {
    specs.emplace_back(t.shape(), t.dtype());
    shapes.push_back(t.shape());
  }
  auto cf = std::make_shared<ConcreteFunction>(options_.name, std::move(specs), std::move(graph), std::move(traced));
  std::string shapeless = sig.shapeless();
  std::lock_guard<std::mutex> lock(mu_);
  ++tracing_count_;
  if (count_call) note_call(true);
  // Two threads' first calls may both trace: the first graph stays.
  for (const Entry& e : cache_)
    if (e.key == sig.key) return e.cf;
  cache_.push_back({sig.key, std::move(shapeless), std::move(shapes), cf});
  return cf;
}

int FunctionCore::tracing_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tracing_count_;
}

std::vector<std::shared_ptr<ConcreteFunction>> FunctionCore::concrete_functions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<ConcreteFunction>> out;
  for (const Entry& e : cache_) out.push_back(e.cf);
  return out;
}

}  // namespace detail
}  // namespace ember
