#pragma once
// Internal: NumPy .npz archives (a zip of .npy files) as Keras's datasets ship them, read through libzip.
#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/tensor.h"

namespace ember::datasets::detail {

// One .npy member of an .npz archive.
class NpzFile {
 public:
  // NotFound when the file cannot be opened; DataLoss when it is not a zip archive.
  explicit NpzFile(std::string path);
  ~NpzFile();
  NpzFile(const NpzFile&) = delete;
  NpzFile& operator=(const NpzFile&) = delete;
  // Member `name` (e.g. "y_train") as an int64 CPU tensor: integer dtypes (little-endian, C order) only.
  Tensor int_array(const std::string& name) const;
  // Member `name` as a 1-D object array of integer lists (the pickle NumPy writes for ragged sequences).
  std::vector<std::vector<int64_t>> int_lists(const std::string& name) const;

 private:
  struct Npy;
  Npy read(const std::string& name) const;
  std::string path_;
  void* zip_;  // zip_t*
};

}  // namespace ember::datasets::detail
