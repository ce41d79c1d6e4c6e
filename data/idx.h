#pragma once
// The IDX file format of MNIST-style datasets (big-endian header, then raw bytes), gzip-compressed or not.
#include <optional>
#include <string>

#include "framework/core/tensor.h"

namespace ember::datasets {

// Reads an IDX file of unsigned bytes (magic 0x000008NN, NN dimensions) into a uint8 CPU tensor with one
// decompressing read into the tensor's buffer. `expected_rank` checks NN (3 for images, 1 for labels).
// Throws NotFound when the file cannot be opened and DataLoss, naming the file and byte offset, when it is
// corrupt: a bad magic, a gzip error, fewer bytes than the header promises, or bytes after them.
Tensor read_idx(const std::string& path, std::optional<int> expected_rank = std::nullopt);

}  // namespace ember::datasets
