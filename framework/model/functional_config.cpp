// Functional models to and from their Keras config (Keras 3: models/functional.py get_config,
// functional_from_config, serialize_node, deserialize_node). Writes Keras 3's dict nodes; reads those and
// Keras 2's nested-list nodes.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "framework/core/error.h"
#include "framework/model/keras_object.h"
#include "framework/model/model.h"

namespace ember {

using json = nlohmann::json;
using detail::Node;

namespace {

json fcfg_shape_json(const Shape& s) {
  json out = json::array();
  for (int64_t d : s) out.push_back(d < 0 ? json(nullptr) : json(d));
  return out;
}

// A functional model counts its own creation as node 0 of itself when it is a layer of another model
// (Keras's kept_nodes = 1), so references to its calls in input/output_layers are one higher.
bool fcfg_is_functional(const Layer& l) {
  auto m = dynamic_cast<const Model*>(&l);
  return m && m->is_graph_model() && m->class_name() == "Functional";
}

// One [layer, node, tensor] reference of a config.
struct FcfgRef {
  std::string layer;
  int64_t node = 0;
  int64_t tensor = 0;
};

bool fcfg_is_ref(const json& j) {
  return j.is_array() && (j.size() == 3 || j.size() == 4) && j[0].is_string() && j[1].is_number_integer() &&
         j[2].is_number_integer();
}

FcfgRef fcfg_ref(const json& j) { return {j[0].get<std::string>(), j[1].get<int64_t>(), j[2].get<int64_t>()}; }

// input_layers / output_layers: one flat reference (Keras 3, a single tensor) or a list of them.
std::vector<FcfgRef> fcfg_refs(const json& j, const char* key) {
  EMBER_CHECK(j.is_array(), InvalidArgument)
      << "Model.from_config: \"" << key << "\" must be a [layer, node, tensor] list or a list of them, got "
      << j.dump().substr(0, 200);
  if (fcfg_is_ref(j)) return {fcfg_ref(j)};
  std::vector<FcfgRef> out;
  for (const json& e : j) {
    EMBER_CHECK(fcfg_is_ref(e), InvalidArgument)
        << "Model.from_config: \"" << key << "\" entries must be [layer, node, tensor], got " << e.dump().substr(0, 200);
    out.push_back(fcfg_ref(e));
  }
  return out;
}

// One layer call read from a config: its input references, a fixed training flag and further keyword arguments.
struct FcfgCall {
  std::vector<FcfgRef> inputs;
  bool as_list = false;  // the layer takes a list of tensors (merge layers)
  std::optional<bool> training;
  json keyword_inputs;  // the tensors of fcfg_keyword_input's keyword: a tensor or a list of them
  json kwargs = json::object();  // CallKwargs::values, {"__tensor__": i} for kwarg_refs[i]
  std::vector<FcfgRef> kwarg_refs;
};

bool fcfg_is_keras_tensor(const json& j) {
  return j.is_object() && j.value("class_name", std::string()) == "__keras_tensor__" && j.contains("config") &&
         j["config"].is_object() && j["config"].contains("keras_history") && fcfg_is_ref(j["config"]["keras_history"]);
}

// The keyword whose tensors Ember's layer takes as trailing inputs rather than as keyword arguments: an RNN's
// initial_state (Keras's rnn(x, initial_state=[h, c]) is Ember's rnn({x, h, c})), MultiHeadAttention's key.
const char* fcfg_keyword_input(const std::string& cls) {
  if (detail::keras_takes_initial_state(cls)) return "initial_state";
  if (detail::keras_takes_positional_inputs(cls)) return "key";
  return nullptr;
}

// A keyword argument's value with its Keras tensors replaced by {"__tensor__": i}, their references appended to refs.
json fcfg_kwarg_value(const json& v, std::vector<FcfgRef>& refs) {
  if (fcfg_is_keras_tensor(v)) {
    refs.push_back(fcfg_ref(v["config"]["keras_history"]));
    return {{"__tensor__", refs.size() - 1}};
  }
  if (!v.is_array() && !v.is_object()) return v;
  json out = v;
  for (auto it = out.begin(); it != out.end(); ++it) *it = fcfg_kwarg_value(*it, refs);
  return out;
}

// mask_op: whether a layer name is one of the Keras ops that computed masks (not rebuilt).
void fcfg_read_kwargs(const json& kwargs, const std::string& layer, const std::string& cls,
                      const std::function<bool(const std::string&)>& mask_op, FcfgCall& call) {
  if (kwargs.is_null()) return;
  EMBER_CHECK(kwargs.is_object(), InvalidArgument)
      << "Model.from_config: layer '" << layer << "': node kwargs must be an object, got " << kwargs.dump().substr(0, 200);
  const char* keyword_input = fcfg_keyword_input(cls);
  for (const auto& [k, v] : kwargs.items()) {
    if (v.is_null()) continue;  // Keras writes None-valued ones ("mask": null, "query_mask": null): the defaults
    if (k == "training" && v.is_boolean()) {
      call.training = v.get<bool>();
      continue;
    }
    if (keyword_input && k == keyword_input) {
      call.keyword_inputs = v;
      continue;
    }
    const size_t before = call.kwarg_refs.size();
    json value = fcfg_kwarg_value(v, call.kwarg_refs);
    // Keras 3 writes the masks its layers received from other layers (computed by mask ops); Ember's layers
    // recompute those as they run. A mask the model's own tensors give (an Input) is an argument like any other.
    const auto added = call.kwarg_refs.begin() + static_cast<std::ptrdiff_t>(before);
    if (k == "mask" &&
        (added == call.kwarg_refs.end() || std::any_of(added, call.kwarg_refs.end(), [&](const FcfgRef& r) { return mask_op(r.layer); }))) {
      call.kwarg_refs.resize(before);
      continue;
    }
    call.kwargs[k] = value;
  }
}

FcfgRef fcfg_tensor_ref(const json& t, const std::string& layer) {
  EMBER_CHECK(fcfg_is_keras_tensor(t), Unimplemented)
      << "Model.from_config: layer '" << layer
      << "': only symbolic tensors ({\"class_name\": \"__keras_tensor__\", \"config\": {\"keras_history\": [...]}}) "
         "are supported as call arguments, got "
      << t.dump().substr(0, 200);
  return fcfg_ref(t["config"]["keras_history"]);
}

FcfgCall fcfg_read_node(const json& node, const std::string& layer, const std::string& cls,
                        const std::function<bool(const std::string&)>& mask_op) {
  FcfgCall call;
  if (node.is_array()) {  // Keras 2: [[name, node, tensor, kwargs], ...]
    for (const json& e : node) {
      EMBER_CHECK(fcfg_is_ref(e), InvalidArgument)
          << "Model.from_config: layer '" << layer << "': a Keras 2 inbound node entry must be [layer, node, tensor, {kwargs}], got "
          << e.dump().substr(0, 200);
      call.inputs.push_back(fcfg_ref(e));
      if (e.size() == 4) fcfg_read_kwargs(e[3], layer, cls, mask_op, call);
    }
    EMBER_CHECK(call.keyword_inputs.is_null() && call.kwarg_refs.empty(), Unimplemented)
        << "Model.from_config: layer '" << layer << "': tensors as keyword arguments in a Keras 2 inbound node are not supported";
    call.as_list = call.inputs.size() > 1;
    return call;
  }
  EMBER_CHECK(node.is_object() && node.contains("args") && node["args"].is_array(), InvalidArgument)
      << "Model.from_config: layer '" << layer << "': an inbound node must be {\"args\": [...], \"kwargs\": {...}} (Keras 3) "
      << "or a list of [layer, node, tensor, kwargs] (Keras 2), got " << node.dump().substr(0, 200);
  const json& args = node["args"];
  EMBER_CHECK(!args.empty(), InvalidArgument) << "Model.from_config: layer '" << layer << "' is called with no arguments";
  if (args.size() > 1) {
    // Several positional tensors (Keras's mha(query, value, key)): Ember's layer takes them as one list.
    call.as_list = true;
    for (const json& t : args) call.inputs.push_back(fcfg_tensor_ref(t, layer));
  } else if (args[0].is_array()) {
    call.as_list = true;
    for (const json& t : args[0]) call.inputs.push_back(fcfg_tensor_ref(t, layer));
  } else {
    call.inputs.push_back(fcfg_tensor_ref(args[0], layer));
  }
  if (node.contains("kwargs")) fcfg_read_kwargs(node["kwargs"], layer, cls, mask_op, call);
  if (!call.keyword_inputs.is_null()) {
    // Keras's rnn(x, initial_state=[h, c]) is Ember's rnn({x, h, c}); mha(q, v, key=k) is mha({q, v, k}).
    const bool rnn = detail::keras_takes_initial_state(cls);
    EMBER_CHECK(!rnn || !call.as_list, InvalidArgument)
        << "Model.from_config: layer '" << layer << "' is called on a list and with initial_state; expected one sequence";
    EMBER_CHECK(rnn || call.inputs.size() == 2, InvalidArgument)
        << "Model.from_config: layer '" << layer << "' is given its key both by position and by keyword";
    const json& ts = call.keyword_inputs;
    for (const json& t : ts.is_array() ? ts : json::array({ts})) call.inputs.push_back(fcfg_tensor_ref(t, layer));
    call.as_list = true;
  }
  return call;
}

void fcfg_check_top_level(const json& c) {
  EMBER_CHECK(c.is_object() && c.contains("layers") && c["layers"].is_array() && c.contains("input_layers") &&
                  c.contains("output_layers"),
              InvalidArgument)
      << "Model.from_config: a functional model config needs \"layers\", \"input_layers\" and \"output_layers\", got keys "
      << [&] {
           std::string keys;
           if (c.is_object())
             for (const auto& [k, v] : c.items()) keys += (keys.empty() ? "" : ", ") + k;
           return keys.empty() ? c.dump().substr(0, 100) : keys;
         }();
}

// Model.from_config's graph rebuilt from a config's "layers": each layer created, then its calls replayed
// on the outputs of the calls they refer to. Keras 2 writes nested-list nodes and counts a nested model's
// (Functional, Model, Sequential) own creation as its node 0 everywhere; Keras 3 writes dict nodes and adds
// that 1 only for Functional layers, only in input/output_layers.
class FcfgRebuild {
 public:
  // Creates the layer of one "layers" entry; an InputLayer makes its tensor, others queue their calls.
  // Keras 3 records the ops that computed masks (NotEqual, Any, LogicalOr, ...) as nodes that only "mask"
  // arguments use, which Ember ignores (its layers recompute the masks): those nodes, of classes that are not
  // layers, are not rebuilt.
  explicit FcfgRebuild(const json& c) {
    const std::vector<std::string> known = registered_layers();
    auto op_node = [&](const json& e) {
      return e.is_object() && e.contains("name") && e["name"].is_string() && e.contains("class_name") &&
             e["class_name"].is_string() && !std::binary_search(known.begin(), known.end(), e["class_name"].get<std::string>());
    };
    // What the layers (not those ops) and the outputs take, other than masks.
    std::set<std::string> used;
    std::function<void(const json&)> collect = [&](const json& j) {
      if (j.is_object() && j.value("class_name", std::string()) == "__keras_tensor__" && j.contains("config") &&
          j["config"].contains("keras_history") && fcfg_is_ref(j["config"]["keras_history"])) {
        used.insert(j["config"]["keras_history"][0].get<std::string>());
      } else if (j.is_array() || j.is_object()) {
        for (const json& v : j) collect(v);
      }
    };
    for (const json& e : c["layers"]) {
      if (op_node(e) || !e.is_object() || !e.contains("inbound_nodes") || !e["inbound_nodes"].is_array()) continue;
      for (const json& n : e["inbound_nodes"]) {
        if (!n.is_object()) continue;
        if (n.contains("args")) collect(n["args"]);
        if (n.contains("kwargs") && n["kwargs"].is_object())
          for (const auto& [k, v] : n["kwargs"].items())
            if (k != "mask") collect(v);
      }
    }
    for (const FcfgRef& r : fcfg_refs(c["output_layers"], "output_layers")) used.insert(r.layer);
    for (const json& e : c["layers"])
      if (op_node(e) && !used.count(e["name"].get<std::string>())) mask_ops_.insert(e["name"].get<std::string>());
  }

