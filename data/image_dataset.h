#pragma once
// data::image_dataset_from_directory: a labelled image dataset from a folder of class subfolders
// (Keras: keras.utils.image_dataset_from_directory).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/dataset.h"

namespace ember::data {

// A dataset made from files, with what Keras sets as attributes on it. Transformations (batch, map, ...)
// return a plain Dataset, as in TF, where the attributes stay on the original.
class DirectoryDataset : public Dataset {
 public:
  DirectoryDataset(Dataset dataset, std::vector<std::string> class_names, std::vector<std::string> file_paths)
      : Dataset(std::move(dataset)), class_names_(std::move(class_names)), file_paths_(std::move(file_paths)) {}
  // The class of each label index (empty without labels).
  const std::vector<std::string>& class_names() const { return class_names_; }
  // The files in the order their elements come when the dataset is not shuffled per pass (Keras's order:
  // sorted, then shuffled once with the seed, then split).
  const std::vector<std::string>& file_paths() const { return file_paths_; }

 private:
  std::vector<std::string> class_names_;
  std::vector<std::string> file_paths_;
};

// Options of image_dataset_from_directory, with Keras's names and defaults.
struct ImageDatasetOptions {
  // "inferred": one class per subfolder (sorted by name; files in nested folders belong to their top
  // folder's class). std::nullopt: no labels, every image file under the directory.
  std::optional<std::string> labels = "inferred";
  // "int" (int32 scalars), "categorical" (float32 one-hot), "binary" (float32 [1]; exactly two classes), or
  // std::nullopt (images only).
  std::optional<std::string> label_mode = "int";
  // The subfolders to use, in the order of their label indices (default: all, sorted).
  std::vector<std::string> class_names{};
  std::string color_mode = "rgb";  // "rgb", "grayscale" or "rgba": 3, 1 or 4 channels
  std::optional<int64_t> batch_size = 32;  // std::nullopt: unbatched elements
  std::array<int64_t, 2> image_size = {256, 256};  // {height, width} every image is resized to
  // Shuffles the file list once with the seed (NumPy's RandomState, as Keras) and the elements on every
  // pass (a buffer of 8 batches, or 1024 elements unbatched); false keeps the sorted order.
  bool shuffle = true;
  std::optional<uint32_t> seed{};
  // The fraction of the files (the last ones of the shuffled list) that form the validation subset.
  std::optional<double> validation_split{};
  // "training" or "validation" with validation_split; image_dataset_from_directory_both gives both.
  std::optional<std::string> subset{};
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  bool follow_links = false;               // descend into symlinked folders below a class folder
  bool crop_to_aspect_ratio = false;       // resize the largest centred window of image_size's aspect ratio
};

// Float32 images [image_size[0], image_size[1], channels] in [0, 255] (batched when batch_size is set) and
// their labels, read lazily from the PNG and JPEG files (.png, .jpg, .jpeg; .bmp and .gif files are listed
// as Keras lists them but decoding them is Unimplemented) on AUTOTUNE worker threads. NotFound when the
// directory does not exist; InvalidArgument for Keras's argument errors (validation_split without a subset or,
// when shuffling, without a seed) and when no image is found; a corrupt image is an InvalidArgument naming
// the file, thrown by the pass that reaches it.
DirectoryDataset image_dataset_from_directory(const std::string& directory, ImageDatasetOptions options = {});

// subset "both": the training and validation datasets of the same shuffled file list (the validation one
// is never shuffled per pass). options.subset must be unset or "both".
std::pair<DirectoryDataset, DirectoryDataset> image_dataset_from_directory_both(const std::string& directory,
                                                                                ImageDatasetOptions options);

}  // namespace ember::data
