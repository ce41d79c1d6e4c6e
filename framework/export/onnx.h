#pragma once
// ONNX export (as tf2onnx converts a Keras model): a Sequential or functional model as an ONNX ModelProto,
// built with the onnx library and passed through its checker, for ONNX Runtime and other inference engines.
#include <cstdint>
#include <string>

namespace ember {
class Model;
}

namespace ember::onnx {

struct ExportOptions {
  int64_t opset = 17;     // the default domain's opset version, 13 to 17 (LayerNormalization needs 17)
  bool overwrite = true;  // false: refuse (FailedPrecondition) when the file exists
};

// Writes `model` (Sequential or functional, nested ones included) to `path` as an ONNX model in inference
// form (Keras's predict: dropout and noise layers vanish, batch normalization uses its moving statistics).
// Inputs keep the model's input names and NHWC layout, with a symbolic batch dimension "N"; outputs are
// named after their layers. Weights are float32 initializers whatever the dtype policy. A layer without
// an ONNX form is Unimplemented naming it and its class; the model is checked by onnx::checker before it
// is written, atomically (a failure leaves no file behind and an existing one untouched).
void export_model(const Model& model, const std::string& path, ExportOptions options = {});

}  // namespace ember::onnx
