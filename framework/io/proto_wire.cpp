#include "framework/io/proto_wire.h"

#include <bit>
#include <cstring>

#include "framework/core/error.h"

namespace ember::io::proto {

void Encoder::put_varint(uint64_t value) {
  while (value >= 0x80) {
    out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out_.push_back(static_cast<char>(value));
}

void Encoder::put_tag(int field, WireType type) {
  put_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type));
}

void Encoder::add_varint(int field, uint64_t value) {
  put_tag(field, WireType::Varint);
  put_varint(value);
}

void Encoder::add_double(int field, double value) {
  put_tag(field, WireType::Fixed64);
  put_le(out_, std::bit_cast<uint64_t>(value));
}

void Encoder::add_float(int field, float value) {
  put_tag(field, WireType::Fixed32);
  put_le(out_, std::bit_cast<uint32_t>(value));
}

void Encoder::add_bytes(int field, std::string_view bytes) {
  put_tag(field, WireType::LengthDelimited);
  put_varint(bytes.size());
  out_.append(bytes);
}

double Field::as_double() const { return std::bit_cast<double>(number); }
float Field::as_float() const { return std::bit_cast<float>(static_cast<uint32_t>(number)); }

uint64_t Decoder::read_varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    EMBER_CHECK(pos_ < data_.size(), DataLoss) << "protobuf: varint truncated at byte " << pos_;
    const auto byte = static_cast<unsigned char>(data_[pos_++]);
    v |= uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return v;
  }
  throw DataLoss("protobuf: varint longer than 10 bytes ending at byte " + std::to_string(pos_));
}

std::string_view Decoder::read_bytes(size_t n) {
  EMBER_CHECK(n <= data_.size() - pos_, DataLoss)
      << "protobuf: field needs " << n << " bytes at byte " << pos_ << " but the message has "
      << data_.size() - pos_ << " left";
  std::string_view b = data_.substr(pos_, n);
  pos_ += n;
  return b;
}

bool Decoder::next(Field& f) {
  if (pos_ >= data_.size()) return false;
  const size_t start = pos_;
  const uint64_t tag = read_varint();
  f.field = static_cast<int>(tag >> 3);
  f.bytes = {};
  f.number = 0;
  EMBER_CHECK(f.field > 0, DataLoss) << "protobuf: field number 0 at byte " << start;
  switch (tag & 7) {
    case 0:
      f.type = WireType::Varint;
      f.number = read_varint();
      break;
    case 1:
      f.type = WireType::Fixed64;
      f.number = get_le<uint64_t>(read_bytes(8));
      break;
    case 2: {
      f.type = WireType::LengthDelimited;
      const uint64_t n = read_varint();
      EMBER_CHECK(n <= data_.size(), DataLoss)
          << "protobuf: length " << n << " at byte " << start << " exceeds the message (" << data_.size() << " bytes)";
      f.bytes = read_bytes(static_cast<size_t>(n));
      break;
    }
    case 5:
      f.type = WireType::Fixed32;
      f.number = get_le<uint32_t>(read_bytes(4));
      break;
    default:
      throw DataLoss("protobuf: unsupported wire type " + std::to_string(tag & 7) + " (field " +
                     std::to_string(f.field) + ") at byte " + std::to_string(start) +
                     "; expected 0 (varint), 1 (fixed64), 2 (length-delimited) or 5 (fixed32)");
  }
  return true;
}

bool first_packed_float(const Field& f, float& out) {
  if (f.type == WireType::Fixed32) {
    out = f.as_float();
    return true;
  }
  if (f.type != WireType::LengthDelimited || f.bytes.size() < 4) return false;
  out = std::bit_cast<float>(get_le<uint32_t>(f.bytes));
  return true;
}

bool first_packed_double(const Field& f, double& out) {
  if (f.type == WireType::Fixed64) {
    out = f.as_double();
    return true;
  }
  if (f.type != WireType::LengthDelimited || f.bytes.size() < 8) return false;
  out = std::bit_cast<double>(get_le<uint64_t>(f.bytes));
  return true;
}

}  // namespace ember::io::proto