  void add_layer(const json& entry) {
    EMBER_CHECK(entry.is_object() && entry.contains("class_name"), InvalidArgument)
        << "Model.from_config: each layer must be {\"class_name\", \"config\", \"name\", \"inbound_nodes\"}, got "
        << entry.dump().substr(0, 200);
    std::string lname = entry.contains("name") && entry["name"].is_string() ? entry["name"].get<std::string>()
                        : entry.contains("config") && entry["config"].is_object()
                            ? entry["config"].value("name", std::string())
                            : std::string();
    EMBER_CHECK(!lname.empty(), InvalidArgument) << "Model.from_config: a layer entry has no name: " << entry.dump().substr(0, 200);
    EMBER_CHECK(!created_.count(lname), InvalidArgument)
        << "Model.from_config: the layer name '" << lname << "' appears twice; layer names in a model must be unique";
    if (mask_ops_.count(lname)) return;
    LayerPtr l = deserialize_layer(entry);
    created_[lname] = l;
    classes_[lname] = entry["class_name"].get<std::string>();
    order_.push_back(lname);
    if (auto in = std::dynamic_pointer_cast<layers::InputLayer>(l)) {
      auto node = std::make_shared<Node>(Node{in, {}, in->batch_shape(), in->input_dtype(), std::nullopt, {}});
      produced_[lname].push_back({
          Tensor::symbolic(in->batch_shape(), in->input_dtype(), std::make_shared<detail::KerasHistory>(detail::KerasHistory{node, 0}))});
      return;
    }
    const json nodes = entry.value("inbound_nodes", json::array());
    EMBER_CHECK(nodes.is_array(), InvalidArgument)
        << "Model.from_config: layer '" << lname << "': inbound_nodes must be a list, got " << nodes.dump().substr(0, 200);
    for (const json& n : nodes) {
      keras2_ = keras2_ || n.is_array();
      pending_[lname].push_back(n);
    }
  }

