#pragma once
// Numeric CSV files into tensors.
#include <string>

#include "framework/core/tensor.h"

namespace ember::datasets::csv {

// How load reads the file.
struct Options {
  bool header = false;   // the first non-empty line names the columns and is skipped
  char delimiter = ',';
};

// Reads a CSV file of numbers into a float32 CPU tensor [rows, columns]. Blank lines are skipped; fields
// may be padded with spaces or double-quoted; nan and inf are numbers. A field that is not a number is an
// InvalidArgument naming file:line:column, as is a row whose field count differs from the first row's.
Tensor load(const std::string& path, Options options = {});

}  // namespace ember::datasets::csv
