// ShapeTemplate: a traced graph made again for other sizes of its unknown dimensions (specialize.h).
#include "framework/graph/specialize.h"

#include <cmath>
#include <cstring>

#include "framework/graph/executor.h"
#include "framework/ops/elementwise.h"

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
        x.widens_half_gradients != y.widens_half_gradients ||
        x.num_loop_vars != y.num_loop_vars || x.maximum_iterations != y.maximum_iterations ||
        x.forward != y.forward || x.specs.size() != y.specs.size() || x.subgraphs.size() != y.subgraphs.size() ||
        x.attrs.index() != y.attrs.index() || x.updates.size() != y.updates.size())
      return no(node + " differs between the traces");
    for (size_t u = 0; u < x.updates.size(); ++u)
      if (!x.updates[u].is_same(y.updates[u])) return no(node + " updates other variables between the traces");
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
