// Model::save_weights / load_weights / save / to_json and models::load_model: the Model's entry points into
// framework/io/, defined here so that framework/model includes nothing of framework/io.
#include "framework/io/model_config.h"
#include "framework/io/model_file.h"
#include "framework/io/weights_h5.h"
#include "framework/model/model.h"

namespace ember {

void Model::save_weights(const std::string& path, SaveWeightsOptions options) const {
  io::save_weights_file(*this, path, options.overwrite);
}

void Model::load_weights(const std::string& path, LoadWeightsOptions options) {
  io::load_weights_file(*this, path, options.by_name, options.skip_mismatch);
}

void Model::save(const std::string& path, SaveOptions options) const {
  io::save_model_file(*this, path, options.overwrite, options.include_optimizer);
}

std::string Model::to_json(int indent) const { return io::serialize_model(*this).dump(indent); }

Model models::load_model(const std::string& path, LoadModelOptions options) {
  return Model(std::move(*io::load_model_file(path, options.compile)));
}

}  // namespace ember
