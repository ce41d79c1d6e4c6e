#include "framework/model/model.h"

#include <algorithm>
#include <map>
#include <set>
#include <typeinfo>

#include "framework/model/keras_object.h"
#include "framework/ops/elementwise.h"

namespace ember {

using detail::Node;
using NodePtr = std::shared_ptr<Node>;

namespace {

const NodePtr& node_of(const Tensor& t) { return t.keras_history()->node; }

// The value of symbolic tensor t among the outputs each node gave (a node of a layer with several outputs
// gave several).
const Tensor& value_of(const std::map<const Node*, std::vector<Tensor>>& values, const Tensor& t) {
  const std::vector<Tensor>& outs = values.at(node_of(t).get());
  const int64_t k = t.keras_history()->tensor_index;
  EMBER_CHECK(k >= 0 && k < static_cast<int64_t>(outs.size()), InvalidArgument)
      << "Model: layer '" << node_of(t)->layer->name() << "' gave " << outs.size() << " outputs, but the model uses its output "
      << k;
  return outs[static_cast<size_t>(k)];
}

// Keras's functional map_graph: nodes in a valid execution order and layers in Keras's order (by depth
// from the outputs, deepest first; ties in first-visit order).
struct GraphMap {
  std::vector<NodePtr> nodes;  // execution order
  std::vector<LayerPtr> layers;
};

GraphMap map_graph(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  std::set<const Node*> input_nodes, finished, in_progress;
  for (const Tensor& t : inputs) input_nodes.insert(node_of(t).get());
  std::vector<NodePtr> order;  // post-order: a node after all it depends on
  std::map<const Layer*, int64_t> layer_index;
  std::vector<LayerPtr> layers_seen;
  std::function<void(const Tensor&)> visit = [&](const Tensor& t) {
    const NodePtr& n = node_of(t);
    if (finished.count(n.get())) return;
    EMBER_CHECK(!in_progress.count(n.get()), InvalidArgument) << "Model: the graph has a cycle at layer '"
                                                              << n->layer->name() << "'";
    if (!layer_index.count(n->layer.get())) {
      layer_index[n->layer.get()] = static_cast<int64_t>(layer_index.size());
      layers_seen.push_back(n->layer);
    }
    in_progress.insert(n.get());
    if (!input_nodes.count(n.get())) {
      EMBER_CHECK(!n->inputs.empty(), InvalidArgument)
          << "Model: the outputs depend on input '" << n->layer->name()
          << "', which is not among the model's inputs (every layers::Input used must be passed to Model)";
      for (const Tensor& in : n->inputs) visit(in);
    }
    in_progress.erase(n.get());
    finished.insert(n.get());
    order.push_back(n);
  };
  for (const Tensor& t : outputs) visit(t);

  // Depths: outputs 0; a node's parents at least one deeper; a layer at its deepest node.
  std::map<const Node*, int64_t> node_depth;
  std::map<const Layer*, int64_t> layer_depth;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node* n = it->get();
    int64_t d = std::max(node_depth[n], layer_depth.count(n->layer.get()) ? layer_depth[n->layer.get()] : 0);
    layer_depth[n->layer.get()] = d;
    node_depth[n] = d;
    if (input_nodes.count(n)) continue;
    for (const Tensor& in : n->inputs) {
      const Node* p = node_of(in).get();
      node_depth[p] = std::max(node_depth.count(p) ? node_depth[p] : 0, d + 1);
    }
  }
  GraphMap g;
  g.nodes = order;
  g.layers = layers_seen;
  std::stable_sort(g.layers.begin(), g.layers.end(), [&](const LayerPtr& a, const LayerPtr& b) {
    int64_t da = layer_depth[a.get()], db = layer_depth[b.get()];
    return da != db ? da > db : layer_index[a.get()] < layer_index[b.get()];
  });
  return g;
}

}  // namespace

Model::Model(ModelOptions options) : Model("model", std::move(options)) {}

Model::Model(const std::string& base_name, ModelOptions options)
    : Layer(base_name, {options.name, options.dtype, options.trainable}) {}

