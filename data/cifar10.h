#pragma once
// datasets::cifar10::load_data (Keras: keras.datasets.cifar10.load_data), reading the binary version of
// CIFAR-10 from disk: nothing is downloaded.
#include <optional>
#include <string>

#include "data/split.h"

namespace ember::datasets::cifar10 {

// x: uint8 [N, 32, 32, 3] images (channels last, as Keras gives them), y: uint8 [N, 1] labels 0..9; 50,000
// training images from data_batch_1.bin ... data_batch_5.bin (in that order) and 10,000 test images from
// test_batch.bin. The six files come from the archive cifar-10-binary.tar.gz (gzip-compressed tar, read as
// it is) or from its extracted folder cifar-10-batches-bin/. `path` names the archive, or a directory holding
// the archive, cifar-10-batches-bin/ or the six files; without it $EMBER_DATA_DIR/cifar10 and then
// $EMBER_DATA_DIR are searched. NotFound names every place tried and where to put the archive; DataLoss
// names a corrupt file.
TrainTest load_data(std::optional<std::string> path = std::nullopt);

}  // namespace ember::datasets::cifar10
