// The legacy tf-keras weights layout (keras/src/legacy/saving/legacy_h5_format.py:
// save_weights_to_hdf5_group, load_weights_from_hdf5_group[_by_name], save/load_attributes_to_hdf5_group).
#include <algorithm>
#include <map>
#include <set>

#include "framework/io/weights_h5.h"
#include "framework/io/weights_h5_internal.h"
#include "framework/model/model.h"

namespace ember::io {

namespace {

using weights_detail::AssignPlan;
using weights_detail::own_variables;

// HDF5 object headers hold at most 64 KiB, so longer attributes are split (Keras's HDF5_OBJECT_HEADER_LIMIT).
constexpr size_t kLegacyHeaderLimit = 64512;

// Keras's _legacy_weights: trainable then non-trainable (BatchNormalization: gamma, beta, moving_*).
std::vector<Variable> legacyh5_weights(const Layer& layer) {
  std::vector<Variable> out = layer.trainable_weights();
  for (const Variable& v : layer.non_trainable_weights()) out.push_back(v);
  return out;
}

// save_subset_weights_to_hdf5_group: weight_names then one dataset per weight (names contain '/', so
// the datasets sit in nested groups: dense/dense/kernel). Keras 3 writes each variable's path, which is
// `prefix` + the name here (see write_legacy_model_weights).
void legacyh5_save_subset(H5Group& group, const std::vector<Variable>& weights, const std::string& prefix) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const Variable& v : weights) {
    const std::string name = prefix + v.name();
    EMBER_CHECK(seen.insert(name).second, InvalidArgument)
        << "Model.save_weights: two weights of " << group.where() << " are both named '" << name
        << "'; the legacy .h5 layout needs unique weight names (give the layers unique names)";
    names.push_back(name);
  }
  write_split_strings(group, "weight_names", names);
  for (size_t i = 0; i < weights.size(); ++i) group.write_dataset(names[i], weights[i].value());
}

std::vector<Tensor> legacyh5_load_subset(const H5Group& group) {
  std::vector<Tensor> values;
  for (const std::string& name : read_split_strings(group, "weight_names")) values.push_back(group.read_dataset(name));
  return values;
}

// Keras's _set_weights: shape-checks each value; skip_mismatch skips that weight with a warning.
void legacyh5_set(AssignPlan& plan, const std::vector<Variable>& vars, const std::vector<Tensor>& values,
                  const std::string& what, bool skip_mismatch) {
  std::vector<std::pair<Variable, Tensor>> ok;
  for (size_t i = 0; i < values.size(); ++i) {
    std::string error;
    if (plan.check(vars[i], values[i], what, error)) {
      ok.emplace_back(vars[i], values[i]);
    } else if (skip_mismatch) {
      weights_detail::warn(error + "; skipped (skip_mismatch)");
    } else {
      throw InvalidArgument(error);
    }
  }
  for (auto& [v, t] : ok) plan.add(v, t);
}

std::string legacyh5_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return "[" + s + "]";
}

void legacyh5_by_position(const H5Group& group, Model& model, bool skip_mismatch, AssignPlan& plan,
                          const std::string& desc) {
  std::vector<LayerPtr> layers;
  std::vector<std::string> model_names;
  for (const LayerPtr& l : model.layers()) {
    if (legacyh5_weights(*l).empty()) continue;
    layers.push_back(l);
    model_names.push_back(l->name());
  }
  std::vector<std::string> names;
  for (const std::string& name : read_split_strings(group, "layer_names"))
    if (!read_split_strings(group.group(name), "weight_names").empty()) names.push_back(name);
  EMBER_CHECK(names.size() == layers.size(), InvalidArgument)
      << desc << ": layer count mismatch: the model has " << layers.size() << " layers with weights "
      << legacyh5_list(model_names) << ", the file has " << names.size() << " " << legacyh5_list(names);
  for (size_t k = 0; k < names.size(); ++k) {
    const Layer& layer = *layers[k];
    std::vector<Variable> vars = legacyh5_weights(layer);
    std::vector<Tensor> values = legacyh5_load_subset(group.group(names[k]));
    const std::string what = desc + ": layer #" + std::to_string(k) + " (named '" + layer.name() +
                             "' in the model, '" + names[k] + "' in the file)";
    EMBER_CHECK(values.size() == vars.size(), InvalidArgument)
        << what << ": weight count mismatch: the layer has " << vars.size() << " weights, the file has "
        << values.size();
    legacyh5_set(plan, vars, values, what, skip_mismatch);
  }
}