Model::Model(const Tensor& inputs, const Tensor& outputs, ModelOptions options)
    : Model(std::vector<Tensor>{inputs}, std::vector<Tensor>{outputs}, std::move(options)) {}

Model::Model(const Tensor& input, const std::vector<Tensor>& outputs, ModelOptions options)
    : Model(std::vector<Tensor>{input}, outputs, std::move(options)) {}

Model::Model(const std::vector<Tensor>& inputs, const Tensor& output, ModelOptions options)
    : Model(inputs, std::vector<Tensor>{output}, std::move(options)) {}

Model::Model(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, ModelOptions options)
    : Model("functional", std::move(options)) {
  EMBER_CHECK(!inputs.empty() && !outputs.empty(), InvalidArgument)
      << "Model '" << name() << "': a functional model needs at least one input and one output";
  for (const Tensor& t : inputs)
    EMBER_CHECK(t.defined() && t.is_symbolic(), InvalidArgument)
        << "Model '" << name() << "': inputs must be symbolic tensors from layers::Input";
  for (const Tensor& t : outputs)
    EMBER_CHECK(t.defined() && t.is_symbolic(), InvalidArgument)
        << "Model '" << name() << "': outputs must be symbolic tensors made by calling layers on inputs";
  set_graph(inputs, outputs);
}

void Model::set_graph(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  GraphMap g = map_graph(inputs, outputs);
  std::set<std::string> names;
  for (const LayerPtr& l : g.layers)
    EMBER_CHECK(names.insert(l->name()).second, InvalidArgument)
        << "Model '" << name() << "': the layer name \"" << l->name()
        << "\" is used more than once; layer names in a model must be unique";
  inputs_ = inputs;
  outputs_ = outputs;
  nodes_ = std::move(g.nodes);
  graph_layers_ = std::move(g.layers);
  children_.clear();
  for (const LayerPtr& l : graph_layers_) track(l);
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs_) shapes.push_back(t.shape());
  built_ = true;
  build_shapes_ = shapes;
}

LayerPtr Model::move_to_shared() && {
  EMBER_CHECK(typeid(*this) == typeid(Model), FailedPrecondition)
      << "Model '" << name() << "': a subclassed model used as a temporary needs EMBER_LAYER(YourClass) in its "
         "class body (or hold it in a std::shared_ptr)";
  return std::make_shared<Model>(std::move(*this));
}

void Model::retrack(const std::vector<LayerPtr>& ls) {
  children_.clear();
  for (const LayerPtr& l : ls) track(l);
}

// A Sequential moved into a plain Model (models::load_model returns a Model) keeps its graph and the
// sequential_ mark, so it still names and serializes itself as a Sequential.
std::string Model::class_name() const {
  return sequential_ ? "Sequential" : is_graph_model() ? "Functional" : "Model";
}

