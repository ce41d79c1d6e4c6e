#pragma once
// datasets::imdb::load_data (Keras: keras.datasets.imdb.load_data), reading imdb.npz from disk: nothing is
// downloaded.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/tensor.h"

namespace ember::datasets::imdb {

// Keras's arguments, names and defaults.
struct Options {
  // imdb.npz, or a directory holding it; default: $EMBER_DATA_DIR/imdb, then $EMBER_DATA_DIR.
  std::optional<std::string> path{};
  std::optional<int64_t> num_words{};  // keep the words ranked below this (others become oov_char)
  int64_t skip_top = 0;                // ... and at or above this
  std::optional<int64_t> maxlen{};     // drop reviews of maxlen or more words (start_char counted)
  uint32_t seed = 113;                 // the order of each split: NumPy's RandomState(seed), as Keras
  std::optional<int64_t> start_char = 1;  // put at the start of every review; std::nullopt: none
  std::optional<int64_t> oov_char = 2;    // what dropped words become; std::nullopt: they are removed
  int64_t index_from = 3;                 // added to every word index
};

// The reviews of one split: ragged word-index sequences (Keras's object arrays of lists) and int64 [N]
// labels 0 (negative) or 1 (positive).
struct Split {
  std::vector<std::vector<int64_t>> x;
  Tensor y;
};
struct TrainTest {
  Split train, test;
};

// Reads imdb.npz as Keras downloads it (x_train, y_train, x_test, y_test), shuffles each split with the
// seed and applies the options exactly as Keras does (including its rule that, without num_words, the
// largest index present is itself out of range and becomes oov_char). NotFound names every place tried
// and where to put the file; DataLoss names a corrupt file; InvalidArgument when maxlen leaves a split empty.
TrainTest load_data(Options options = {});

}  // namespace ember::datasets::imdb
