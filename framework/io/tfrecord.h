#pragma once
// TFRecord framing, the container of TensorFlow event files: each record is a little-endian uint64
// length, the masked CRC-32C of those 8 bytes, the data, and the masked CRC-32C of the data.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::io {

// One record's payload and the byte offset of its header in the file (for error messages).
struct Record {
  uint64_t offset = 0;
  std::string data;
};

// data framed as one TFRecord (12 header bytes, the data, 4 footer bytes).
std::string frame_record(std::string_view data);

// Every record of `bytes`, the contents of the file `name` (used in messages). A CRC mismatch, or a
// record cut short at the end, is DataLoss naming the file and the record's offset.
std::vector<Record> parse_records(std::string_view bytes, const std::string& name);

// parse_records on the file at path (NotFound when it cannot be read).
std::vector<Record> read_records(const std::string& path);

// The whole file at path as bytes (NotFound when it cannot be opened).
std::string read_file_bytes(const std::string& path);

}  // namespace ember::io