std::vector<Tensor> Model::call_outputs(const std::vector<Tensor>& xs, bool training) {
  if (!is_graph_model()) return {(*this)(xs, training)};
  EMBER_CHECK(xs.size() == inputs_.size(), InvalidArgument)
      << "Model '" << name() << "': expected " << inputs_.size() << " inputs, got " << xs.size();
  std::map<const Node*, std::vector<Tensor>> values;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Shape& want = inputs_[i].shape();
    const Shape& got = xs[i].shape();
    bool ok = want.rank() == got.rank();
    for (int64_t d = 0; ok && d < got.rank(); ++d) ok = want[d] < 0 || want[d] == got[d];
    // One sample without its batch axis (typically a dataset not yet batched) fits the trailing dimensions.
    bool one_sample = got.rank() + 1 == want.rank();
    for (int64_t d = 0; one_sample && d < got.rank(); ++d) one_sample = want[d + 1] < 0 || want[d + 1] == got[d];
    EMBER_CHECK(ok, InvalidArgument)
        << "Model '" << name() << "': input " << i << " ('" << node_of(inputs_[i])->layer->name() << "') expects shape "
        << want.to_keras_string() << ", got " << got
        << (one_sample ? "; that is one sample without the batch dimension: batch the dataset with .batch(batch_size) "
                         "(or give a single sample a batch axis with ops::expand_dims(x, 0))"
                       : "");
    Tensor x = xs[i];
    // Keras converts each input to its Input's dtype (uint8 images to float32, int64 ids to int32).
    const DType want_dtype = inputs_[i].dtype();
    if (x.dtype() != want_dtype && x.dtype() != DType::String && want_dtype != DType::String) {
      x = ops::cast(x, want_dtype);
      backend::set_keras_mask(x, backend::get_keras_mask(xs[i]));
    }
    values[node_of(inputs_[i]).get()] = {x};
  }
  for (const NodePtr& n : nodes_) {
    if (values.count(n.get())) continue;
    std::vector<Tensor> args;
    args.reserve(n->inputs.size());
    for (const Tensor& in : n->inputs) args.push_back(value_of(values, in));
    const bool node_training = n->training.value_or(training);
    // Most calls have no keyword arguments: those skip building them.
    values[n.get()] = n->kwargs.empty() ? n->layer->call_concrete_all(args, node_training)
                                        : n->layer->call_concrete_all(n->call_inputs(args), n->call_kwargs(args), node_training);
  }
  std::vector<Tensor> out;
  for (const Tensor& t : outputs_) out.push_back(value_of(values, t));
  return out;
}

Tensor Model::call(const Tensor& x, bool training) { return call(std::vector<Tensor>{x}, training); }

Tensor Model::call(const std::vector<Tensor>& xs, bool training) {
  EMBER_CHECK(is_graph_model(), Unimplemented)
      << "Model '" << name() << "': a subclassed model must override call()";
  std::vector<Tensor> out = call_outputs(xs, training);
  EMBER_CHECK(out.size() == 1, InvalidArgument)
      << "Model '" << name() << "': the model has " << out.size()
      << " outputs; use call_outputs() to get all of them";
  return out[0];
}

Shape Model::compute_output_shape(const Shape& input_shape) {
  if (!is_graph_model()) return Layer::compute_output_shape(input_shape);
  EMBER_CHECK(outputs_.size() == 1, InvalidArgument)
      << "Model '" << name() << "': compute_output_shape with several outputs is not supported";
  Shape out = outputs_[0].shape();
  if (out.rank() > 0 && input_shape.rank() > 0) out[0] = input_shape[0];
  return out;
}

Shape Model::compute_output_shape(const std::vector<Shape>& input_shapes) {
  if (input_shapes.size() == 1) return compute_output_shape(input_shapes[0]);
  EMBER_CHECK(is_graph_model() && outputs_.size() == 1, InvalidArgument)
      << "Model '" << name() << "': cannot infer the output shape for several inputs";
  return outputs_[0].shape();
}

void Model::check_input_shape(const std::vector<Shape>& shapes) const {
  if (is_graph_model()) return;  // call_outputs checks against the Input shapes
  Layer::check_input_shape(shapes);
}

std::vector<LayerPtr> Model::layers() const {
  if (!is_graph_model()) return sublayers();
  if (!sequential_) return graph_layers_;
  std::vector<LayerPtr> out;
  for (const LayerPtr& l : graph_layers_)
    if (!std::dynamic_pointer_cast<layers::InputLayer>(l)) out.push_back(l);
  return out;
}

Layer& Model::get_layer(const std::string& layer_name) const {
  std::string names;
  for (const LayerPtr& l : layers()) {
    if (l->name() == layer_name) return *l;
    names += (names.empty() ? "" : ", ") + l->name();
  }
  throw NotFound("Model '" + name() + "': no layer named \"" + layer_name + "\"; layers: " + names);
}

// ---------------------------------------------------------------- Sequential

Sequential::Sequential(std::vector<SequentialEntry> entries, ModelOptions options)
    : Model("sequential", std::move(options)) {
  sequential_ = true;
  for (SequentialEntry& e : entries) add(std::move(e));
}