  // Replays the calls, layer by layer, as often as needed: a layer shared at several depths has calls
  // that wait for later layers (Keras's functional_from_config does the same).
  void replay_calls() {
    while (!pending_.empty()) {
      bool progress = false;
      for (const std::string& lname : order_) {
        auto it = pending_.find(lname);
        if (it == pending_.end()) continue;
        const size_t done = replay_ready_calls(lname, it->second);
        if (done > 0) progress = true;
        if (done == it->second.size()) {
          pending_.erase(it);
        } else {
          it->second.erase(it->second.begin(), it->second.begin() + static_cast<std::ptrdiff_t>(done));
        }
      }
      if (!progress) {
        std::string stuck;
        for (const auto& [n, v] : pending_) stuck += (stuck.empty() ? "" : ", ") + n;
        throw InvalidArgument("Model.from_config: the graph has loops or calls on outputs that no layer makes; unresolved "
                              "calls of layers: " + stuck);
      }
    }
  }

  // The tensors c[key] ("input_layers" or "output_layers") refers to.
  std::vector<Tensor> tensors(const json& c, const char* key) {
    std::vector<Tensor> out;
    for (const FcfgRef& r : fcfg_refs(c[key], key)) {
      const std::string who = std::string("\"") + key + "\"";
      int64_t offset = 0;
      if (created_.count(r.layer) && is_model_class(r.layer, keras2_)) offset = 1;
      std::optional<Tensor> t = resolve(r, who, offset);
      EMBER_CHECK(t.has_value(), InvalidArgument) << "Model.from_config: " << who << " refers to call " << r.node
                                                  << " of layer '" << r.layer << "', which the config never makes";
      out.push_back(*t);
    }
    return out;
  }

