#include "framework/model/layer.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/config_reader.h"
#include "framework/core/strings.h"
#include "framework/graph/trace.h"
#include "framework/model/functional.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember {

namespace {

// The layers whose call() is running on this thread, innermost last: a layer called inside another's
// call becomes its tracked sublayer (how subclassed models find their members).
thread_local std::vector<Layer*> t_call_stack;

struct CallFrame {
  explicit CallFrame(Layer* l) { t_call_stack.push_back(l); }
  ~CallFrame() { t_call_stack.pop_back(); }
};

const CallKwargs& no_call_kwargs() {
  static const CallKwargs none;
  return none;
}

// The keyword arguments of the layer calls running on this thread, innermost last (per thread, so one layer may
// run on several threads at once with different arguments).
thread_local std::vector<std::pair<const Layer*, const CallKwargs*>> t_call_kwargs;

// Makes a call's keyword arguments the layer's call_kwargs() while it runs.
struct KwargsScope {
  KwargsScope(const Layer* layer, const CallKwargs& kwargs) { t_call_kwargs.emplace_back(layer, &kwargs); }
  ~KwargsScope() { t_call_kwargs.pop_back(); }
};

std::string shapes_string(const std::vector<Shape>& shapes) {
  if (shapes.size() == 1) return shapes[0].to_keras_string();
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shapes[i].to_keras_string();
  return s + "]";
}

// Build shapes keep per-sample dimensions; the batch dimension is always unknown.
std::vector<Shape> with_unknown_batch(std::vector<Shape> shapes) {
  for (Shape& s : shapes)
    if (s.rank() > 0) s[0] = -1;
  return shapes;
}

}  // namespace

namespace backend {

void clear_session() { reset_unique_names(); }

namespace {
// Masks beside tensors, by tensor id (Keras keeps them as an attribute of the tensor). An entry lives while
// the tensor's storage does; dead entries are dropped as the table grows.
struct MaskTable {
  struct Entry {
    std::weak_ptr<Storage> storage;
    Tensor mask;
  };
  std::mutex mu;
  std::unordered_map<uint64_t, Entry> entries;
  size_t prune_at = 64;
};
MaskTable& mask_table() {
  static MaskTable t;
  return t;
}
}  // namespace

Tensor get_keras_mask(const Tensor& x) {
  if (!x.defined() || x.is_symbolic()) return {};
  MaskTable& t = mask_table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.entries.find(x.id());
  if (it == t.entries.end()) return {};
  if (it->second.storage.expired()) {
    t.entries.erase(it);
    return {};
  }
  return it->second.mask;
}

void set_keras_mask(const Tensor& x, const Tensor& mask) {
  if (!x.defined() || x.is_symbolic()) return;
  MaskTable& t = mask_table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!mask.defined()) {
    t.entries.erase(x.id());
    return;
  }
  t.entries[x.id()] = {x.storage(), mask};
  if (t.entries.size() >= t.prune_at) {
    std::erase_if(t.entries, [](const auto& e) { return e.second.storage.expired(); });
    t.prune_at = std::max<size_t>(64, 2 * t.entries.size());
  }
}

}  // namespace backend

struct Layer::CastCache {
  struct Entry {
    const Tensor* variable;  // the variable's value slot (its identity)
    uint64_t version;        // the value the cast was made from
    DType dtype;
    Tensor cast;
  };
  std::mutex mu;
  std::vector<Entry> entries;
};

