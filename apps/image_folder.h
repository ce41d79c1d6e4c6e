#pragma once
// train_image_folder's work, apart from its main() so tests can run it in-process: trains a small CNN or an
// applications model on a folder of class subfolders (data::image_dataset_from_directory), with
// augmentation, a dtype policy, checkpoints and TensorBoard logs (with profiles), and prints
// `val_accuracy=<0..1> val_loss=<x> seconds_per_epoch=<s>` as its last line.
#include <ostream>

#include "framework/ember.h"

namespace ember::image_folder_app {

// The model: `kind` "small_cnn", "mobilenet_v2", "resnet50" or "vgg16" (fresh weights, no top, average
// pooling) with a Dense(num_classes) head giving logits, behind the augmentation layers (when `augment`) and a
// rescaling of [0, 255] pixels (to [0, 1] for the small CNN, to [-1, 1] for the others). Unknown kinds are
// InvalidArgument.
Model make_model(const std::string& kind, const Shape& image_shape, int64_t num_classes, bool augment, uint64_t seed);

// train_image_folder's command line; results go to `out`, messages to `err`; returns the exit status (0, or 1
// after printing an error; CLI11's own status for bad flags).
int train_image_folder_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace ember::image_folder_app
