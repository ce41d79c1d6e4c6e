#include "framework/io/tfrecord.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "framework/core/error.h"
#include "framework/io/crc32c.h"
#include "framework/io/proto_wire.h"

namespace ember::io {
namespace {

using proto::get_le;
using proto::put_le;

constexpr size_t kHeaderBytes = 12;  // uint64 length + uint32 masked CRC of it
constexpr size_t kFooterBytes = 4;   // uint32 masked CRC of the data

std::string hex(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

}  // namespace

std::string frame_record(std::string_view data) {
  std::string out;
  out.reserve(kHeaderBytes + data.size() + kFooterBytes);
  put_le<uint64_t>(out, data.size());
  put_le<uint32_t>(out, masked_crc32c(std::string_view(out).substr(0, 8)));
  out.append(data);
  put_le<uint32_t>(out, masked_crc32c(data));
  return out;
}

std::vector<Record> parse_records(std::string_view bytes, const std::string& name) {
  std::vector<Record> records;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t left = bytes.size() - pos;
    EMBER_CHECK(left >= kHeaderBytes, DataLoss)
        << "event file " << name << ": truncated record at byte " << pos << ": " << left
        << " bytes left, a record header needs " << kHeaderBytes;
    const std::string_view length_bytes = bytes.substr(pos, 8);
    const uint32_t stored_length_crc = get_le<uint32_t>(bytes.substr(pos + 8, 4));
    const uint32_t length_crc = masked_crc32c(length_bytes);
    EMBER_CHECK(stored_length_crc == length_crc, DataLoss)
        << "event file " << name << ": corrupted record at byte " << pos << ": length CRC "
        << hex(stored_length_crc) << " stored, " << hex(length_crc) << " computed";
    const uint64_t length = get_le<uint64_t>(length_bytes);
    EMBER_CHECK(length <= left - kHeaderBytes && left - kHeaderBytes - length >= kFooterBytes, DataLoss)
        << "event file " << name << ": truncated record at byte " << pos << ": it declares " << length
        << " data bytes (+" << kFooterBytes << " CRC) but only " << left - kHeaderBytes << " remain";
    const std::string_view data = bytes.substr(pos + kHeaderBytes, static_cast<size_t>(length));
    const uint32_t stored_data_crc = get_le<uint32_t>(bytes.substr(pos + kHeaderBytes + length, 4));
    const uint32_t data_crc = masked_crc32c(data);
    EMBER_CHECK(stored_data_crc == data_crc, DataLoss)
        << "event file " << name << ": corrupted record at byte " << pos << ": data CRC "
        << hex(stored_data_crc) << " stored, " << hex(data_crc) << " computed";
    records.push_back({pos, std::string(data)});
    pos += kHeaderBytes + length + kFooterBytes;
  }
  return records;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in, NotFound) << "cannot open " << path << " for reading: " << std::strerror(errno);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EMBER_CHECK(!in.bad(), DataLoss) << "error reading " << path << ": " << std::strerror(errno);
  return bytes;
}

std::vector<Record> read_records(const std::string& path) { return parse_records(read_file_bytes(path), path); }

}  // namespace ember::io
