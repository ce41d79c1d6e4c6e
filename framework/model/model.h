#pragma once
// Model (Keras: keras.Model) in its three styles: functional Model(inputs, outputs) over the symbolic
// graph of layer calls, Sequential (a list of layers), and subclassed models overriding call().
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/model/functional.h"
#include "framework/model/layer.h"
#include "framework/model/trainer.h"

namespace ember {

class Model;
class ConcreteFunction;  // framework/graph/function.h
// Metric results of one step by name (Keras: what train_step returns), float32 scalars.
using MetricResults = std::vector<std::pair<std::string, Tensor>>;
namespace detail {
struct CompiledState;
// model.train_step(batch) on the number of threads that has been training faster (compiled_steps.cpp);
// start_cycle when the time since the last step (an epoch boundary) is no step's.
MetricResults tuned_train_step(Model& model, const data::Element& batch, bool start_cycle = false);
// model.train_step(batch) as fit runs it: under a strategy once per replica of this process, on the replica's
// part of the batch, in the replica's context (TF: strategy.run(train_step)) (trainer.cpp). Its results: for a
// name of one of the model's metrics, the last replica's (the replicas update the same metric objects, whose
// state then holds every part); for any other, the mean over the replicas (TF's MEAN of their step outputs).
MetricResults replica_train_step(Model& model, const data::Element& batch);
// model.test_step(batch) the same way (TF: strategy.run(test_step)), as evaluate and fit's validation run it.
MetricResults replica_test_step(Model& model, const data::Element& batch);
// model.test_step / predict_step, as a traced function unless compile asked to run eagerly (compiled_steps.cpp).
MetricResults run_test_step(Model& model, const data::Element& batch);
std::vector<Tensor> run_predict_step(Model& model, const data::Element& batch);
// One execution of compile's steps_per_execution: a step on each batch in turn, in one traced function
// unless compile asked to run eagerly (compiled_steps.cpp). The metrics after the last step; predict: each
// step's outputs.
MetricResults tuned_train_steps(Model& model, const std::vector<data::Element>& batches, bool start_cycle = false);
MetricResults run_test_steps(Model& model, const std::vector<data::Element>& batches);
std::vector<std::vector<Tensor>> run_predict_steps(Model& model, const std::vector<data::Element>& batches);
// compile's steps_per_execution; 1 before compile.
int steps_per_execution(const Model& model);
// The training step's traced functions, one per input signature traced so far, in trace order, those of
// several steps first (compiled_steps.cpp; TensorBoard writes the first one's graph). Empty when the model is
// not compiled, compile asked to run eagerly, or no step has been traced.
std::vector<std::shared_ptr<ConcreteFunction>> traced_train_functions(const Model& model);
}  // namespace detail

struct ModelOptions {
  std::string name{};   // empty: "functional", "sequential" or "model" made unique
  std::string dtype{};
  bool trainable = true;
};

// --- saving (framework/io/) ---
struct SaveWeightsOptions {
  bool overwrite = true;  // false: refuse (FailedPrecondition) when the file exists
};
struct SaveOptions {
  bool overwrite = true;          // false: refuse (FailedPrecondition) when the file exists
  bool include_optimizer = true;  // legacy .h5 only (a .keras file always carries it, as in Keras 3)
};
struct LoadWeightsOptions {
  bool by_name = false;        // legacy .h5 only: match layers by name instead of position
  bool skip_mismatch = false;  // skip (with a warning) weights whose shape or count differ
};

class Model : public Layer {
 public:
  // A subclassed model: override call(); the layers it calls are tracked as its sublayers.
  explicit Model(ModelOptions options = {});
  // A functional model from symbolic tensors made with layers::Input and layer calls.
  Model(const Tensor& inputs, const Tensor& outputs, ModelOptions options = {});
  Model(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, ModelOptions options = {});
  // One input and several outputs, Model(input, {out1, out2}), and several inputs and one output.
  Model(const Tensor& input, const std::vector<Tensor>& outputs, ModelOptions options = {});
  Model(const std::vector<Tensor>& inputs, const Tensor& output, ModelOptions options = {});
  Model(Model&&) noexcept = default;

  std::string class_name() const override;
  LayerPtr move_to_shared() && override;

