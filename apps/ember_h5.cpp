// ember_h5: looks inside and converts Keras model files, whoever wrote them (Ember, Keras 3, tf-keras 2.x).
//   ember_h5 inspect FILE      the format, Keras version, model summary and weights tree of a .keras
//                              archive, a full-model .h5, or a weights-only .weights.h5/.h5
//   ember_h5 convert IN OUT    a model file to ".keras", ".h5" (legacy full model), ".weights.h5" or ".onnx"
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "framework/ember.h"
#include "framework/export/onnx.h"
#include "framework/io/model_file.h"

int main(int argc, char** argv) {
  CLI::App app{"Inspect and convert Keras model files (.keras, .h5, .weights.h5)"};
  app.require_subcommand(1);
  std::string file, in, out;
  bool no_overwrite = false;
  CLI::App* inspect = app.add_subcommand("inspect", "Print the format, model summary and weights tree of FILE");
  inspect->add_option("FILE", file, "a .keras, .h5 or .weights.h5 file")->required();
  CLI::App* convert = app.add_subcommand("convert", "Convert the model file IN to OUT (format from OUT's extension)");
  convert->add_option("IN", in, "a .keras or full-model .h5 file")->required();
  convert->add_option("OUT", out, "the file to write: .keras, .h5, .weights.h5 or .onnx")->required();
  convert->add_flag("--no-overwrite", no_overwrite, "fail instead of replacing an existing OUT");
  CLI11_PARSE(app, argc, argv);
  try {
    if (*inspect) {
      ember::io::describe_model_file(file, std::cout);
    } else if (out.size() > 5 && out.compare(out.size() - 5, 5, ".onnx") == 0) {
      ember::Model model = ember::models::load_model(in, {.compile = false});
      ember::onnx::export_model(model, out, {.overwrite = !no_overwrite});
      std::cout << "wrote " << out << "\n";
    } else {
      ember::io::convert_model_file(in, out, !no_overwrite);
      std::cout << "wrote " << out << "\n";
    }
  } catch (const ember::Error& e) {
    std::cerr << "ember_h5: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
