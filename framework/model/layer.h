#pragma once
// Layer (Keras: keras.layers.Layer): weights built lazily from the first input's shape, call() composed
// of framework ops, Keras names, configs and weight bookkeeping. Subclasses override build, call,
// compute_output_shape and get_config; they never write backward code.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/autodiff/variable.h"
#include "framework/core/names.h"
#include "framework/core/strings.h"
#include "framework/core/tensor.h"
#include "framework/model/initializers.h"
#include "framework/model/regularizers.h"
#include "framework/precision/policy.h"

namespace ember {

class Layer;
using LayerPtr = std::shared_ptr<Layer>;

// Declares a built-in layer class's Keras class name and lets a temporary of it be moved into shared
// ownership (how `layers::Dense(10)(x)` keeps its layer alive in a functional model). Put it in the
// class body of every layer class, user layers included.
#define EMBER_LAYER(ClassName)                                                             \
 public:                                                                                   \
  std::string class_name() const override { return #ClassName; }                          \
  ::ember::LayerPtr move_to_shared() && override {                                         \
    return std::make_shared<ClassName>(std::move(*this));                                  \
  }                                                                                        \
                                                                                           \
 public:

// Options every layer accepts (each layer's own options struct repeats these three fields last).
struct LayerOptions {
  std::string name{};       // empty: a unique snake_case name from the class ("dense", "dense_1", ...)
  std::string dtype{};      // dtype policy name; empty: mixed_precision::global_policy()
  bool trainable = true;
};

// Keras call keyword arguments beyond the inputs and `training` (MultiHeadAttention's attention_mask and
// use_causal_mask, Attention's mask=[query_mask, value_mask], return_attention_scores): a JSON object of plain
// values in which {"__tensor__": i} stands for tensors[i]. A call on symbolic tensors records them on its
// functional node, the model passes them again each time it runs, and get_config writes them as Keras writes the
// node's "kwargs".
struct CallKwargs {
  nlohmann::json values = nlohmann::json::object();
  std::vector<Tensor> tensors;

  // Sets keyword `key` to a plain value, a tensor, or a list of tensors (none: Python's None).
  CallKwargs& set(const std::string& key, nlohmann::json value);
  CallKwargs& set(const std::string& key, const Tensor& tensor);
  CallKwargs& set(const std::string& key, const std::vector<std::optional<Tensor>>& tensors);
  bool empty() const { return values.empty(); }
  // The tensor of a keyword, or of entry `index` of a list-valued keyword; none when absent or null.
  // InvalidArgument naming `who` when the value is not a tensor (or a list of them).
  std::optional<Tensor> tensor(const std::string& key, const std::string& who) const;
  std::optional<Tensor> tensor(const std::string& key, size_t index, const std::string& who) const;
  // A boolean keyword's value (default when absent); InvalidArgument naming `who` when it is not a boolean.
  bool flag(const std::string& key, bool default_value, const std::string& who) const;
  // InvalidArgument naming `who` unless every keyword is one of `allowed`.
  void check_keys(const std::vector<std::string>& allowed, const std::string& who) const;
};

class Layer : public std::enable_shared_from_this<Layer> {
 public:
  // base_name: the snake_case stem of automatic names ("dense"); options as above.
  Layer(const std::string& base_name, const LayerOptions& options);
  virtual ~Layer();
  Layer(const Layer&) = delete;  // weights are copied only on purpose (models::clone_model + set_weights)
  Layer& operator=(const Layer&) = delete;
  Layer(Layer&& other) noexcept;
  Layer& operator=(Layer&&) = delete;

  // Keras's __call__: on the first call builds from the input's shape; checks later inputs against the
  // built shape (InvalidArgument naming the layer and both shapes); casts floating inputs to the
  // compute dtype; then runs call(). On symbolic inputs (layers::Input) it records a functional-model
  // node and returns symbolic outputs instead; the layer must then be a temporary or held by a
  // std::shared_ptr, so the model can own it.
  Tensor operator()(const Tensor& x, bool training = false) &;
  Tensor operator()(const Tensor& x, bool training = false) &&;
  Tensor operator()(const std::vector<Tensor>& xs, bool training = false) &;
  Tensor operator()(const std::vector<Tensor>& xs, bool training = false) &&;
  // Every output of one call, for layers that return several (Keras returns a list: an RNN with
  // return_state gives {output, states...}); operator() returns the first of them. On symbolic inputs it
  // records one functional-model node and returns a symbolic tensor per output.
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& xs, bool training = false) &;
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& xs, bool training = false) &&;
  // The same with Keras keyword arguments beyond training (see CallKwargs), for layers that take them
  // (check_call_kwargs); their tensors must be symbolic exactly when the inputs are.
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& xs, const CallKwargs& kwargs, bool training = false) &;
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& xs, const CallKwargs& kwargs, bool training = false) &&;

  // --- what subclasses override ---
  // Creates the weights (add_weight) for inputs of this shape (-1 = unknown batch dimension).
  virtual void build(const Shape& /*input_shape*/) {}
  // Several inputs (merge layers); the default accepts exactly one.
  virtual void build(const std::vector<Shape>& input_shapes);
  // The forward computation on concrete tensors.
  virtual Tensor call(const Tensor& x, bool training);
  // Several inputs; the default accepts exactly one.
  virtual Tensor call(const std::vector<Tensor>& xs, bool training);
  // Every output of the forward computation; layers with several outputs override it. The default returns
  // call()'s one output.
  virtual std::vector<Tensor> call_all(const std::vector<Tensor>& xs, bool training);
  // --- masking (Keras: supports_masking, compute_mask, call's mask argument) ---
  // A mask marks the valid entries of a tensor (bool; (batch, timesteps) for sequences) and travels beside it
  // (backend::get_keras_mask). The call operator passes the inputs' masks to call_masked, and when
  // supports_masking() sets compute_mask's masks on the outputs that carry none.
  bool supports_masking() const { return supports_masking_; }
  // The forward computation given each input's mask (undefined: none); called instead of call_all when an
  // input carries a mask. The default ignores the masks.
  virtual std::vector<Tensor> call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks,
                                          bool training);
  // The outputs' masks, in output order (undefined: none). The default passes the input masks on.
  virtual std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks);
  // --- keyword arguments (see CallKwargs) ---
  // Throws InvalidArgument naming the layer unless it takes these keyword arguments with inputs of these shapes.
  // The default takes none. Runs before every call with keyword arguments, symbolic or concrete.
  virtual void check_call_kwargs(const CallKwargs& kwargs, const std::vector<Shape>& input_shapes) const;
  // Output shape for an input shape (-1 dims stay -1). The default runs call() on zeros (batch 1).
  virtual Shape compute_output_shape(const Shape& input_shape);
  virtual Shape compute_output_shape(const std::vector<Shape>& input_shapes);
  // The shape of every output (layers with several outputs override it); default: compute_output_shape's.
  virtual std::vector<Shape> compute_output_shapes(const std::vector<Shape>& input_shapes);
  // Output dtype for input dtypes: the compute dtype for floating inputs, else the first input's dtype.
  virtual DType compute_output_dtype(const std::vector<DType>& input_dtypes) const;
  // Throws InvalidArgument when a built layer cannot take this input shape. The default requires the
  // built rank and every dimension but the first (batch) to match.
  virtual void check_input_shape(const std::vector<Shape>& input_shapes) const;
  // Keras config: {"name", "trainable", "dtype", ...layer keys}; from_config(get_config()) of the
  // registered class (EMBER_REGISTER_LAYER) rebuilds an equal, unbuilt layer.
  virtual nlohmann::json get_config() const;
  // Keras class name ("Dense"); EMBER_LAYER defines it.
  virtual std::string class_name() const = 0;
  // Moves this object into a new shared_ptr (EMBER_LAYER defines it).
  virtual LayerPtr move_to_shared() && = 0;

  // --- state ---
  const std::string& name() const { return name_; }
  bool built() const { return built_; }
  // Input shapes the layer was built for (batch dimension -1).
  const std::vector<Shape>& build_input_shapes() const { return build_shapes_; }
  // Builds for a shape without calling (Keras: layer.build(shape) from outside).
  void build_for(const std::vector<Shape>& input_shapes);

  // Names the variables this layer creates "<scope>/<layer>/<weight>" instead of "<layer>/<weight>", as Keras
  // names a weight inside the layer that owns this one (an RNN's cell: "lstm/lstm_cell/kernel"). Set before
  // the layer builds.
  void set_weight_name_scope(const std::string& scope) { weight_scope_ = scope; }

  bool trainable() const { return trainable_; }
  // A number no other layer made in this process has (a moved layer keeps it): what a compiled step's cache
  // tells layers apart by, where an address may be reused.
  uint64_t uid() const { return uid_; }
  // Freezing: a non-trainable layer reports every weight as non-trainable. As Keras's setter, the flag goes down
  // to every sublayer, so a frozen model's BatchNormalization layers run in inference mode.
  virtual void set_trainable(bool trainable);

  const mixed_precision::Policy& dtype_policy() const { return policy_; }
  DType compute_dtype() const { return policy_.compute_dtype(); }
  DType variable_dtype() const { return policy_.variable_dtype(); }

  // Keras order: own weights (creation order, trainable before non-trainable), then sublayers'.
  std::vector<Variable> weights() const;
  std::vector<Variable> trainable_weights() const;
  std::vector<Variable> non_trainable_weights() const;
  int64_t count_params() const;
  // Copies of the weight values in weights() order; set_weights checks count, shapes and dtypes.
  std::vector<Tensor> get_weights() const;
  void set_weights(const std::vector<Tensor>& values);

  // Regularization penalties of every trainable weight with a regularizer (computed now, so inside a
  // tape they are differentiable; a frozen layer's weights add none, as in Keras) plus the losses added
  // by add_loss during the last call.
  std::vector<Tensor> losses() const;
  // Adds an activity loss during call (Keras: self.add_loss); cleared at the start of each outer call.
  void add_loss(const Tensor& loss);

  // Sublayers, in tracking order: those called inside this layer's call (subclassing) or owned by a
  // model's graph.
  std::vector<LayerPtr> sublayers() const;
  // Sublayers Keras saves under an attribute's name rather than under "layers/" in a .weights.h5 file (an
  // RNN's "cell"), with that name. Default: none.
  virtual std::vector<std::pair<std::string, LayerPtr>> attribute_sublayers() const { return {}; }

 protected:
  // Creates a weight named "<layer>/<name>" in the variable dtype (Keras: add_weight).
  Variable add_weight(const std::string& name, const Shape& shape, const Initializer& initializer,
                      bool trainable = true, const Regularizer& regularizer = {});
  // A weight's value as the layer computes with it: cast to the compute dtype when the policy is mixed. Where no
  // tape records the variable (predict, evaluate, validation), the cast is made once per value of the variable
  // and reused until an assignment or an optimizer's update changes it.
  Tensor read(const Variable& v) const;
  // Registers a sublayer owned elsewhere (a member, or a model's graph).
  void track(const LayerPtr& child);
  // The config keys every layer shares, for subclasses' get_config.
  nlohmann::json base_config() const;
  // Fills LayerOptions from a config (name, trainable, dtype in either Keras dialect).
  static LayerOptions options_from_config(const nlohmann::json& config);
  // Used by Model::call to run graph layers without re-tracking them.
  friend class Model;
  // Set by layers that take or pass on masks (Keras: self.supports_masking = True).
  bool supports_masking_ = false;
  // The keyword arguments of the call in progress (empty outside calls given some), for call_all and
  // compute_output_shapes.
  const CallKwargs& call_kwargs() const;

 private:
  Tensor call_dispatch(const std::vector<Tensor>& xs, bool training, bool temporary);
  std::vector<Tensor> call_dispatch_all(const std::vector<Tensor>& xs, const CallKwargs& kwargs, bool training,
                                        bool temporary);
  Tensor call_concrete(const std::vector<Tensor>& xs, bool training);
  std::vector<Tensor> call_concrete_all(const std::vector<Tensor>& xs, bool training);
  std::vector<Tensor> call_concrete_all(const std::vector<Tensor>& xs, const CallKwargs& kwargs, bool training);
  std::vector<Tensor> call_symbolic(const std::vector<Tensor>& xs, const CallKwargs& kwargs, LayerPtr self);
  void ensure_built(const std::vector<Shape>& shapes);

  struct Weight {
    Variable variable;
    Regularizer regularizer;
  };
  std::string name_;
  uint64_t uid_;
  std::string weight_scope_;
  mixed_precision::Policy policy_;
  bool trainable_ = true;
  bool built_ = false;
  std::vector<Shape> build_shapes_;
  std::vector<Weight> weights_;
  // Sublayers; members tracked during a call are held without ownership, with a liveness token.
  struct Child {
    LayerPtr layer;
    std::weak_ptr<const int> alive;
  };
  std::vector<Child> children_;
  std::vector<Tensor> call_losses_;
  void append_losses(std::vector<Tensor>& out, bool frozen) const;
  std::shared_ptr<const int> alive_ = std::make_shared<const int>(0);
  void clear_call_losses();
  // read()'s casts of weights outside tapes, by variable, each valid while the variable's version stands.
  struct CastCache;
  std::shared_ptr<CastCache> cast_cache_;
};