namespace {
uint64_t next_layer_uid() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

Layer::Layer(const std::string& base_name, const LayerOptions& options)
    : name_(options.name.empty() ? unique_layer_name(base_name) : options.name),
      uid_(next_layer_uid()),
      policy_(options.dtype.empty() ? mixed_precision::global_policy() : mixed_precision::Policy(options.dtype)),
      trainable_(options.trainable),
      cast_cache_(std::make_shared<CastCache>()) {}

Layer::~Layer() = default;

Layer::Layer(Layer&& o) noexcept
    : std::enable_shared_from_this<Layer>(),
      supports_masking_(o.supports_masking_),
      name_(std::move(o.name_)),
      uid_(o.uid_),
      weight_scope_(std::move(o.weight_scope_)),
      policy_(std::move(o.policy_)),
      trainable_(o.trainable_),
      built_(o.built_),
      build_shapes_(std::move(o.build_shapes_)),
      weights_(std::move(o.weights_)),
      call_losses_(std::move(o.call_losses_)),
      cast_cache_(std::make_shared<CastCache>()) {
  // Owned sublayers move along; members tracked without ownership live in the moved-from object's
  // memory, so they are re-tracked by the next call instead.
  for (Child& c : o.children_)
    if (c.layer.use_count() > 0) children_.push_back(std::move(c));
  o.children_.clear();
}

// ---------------------------------------------------------------- calling

Tensor Layer::operator()(const Tensor& x, bool training) & { return call_dispatch({x}, training, false); }
Tensor Layer::operator()(const Tensor& x, bool training) && { return call_dispatch({x}, training, true); }
Tensor Layer::operator()(const std::vector<Tensor>& xs, bool training) & { return call_dispatch(xs, training, false); }
Tensor Layer::operator()(const std::vector<Tensor>& xs, bool training) && { return call_dispatch(xs, training, true); }

Tensor Layer::call_dispatch(const std::vector<Tensor>& xs, bool training, bool temporary) {
  return call_dispatch_all(xs, no_call_kwargs(), training, temporary).at(0);
}

std::vector<Tensor> Layer::call_outputs(const std::vector<Tensor>& xs, bool training) & {
  return call_dispatch_all(xs, no_call_kwargs(), training, false);
}
std::vector<Tensor> Layer::call_outputs(const std::vector<Tensor>& xs, bool training) && {
  return call_dispatch_all(xs, no_call_kwargs(), training, true);
}
std::vector<Tensor> Layer::call_outputs(const std::vector<Tensor>& xs, const CallKwargs& kwargs, bool training) & {
  return call_dispatch_all(xs, kwargs, training, false);
}
std::vector<Tensor> Layer::call_outputs(const std::vector<Tensor>& xs, const CallKwargs& kwargs, bool training) && {
  return call_dispatch_all(xs, kwargs, training, true);
}

std::vector<Tensor> Layer::call_dispatch_all(const std::vector<Tensor>& xs, const CallKwargs& kwargs, bool training,
                                             bool temporary) {
  EMBER_CHECK(!xs.empty(), InvalidArgument) << class_name() << " '" << name_ << "': called with no inputs";
  size_t symbolic = 0;
  for (const Tensor& x : xs) symbolic += x.is_symbolic() ? 1 : 0;
  for (const Tensor& t : kwargs.tensors)
    EMBER_CHECK(t.defined() && t.is_symbolic() == (symbolic > 0), InvalidArgument)
        << class_name() << " '" << name_ << "': keyword argument tensors must be "
        << (symbolic > 0 ? "symbolic (from layers::Input or a layer), as the inputs are"
                         : "concrete, as the inputs are (symbolic ones only in a functional model)");
  if (symbolic == 0) return call_concrete_all(xs, kwargs, training);
  EMBER_CHECK(symbolic == xs.size(), InvalidArgument)
      << class_name() << " '" << name_ << "': inputs mix symbolic tensors (from layers::Input) and concrete ones";
  LayerPtr self = weak_from_this().lock();
  if (!self) {
    EMBER_CHECK(temporary, FailedPrecondition)
        << class_name() << " '" << name_
        << "': a layer called on symbolic tensors must be a temporary (layers::Dense(8)(x)) or held by a "
           "std::shared_ptr (auto d = std::make_shared<layers::Dense>(8); (*d)(x)), so the model can own it";
    self = std::move(*this).move_to_shared();
  }
  return self->call_symbolic(xs, kwargs, self);
}

void Layer::ensure_built(const std::vector<Shape>& shapes) {
  if (built_) {
    check_input_shape(shapes);
    return;
  }
  NoRecordScope no_record;  // initial values are not part of any gradient
  build(with_unknown_batch(shapes));
  build_shapes_ = with_unknown_batch(shapes);
  built_ = true;
}

void Layer::build_for(const std::vector<Shape>& input_shapes) { ensure_built(input_shapes); }

Tensor Layer::call_concrete(const std::vector<Tensor>& xs, bool training) {
  std::vector<Tensor> out = call_concrete_all(xs, training);
  return out.at(0);
}

std::vector<Tensor> Layer::call_concrete_all(const std::vector<Tensor>& xs, const CallKwargs& kwargs, bool training) {
  if (kwargs.empty()) return call_concrete_all(xs, training);
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  check_call_kwargs(kwargs, shapes);
  KwargsScope scope(this, kwargs);
  return call_concrete_all(xs, training);
}

std::vector<Tensor> Layer::call_concrete_all(const std::vector<Tensor>& xs, bool training) {
  if (!t_call_stack.empty()) {
    if (t_call_stack.back() != this) t_call_stack.back()->track(weak_from_this().lock() ? shared_from_this()
                                                                                       : LayerPtr(LayerPtr(), this));
  } else {
    clear_call_losses();
  }
  std::vector<Shape> shapes;
  shapes.reserve(xs.size());
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  ensure_built(shapes);
  std::vector<Tensor> cast = xs;
  for (Tensor& x : cast)
    if (is_floating(x.dtype()) && x.dtype() != compute_dtype()) x = ops::cast(x, compute_dtype());
  std::vector<Tensor> masks;
  bool masked = false;
  for (const Tensor& x : xs) {
    masks.push_back(backend::get_keras_mask(x));
    masked = masked || masks.back().defined();
  }
  CallFrame frame(this);
  std::vector<Tensor> out = masked ? call_masked(cast, masks, training) : call_all(cast, training);
  if (supports_masking_) {
    // Keras's _set_mask_metadata: outputs that already carry a mask (set by call) keep it.
    bool all_masked = true;
    for (const Tensor& y : out) all_masked = all_masked && backend::get_keras_mask(y).defined();
    if (!all_masked) {
      std::vector<Tensor> out_masks = compute_mask(cast, masks);
      for (size_t i = 0; i < out.size() && i < out_masks.size(); ++i)
        if (out_masks[i].defined() && !backend::get_keras_mask(out[i]).defined())
          backend::set_keras_mask(out[i], out_masks[i]);
    }
  }
  return out;
}

std::vector<Tensor> Layer::call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& /*masks*/,
                                       bool training) {
  return call_all(xs, training);
}

