#include "framework/graph/function.h"

#include <cmath>
#include <cstring>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/logging.h"
#include "framework/graph/passes.h"
#include "framework/graph/specialize.h"
#include "framework/ops/elementwise.h"
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

Tensor probe_tensor(const Tensor& like, const std::vector<Shape>& shapes, size_t& k) {
  Tensor t = ops::zeros(shapes.at(k++), like.dtype());
  return t.device() == like.device() ? t : t.to(like.device());
}

std::vector<int64_t> probe_sizes(int64_t traced, int64_t size) {
  int64_t m = 2;
  while (m == traced || m == size) ++m;
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
    if (g.traced) return {.pattern = g.pattern, .size = *size, .base = g.traced, .base_size = g.traced_size};
    if (!g.graphs) return {};
    std::optional<graph::Graph> specialised = g.graphs->specialize(*size);
    if (!specialised) return {};
    graph::optimize(*specialised, {.jit_compile = options_.jit_compile});
    std::vector<TensorSpec> specs;
    for (const Tensor& t : sig.tensors) specs.emplace_back(t.shape(), t.dtype());
    auto cf = std::make_shared<ConcreteFunction>(options_.name, std::move(specs), std::move(*specialised));
    std::vector<Shape> shapes;
    for (const Tensor& t : sig.tensors) shapes.push_back(t.shape());
    cache_.push_back({sig.key, shapeless, std::move(shapes), cf});
    note_call(false);
    return {.cf = cf};
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
  return {.pattern = std::move(pattern), .size = *size};
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
  graph::optimize(graph, {.jit_compile = options_.jit_compile});
  std::vector<TensorSpec> specs;
  std::vector<Shape> shapes;
  for (const Tensor& t : sig.tensors) {
    specs.emplace_back(t.shape(), t.dtype());
    shapes.push_back(t.shape());
  }
  auto cf = std::make_shared<ConcreteFunction>(options_.name, std::move(specs), std::move(graph));
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

// ---- ShapeTemplate (framework/graph/specialize.h)

namespace ember::graph {

namespace {

// Calls f on each number of the graph that may vary with a dimension's size, in one order: the values' shapes,
// then per node its outputs' shapes and its attributes' numbers. f takes an int64_t or a double, by reference
// where the graph is not const.
template <class Dim, class F>
void each_dim(Dim& shape, F& f) {
  for (int64_t i = 0; i < shape.rank(); ++i) f(shape[i]);
}
template <class A, class F>
void each_attr_number(A& attrs, F& f) {
  auto all = [&](auto& xs) {
    for (auto& x : xs) f(x);
  };
  std::visit(
      [&](auto& a) {
        using T = std::remove_cvref_t<decltype(a)>;
        if constexpr (std::is_same_v<T, ReduceAttrs>) all(a.axes);
        else if constexpr (std::is_same_v<T, ArgReduceAttrs> || std::is_same_v<T, AxisAttrs>) f(a.axis);
        else if constexpr (std::is_same_v<T, ShapeAttrs>) each_dim(a.shape, f);
        else if constexpr (std::is_same_v<T, TransposeAttrs>) all(a.perm);
        else if constexpr (std::is_same_v<T, StridedSliceAttrs>) {
          all(a.begin);
          all(a.strides);
          each_dim(a.out_shape, f);
        } else if constexpr (std::is_same_v<T, GatherAttrs>) {
          f(a.axis);
          f(a.batch_dims);
        } else if constexpr (std::is_same_v<T, SegmentAttrs>) f(a.num_segments);
        else if constexpr (std::is_same_v<T, OneHotAttrs>) {
          f(a.depth);
          f(a.axis);
          f(a.on_value);
          f(a.off_value);
        } else if constexpr (std::is_same_v<T, PadAttrs>) {
          for (auto& p : a.paddings) {
            f(p.first);
            f(p.second);
          }
          f(a.constant_value);
        } else if constexpr (std::is_same_v<T, TileAttrs>) all(a.multiples);
        else if constexpr (std::is_same_v<T, CreationAttrs>) {
          each_dim(a.shape, f);
          f(a.a);
          f(a.b);
          f(a.c);
        } else if constexpr (std::is_same_v<T, RandomAttrs>) {  // key and counter are drawn again on every call
          each_dim(a.shape, f);
          f(a.a);
          f(a.b);
        } else if constexpr (std::is_same_v<T, Conv2DAttrs>) {
          all(a.strides);
          all(a.dilations);
          all(a.pads);
          f(a.groups);
          each_dim(a.shape, f);
        } else if constexpr (std::is_same_v<T, Pool2DAttrs>) {
          all(a.ksize);
          all(a.strides);
          all(a.pads);
          each_dim(a.shape, f);
        } else if constexpr (std::is_same_v<T, AffineTransformAttrs>) f(a.fill_value);
        else if constexpr (std::is_same_v<T, AdamAttrs>) {
          f(a.alpha);
          f(a.one_minus_beta_1);
          f(a.one_minus_beta_2);
          f(a.epsilon);
        }
      },
      attrs);
}
template <class G, class F>
void each_number(G& g, F&& f) {
  for (auto& v : g.values) each_dim(v.shape, f);
  for (auto& n : g.nodes) {
    for (auto& s : n.specs) each_dim(s.shape, f);
    each_attr_number(n.attrs, f);
  }
}

// A number read as a double, and whether it is an integer field.
struct Number {
  double value;
  bool integral;
};
template <class G>
std::vector<Number> numbers_of(const G& g) {
  std::vector<Number> out;
  each_number(g, [&](const auto& x) {
    out.push_back({static_cast<double>(x), std::is_integral_v<std::remove_cvref_t<decltype(x)>>});
  });
  return out;
}
std::vector<Number> attr_numbers(const Attrs& a) {
  std::vector<Number> out;
  auto f = [&](const auto& x) {
    out.push_back({static_cast<double>(x), std::is_integral_v<std::remove_cvref_t<decltype(x)>>});
  };
  each_attr_number(a, f);
  return out;
}
template <class Target>
void write_numbers(Target& target, const std::vector<Number>& numbers) {
  size_t i = 0;
  auto f = [&](auto& x) { x = static_cast<std::remove_cvref_t<decltype(x)>>(numbers[i++].value); };
  if constexpr (std::is_same_v<Target, Attrs>) each_attr_number(target, f);
  else each_number(target, f);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.id() == b.id()) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor x = a.to(Device::cpu()), y = b.to(Device::cpu());
  return std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

bool identical(const Graph& a, const Graph& b, std::string* why);

// Whether b is a, up to the numbers each_number visits and the constants' values (what a template fits).
bool same_structure(const Graph& a, const Graph& b, std::string* why) {
  auto no = [&](const std::string& what) {
    *why = what;
    return false;
  };
  if (a.values.size() != b.values.size() || a.nodes.size() != b.nodes.size() || a.inputs != b.inputs ||
      a.outputs != b.outputs)
    return no("the traces have other numbers of values or nodes");
  for (size_t v = 0; v < a.values.size(); ++v) {
    const Value &x = a.values[v], &y = b.values[v];
    if (x.dtype != y.dtype || x.device != y.device || x.producer != y.producer || x.input != y.input ||
        x.shape.rank() != y.shape.rank() || x.constant.defined() != y.constant.defined())
      return no("value %" + std::to_string(v) + " differs in more than its dimensions");
  }
  for (size_t k = 0; k < a.nodes.size(); ++k) {
    const Node &x = a.nodes[k], &y = b.nodes[k];
    const std::string node = "node " + std::to_string(k);
    if (x.kind != y.kind || x.inputs != y.inputs || x.outputs != y.outputs || x.op != y.op || x.device != y.device ||
        x.variable.handle() != y.variable.handle() || x.name != y.name || x.gradient_triples != y.gradient_triples ||
        x.num_loop_vars != y.num_loop_vars || x.maximum_iterations != y.maximum_iterations ||
        x.forward != y.forward || x.specs.size() != y.specs.size() || x.subgraphs.size() != y.subgraphs.size() ||
        x.attrs.index() != y.attrs.index())
      return no(node + " differs between the traces");
    for (size_t s = 0; s < x.specs.size(); ++s)
      if (x.specs[s].dtype != y.specs[s].dtype || x.specs[s].alias_input != y.specs[s].alias_input ||
          x.specs[s].shape.rank() != y.specs[s].shape.rank())
        return no(node + "'s outputs differ in more than their dimensions");
    // The attributes up to their numbers: y's with x's numbers (and random seeds) must be x's.
    const std::vector<Number> nx = attr_numbers(x.attrs);
    if (nx.size() != attr_numbers(y.attrs).size()) return no(node + "'s attributes differ");
    Attrs z = y.attrs;
    write_numbers(z, nx);
    if (auto* r = std::get_if<RandomAttrs>(&z)) {
      const auto& rx = std::get<RandomAttrs>(x.attrs);
      r->key = rx.key;
      r->counter = rx.counter;
    }
    if (!(z == x.attrs)) return no(node + "'s attributes differ in more than their numbers");
    for (size_t s = 0; s < x.subgraphs.size(); ++s)
      if (!identical(x.subgraphs[s]->graph(), y.subgraphs[s]->graph(), why))
        return no(node + "'s branch or loop graphs differ between the traces (" + *why + ")");
  }
  return true;
}

bool identical(const Graph& a, const Graph& b, std::string* why) {
  if (!same_structure(a, b, why)) return false;
  const std::vector<Number> x = numbers_of(a), y = numbers_of(b);
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].value != y[i].value) return (*why = "a shape or attribute differs", false);
  for (size_t v = 0; v < a.values.size(); ++v)
    if (a.values[v].constant.defined() && !same_bytes(a.values[v].constant, b.values[v].constant))
      return (*why = "a constant differs", false);
  return true;
}

// a * size + b through every (size, value) pair; nullopt when no such line exists (or, for an integer field,
// none with integer coefficients).
std::optional<std::pair<double, double>> fit(const std::vector<int64_t>& sizes, const std::vector<double>& values,
                                             bool integral) {
  const double a = (values[1] - values[0]) / static_cast<double>(sizes[1] - sizes[0]);
  const double b = values[0] - a * static_cast<double>(sizes[0]);
  if (integral && (a != std::floor(a) || b != std::floor(b))) return std::nullopt;
  for (size_t j = 0; j < sizes.size(); ++j)
    if (a * static_cast<double>(sizes[j]) + b != values[j]) return std::nullopt;
  return std::make_pair(a, b);
}

Tensor affine_constant(const Tensor& like, const std::vector<double>& a, const std::vector<double>& b, int64_t size) {
  std::vector<double> v(a.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = a[i] * static_cast<double>(size) + b[i];
  Tensor t = ops::cast(Tensor::from_vector<double>(v, like.shape(), Device::cpu()), like.dtype());
  return like.device().is_cpu() ? t : t.to(like.device());
}

bool shape_free_derivation(const Node& n) { return n.name == "to" || n.name == "clone"; }

}  // namespace

std::shared_ptr<const ShapeTemplate> ShapeTemplate::make(const std::vector<Graph>& traces,
                                                         const std::vector<int64_t>& sizes, std::string* why) {
  EMBER_CHECK(traces.size() == sizes.size() && traces.size() >= 3, Internal)
      << "ShapeTemplate: needs a trace and two probes";
  for (size_t j = 1; j < traces.size(); ++j)
    if (!same_structure(traces[0], traces[j], why)) return nullptr;
  auto t = std::make_shared<ShapeTemplate>();
  t->base_ = traces[0];
  std::vector<std::vector<Number>> numbers;
  for (const Graph& g : traces) numbers.push_back(numbers_of(g));
  for (const Number& n : numbers[0]) t->numbers_.push_back(n.value);
  std::vector<char> varies(traces[0].values.size(), 0);  // per value: whether its shape varies
  size_t slot = 0;
  std::vector<double> column(traces.size());
  for (size_t i = 0; i < numbers[0].size(); ++i) {
    bool same = true;
    for (size_t j = 0; j < traces.size(); ++j) {
      column[j] = numbers[j][i].value;
      same = same && column[j] == column[0];
    }
    if (same) continue;
    auto ab = fit(sizes, column, numbers[0][i].integral);
    if (!ab) return (*why = "a shape or attribute is not an affine function of the unknown dimension", nullptr);
    t->varying_.push_back({i, ab->first, ab->second});
  }
  // Which values' shapes vary: their dims come first in each_number's order.
  for (size_t v = 0; v < traces[0].values.size(); ++v) {
    const size_t rank = static_cast<size_t>(traces[0].values[v].shape.rank());
    for (const Affine& a : t->varying_)
      if (a.slot >= slot && a.slot < slot + rank) varies[v] = 1;
    slot += rank;
  }
  for (const Node& n : traces[0].nodes) {
    auto any_varies = [&](const std::vector<int>& ids) {
      for (int v : ids)
        if (v >= 0 && varies[static_cast<size_t>(v)]) return true;
      return false;
    };
    // Closures hold what they were traced with: a host call's or a derivation's (but for a view, made again
    // from its output's shape) must not see another shape.
    if (n.kind == NodeKind::HostCall && any_varies(n.outputs))
      return (*why = "host call '" + n.name + "' returns a tensor whose shape varies", nullptr);
    if (n.kind == NodeKind::Derived && !shape_free_derivation(n) && n.name != "view" &&
        (any_varies(n.inputs) || any_varies(n.outputs)))
      return (*why = "'" + n.name + "' of a tensor whose shape varies", nullptr);
  }
  for (size_t v = 0; v < traces[0].values.size(); ++v) {
    const Tensor& c = traces[0].values[v].constant;
    if (!c.defined()) continue;
    bool same = true;
    for (size_t j = 1; j < traces.size(); ++j) same = same && same_bytes(c, traces[j].values[v].constant);
    if (same) continue;
    for (size_t j = 1; j < traces.size(); ++j)
      if (traces[j].values[v].constant.shape() != c.shape() || c.num_elements() > 64)
        return (*why = "a constant of shape " + c.shape().to_string() + " varies", nullptr);
    std::vector<std::vector<double>> vals;
    for (const Graph& g : traces) vals.push_back(ops::cast(g.values[v].constant, DType::Float64).to_vector<double>());
    AffineConstant ac{static_cast<int>(v), {}, {}};
    for (size_t e = 0; e < vals[0].size(); ++e) {
      for (size_t j = 0; j < traces.size(); ++j) column[j] = vals[j][e];
      auto ab = fit(sizes, column, /*integral=*/false);
      if (!ab) return (*why = "a constant is not an affine function of the unknown dimension", nullptr);
      ac.a.push_back(ab->first);
      ac.b.push_back(ab->second);
    }
    // The fit must give the traced constants' bits in their dtype.
    for (size_t j = 0; j < traces.size(); ++j)
      if (!same_bytes(affine_constant(c, ac.a, ac.b, sizes[j]), traces[j].values[v].constant))
        return (*why = "a constant is not an affine function of the unknown dimension", nullptr);
    t->constants_.push_back(std::move(ac));
  }
  return t;
}

std::optional<Graph> ShapeTemplate::specialize(int64_t size) const {
  std::vector<Number> numbers;
  numbers.reserve(numbers_.size());
  for (double x : numbers_) numbers.push_back({x, false});
  for (const Affine& a : varying_) numbers[a.slot].value = a.a * static_cast<double>(size) + a.b;
  Graph g = base_;
  write_numbers(g, numbers);
  for (const Value& v : g.values)
    for (int64_t d : v.shape)
      if (d < 0) return std::nullopt;
  for (const Node& n : g.nodes)
    for (const OutputSpec& s : n.specs)
      for (int64_t d : s.shape)
        if (d < 0) return std::nullopt;
  for (const AffineConstant& c : constants_) {
    Tensor& t = g.values[static_cast<size_t>(c.value)].constant;
    t = affine_constant(t, c.a, c.b, size);
  }
  for (Node& n : g.nodes) {
    if (n.kind != NodeKind::Derived || n.name != "view") continue;
    n.remake = [shape = g.values[static_cast<size_t>(n.outputs[0])].shape](const Tensor& t) { return t.view(shape); };
  }
  return g;
}

}  // namespace ember::graph
