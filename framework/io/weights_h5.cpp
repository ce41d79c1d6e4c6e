// Keras 3's weights store (saving_lib.py: _save_state/_load_state over _walk_saveable, H5IOStore) and
// the whole-file entry points behind Model::save_weights/load_weights.
#include "framework/io/weights_h5.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "framework/core/logging.h"
#include "framework/io/atomic_file.h"
#include "framework/io/weights_h5_internal.h"
#include "framework/model/model.h"
#include "framework/ops/elementwise.h"
#include "optimizers/loss_scale_optimizer.h"
#include "optimizers/optimizer.h"

namespace ember::io {

// --- shared helpers (weights_h5_internal.h) ---
namespace weights_detail {

std::vector<Variable> own_variables(const Layer& layer) {
  std::set<const void*> inherited;
  for (const LayerPtr& child : layer.sublayers())
    for (const Variable& v : child->weights()) inherited.insert(&v.value());
  std::vector<Variable> out;
  for (const Variable& v : layer.weights())
    if (!inherited.count(&v.value())) out.push_back(v);
  return out;
}

bool AssignPlan::check(const Variable& v, const Tensor& value, const std::string& what, std::string& error) const {
  if (v.shape() == value.shape()) return true;
  error = what + ": weight '" + v.name() + "' expects shape " + v.shape().to_string() + ", the file has shape " +
          value.shape().to_string();
  return false;
}

void AssignPlan::apply() {
  for (auto& [v, value] : items_) {
    Tensor t = value.dtype() == v.dtype() ? value : ops::cast(value, v.dtype());
    v.assign(t.device() == v.device() ? t : t.to(v.device()));
  }
  items_.clear();
}

void warn(const std::string& message) { logging::warn(message); }

}  // namespace weights_detail

namespace {

using weights_detail::own_variables;

std::string weightsh5_join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "/" + b; }

// Keras's _get_unique_name: "dense", then "dense_1", "dense_2", ... within one container.
std::string weightsh5_unique(const std::string& base, std::map<std::string, int>& used) {
  auto it = used.find(base);
  if (it == used.end()) {
    used[base] = 0;
    return base;
  }
  return base + "_" + std::to_string(++it->second);
}

// The saveables Keras walks, with their paths below the layer's: a model's layers (Sequential omits its
// InputLayer) or the tracked sublayers of any other layer under "layers/<snake class>[_N]", and sublayers
// Keras reaches through an attribute (an RNN's "cell") under that attribute's name.
std::vector<std::pair<std::string, LayerPtr>> weightsh5_children(const Layer& layer) {
  std::vector<std::pair<std::string, LayerPtr>> out = layer.attribute_sublayers();
  std::set<const Layer*> by_attribute;
  for (const auto& [attr, child] : out) by_attribute.insert(child.get());
  const auto* m = dynamic_cast<const Model*>(&layer);
  std::map<std::string, int> used;
  for (const LayerPtr& child : m ? m->layers() : layer.sublayers()) {
    if (by_attribute.count(child.get())) continue;
    // Named before the visited check, as Keras does: a shared layer still takes its name's slot.
    out.emplace_back(weightsh5_join("layers", weightsh5_unique(to_snake_case(child->class_name()), used)), child);
  }
  return out;
}

const optimizers::Optimizer* weightsh5_optimizer(const Layer& layer) {
  const auto* m = dynamic_cast<const Model*>(&layer);
  return m && m->compiled() ? &m->optimizer() : nullptr;
}

class Weightsh5Saver {
 public:
  explicit Weightsh5Saver(H5Group root) : root_(std::move(root)) {}

  void save(const Layer& layer, const std::string& inner) {
    if (!visited_.insert(&layer).second) return;
    make(inner, layer.name(), own_variables(layer));
    for (const auto& [path, child] : weightsh5_children(layer)) save(*child, weightsh5_join(inner, path));
    if (const optimizers::Optimizer* opt = weightsh5_optimizer(layer); opt && visited_.insert(opt).second) {
      const std::string path = weightsh5_join(inner, "optimizer");
      make(path, opt->name(), opt->variables());
      // Keras also stores a wrapped optimizer on its own (readers here take the wrapper's full list).
      if (const auto* lso = dynamic_cast<const optimizers::LossScaleOptimizer*>(opt))
        make(weightsh5_join(path, "inner_optimizer"), lso->inner_optimizer()->name(),
             lso->inner_optimizer()->variables());
    }
  }