std::vector<Tensor> Layer::compute_mask(const std::vector<Tensor>& /*xs*/, const std::vector<Tensor>& masks) {
  return masks;
}

std::vector<Tensor> Layer::call_symbolic(const std::vector<Tensor>& xs, const CallKwargs& kwargs, LayerPtr self) {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  for (const Tensor& x : xs) {
    shapes.push_back(x.shape());
    dtypes.push_back(x.dtype());
  }
  if (!kwargs.empty()) check_call_kwargs(kwargs, shapes);
  KwargsScope scope(this, kwargs);
  ensure_built(shapes);
  return detail::record_node(std::move(self), xs, compute_output_shapes(shapes), compute_output_dtype(dtypes), kwargs);
}

void Layer::check_call_kwargs(const CallKwargs& kwargs, const std::vector<Shape>& /*input_shapes*/) const {
  kwargs.check_keys({}, class_name() + " '" + name_ + "'");
}

const CallKwargs& Layer::call_kwargs() const {
  for (auto it = t_call_kwargs.rbegin(); it != t_call_kwargs.rend(); ++it)
    if (it->first == this) return *it->second;
  return no_call_kwargs();
}

// ---------------------------------------------------------------- keyword arguments

namespace {
const nlohmann::json* kwargs_entry(const nlohmann::json& values, const std::string& key) {
  auto it = values.find(key);
  return it == values.end() || it->is_null() ? nullptr : &*it;
}
}  // namespace