 private:
  // Replays lname's queued calls in order up to the first whose inputs are not made yet; returns how many ran.
  size_t replay_ready_calls(const std::string& lname, const std::vector<json>& calls) {
    size_t done = 0;
    for (; done < calls.size(); ++done) {
      const json& node = calls[done];
      const std::string who = "layer '" + lname + "' call " + std::to_string(produced_[lname].size());
      FcfgCall call = fcfg_read_node(node, lname, classes_[lname], [&](const std::string& l) { return mask_ops_.count(l) > 0; });
      EMBER_CHECK(!call.inputs.empty(), InvalidArgument) << "Model.from_config: " << who << " has no inputs";
      std::vector<FcfgRef> refs = call.inputs;
      refs.insert(refs.end(), call.kwarg_refs.begin(), call.kwarg_refs.end());
      std::vector<Tensor> args;
      for (const FcfgRef& r : refs) {
        std::optional<Tensor> t = resolve(r, who, node.is_array() && is_model_class(r.layer, true) ? 1 : 0);
        if (!t) break;
        args.push_back(*t);
      }
      if (args.size() < refs.size()) break;
      CallKwargs kwargs{call.kwargs, std::vector<Tensor>(args.begin() + static_cast<std::ptrdiff_t>(call.inputs.size()), args.end())};
      args.resize(call.inputs.size());
      // Every output of the call: a later reference may name any of them ([layer, node, tensor]).
      std::vector<Tensor> ys = created_[lname]->call_outputs(args, kwargs);
      if (call.training) ys[0].keras_history()->node->training = call.training;
      produced_[lname].push_back(std::move(ys));
    }
    return done;
  }

