#pragma once
// Whole-model files (Keras: model.save / keras.models.load_model): Keras 3's `.keras` zip (config.json,
// metadata.json, model.weights.h5) and the legacy full-model HDF5 `.h5` (model_config and
// training_config attributes, /model_weights, /optimizer_weights). Both are written atomically.
#include <memory>
#include <ostream>
#include <string>

namespace ember {
class Model;
}

namespace ember::io {

// Writes `model` (Sequential or functional) to `path` by its extension: ".keras" or ".h5"/".hdf5"; any
// other is InvalidArgument. include_optimizer applies to ".h5" (a ".keras" file always carries the
// compiled optimizer's state, as in Keras 3). overwrite=false with an existing file is FailedPrecondition.
void save_model_file(const Model& model, const std::string& path, bool overwrite = true, bool include_optimizer = true);

// Rebuilds a model from a ".keras" archive or a legacy ".h5" file written by Ember, Keras 3 or tf-keras
// 2.x (recognised by content, not by name), with its weights; with compile, also the compiled loss,
// metrics and optimizer, and the optimizer's state when the file has it. Missing file NotFound; not a
// model file, truncated or corrupt DataLoss naming the path; a newer format than Keras 3 Unimplemented.
std::shared_ptr<Model> load_model_file(const std::string& path, bool compile = true);

// apps/ember_h5 inspect: what kind of file `path` is (a .keras archive, a legacy full-model .h5, a Keras 3
// or legacy weights-only file), its Keras version, the model's summary when the file has an architecture
// Ember can rebuild (otherwise why not), and the tree of groups, attributes and weight datasets with their
// dtypes and shapes. Errors as load_model's.
void describe_model_file(const std::string& path, std::ostream& os);

// apps/ember_h5 convert: loads the model file `in` (.keras or full-model .h5, compiled state included) and
// writes it to `out` by extension: ".keras", ".h5" (legacy full model) or ".weights.h5" (Keras 3 weights).
// A weights-only `in` has no architecture to convert: InvalidArgument saying so.
void convert_model_file(const std::string& in, const std::string& out, bool overwrite = true);

}  // namespace ember::io
