#include "framework/model/callbacks/csv_logger.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "framework/core/error.h"
#include "framework/core/python_format.h"

namespace ember::callbacks {

CSVLogger::CSVLogger(std::string filename, CSVLoggerOptions options)
    : filename_(std::move(filename)), options_(std::move(options)) {
  EMBER_CHECK(!filename_.empty(), InvalidArgument) << "CSVLogger: filename is empty";
  EMBER_CHECK(options_.separator.size() == 1, InvalidArgument)
      << "CSVLogger: separator must be a 1-character string; got \"" << options_.separator << "\"";
  EMBER_CHECK(options_.separator != "\"" && options_.separator != "\r" && options_.separator != "\n", InvalidArgument)
      << "CSVLogger: separator cannot be a quote or a line break";
}

void CSVLogger::on_train_begin(const Logs&) {
  append_header_ = true;
  if (options_.append) {
    // Python's `bool(len(f.readline()))`: any content at all means the header is already there.
    std::ifstream existing(filename_, std::ios::binary);
    if (existing && existing.peek() != std::ifstream::traits_type::eof()) append_header_ = false;
  }
  if (file_.is_open()) file_.close();
  errno = 0;
  file_.open(filename_, std::ios::binary | (options_.append ? std::ios::app : std::ios::trunc));
  EMBER_CHECK(file_.is_open(), NotFound) << "CSVLogger: cannot open \"" << filename_ << "\" for writing"
                                         << (errno ? std::string(": ") + std::strerror(errno) : std::string());
  keys_.clear();
  keys_set_ = false;
}

// Python csv's QUOTE_MINIMAL: quoted only when the text holds the separator, a quote or a line break.
std::string CSVLogger::field(const std::string& text) const {
  if (text.find_first_of(options_.separator + "\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void CSVLogger::write_row(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? options_.separator : "") + field(fields[i]);
  file_ << line << "\r\n";
  file_.flush();
}

void CSVLogger::on_epoch_end(int epoch, Logs& logs) {
  EMBER_CHECK(file_.is_open(), FailedPrecondition)
      << "CSVLogger: on_epoch_end before on_train_begin opened \"" << filename_ << "\"";
  if (!keys_set_) {
    for (const auto& item : logs) keys_.push_back(item.first);
    std::sort(keys_.begin(), keys_.end());
    keys_set_ = true;
    std::vector<std::string> header{"epoch"};
    header.insert(header.end(), keys_.begin(), keys_.end());
    if (append_header_) write_row(header);
  }
  std::vector<std::string> row{std::to_string(epoch)};
  for (const std::string& key : keys_) {
    const std::optional<double> v = logs.get(key);
    row.push_back(v ? python_float_repr(*v) : "NA");
  }
  write_row(row);
  EMBER_CHECK(file_.good(), DataLoss) << "CSVLogger: writing to \"" << filename_ << "\" failed";
}

void CSVLogger::on_train_end(const Logs&) {
  if (file_.is_open()) file_.close();
}

}  // namespace ember::callbacks