void Sequential::add(SequentialEntry entry) {
  if (entry.input.defined()) {
    auto input = detail::input_layer_of(entry.input);
    EMBER_CHECK(input != nullptr, InvalidArgument)
        << "Sequential '" << name() << "': add() takes layers or a layers::Input tensor, got a layer output";
    EMBER_CHECK(seq_layers_.empty() && !input_layer_, InvalidArgument)
        << "Sequential '" << name() << "': layers::Input must come first";
    input_layer_ = input;
    rebuild(input->batch_shape(), input->input_dtype());
    return;
  }
  EMBER_CHECK(entry.layer != nullptr, InvalidArgument) << "Sequential '" << name() << "': add() got no layer";
  for (const LayerPtr& l : seq_layers_)
    EMBER_CHECK(l->name() != entry.layer->name(), InvalidArgument)
        << "Sequential '" << name() << "': a layer named \"" << entry.layer->name()
        << "\" is already in the model; layer names in a model must be unique";
  seq_layers_.push_back(entry.layer);
  if (is_graph_model()) {
    std::vector<Tensor> outs{(*entry.layer)(outputs_[0])};
    set_graph(inputs_, outs);
  } else {
    track(entry.layer);
  }
}

void Sequential::pop() {
  EMBER_CHECK(!seq_layers_.empty(), FailedPrecondition) << "Sequential '" << name() << "': pop() on an empty model";
  seq_layers_.pop_back();
  if (is_graph_model()) {
    rebuild(inputs_[0].shape(), inputs_[0].dtype());
  } else {
    retrack(seq_layers_);
  }
}

void Sequential::rebuild(const Shape& batch_shape, DType dtype) {
  if (!input_layer_) {
    Shape per_sample(batch_shape.begin() + 1, batch_shape.end());
    Tensor in = layers::Input(per_sample, {.batch_size = batch_shape[0], .dtype = dtype, .name = ""});
    input_layer_ = detail::input_layer_of(in);
  }
  // The Input tensor is recreated from the layer so that repeated rebuilds share one InputLayer.
  auto node = std::make_shared<Node>(Node{input_layer_, {}, batch_shape, dtype, std::nullopt, {}});
  Tensor x = Tensor::symbolic(batch_shape, dtype, std::make_shared<detail::KerasHistory>(detail::KerasHistory{node, 0}));
  Tensor y = x;
  for (const LayerPtr& l : seq_layers_) y = (*l)(y);
  set_graph({x}, {y});
}

Tensor Sequential::call(const Tensor& x, bool training) {
  if (!is_graph_model()) {
    EMBER_CHECK(!seq_layers_.empty(), FailedPrecondition)
        << "Sequential '" << name() << "': the model has no layers; add some before calling it";
    Shape batch_shape = x.shape();
    if (batch_shape.rank() > 0) batch_shape[0] = -1;
    rebuild(batch_shape, x.dtype());  // Keras builds a deferred Sequential from its first input
  }
  return Model::call(x, training);
}

namespace detail {
nlohmann::json sequential_config(nlohmann::json base, const layers::InputLayer* input, const std::vector<LayerPtr>& layers) {
  nlohmann::json layers_json = nlohmann::json::array();
  // Keras 3's form: each layer wrapped with module, registered_name and build_config.
  if (input) layers_json.push_back(serialize_keras_object(*input));
  for (const LayerPtr& l : layers) layers_json.push_back(serialize_keras_object(*l));
  base["layers"] = layers_json;
  if (input) {
    nlohmann::json shape = nlohmann::json::array();
    for (int64_t d : input->batch_shape()) shape.push_back(d < 0 ? nlohmann::json(nullptr) : nlohmann::json(d));
    base["build_input_shape"] = shape;
  }
  return base;
}
}  // namespace detail

nlohmann::json Sequential::get_config() const {
  return detail::sequential_config(base_config(), input_layer_.get(), seq_layers_);
}

