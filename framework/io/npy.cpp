// NumPy's .npy format: the magic "\x93NUMPY", a version, a little-endian header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces to a multiple of 64 bytes,
// then the raw elements (numpy/lib/format.py).
#include "framework/io/npy.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "framework/io/atomic_file.h"

namespace ember::io {

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicLen = 6;

struct NpyDescr {
  const char* code;  // without the byte-order character
  DType dtype;
};
constexpr NpyDescr kNpyDescrs[] = {{"f4", DType::Float32}, {"f8", DType::Float64}, {"f2", DType::Float16},
                                   {"i4", DType::Int32},   {"i8", DType::Int64},   {"u1", DType::UInt8},
                                   {"b1", DType::Bool}};

// The quoted value after 'key': in the header dict, or the raw text up to the next ',' or ')' when unquoted.
std::string npy_field(const std::string& header, const std::string& key, const std::string& path) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw DataLoss("read_npy: " + path + ": the header has no '" + key + "': " + header);
  size_t p = header.find(':', k);
  if (p == std::string::npos) throw DataLoss("read_npy: " + path + ": malformed header: " + header);
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  if (p < header.size() && (header[p] == '\'' || header[p] == '"')) {
    const size_t end = header.find(header[p], p + 1);
    if (end == std::string::npos) throw DataLoss("read_npy: " + path + ": malformed header: " + header);
    return header.substr(p + 1, end - p - 1);
  }
  if (p < header.size() && header[p] == '(') {
    const size_t end = header.find(')', p);
    if (end == std::string::npos) throw DataLoss("read_npy: " + path + ": malformed header: " + header);
    return header.substr(p, end - p + 1);
  }
  size_t end = p;
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(p, end - p);
}

Shape npy_shape(const std::string& tuple, const std::string& path) {
  Shape shape;
  std::string inner = tuple.substr(1, tuple.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    try {
      size_t used = 0;
      const long long d = std::stoll(item, &used);
      if (d < 0) throw std::invalid_argument("negative");
      shape.push_back(d);
    } catch (const std::exception&) {
      throw DataLoss("read_npy: " + path + ": bad shape " + tuple);
    }
  }
  return shape;
}

std::string npy_descr(DType dtype) {
  for (const NpyDescr& d : kNpyDescrs)
    if (d.dtype == dtype) return std::string(dtype_size(dtype) == 1 ? "|" : "<") + d.code;
  throw Unimplemented(std::string("write_npy: no .npy dtype for ") + dtype_name(dtype));
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFound("read_npy: cannot open " + path);
  char magic[kNpyMagicLen + 2];
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, kNpyMagic, kNpyMagicLen) != 0)
    throw DataLoss("read_npy: " + path + " is not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(magic[kNpyMagicLen]);
  if (major < 1 || major > 3)
    throw Unimplemented("read_npy: " + path + ": .npy version " + std::to_string(major) + " (1 to 3 are known)");
  unsigned char len_bytes[4] = {0, 0, 0, 0};
  const int len_size = major == 1 ? 2 : 4;
  if (!in.read(reinterpret_cast<char*>(len_bytes), len_size)) throw DataLoss("read_npy: " + path + " is truncated");
  const uint32_t header_len = len_bytes[0] | (len_bytes[1] << 8) | (len_bytes[2] << 16) | (uint32_t(len_bytes[3]) << 24);
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) throw DataLoss("read_npy: " + path + " is truncated in its header");

  const std::string descr = npy_field(header, "descr", path);
  if (npy_field(header, "fortran_order", path) != "False")
    throw Unimplemented("read_npy: " + path + " is in Fortran order; save a C-order array (numpy.ascontiguousarray)");
  const Shape shape = npy_shape(npy_field(header, "shape", path), path);
  std::optional<DType> dtype;
  if (descr.size() == 3) {
    for (const NpyDescr& d : kNpyDescrs) {
      if (descr.substr(1) != d.code) continue;
      const bool little = descr[0] == '<' || descr[0] == '=' || descr[0] == '|';
      if (!little && dtype_size(d.dtype) != 1)
        throw Unimplemented("read_npy: " + path + " holds big-endian data ('" + descr + "'); save it little-endian");
      dtype = d.dtype;
    }
  }
  if (!dtype)
    throw Unimplemented("read_npy: " + path + " has dtype '" + descr +
                        "'; supported: float16/32/64, int32, int64, uint8 and bool ('<f2', '<f4', '<f8', '<i4', '<i8', "
                        "'|u1', '|b1')");
  Tensor t = Tensor::empty(shape, *dtype, Device::cpu());
  if (t.nbytes() > 0 && !in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes())))
    throw DataLoss("read_npy: " + path + " is truncated: shape " + shape.to_string() + " of " + descr + " needs " +
                   std::to_string(t.nbytes()) + " bytes of data");
  return t;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  tensor.check_concrete("write_npy");
  const Tensor host = tensor.to(Device::cpu());
  std::string shape = "(";  // Python's tuple spelling: (), (5,), (2, 3)
  for (int64_t i = 0; i < host.rank(); ++i) shape += (i ? ", " : "") + std::to_string(host.shape()[i]);
  shape += host.rank() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + npy_descr(host.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // numpy pads so that the data starts on a 64-byte boundary, and ends the header with a newline.
  const size_t prefix = kNpyMagicLen + 2 + 2;
  header += std::string(63 - (prefix + header.size()) % 64, ' ') + "\n";
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    out.write(kNpyMagic, kNpyMagicLen);
    const char version[2] = {1, 0};
    out.write(version, 2);
    const char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
    out.write(len, 2);
    out << header;
    out.write(static_cast<const char*>(host.raw_data()), static_cast<std::streamsize>(host.nbytes()));
    out.close();
    if (!out) throw Internal("write_npy: cannot write " + tmp);
  });
}

}  // namespace ember::io
