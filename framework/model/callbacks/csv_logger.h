#pragma once
// CSVLogger (Keras 3: keras/src/callbacks/csv_logger.py): streams each epoch's logs to a CSV file as
// Python's csv module writes them: a header "epoch" + the log keys sorted, then one row per epoch
// with numbers as Python's repr(float), lines ending in "\r\n" (the excel dialect).
#include <fstream>
#include <string>
#include <vector>

#include "framework/model/callbacks/callback.h"

namespace ember::callbacks {

struct CSVLoggerOptions {
  std::string separator = ",";  // one character, as Python's csv requires
  bool append = false;          // add rows to an existing file (no second header) instead of overwriting
};

class CSVLogger : public Callback {
  EMBER_CALLBACK(CSVLogger)
 public:
  explicit CSVLogger(std::string filename, CSVLoggerOptions options = {});

  // Opens the file (NotFound naming it when it cannot be opened for writing).
  void on_train_begin(const Logs& logs) override;
  // Writes the epoch's row (the columns are fixed by the first epoch's keys; a missing one is "NA").
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  bool implements_train_batch_hooks() const override { return false; }
  bool implements_test_batch_hooks() const override { return false; }

  const std::string& filename() const { return filename_; }

 private:
  std::string field(const std::string& text) const;
  void write_row(const std::vector<std::string>& fields);

  std::string filename_;
  CSVLoggerOptions options_;
  std::ofstream file_;
  std::vector<std::string> keys_;
  bool keys_set_ = false;
  bool append_header_ = true;
};

}  // namespace ember::callbacks