  // Functional/Sequential: runs the graph. Subclasses override it.
  Tensor call(const Tensor& x, bool training) override;
  Tensor call(const std::vector<Tensor>& xs, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;

  // Every output of the model for these inputs (one tensor per model input), e.g. for several outputs.
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& inputs, bool training = false);

  // Keras's model.layers: graph layers in Keras order (functional models include their InputLayers;
  // Sequential's omit it), or the tracked sublayers of a subclassed model.
  std::vector<LayerPtr> layers() const;
  // The layer called name; NotFound listing the names otherwise.
  Layer& get_layer(const std::string& name) const;
  // Symbolic inputs and outputs (empty for a subclassed model).
  const std::vector<Tensor>& inputs() const { return inputs_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  bool is_graph_model() const { return !outputs_.empty(); }
  // The graph's layer calls in execution order (empty for a subclassed model).
  const std::vector<std::shared_ptr<detail::Node>>& nodes() const { return nodes_; }

  // Prints Keras's summary table (tf-keras layout) to os; line_length <= 0 picks Keras's default
  // (65 for a Sequential, 98 for a functional model).
  void summary(std::ostream& os, int line_length = -1) const;
  void summary() const;
  std::string summary_string(int line_length = -1) const;

  // --- configs (Keras: get_config / from_config / to_json / get_compile_config; framework/io/) ---
  // A functional model's Keras 3 config: {"name", "trainable", "layers": [{module, class_name, config,
  // registered_name, build_config, name, inbound_nodes}], "input_layers", "output_layers"}. A subclassed
  // model cannot be serialized (Unimplemented, as Keras's NotImplementedError).
  nlohmann::json get_config() const override;
  // A functional model from its config in either dialect (Keras 3 dict nodes or Keras 2 nested lists).
  static LayerPtr from_config(const nlohmann::json& config);
  // The model's Keras 3 serialized form as JSON text (Keras: model.to_json()).
  std::string to_json(int indent = -1) const;
  // Keras 3's "compile_config" ({} before compile): optimizer, loss, loss_weights, metrics,
  // weighted_metrics, run_eagerly, steps_per_execution, jit_compile. Names given to compile stay names.
  nlohmann::json get_compile_config() const;
  // Compiles the model from get_compile_config()'s form (nothing happens for an empty config).
  void compile_from_config(const nlohmann::json& config);

  // --- training (Keras: Model.compile/fit/evaluate/predict; framework/model/trainer.cpp) ---
  // Sets the optimizer, the loss (one for every output or one per output), the metrics and the loss
  // weights. Unknown names are InvalidArgument listing the known ones.
  void compile(CompileOptions options);
  bool compiled() const { return compiled_ != nullptr; }
  // Trains for epochs - initial_epoch epochs. Tensors are batched here (batch_size, shuffled each
  // epoch); a dataset is used as it is, each element being (x..., y..., [sample_weight]) with one x per
  // model input and one y per output. Returns the History of the epochs run.
  History fit(const Tensor& x, const Tensor& y, FitOptions options = {});
  History fit(const std::vector<Tensor>& x, const std::vector<Tensor>& y, FitOptions options = {});
  History fit(const data::Dataset& dataset, FitOptions options = {});
  // The loss and metrics over the data (Keras: evaluate(return_dict=True)).
  Logs evaluate(const Tensor& x, const Tensor& y, EvaluateOptions options = {});
  Logs evaluate(const std::vector<Tensor>& x, const std::vector<Tensor>& y, EvaluateOptions options = {});
  Logs evaluate(const data::Dataset& dataset, EvaluateOptions options = {});
  // Outputs for every sample, computed in batches (training = false). A model with several outputs
  // needs predict_outputs.
  Tensor predict(const Tensor& x, PredictOptions options = {});
  Tensor predict(const data::Dataset& dataset, PredictOptions options = {});
  std::vector<Tensor> predict_outputs(const std::vector<Tensor>& x, PredictOptions options = {});
  std::vector<Tensor> predict_outputs(const data::Dataset& dataset, PredictOptions options = {});
  // One step on one batch; the metrics are reset first, as Keras 3 does.
  Logs train_on_batch(const Tensor& x, const Tensor& y, OnBatchOptions options = {});
  Logs train_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y, OnBatchOptions options = {});
  Logs test_on_batch(const Tensor& x, const Tensor& y, OnBatchOptions options = {});
  Logs test_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y, OnBatchOptions options = {});
  Tensor predict_on_batch(const Tensor& x);