LayerPtr Sequential::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  auto model = std::make_shared<Sequential>(std::vector<SequentialEntry>{},
                                            ModelOptions{base.name, base.dtype, base.trainable});
  const nlohmann::json& ls = c.is_array() ? c : c.at("layers");  // Keras <= 2.2: a bare list
  for (const nlohmann::json& lj : ls) {
    // Keras 2 without an InputLayer entry: the first layer's config carries batch_input_shape.
    const nlohmann::json* lc = lj.is_object() && lj.contains("config") ? &lj["config"] : nullptr;
    if (!model->input_layer_ && model->seq_layers_.empty() && lc && lc->is_object() &&
        lc->contains("batch_input_shape") && lj.value("class_name", std::string()) != "InputLayer") {
      nlohmann::json in_config = {{"batch_input_shape", (*lc)["batch_input_shape"]}};
      if (lc->contains("dtype") && ((*lc)["dtype"].is_string() || (*lc)["dtype"].is_object())) in_config["dtype"] = (*lc)["dtype"];
      auto in = std::static_pointer_cast<layers::InputLayer>(layers::InputLayer::from_config(in_config));
      model->input_layer_ = in;
      model->rebuild(in->batch_shape(), in->input_dtype());
    }
    LayerPtr l = deserialize_layer(lj);
    if (auto in = std::dynamic_pointer_cast<layers::InputLayer>(l)) {
      model->input_layer_ = in;
      model->rebuild(in->batch_shape(), in->input_dtype());
    } else {
      model->add(l);
    }
  }
  if (!model->is_graph_model() && c.is_object() && c.contains("build_input_shape") &&
      !c["build_input_shape"].is_null()) {
    Shape s;
    for (const auto& d : c["build_input_shape"]) s.push_back(d.is_null() ? -1 : d.get<int64_t>());
    model->rebuild(s, DType::Float32);
  }
  return model;
}

EMBER_REGISTER_LAYER(Sequential);

// ---------------------------------------------------------------- clone_model

namespace models {

std::shared_ptr<Model> clone_model(const Model& model) {
  EMBER_CHECK(model.is_graph_model(), Unimplemented)
      << "clone_model: model '" << model.name()
      << "' is a subclassed model; only Sequential and functional models can be cloned";
  if (auto seq = dynamic_cast<const Sequential*>(&model))
    return std::static_pointer_cast<Model>(Sequential::from_config(seq->get_config()));
  // Functional: replay the graph with fresh layers made from each layer's config.
  std::map<const Layer*, LayerPtr> fresh;
  std::map<const Node*, std::vector<Tensor>> values;
  auto layer_for = [&](const LayerPtr& l) {
    auto it = fresh.find(l.get());
    if (it == fresh.end()) it = fresh.emplace(l.get(), deserialize_layer(serialize_layer(*l))).first;
    return it->second;
  };
  std::vector<Tensor> inputs;
  for (const Tensor& t : model.inputs()) {
    auto in = detail::input_layer_of(t);
    Shape per_sample(t.shape().begin() + 1, t.shape().end());
    Tensor x = layers::Input(per_sample, {.batch_size = t.shape()[0], .dtype = t.dtype(), .name = in->name() + "_clone"});
    values[node_of(t).get()] = {x};
    inputs.push_back(x);
  }
  for (const NodePtr& n : model.nodes()) {
    if (values.count(n.get())) continue;
    std::vector<Tensor> args;
    for (const Tensor& in : n->inputs) args.push_back(value_of(values, in));
    LayerPtr l = layer_for(n->layer);
    values[n.get()] = l->call_outputs(n->call_inputs(args), n->call_kwargs(args));
    values[n.get()][0].keras_history()->node->training = n->training;
  }
  std::vector<Tensor> outputs;
  for (const Tensor& t : model.outputs()) outputs.push_back(value_of(values, t));
  return std::make_shared<Model>(inputs, outputs, ModelOptions{.name = model.name() + "_clone", .dtype = "", .trainable = true});
}

}  // namespace models

}  // namespace ember