void legacyh5_by_name(const H5Group& group, Model& model, bool skip_mismatch, AssignPlan& plan,
                      const std::string& desc) {
  std::map<std::string, std::vector<LayerPtr>> index;
  for (const LayerPtr& l : model.layers()) index[l->name()].push_back(l);
  std::vector<std::string> names = read_split_strings(group, "layer_names");
  for (size_t k = 0; k < names.size(); ++k) {
    auto it = index.find(names[k]);
    if (it == index.end()) continue;
    std::vector<Tensor> values = legacyh5_load_subset(group.group(names[k]));
    for (const LayerPtr& layer : it->second) {
      std::vector<Variable> vars = legacyh5_weights(*layer);
      const std::string what = desc + ": layer #" + std::to_string(k) + " (named '" + layer->name() + "')";
      if (values.size() != vars.size()) {
        std::string msg = what + ": weight count mismatch: the layer has " + std::to_string(vars.size()) +
                          " weights, the file has " + std::to_string(values.size());
        if (!skip_mismatch) throw InvalidArgument(msg);
        weights_detail::warn(msg + "; skipped (skip_mismatch)");
        continue;
      }
      legacyh5_set(plan, vars, values, what, skip_mismatch);
    }
  }
}

}  // namespace

void write_split_strings(H5Group& group, const std::string& name, const std::vector<std::string>& values) {
  size_t width = 1;  // numpy's S<n> of the whole list
  for (const std::string& v : values) {
    EMBER_CHECK(v.size() <= kLegacyHeaderLimit, InvalidArgument)
        << "HDF5: the attribute '" << name << "' of " << group.where() << " cannot hold '" << v.substr(0, 64)
        << "...': it is longer than " << kLegacyHeaderLimit << " bytes";
    width = std::max(width, v.size());
  }
  const size_t n = values.size();
  if (n * width <= kLegacyHeaderLimit) return group.set_attr_strings(name, values);
  // np.array_split into the fewest chunks that each fit: the first n % k chunks get one more element.
  size_t k = 2;
  while (((n + k - 1) / k) * width > kLegacyHeaderLimit) ++k;
  size_t begin = 0;
  for (size_t c = 0; c < k; ++c) {
    size_t size = n / k + (c < n % k ? 1 : 0);
    std::vector<std::string> chunk(values.begin() + begin, values.begin() + begin + size);
    group.set_attr_strings(name + std::to_string(c), chunk, /*fixed_length=*/true);
    begin += size;
  }
}

std::vector<std::string> read_split_strings(const H5Group& group, const std::string& name) {
  if (group.has_attr(name)) return group.attr_strings(name);
  std::vector<std::string> out;
  for (size_t c = 0; group.has_attr(name + std::to_string(c)); ++c)
    for (std::string& s : group.attr_strings(name + std::to_string(c))) out.push_back(std::move(s));
  return out;
}

void write_legacy_model_weights(H5Group group, const Model& model, const std::string& keras_version) {
  std::vector<LayerPtr> layers = model.layers();
  std::vector<std::string> names;
  for (const LayerPtr& l : layers) names.push_back(l->name());
  write_split_strings(group, "layer_names", names);
  group.set_attr_string("backend", kLegacyBackend, /*utf8=*/false);
  group.set_attr_string("keras_version", keras_version, /*utf8=*/false);
  // Keras 3 writes variable paths, the name scopes open when each variable was made: a Sequential model
  // builds its layers inside its own scope ("mlp/dense/kernel"), a functional model's layers are built
  // when called on the symbolic inputs, before the model exists ("dense/kernel"). tf-keras wrote
  // "dense/kernel:0"; reading takes whatever weight_names a file lists.
  const std::string prefix = model.class_name() == "Sequential" ? model.name() + "/" : "";
  // Groups are created in name order (Keras avoids one layer name being a prefix path of another).
  std::sort(layers.begin(), layers.end(), [](const LayerPtr& a, const LayerPtr& b) { return a->name() < b->name(); });
  for (const LayerPtr& l : layers) {
    EMBER_CHECK(!group.has(l->name()), InvalidArgument)
        << "Model.save_weights: model '" << model.name() << "' has two layers named '" << l->name()
        << "'; the legacy .h5 layout needs unique layer names";
    H5Group lg = group.create_group(l->name());
    legacyh5_save_subset(lg, legacyh5_weights(*l), prefix);
  }
  H5Group top = group.create_group("top_level_model_weights");
  legacyh5_save_subset(top, own_variables(model), prefix);
}

void read_legacy_model_weights(const H5Group& group, Model& model, bool by_name, bool skip_mismatch) {
  const std::string desc = "Model.load_weights('" + group.file_path() + "')";
  AssignPlan plan;
  if (by_name) {
    legacyh5_by_name(group, model, skip_mismatch, plan, desc);
  } else {
    legacyh5_by_position(group, model, skip_mismatch, plan, desc);
  }
  if (group.has_group("top_level_model_weights")) {
    std::vector<Variable> vars = own_variables(model);
    std::vector<Tensor> values = legacyh5_load_subset(group.group("top_level_model_weights"));
    std::string msg = desc + ": weight count mismatch for the top-level weights of model '" + model.name() +
                      "': the model has " + std::to_string(vars.size()) + ", the file has " +
                      std::to_string(values.size());
    if (values.size() == vars.size()) {
      legacyh5_set(plan, vars, values, desc + ": top-level model", skip_mismatch);
    } else if (by_name && skip_mismatch) {
      weights_detail::warn(msg + "; skipped (skip_mismatch)");
    } else {
      throw InvalidArgument(msg);
    }
  }
  plan.apply();
}

}  // namespace ember::io