  bool is_model_class(const std::string& lname, bool keras2_rule) const {
    auto it = classes_.find(lname);
    if (it == classes_.end()) return false;  // resolve() reports the unknown name
    const std::string& cls = it->second;
    return cls == "Functional" || cls == "Model" || (keras2_rule && cls == "Sequential");
  }

  std::string layer_names() const {
    std::string s;
    for (const std::string& n : order_) s += (s.empty() ? "" : ", ") + n;
    return s;
  }

  // The output of a reference, or nothing while the call it names has not been replayed yet.
  std::optional<Tensor> resolve(const FcfgRef& r, const std::string& who, int64_t offset) {
    EMBER_CHECK(!mask_ops_.count(r.layer), Unimplemented)
        << "Model.from_config: " << who << " takes the output of Keras operation '" << r.layer
        << "', which Ember reads only as a mask computation (a layer's \"mask\" argument)";
    EMBER_CHECK(created_.count(r.layer), InvalidArgument)
        << "Model.from_config: " << who << " refers to layer '" << r.layer << "', which is not in the config; layers: "
        << layer_names();
    const int64_t k = r.node - offset;
    EMBER_CHECK(k >= 0, InvalidArgument) << "Model.from_config: " << who << " refers to node " << r.node << " of layer '"
                                         << r.layer << "', which does not exist";
    const auto& outs = produced_[r.layer];
    if (k >= static_cast<int64_t>(outs.size())) return std::nullopt;
    const std::vector<Tensor>& call_outs = outs[static_cast<size_t>(k)];
    EMBER_CHECK(r.tensor >= 0 && r.tensor < static_cast<int64_t>(call_outs.size()), InvalidArgument)
        << "Model.from_config: " << who << " uses output " << r.tensor << " of layer '" << r.layer << "', which gives "
        << call_outs.size() << (call_outs.size() == 1 ? " output" : " outputs");
    return call_outs[static_cast<size_t>(r.tensor)];
  }