  // One training step on a batch (x..., y..., [sample_weight]); override for custom training logic
  // (forward under a GradientTape, compute_loss, gradients, optimizer().apply, compute_metrics). Under a strategy
  // fit calls it once per replica of the process, on the replica's part, in its replica context (TF's
  // strategy.run): optimizer().apply then sums the replicas' gradients.
  virtual MetricResults train_step(const data::Element& batch);
  // One evaluation step (forward, compute_loss, compute_metrics); under a strategy evaluate and fit's validation
  // call it once per replica of the process, on the replica's part, in its replica context, as train_step.
  virtual MetricResults test_step(const data::Element& batch);
  virtual std::vector<Tensor> predict_step(const data::Element& batch);

  // The total loss (Keras 3: compute_loss): the compiled losses, weighted, plus the regularization and
  // layer-added losses of the last call. Updates the per-output loss trackers of multi-output models.
  Tensor compute_loss(const std::vector<Tensor>& y, const std::vector<Tensor>& y_pred,
                      const Tensor& sample_weight = {});
  // Updates the compiled metrics (and the "loss" tracker with `loss` when given), then returns every
  // metric's result.
  MetricResults compute_metrics(const std::vector<Tensor>& y, const std::vector<Tensor>& y_pred,
                                const Tensor& sample_weight = {}, const Tensor& loss = {});
  // Every metric's current result: "loss", per-output losses, then the compiled metrics.
  MetricResults get_metrics_result() const;
  void reset_metrics();
  // The compiled optimizer (FailedPrecondition before compile).
  optimizers::Optimizer& optimizer() const;
  // The loss tracker and compiled metrics, in log order (empty before compile).
  std::vector<std::shared_ptr<metrics::Metric>> metrics() const;
  // Splits a batch into its model inputs, targets and sample weight (FailedPrecondition/InvalidArgument
  // when the element does not fit the model's inputs and outputs).
  void unpack_batch(const data::Element& batch, std::vector<Tensor>& x, std::vector<Tensor>& y,
                    Tensor& sample_weight) const;
  // Number of model inputs and outputs (1 and 1 for a subclassed model).
  size_t num_inputs() const;
  size_t num_outputs() const;

  // --- saving (framework/io/) ---
  // Writes every weight (and the built optimizer's variables when compiled) to `path`: `*.weights.h5` in
  // Keras 3's layout, other `*.h5`/`*.hdf5` in the legacy tf-keras layout, atomically (a failed save
  // leaves the previous file intact). Other names are InvalidArgument; an existing file with
  // overwrite=false is FailedPrecondition.
  void save_weights(const std::string& path, SaveWeightsOptions options = {}) const;
  // Loads weights saved by save_weights, Keras 3 (`.weights.h5`) or tf-keras (`.h5` weights or a full
  // model's /model_weights), detecting the layout from the file; restores the optimizer state of a
  // compiled model when the file has it. Mismatches are InvalidArgument naming the layer, the weight and
  // both shapes; a missing file NotFound; a file that is not HDF5 or is corrupt DataLoss.
  void load_weights(const std::string& path, LoadWeightsOptions options = {});
  // Writes the whole model (config, weights, compile config and optimizer state) by extension: `.keras`
  // (Keras 3's zip) or `.h5`/`.hdf5` (the legacy full-model file), atomically. Sequential and functional
  // models only; read back with models::load_model.
  void save(const std::string& path, SaveOptions options = {}) const;

  // Set by a callback to end fit after the current batch (Keras: model.stop_training).
  bool stop_training = false;
  // Set by a callback in on_train_begin (BackupAndRestore) to start fit at this epoch instead of its
  // initial_epoch (Keras: model._initial_epoch); fit reads and clears it.
  std::optional<int> initial_epoch_override;
  // The training data's position after the last finished epoch (data::Dataset::get_state of the dataset
  // fit reads; empty for tensors, whose shuffling draws from the global generator), kept by fit for
  // BackupAndRestore. A callback may set the override in on_train_begin; fit gives it to the dataset.
  std::vector<uint64_t> training_data_state;
  std::optional<std::vector<uint64_t>> training_data_state_override;