// unique_layer_name (framework/core/names.h) and to_snake_case (framework/core/strings.h) name layers.

namespace backend {
// Resets automatic layer names (Keras: keras.backend.clear_session).
void clear_session();
// The mask a layer set beside tensor x (Keras: x._keras_mask), undefined when it has none.
Tensor get_keras_mask(const Tensor& x);
// Sets (or, with an undefined mask, removes) the mask beside x, for every copy of x.
void set_keras_mask(const Tensor& x, const Tensor& mask);
}  // namespace backend

// --- deserialisation registry ---
using LayerFactory = std::function<LayerPtr(const nlohmann::json& config)>;
void register_layer(const std::string& class_name, LayerFactory factory);
// Builds a layer from {"class_name", "config"} (either Keras dialect); an unknown class is
// InvalidArgument listing the registered ones.
LayerPtr deserialize_layer(const nlohmann::json& j);
// Registered class names, sorted.
std::vector<std::string> registered_layers();

// {"class_name", "config"} of a layer (Keras 2 form; the io code adds Keras 3's extra keys).
nlohmann::json serialize_layer(const Layer& layer);

// In a layer's .cpp: EMBER_REGISTER_LAYER(Dense) registers Dense::from_config under "Dense".
#define EMBER_REGISTER_LAYER(ClassName)                                                          \
  static const bool ember_layer_registered_##ClassName = [] {                                    \
    ::ember::register_layer(#ClassName, [](const nlohmann::json& c) -> ::ember::LayerPtr {       \
      return ClassName::from_config(c);                                                          \
    });                                                                                          \
    return true;                                                                                 \
  }()

}  // namespace ember
