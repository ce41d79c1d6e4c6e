#pragma once
// data::text_line_dataset: the lines of text files as string elements (TF: tf.data.TextLineDataset).
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace ember::data {

// Options of text_line_dataset (TF's TextLineDataset arguments).
struct TextLineDatasetOptions {
  // "" (plain text), "GZIP" (gzip files, .gz) or "ZLIB" (zlib streams).
  std::string compression_type = "";
  // Bytes read from a file at a time (and decompressed at a time); 0: 256 KiB, TF's default.
  int64_t buffer_size = 0;
  // 0: the files one after another. n >= 1: n files open at once, their lines taken one at a time from each
  // in turn, a finished file's place going to the next file (TF's Dataset.interleave with cycle_length n,
  // which TF's num_parallel_reads runs in parallel). AUTOTUNE: one file per CPU. Reading happens in the
  // consuming thread; add prefetch() to overlap it with training.
  int64_t num_parallel_reads = 0;
};

// Each line of `filenames` as a 0-d string tensor, without its line break: "\n" ends a line and every "\r"
// is dropped (TF's line reader, so "\r\n" files read as "\n" ones), a last line without "\n" still counts,
// empty lines are empty strings. InvalidArgument for an unknown compression_type or a negative option; a
// missing file is NotFound and a corrupt compressed one DataLoss, thrown when a pass reaches it (as in TF).
// Cardinality: UNKNOWN_CARDINALITY, as TF's.
Dataset text_line_dataset(const std::vector<std::string>& filenames, TextLineDatasetOptions options = {});

}  // namespace ember::data
