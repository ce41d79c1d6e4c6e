#pragma once
// The protobuf wire format, by hand: just enough to write and read TensorFlow's Event/Summary messages
// (varints, fixed 32/64-bit numbers, length-delimited bytes and nested messages) without libprotobuf.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::io::proto {

// Appends v little-endian: the byte order of protobuf's fixed-width numbers and of TFRecord headers.
template <class U>
void put_le(std::string& out, U v) {
  for (size_t i = 0; i < sizeof(U); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
// The little-endian U in the first sizeof(U) bytes of b (the caller checks the size).
template <class U>
U get_le(std::string_view b) {
  U v = 0;
  for (size_t i = 0; i < sizeof(U); ++i) v |= U(static_cast<unsigned char>(b[i])) << (8 * i);
  return v;
}

// Wire types of the protobuf encoding (groups, 3 and 4, are obsolete and rejected when read).
enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

// Appends fields to a serialized message. Fields are written in the order called; callers follow
// field-number order and skip proto3 defaults, as the C++ protobuf serializer does, so the bytes
// match TensorFlow's.
class Encoder {
 public:
  void add_varint(int field, uint64_t value);
  // int64 fields are varints of the two's complement (a negative value takes ten bytes).
  void add_int64(int field, int64_t value) { add_varint(field, static_cast<uint64_t>(value)); }
  void add_double(int field, double value);
  void add_float(int field, float value);
  // A string, bytes or nested-message field.
  void add_bytes(int field, std::string_view bytes);
  const std::string& bytes() const { return out_; }
  std::string take() && { return std::move(out_); }

 private:
  void put_tag(int field, WireType type);
  void put_varint(uint64_t value);
  std::string out_;
};

// One field read by Decoder: its number, wire type and payload (varint and fixed numbers in `number`,
// length-delimited payloads in `bytes`, a view into the decoded buffer).
struct Field {
  int field = 0;
  WireType type = WireType::Varint;
  uint64_t number = 0;
  std::string_view bytes;
  double as_double() const;
  float as_float() const;
};

// Walks the fields of a serialized message. Malformed input (a truncated varint or payload, an
// unknown wire type) is DataLoss giving the byte offset within this message.
class Decoder {
 public:
  explicit Decoder(std::string_view message) : data_(message) {}
  // Reads the next field into f; false at the end of the message.
  bool next(Field& f);
  // Offset of the next unread byte.
  size_t offset() const { return pos_; }

 private:
  uint64_t read_varint();
  std::string_view read_bytes(size_t n);
  std::string_view data_;
  size_t pos_ = 0;
};

// Reads a packed or single float/double from a repeated field's payload (first element only).
// Returns false when the payload holds no element.
bool first_packed_float(const Field& f, float& out);
bool first_packed_double(const Field& f, double& out);

}  // namespace ember::io::proto