CallKwargs& CallKwargs::set(const std::string& key, nlohmann::json value) {
  values[key] = std::move(value);
  return *this;
}

CallKwargs& CallKwargs::set(const std::string& key, const Tensor& tensor) {
  EMBER_CHECK(tensor.defined(), InvalidArgument) << "CallKwargs: keyword argument " << key << " is an undefined tensor";
  tensors.push_back(tensor);
  return set(key, nlohmann::json{{"__tensor__", tensors.size() - 1}});
}

CallKwargs& CallKwargs::set(const std::string& key, const std::vector<std::optional<Tensor>>& list) {
  nlohmann::json entries = nlohmann::json::array();
  for (const std::optional<Tensor>& t : list) {
    if (!t || !t->defined()) {
      entries.push_back(nullptr);
      continue;
    }
    tensors.push_back(*t);
    entries.push_back({{"__tensor__", tensors.size() - 1}});
  }
  return set(key, std::move(entries));
}

namespace {
std::optional<Tensor> kwargs_tensor(const CallKwargs& kw, const nlohmann::json* e, const std::string& what,
                                    const std::string& who) {
  if (!e || e->is_null()) return std::nullopt;
  EMBER_CHECK(e->is_object() && e->contains("__tensor__"), InvalidArgument)
      << who << ": keyword argument " << what << " must be a tensor, got " << e->dump().substr(0, 100);
  const size_t i = e->at("__tensor__").get<size_t>();
  EMBER_CHECK(i < kw.tensors.size(), Internal)
      << who << ": keyword argument " << what << " refers to tensor " << i << " of " << kw.tensors.size();
  return kw.tensors[i];
}
}  // namespace

std::optional<Tensor> CallKwargs::tensor(const std::string& key, const std::string& who) const {
  return kwargs_tensor(*this, kwargs_entry(values, key), key, who);
}

std::optional<Tensor> CallKwargs::tensor(const std::string& key, size_t index, const std::string& who) const {
  const nlohmann::json* list = kwargs_entry(values, key);
  if (!list) return std::nullopt;
  EMBER_CHECK(list->is_array(), InvalidArgument)
      << who << ": keyword argument " << key << " must be a list of tensors, got " << list->dump().substr(0, 100);
  return index < list->size() ? kwargs_tensor(*this, &(*list)[index], key + "[" + std::to_string(index) + "]", who)
                              : std::nullopt;
}

bool CallKwargs::flag(const std::string& key, bool default_value, const std::string& who) const {
  const nlohmann::json* e = kwargs_entry(values, key);
  if (!e) return default_value;
  EMBER_CHECK(e->is_boolean(), InvalidArgument)
      << who << ": keyword argument " << key << " must be true or false, got " << e->dump().substr(0, 100);
  return e->get<bool>();
}

void CallKwargs::check_keys(const std::vector<std::string>& allowed, const std::string& who) const {
  if (!values.is_object()) return;
  for (const auto& [k, v] : values.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw InvalidArgument(who + ": unexpected keyword argument " + k + (allowed.empty() ? "; the layer takes none beyond training"
                                                                       : "; it takes " + list));
  }
}

std::vector<Shape> Layer::compute_output_shapes(const std::vector<Shape>& shapes) {
  return {shapes.size() == 1 ? compute_output_shape(shapes[0]) : compute_output_shape(shapes)};
}

void Layer::build(const std::vector<Shape>& input_shapes) {
  EMBER_CHECK(input_shapes.size() == 1, InvalidArgument)
      << class_name() << " '" << name_ << "': expected one input, got " << input_shapes.size();
  build(input_shapes[0]);
}

Tensor Layer::call(const Tensor& x, bool training) {
  throw Unimplemented(class_name() + " '" + name_ + "': the layer does not override call()");
}

