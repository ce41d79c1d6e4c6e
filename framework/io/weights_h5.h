#pragma once
// Model weights in Keras's HDF5 layouts (facts: shared/KERAS_REFERENCE.md, A2 and A3): Keras 3's
// `.weights.h5` store (/layers/<snake class name>/vars/<i>, /vars, /optimizer/vars/<i>) and the legacy
// tf-keras `model_weights` layout (layer_names, per-layer weight_names and datasets). The pieces are
// exposed so the full-model savers (.keras zip, legacy .h5) can place them inside their own files.
#include <string>
#include <vector>

#include "framework/io/hdf5_file.h"

namespace ember {
class Model;
}

namespace ember::io {

// The Keras version written into legacy `keras_version` attributes (the Keras whose layouts Ember follows).
inline constexpr const char* kLegacyKerasVersion = "3.15.1";
// The backend written into legacy `backend` attributes: Ember's conventions (and its files) are TF's.
inline constexpr const char* kLegacyBackend = "tensorflow";

// What an HDF5 file holds, judged from its content.
enum class WeightsLayout {
  Keras3,           // saving_lib's store: /layers, /vars, /optimizer groups
  LegacyWeights,    // tf-keras save_weights: layer_names at the root
  LegacyFullModel,  // tf-keras/Keras 3 model.save(".h5"): the weights under /model_weights
  Unknown,
};
WeightsLayout detect_weights_layout(const H5Group& root);

// --- Keras 3 store ---
// Writes the model's variables (and, when compiled, its optimizer's) under `root` exactly as Keras 3's
// saving_lib does: each layer/model/optimizer gets `<path>/vars` with a "name" attribute and datasets
// "0", "1", ... of its own variables; sublayers go under `<path>/layers/<snake_case class>[_N]`.
// Sublayers of subclassed models and of layers are written the same way (Ember has no attribute names),
// which is what Keras writes when the attributes holding them sort after "layers".
void write_keras3_weights(H5Group root, const Model& model);
// Restores the variables written by write_keras3_weights (or Keras 3), and the optimizer's when the file
// has them and the model is compiled (building the optimizer for the trainable weights first). A count
// or shape mismatch is InvalidArgument naming the layer, the weight, both shapes and the file, unless
// skip_mismatch (then that object is skipped with a warning on stderr). Nothing is assigned when it throws.
void read_keras3_weights(const H5Group& root, Model& model, bool skip_mismatch = false);

// --- legacy `model_weights` layout ---
// Writes layer_names, backend and keras_version attributes and one group per layer (sorted by name) with
// weight_names (Keras 3 `w.path` names, e.g. "dense/kernel") and its datasets, plus top_level_model_weights.
void write_legacy_model_weights(H5Group group, const Model& model,
                                const std::string& keras_version = kLegacyKerasVersion);
// Loads a `model_weights`-style group: by position over the layers that have weights (in weight_names
// order), or with by_name by matching layer names. skip_mismatch skips layers/weights whose count or
// shape differ, with a warning on stderr, instead of failing. Nothing is assigned when it throws.
void read_legacy_model_weights(const H5Group& group, Model& model, bool by_name = false, bool skip_mismatch = false);

// A string-list attribute as the legacy writer stores it: split into name0, name1, ... (fixed-length
// arrays) when the list is over 64512 bytes as numpy bytes, else one variable-length list.
void write_split_strings(H5Group& group, const std::string& name, const std::vector<std::string>& values);
// Reads `name`, or joins name0, name1, ... when it was split; no attribute at all gives an empty list.
std::vector<std::string> read_split_strings(const H5Group& group, const std::string& name);

// --- whole files ---
// Model::save_weights: `*.weights.h5` in the Keras 3 layout, other `*.h5`/`*.hdf5` in the legacy weights
// layout, written atomically (framework/io/atomic_file.h). Other names are InvalidArgument; an existing
// file with overwrite=false is FailedPrecondition.
void save_weights_file(const Model& model, const std::string& path, bool overwrite = true);
// Model::load_weights: detects the layout from the content (Keras 3, legacy weights, or a legacy
// full-model file's /model_weights). by_name applies to the legacy layouts only (InvalidArgument otherwise).
void load_weights_file(Model& model, const std::string& path, bool by_name = false, bool skip_mismatch = false);

}  // namespace ember::io