 protected:
  // Tracks exactly these sublayers (Sequential without a known input shape).
  void retrack(const std::vector<LayerPtr>& layers);
  // Replaces the graph (Sequential rebuilds it as layers are added).
  void set_graph(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);
  // Nodes in execution order (inputs first), and layers in Keras order.
  std::vector<std::shared_ptr<detail::Node>> nodes_;
  std::vector<LayerPtr> graph_layers_;
  std::vector<Tensor> inputs_, outputs_;
  bool sequential_ = false;
  std::shared_ptr<detail::CompiledState> compiled_;

 private:
  // compile; with defer_metric_errors, metrics that match no output throw at the first step instead.
  void compile_impl(CompileOptions options, bool defer_metric_errors);
  Model(const std::string& base_name, ModelOptions options);
  friend class Sequential;
  friend MetricResults detail::tuned_train_steps(Model& model, const std::vector<data::Element>& batches,
                                                 bool start_cycle);
  friend MetricResults detail::run_test_steps(Model& model, const std::vector<data::Element>& batches);
  friend std::vector<std::vector<Tensor>> detail::run_predict_steps(Model& model,
                                                                    const std::vector<data::Element>& batches);
  friend int detail::steps_per_execution(const Model& model);
  friend MetricResults detail::replica_train_step(Model& model, const data::Element& batch);
  friend MetricResults detail::replica_test_step(Model& model, const data::Element& batch);
  friend std::vector<std::shared_ptr<ConcreteFunction>> detail::traced_train_functions(const Model& model);
};

// What a Sequential accepts in its list: a layer (a temporary, or one held by std::shared_ptr) or the
// symbolic tensor of layers::Input.
struct SequentialEntry {
  template <class L>
    requires std::is_base_of_v<Layer, std::remove_cvref_t<L>> && (!std::is_lvalue_reference_v<L>)
  SequentialEntry(L&& layer) : layer(std::make_shared<std::remove_cvref_t<L>>(std::move(layer))) {}
  template <class L>
    requires std::is_base_of_v<Layer, L>
  SequentialEntry(std::shared_ptr<L> layer) : layer(std::move(layer)) {}
  SequentialEntry(const Tensor& input) : input(input) {}
  LayerPtr layer;
  Tensor input;
};

class Sequential : public Model {
 public:
  explicit Sequential(std::vector<SequentialEntry> entries = {}, ModelOptions options = {});
  Sequential(Sequential&&) noexcept = default;
  std::string class_name() const override { return "Sequential"; }
  LayerPtr move_to_shared() && override { return std::make_shared<Sequential>(std::move(*this)); }

  // Appends a layer; with a known input shape it is built at once (as Keras does).
  void add(SequentialEntry entry);
  // Removes the last layer.
  void pop();
  Tensor call(const Tensor& x, bool training) override;
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);

 private:
  void rebuild(const Shape& batch_shape, DType dtype);
  std::vector<LayerPtr> seq_layers_;
  std::shared_ptr<layers::InputLayer> input_layer_;
};

namespace detail {
// Sequential's Keras config from its base keys, its InputLayer (null when unknown) and its layers.
nlohmann::json sequential_config(nlohmann::json base, const layers::InputLayer* input, const std::vector<LayerPtr>& layers);
}  // namespace detail

namespace models {
struct LoadModelOptions {
  bool compile = true;  // restore the compiled loss, metrics, optimizer and its state when the file has them
};
// A model saved by Model::save, Keras 3 (`.keras`) or tf-keras 2.x (`.h5`), recognised by content
// (Keras: models.load_model). Missing file NotFound; not a model file or corrupt DataLoss naming the path;
// a format newer than Keras 3 Unimplemented.
Model load_model(const std::string& path, LoadModelOptions options = {});
// A new model of the same architecture with freshly initialised weights (Keras: clone_model); copy the
// weights with set_weights(get_weights()) when wanted. Subclassed models cannot be cloned this way.
std::shared_ptr<Model> clone_model(const Model& model);
// A Sequential or functional model from Keras JSON (Keras: models.model_from_json): model.to_json(), a
// .keras config.json or a legacy .h5 model_config, in either dialect; compiled when the JSON carries a
// compile_config. Unknown layer classes are InvalidArgument naming the class and the supported ones.
std::shared_ptr<Model> model_from_json(const std::string& json);
// The same from parsed JSON ({"class_name", "config", ...}; Keras: models.model_from_config).
std::shared_ptr<Model> model_from_config(const nlohmann::json& config);
}  // namespace models

}  // namespace ember