  std::vector<std::string> order_;
  std::map<std::string, LayerPtr> created_;
  std::map<std::string, std::string> classes_;
  std::map<std::string, std::vector<std::vector<Tensor>>> produced_;  // per layer, the outputs of each call so far
  std::map<std::string, std::vector<json>> pending_;
  std::set<std::string> mask_ops_;  // Keras op nodes that computed masks, not rebuilt
  bool keras2_ = false;
};

}  // namespace

json Model::get_config() const {
  // A Sequential moved into a plain Model (see Model::class_name).
  if (sequential_ && is_graph_model())
    return detail::sequential_config(base_config(), detail::input_layer_of(inputs_[0]).get(), layers());
  EMBER_CHECK(is_graph_model(), Unimplemented)
      << "Model '" << name() << "' (" << class_name()
      << ") is a subclassed model: its architecture is C++ code, so it has no config and cannot be serialized; "
         "build it as a functional or Sequential model, or save only its weights";
  // Each node's index among its layer's calls in this model (Keras reindexes to the model's own nodes).
  std::map<const Node*, int64_t> node_index;
  std::map<const Layer*, int64_t> calls;
  for (const auto& n : nodes_) node_index[n.get()] = calls[n->layer.get()]++;
  auto history = [&](const Tensor& t) {
    const Node* n = t.keras_history()->node.get();
    return json::array({n->layer->name(), node_index.at(n), t.keras_history()->tensor_index});
  };
  json layer_configs = json::array();
  for (const LayerPtr& l : graph_layers_) {
    json entry = serialize_keras_object(*l);
    entry["name"] = l->name();
    json inbound = json::array();
    for (const auto& n : nodes_) {
      if (n->layer != l || n->inputs.empty()) continue;
      auto tensor_json = [&](const Tensor& t) -> json {
        return {{"class_name", "__keras_tensor__"},
                {"config", {{"shape", fcfg_shape_json(t.shape())}, {"dtype", dtype_name(t.dtype())}, {"keras_history", history(t)}}}};
      };
      json tensors = json::array();
      for (const Tensor& t : n->call_inputs(n->inputs)) tensors.push_back(tensor_json(t));
      // The keyword arguments as recorded, each {"__tensor__": i} replaced by that keyword tensor.
      const std::vector<Tensor> kw_tensors = n->call_kwargs(n->inputs).tensors;
      std::function<json(const json&)> with_tensors = [&](const json& v) -> json {
        if (v.is_object() && v.contains("__tensor__")) return tensor_json(kw_tensors.at(v["__tensor__"].get<size_t>()));
        if (!v.is_array() && !v.is_object()) return v;
        json out = v;
        for (auto it = out.begin(); it != out.end(); ++it) *it = with_tensors(*it);
        return out;
      };
      json kwargs = n->kwargs.is_null() ? json::object() : with_tensors(n->kwargs);
      if (n->training) kwargs["training"] = *n->training;
      if (tensors.size() > 1 && detail::keras_takes_initial_state(l->class_name())) {
        // Ember's rnn({x, h, c}) is Keras's rnn(x, initial_state=[h, c]).
        kwargs["initial_state"] = json(tensors.begin() + 1, tensors.end());
        tensors = json::array({tensors[0]});
      }
      // MultiHeadAttention({q, v}) is Keras's mha(q, v): one positional argument per input.
      const bool positional = detail::keras_takes_positional_inputs(l->class_name());
      inbound.push_back({{"args", positional ? tensors : json::array({tensors.size() == 1 ? tensors[0] : tensors})},
                         {"kwargs", kwargs}});
    }
    entry["inbound_nodes"] = inbound;
    layer_configs.push_back(entry);
  }
  auto refs = [&](const std::vector<Tensor>& ts) {
    json out = json::array();
    for (const Tensor& t : ts) {
      json h = history(t);
      if (fcfg_is_functional(*t.keras_history()->node->layer)) h[1] = h[1].get<int64_t>() + 1;
      out.push_back(h);
    }
    return out.size() == 1 ? out[0] : out;  // Keras 3 writes a single tensor flat
  };
  return {{"name", name()}, {"trainable", trainable()}, {"layers", layer_configs},
          {"input_layers", refs(inputs_)}, {"output_layers", refs(outputs_)}};
}

LayerPtr Model::from_config(const json& c) {
  fcfg_check_top_level(c);
  FcfgRebuild graph(c);
  for (const json& entry : c["layers"]) graph.add_layer(entry);
  graph.replay_calls();
  std::vector<Tensor> inputs = graph.tensors(c, "input_layers"), outputs = graph.tensors(c, "output_layers");
  // Keras passes a missing or null name/trainable on as None (the defaults).
  json base_keys = json::object();
  for (const char* k : {"name", "trainable", "dtype"})
    if (c.contains(k) && !c[k].is_null()) base_keys[k] = c[k];
  LayerOptions base = options_from_config(base_keys);
  return std::make_shared<Model>(inputs, outputs, ModelOptions{base.name, base.dtype, base.trainable});
}

// "Functional" is what Keras 2.4+ and Keras 3 write; older tf.keras wrote "Model".
EMBER_REGISTER_LAYER(Model);
static const bool ember_layer_registered_Functional = [] {
  register_layer("Functional", [](const json& c) -> LayerPtr { return Model::from_config(c); });
  return true;
}();

}  // namespace ember