Tensor Layer::call(const std::vector<Tensor>& xs, bool training) {
  EMBER_CHECK(xs.size() == 1, InvalidArgument)
      << class_name() << " '" << name_ << "': expected one input, got " << xs.size();
  return call(xs[0], training);
}

std::vector<Tensor> Layer::call_all(const std::vector<Tensor>& xs, bool training) {
  return {xs.size() == 1 ? call(xs[0], training) : call(xs, training)};
}

Shape Layer::compute_output_shape(const Shape& input_shape) {
  // Keras 3's compute_output_spec: run call() on zeros (unknown dimensions as 1), outside any tape.
  Shape probe = input_shape;
  for (int64_t i = 0; i < probe.rank(); ++i)
    if (probe[i] < 0) probe[i] = 1;
  NoRecordScope no_record;
  Tensor y;
  {
    CallFrame frame(this);
    y = call(ops::zeros(probe, compute_dtype()), false);
  }
  Shape out = y.shape();
  if (input_shape.rank() > 0 && input_shape[0] < 0 && out.rank() > 0) out[0] = -1;
  return out;
}

Shape Layer::compute_output_shape(const std::vector<Shape>& input_shapes) {
  EMBER_CHECK(input_shapes.size() == 1, InvalidArgument)
      << class_name() << " '" << name_ << "': expected one input, got " << input_shapes.size();
  return compute_output_shape(input_shapes[0]);
}

DType Layer::compute_output_dtype(const std::vector<DType>& input_dtypes) const {
  return is_floating(input_dtypes.at(0)) ? compute_dtype() : input_dtypes.at(0);
}

void Layer::check_input_shape(const std::vector<Shape>& shapes) const {
  bool ok = shapes.size() == build_shapes_.size();
  for (size_t i = 0; ok && i < shapes.size(); ++i) {
    ok = shapes[i].rank() == build_shapes_[i].rank();
    for (int64_t d = 1; ok && d < shapes[i].rank(); ++d)
      ok = build_shapes_[i][d] < 0 || shapes[i][d] < 0 || shapes[i][d] == build_shapes_[i][d];
  }
  EMBER_CHECK(ok, InvalidArgument) << class_name() << " '" << name_ << "': expected input shape "
                                   << shapes_string(build_shapes_) << " (the shape it was built for), got "
                                   << shapes_string(shapes);
}

// ---------------------------------------------------------------- weights

Variable Layer::add_weight(const std::string& name, const Shape& shape, const Initializer& initializer, bool trainable,
                           const Regularizer& regularizer) {
  // Built while a function traces: the initialiser runs once, now, outside the graph (TF lifts it out), and
  // its draws stay drawn when a dry trace or a branch's trace puts the random generator back.
  graph::InitScope outside_the_trace;
  Tensor value = initializer(shape, variable_dtype());
  const std::string scope = weight_scope_.empty() ? "" : weight_scope_ + "/";
  Variable v(value, {.name = scope + name_ + "/" + name, .trainable = trainable});
  weights_.push_back({v, regularizer});
  return v;
}

Tensor Layer::read(const Variable& v) const {
  Tensor t = v;
  if (!is_floating(t.dtype()) || t.dtype() == compute_dtype()) return t;
  // A tape that records the variable needs the cast recorded, for the gradient to reach the variable.
  const Tensor inputs[] = {t};
  // A traced function casts on every call: a cached cast would be captured as a constant.
  if (any_tape_records(inputs) || graph::is_tracing()) return ops::cast(t, compute_dtype());
  CastCache& cache = *cast_cache_;
  const DType to = compute_dtype();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = std::find_if(cache.entries.begin(), cache.entries.end(),
                         [&](const CastCache::Entry& e) { return e.variable == &v.value() && e.dtype == to; });
  if (it == cache.entries.end()) it = cache.entries.insert(cache.entries.end(), {&v.value(), 0, to, Tensor()});
  if (!it->cast.defined() || it->version != v.version()) {
    it->cast = ops::cast(t, to);
    it->version = v.version();
  }
  return it->cast;
}

