#pragma once
// ember_predict's work, apart from its main() so tests can run it in-process: loading a model file, reading
// input files (.npy, CSV, IDX, PNG/JPEG), batched predict, and writing or printing the outputs.
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "framework/ember.h"

namespace ember::predict_app {

// The model in `model_path` (.keras or full-model .h5); with `config_path` (the JSON of Keras's
// model.to_json()), that architecture with the weights of `model_path` (.weights.h5 or a weights .h5).
std::shared_ptr<Model> load_model_for_predict(const std::string& model_path, const std::string& config_path = "");

// The array in one input file, by its name: .npy, .csv (numeric, an optional header line), an IDX file
// (name ending in "ubyte", "ubyte.gz" or ".idx") or a PNG/JPEG image (uint8, (height, width, channels), with
// `channels` as io::decode_image takes it).
Tensor read_input_file(const std::string& path, int channels = 0);

// The tensors to feed `model` from `files`: one file per model input, in order, or, for a one-input model,
// several image files stacked into one batch. Each is cast to the input's dtype (times `scale` when that is
// floating) and given the input's shape: a single sample gains the batch axis, and samples whose size
// matches the input's (an IDX file's (N, 28, 28) for (None, 784)) are reshaped. Otherwise InvalidArgument
// naming the input, the file, the shape read and the shape the model expects.
std::vector<Tensor> read_model_inputs(const Model& model, const std::vector<std::string>& files, double scale = 1.0);

// Model input i's and output j's layer names.
std::string input_name(const Model& model, size_t i);
std::string output_name(const Model& model, size_t j);

// ember_predict's command line; writes results to `out` and messages to `err`, returns the exit status
// (0, or 1 after printing an error; CLI11's own status for bad flags).
int ember_predict_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace ember::predict_app
