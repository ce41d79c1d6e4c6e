#include "framework/graph/function.h"

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/logging.h"
#include "framework/graph/passes.h"
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

ConcreteFunction::ConcreteFunction(std::string name, std::vector<TensorSpec> inputs, graph::Graph graph)
    : name_(std::move(name)), inputs_(std::move(inputs)), executable_(std::move(graph)) {}

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

Tensor placeholder_of(const TensorSpec& spec) {
  for (int64_t d : spec.shape)
    EMBER_CHECK(d >= 0, Unimplemented)
        << "get_concrete_function: " << spec.to_string() << " has an unknown dimension; unknown dimensions are "
        << "not implemented yet, give every dimension";
  return ops::zeros(spec.shape, spec.dtype);
}

void CallSignature::add(const Tensor& t) {
  EMBER_CHECK(t.defined(), InvalidArgument) << "ember::function: a tensor argument is undefined";
  t.check_concrete("ember::function");
  put('T', t.dtype());
  put('@', static_cast<int>(t.device().type()));
  put(':', t.device().index());
  put('#', t.rank());
  for (int64_t d : t.shape()) put(',', d);
  tensors.push_back(t);
}

void CallSignature::add(const std::vector<Tensor>& ts) {
  put('L', ts.size());
  for (const Tensor& t : ts) add(t);
}

FunctionCore::FunctionCore(FunctionOptions options) : options_(std::move(options)) {
  EMBER_CHECK(!options_.reduce_retracing, Unimplemented)
      << "ember::function '" << options_.name << "': reduce_retracing (one trace for every size of a dimension) is "
      << "not implemented yet; leave it false (each new input shape traces once)";
  if (!options_.input_signature) return;
  for (const TensorSpec& s : *options_.input_signature) {
    for (int64_t d : s.shape) {
      EMBER_CHECK(d >= 0, Unimplemented)
          << "ember::function '" << options_.name << "': input_signature " << s.to_string()
          << " has an unknown dimension; unknown dimensions are not implemented yet, give every dimension";
    }
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
    EMBER_CHECK(tensors[i].shape() == specs[i].shape && tensors[i].dtype() == specs[i].dtype, InvalidArgument)
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
  for (const auto& [k, cf] : cache_) {
    if (k != key) continue;
    if (count_call) note_call(false);
    return cf;
  }
  return nullptr;
}

std::shared_ptr<ConcreteFunction> FunctionCore::add(const std::string& key, const std::vector<Tensor>& inputs,
                                                    graph::Graph graph, bool count_call) {
  graph::optimize(graph, {.jit_compile = options_.jit_compile});
  std::vector<TensorSpec> specs;
  for (const Tensor& t : inputs) specs.emplace_back(t.shape(), t.dtype());
  auto cf = std::make_shared<ConcreteFunction>(options_.name, std::move(specs), std::move(graph));
  std::lock_guard<std::mutex> lock(mu_);
  ++tracing_count_;
  if (count_call) note_call(true);
  // Two threads' first calls may both trace: the first graph stays.
  for (const auto& [k, existing] : cache_)
    if (k == key) return existing;
  cache_.emplace_back(key, cf);
  return cf;
}

int FunctionCore::tracing_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tracing_count_;
}

std::vector<std::shared_ptr<ConcreteFunction>> FunctionCore::concrete_functions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<ConcreteFunction>> out;
  for (const auto& e : cache_) out.push_back(e.second);
  return out;
}

}  // namespace detail
}  // namespace ember
