#pragma once
// Keras-style dataset loaders for Fashion-MNIST and MNIST (TF: keras.datasets.*.load_data), reading the
// IDX files from disk: nothing is downloaded.
#include <optional>
#include <string>

#include "data/split.h"

namespace ember::datasets {

namespace fashion_mnist {
// x: uint8 [N, 28, 28] images, y: uint8 [N] labels 0..9. Loads the four files (train-images-idx3-ubyte,
// train-labels-idx1-ubyte, t10k-...; each .gz or plain) from `path` when given (only there: NotFound names
// it and what it lacks), else from the first directory
// holding all of them: $EMBER_DATA_DIR/fashion-mnist, $EMBER_DATA_DIR, then /usr/share/datasets/fashion-mnist
// (Debian's dataset-fashion-mnist). NotFound names every directory tried and the apt-get command; DataLoss
// names a corrupt file and the byte offset.
TrainTest load_data(std::optional<std::string> path = std::nullopt);
}  // namespace fashion_mnist

namespace mnist {
// As fashion_mnist::load_data, from `path` when given, else from $EMBER_DATA_DIR/mnist (Debian packages no
// MNIST, so there is no system directory; the NotFound says where to put the files).
TrainTest load_data(std::optional<std::string> path = std::nullopt);
}  // namespace mnist

}  // namespace ember::datasets