 private:
  // H5IOStore.make with metadata {"name": ...}: the vars group exists even when there are no variables.
  void make(const std::string& inner, const std::string& name, const std::vector<Variable>& vars) {
    H5Group g = root_.create_group(weightsh5_join(inner, "vars"));
    g.set_attr_string("name", name);
    for (size_t i = 0; i < vars.size(); ++i) g.write_dataset(std::to_string(i), vars[i].value());
  }

  H5Group root_;
  std::set<const void*> visited_;
};

class Weightsh5Loader {
 public:
  Weightsh5Loader(H5Group root, bool skip_mismatch)
      : root_(std::move(root)), skip_(skip_mismatch), tf213_(root_.has_group("_layer_checkpoint_dependencies")) {}

  void load(Layer& layer, const std::string& inner) {
    if (!visited_.insert(&layer).second) return;
    load_vars(inner, "layer '" + layer.name() + "' (" + layer.class_name() + ")", own_variables(layer), false);
    for (const auto& [path, child] : weightsh5_children(layer)) load(*child, weightsh5_join(inner, path));
    auto* model = dynamic_cast<Model*>(&layer);
    if (!model || !model->compiled()) return;
    optimizers::Optimizer& opt = model->optimizer();
    if (!visited_.insert(&opt).second) return;
    const std::string path = weightsh5_join(inner, "optimizer");
    std::optional<H5Group> s = store(path);
    if (!s || s->children().empty()) return;
    // Keras builds the optimizer of a compiled model before restoring it (compile_from_config).
    if (!opt.built()) opt.build(model->trainable_weights());
    load_vars(path, "optimizer '" + opt.name() + "' (" + opt.class_name() + ")", opt.variables(), true);
  }

  void apply() { plan_.apply(); }

 private:
  // H5IOStore.get: `<path>/vars`, with tf-keras 2.13's `_layer_checkpoint_dependencies` for `layers`.
  std::optional<H5Group> store(const std::string& inner) const {
    auto at = [&](const std::string& p) -> std::optional<H5Group> {
      std::string vars = weightsh5_join(p, "vars");
      if (root_.has_group(vars)) return root_.group(vars);
      return std::nullopt;
    };
    std::optional<H5Group> s = at(inner);
    if (!s && tf213_) {
      std::string alt = inner;
      for (size_t pos = 0; (pos = alt.find("layers", pos)) != std::string::npos; pos += 30)
        alt.replace(pos, 6, "_layer_checkpoint_dependencies");
      s = at(alt);
    }
    return s;
  }

  void load_vars(const std::string& inner, const std::string& what, const std::vector<Variable>& vars,
                 bool count_mismatch_warns) {
    std::optional<H5Group> s = store(inner);
    const std::string at = "'/" + weightsh5_join(inner, "vars") + "'";
    const std::string desc = "Model.load_weights('" + root_.file_path() + "'): " + what;
    const size_t n = s ? s->children().size() : 0;
    if (n != vars.size()) {
      std::string names;
      for (const Variable& v : vars) names += (names.empty() ? "" : ", ") + v.name();
      std::string msg = desc + " has " + std::to_string(vars.size()) + " variables [" + names + "] but the file has " +
                        std::to_string(n) + " at " + at;
      // Keras only warns for an optimizer whose variable count differs (e.g. another optimizer class).
      if (count_mismatch_warns) return weights_detail::warn(msg + "; the optimizer state is not restored");
      return fail(msg);
    }
    std::vector<std::pair<Variable, Tensor>> values;
    for (size_t i = 0; i < vars.size(); ++i) {
      Tensor t = s->read_dataset(std::to_string(i));
      std::string error;
      if (!plan_.check(vars[i], t, desc + " (#" + std::to_string(i) + " at " + at + ")", error)) return fail(error);
      values.emplace_back(vars[i], t);
    }
    for (auto& [v, t] : values) plan_.add(v, t);
  }

  void fail(const std::string& msg) {
    if (skip_) return weights_detail::warn(msg + "; skipped (skip_mismatch)");
    throw InvalidArgument(msg);
  }