void Layer::track(const LayerPtr& child) {
  for (const Child& c : children_)
    if (c.layer.get() == child.get()) return;
  children_.push_back({child, child->alive_});
}

std::vector<LayerPtr> Layer::sublayers() const {
  std::vector<LayerPtr> out;
  for (const Child& c : children_)
    if (!c.alive.expired()) out.push_back(c.layer);
  return out;
}

namespace {
void append_unique(std::vector<Variable>& out, const std::vector<Variable>& vs) {
  for (const Variable& v : vs) {
    bool seen = false;
    for (const Variable& o : out) seen = seen || &o.value() == &v.value();
    if (!seen) out.push_back(v);
  }
}
}  // namespace

std::vector<Variable> Layer::weights() const {
  std::vector<Variable> out;
  for (const Weight& w : weights_)
    if (w.variable.trainable()) out.push_back(w.variable);
  for (const Weight& w : weights_)
    if (!w.variable.trainable()) out.push_back(w.variable);
  for (const LayerPtr& c : sublayers()) append_unique(out, c->weights());
  return out;
}

void Layer::set_trainable(bool trainable) {
  trainable_ = trainable;
  for (const LayerPtr& c : sublayers()) c->set_trainable(trainable);
}

std::vector<Variable> Layer::trainable_weights() const {
  std::vector<Variable> out;
  if (!trainable_) return out;
  for (const Weight& w : weights_)
    if (w.variable.trainable()) out.push_back(w.variable);
  for (const LayerPtr& c : sublayers()) append_unique(out, c->trainable_weights());
  return out;
}

std::vector<Variable> Layer::non_trainable_weights() const {
  if (!trainable_) return weights();
  std::vector<Variable> out;
  for (const Weight& w : weights_)
    if (!w.variable.trainable()) out.push_back(w.variable);
  for (const LayerPtr& c : sublayers()) append_unique(out, c->non_trainable_weights());
  return out;
}

int64_t Layer::count_params() const {
  EMBER_CHECK(built_, FailedPrecondition) << class_name() << " '" << name_
                                          << "': count_params needs a built layer (call it on data or build it first)";
  int64_t n = 0;
  for (const Variable& v : weights()) n += v.shape().num_elements();
  return n;
}

std::vector<Tensor> Layer::get_weights() const {
  std::vector<Tensor> out;
  for (const Variable& v : weights()) out.push_back(v.value().clone());
  return out;
}

void Layer::set_weights(const std::vector<Tensor>& values) {
  std::vector<Variable> ws = weights();
  EMBER_CHECK(values.size() == ws.size(), InvalidArgument)
      << class_name() << " '" << name_ << "': set_weights got " << values.size() << " arrays but the layer has "
      << ws.size() << " weights";
  for (size_t i = 0; i < ws.size(); ++i) {
    EMBER_CHECK(values[i].shape() == ws[i].shape(), InvalidArgument)
        << class_name() << " '" << name_ << "': set_weights: weight " << ws[i].name() << " has shape "
        << ws[i].shape() << ", got an array of shape " << values[i].shape();
  }
  for (size_t i = 0; i < ws.size(); ++i) {
    Tensor v = values[i].dtype() == ws[i].dtype() ? values[i] : ops::cast(values[i], ws[i].dtype());
    ws[i].assign(v.to(ws[i].device()).clone());
  }
}

// ---------------------------------------------------------------- losses

std::vector<Tensor> Layer::losses() const {
  std::vector<Tensor> out;
  append_losses(out, false);
  return out;
}

void Layer::append_losses(std::vector<Tensor>& out, bool frozen) const {
  // Keras regularizes the trainable weights only: a frozen layer (or one inside a frozen layer) adds its
  // add_loss losses but no penalties.
  frozen = frozen || !trainable_;
  if (!frozen)
    for (const Weight& w : weights_)
      if (w.regularizer && w.variable.trainable()) out.push_back(w.regularizer(w.variable));
  out.insert(out.end(), call_losses_.begin(), call_losses_.end());
  for (const LayerPtr& c : sublayers()) c->append_losses(out, frozen);
}

void Layer::add_loss(const Tensor& loss) { call_losses_.push_back(loss); }

void Layer::clear_call_losses() {
  call_losses_.clear();
  for (const LayerPtr& c : sublayers()) c->clear_call_losses();
}

// ---------------------------------------------------------------- config

nlohmann::json Layer::base_config() const {
  return {{"name", name_},
          {"trainable", trainable_},
          {"dtype",
           {{"module", "keras"},
            {"class_name", "DTypePolicy"},
            {"config", {{"name", policy_.name()}}},
            {"registered_name", nullptr}}}};
}

nlohmann::json Layer::get_config() const { return base_config(); }

LayerOptions Layer::options_from_config(const nlohmann::json& c) {
  EMBER_CHECK(c.is_object(), InvalidArgument) << "Layer.from_config: the config must be an object, got " << c.dump();
  LayerOptions o;
  o.name = detail::config_string(c, "name", "", "Layer.from_config");
  const std::string who = "Layer '" + o.name + "'";
  o.trainable = detail::config_bool(c, "trainable", true, who);
  if (c.contains("dtype") && !c["dtype"].is_null()) {
    const nlohmann::json& d = c["dtype"];
    // "float32" (Keras 2), {"class_name": "Policy"|"DTypePolicy", "config": {"name": ...}} (both).
    const bool policy = d.is_object() && d.contains("config") && d["config"].is_object();
    EMBER_CHECK(d.is_string() || policy, InvalidArgument)
        << who << ": config \"dtype\" must be a dtype name or a DTypePolicy, got " << d.dump();
    o.dtype = d.is_string() ? d.get<std::string>() : detail::config_string(d["config"], "name", "", who + " dtype policy");
  }
  return o;
}

namespace {
std::mutex g_registry_mutex;
std::map<std::string, LayerFactory>& layer_registry() {
  static std::map<std::string, LayerFactory> r;
  return r;
}
}  // namespace

void register_layer(const std::string& class_name, LayerFactory factory) {
  std::lock_guard lock(g_registry_mutex);
  layer_registry()[class_name] = std::move(factory);
}

std::vector<std::string> registered_layers() {
  std::lock_guard lock(g_registry_mutex);
  std::vector<std::string> out;
  for (const auto& [name, f] : layer_registry()) out.push_back(name);
  return out;
}

LayerPtr deserialize_layer(const nlohmann::json& j) {
  EMBER_CHECK(j.is_object() && j.contains("class_name") && j["class_name"].is_string(), InvalidArgument)
      << "deserialize_layer: expected {\"class_name\": ..., \"config\": ...}, got " << j.dump().substr(0, 200);
  const std::string cls = j["class_name"].get<std::string>();
  LayerFactory f;
  {
    std::lock_guard lock(g_registry_mutex);
    auto it = layer_registry().find(cls);
    if (it != layer_registry().end()) f = it->second;
  }
  if (!f) {
    std::string known;
    for (const std::string& n : registered_layers()) known += (known.empty() ? "" : ", ") + n;
    throw InvalidArgument("deserialize_layer: unknown layer class \"" + cls + "\"; supported: " + known);
  }
  const nlohmann::json& config = j.contains("config") ? j["config"] : nlohmann::json::object();
  try {
    return f(config);
  } catch (const nlohmann::json::exception& e) {  // a missing key or a value of the wrong JSON type
    throw InvalidArgument("deserialize_layer: malformed config for class \"" + cls + "\" (" + e.what() +
                          "): " + config.dump().substr(0, 300));
  }
}

nlohmann::json serialize_layer(const Layer& layer) {
  return {{"class_name", layer.class_name()}, {"config", layer.get_config()}};
}

}  // namespace ember