  H5Group root_;
  bool skip_;
  bool tf213_;
  std::set<const void*> visited_;
  weights_detail::AssignPlan plan_;
};

bool weightsh5_ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void weightsh5_check_built(const Model& model, const char* what) {
  EMBER_CHECK(model.built(), FailedPrecondition)
      << what << ": model '" << model.name()
      << "' is not built yet, so it has no weights: call it on data or give it an input shape first";
}

}  // namespace

WeightsLayout detect_weights_layout(const H5Group& root) {
  if (root.has_attr("layer_names") || root.has_attr("layer_names0")) return WeightsLayout::LegacyWeights;
  if (root.has_group("model_weights")) return WeightsLayout::LegacyFullModel;
  for (const char* g : {"layers", "vars", "optimizer", "_layer_checkpoint_dependencies"})
    if (root.has_group(g)) return WeightsLayout::Keras3;
  return WeightsLayout::Unknown;
}

void write_keras3_weights(H5Group root, const Model& model) { Weightsh5Saver(std::move(root)).save(model, ""); }

void read_keras3_weights(const H5Group& root, Model& model, bool skip_mismatch) {
  Weightsh5Loader loader(root, skip_mismatch);
  loader.load(model, "");
  loader.apply();
}

void save_weights_file(const Model& model, const std::string& path, bool overwrite) {
  const bool keras3 = weightsh5_ends_with(path, ".weights.h5");
  EMBER_CHECK(keras3 || weightsh5_ends_with(path, ".h5") || weightsh5_ends_with(path, ".hdf5"), InvalidArgument)
      << "Model.save_weights: unsupported file name '" << path
      << "': expected a name ending in .weights.h5 (Keras 3 layout) or .h5/.hdf5 (legacy tf-keras layout)";
  weightsh5_check_built(model, "Model.save_weights");
  std::error_code ec;
  EMBER_CHECK(overwrite || !std::filesystem::exists(path, ec), FailedPrecondition)
      << "Model.save_weights: '" << path << "' already exists and overwrite is false";
  write_atomically(path, [&](const std::string& tmp) {
    H5File file = H5File::create(tmp);
    {
      H5Group root = file.root();
      if (keras3) {
        write_keras3_weights(root, model);
      } else {
        write_legacy_model_weights(root, model);
      }
    }
    file.close();
  });
}

namespace {
void weightsh5_load(Model& model, const std::string& path, bool by_name, bool skip_mismatch) {
  H5File file = H5File::open_read(path);
  H5Group root = file.root();
  switch (detect_weights_layout(root)) {
    case WeightsLayout::Keras3:
      EMBER_CHECK(!by_name, InvalidArgument)
          << "Model.load_weights('" << path << "'): by_name only applies to legacy .h5 weights; this file has the "
          << "Keras 3 layout, which is matched by structure";
      read_keras3_weights(root, model, skip_mismatch);
      return;
    case WeightsLayout::LegacyWeights:
      read_legacy_model_weights(root, model, by_name, skip_mismatch);
      return;
    case WeightsLayout::LegacyFullModel:
      read_legacy_model_weights(root.group("model_weights"), model, by_name, skip_mismatch);
      return;
    case WeightsLayout::Unknown:
      break;
  }
  std::string found;
  for (const std::string& c : root.children()) found += (found.empty() ? "" : ", ") + c;
  throw make_error<DataLoss>("Model.load_weights: '", path,
                             "' holds no Keras weights: expected the Keras 3 groups (layers, vars, optimizer), "
                             "a legacy layer_names attribute or a model_weights group; found [",
                             found, "]");
}
}  // namespace

void load_weights_file(Model& model, const std::string& path, bool by_name, bool skip_mismatch) {
  weightsh5_check_built(model, "Model.load_weights");
  {
    // A .keras file is a zip archive of a whole model, which HDF5 would only call "not an HDF5 file".
    std::string magic(4, '\0');
    std::ifstream in(path, std::ios::binary);
    in.read(magic.data(), 4);
    EMBER_CHECK(!(in.gcount() == 4 && magic == std::string("PK\x03\x04", 4)), InvalidArgument)
        << "Model.load_weights: '" << path << "' is a .keras archive (a whole saved model), not an HDF5 weights "
        << "file; load it with models::load_model(\"" << path << "\"), or save weights with "
        << "save_weights(\"<name>.weights.h5\") to load them here";
  }
  weightsh5_load(model, path, by_name, skip_mismatch);
}

}  // namespace ember::io
