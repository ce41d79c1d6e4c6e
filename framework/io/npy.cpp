// NumPy's .npy format: the magic "\x93NUMPY", a version, a little-endian header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces to a multiple of 64 bytes,
// then the raw elements (numpy/lib/format.py).
#include "framework/io/npy.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
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
std::string npy_field(const std::string& header, const std::string& key, const std::string& where) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw DataLoss(where + ": the header has no '" + key + "': " + header);
  size_t p = header.find(':', k);
  if (p == std::string::npos) throw DataLoss(where + ": malformed header: " + header);
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  if (p < header.size() && (header[p] == '\'' || header[p] == '"')) {
    const size_t end = header.find(header[p], p + 1);
    if (end == std::string::npos) throw DataLoss(where + ": malformed header: " + header);
    return header.substr(p + 1, end - p - 1);
  }
  if (p < header.size() && header[p] == '(') {
    const size_t end = header.find(')', p);
    if (end == std::string::npos) throw DataLoss(where + ": malformed header: " + header);
    return header.substr(p, end - p + 1);
  }
  size_t end = p;
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(p, end - p);
}

Shape npy_shape(const std::string& tuple, const std::string& where) {
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
      throw DataLoss(where + ": bad shape " + tuple);
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

NpyHeader parse_npy_header(std::string_view bytes, const std::string& where) {
  if (bytes.size() < kNpyMagicLen + 2 || bytes.substr(0, kNpyMagicLen) != std::string_view(kNpyMagic, kNpyMagicLen))
    throw DataLoss(where + " is not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[kNpyMagicLen]);
  if (major < 1 || major > 3)
    throw Unimplemented(where + ": .npy version " + std::to_string(major) + " (1 to 3 are known)");
  const size_t len_size = major == 1 ? 2 : 4, start = kNpyMagicLen + 2 + len_size;
  if (bytes.size() < start) throw DataLoss(where + " is truncated");
  size_t header_len = 0;
  for (size_t k = 0; k < len_size; ++k)
    header_len |= size_t{static_cast<unsigned char>(bytes[kNpyMagicLen + 2 + k])} << (8 * k);
  if (header_len > bytes.size() - start) throw DataLoss(where + " is truncated in its header");
  const std::string header(bytes.substr(start, header_len));
  NpyHeader h;
  h.descr = npy_field(header, "descr", where);
  const std::string fortran = npy_field(header, "fortran_order", where);
  if (fortran != "True" && fortran != "False") throw DataLoss(where + ": malformed header: " + header);
  h.fortran_order = fortran == "True";
  h.shape = npy_shape(npy_field(header, "shape", where), where);
  h.data_offset = start + header_len;
  return h;
}

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFound("read_npy: cannot open " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const NpyHeader h = parse_npy_header(bytes, "read_npy: " + path);
  const std::string& descr = h.descr;
  if (h.fortran_order)
    throw Unimplemented("read_npy: " + path + " is in Fortran order; save a C-order array (numpy.ascontiguousarray)");
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
  Tensor t = Tensor::empty(h.shape, *dtype, Device::cpu());
  if (t.nbytes() > bytes.size() - h.data_offset)
    throw DataLoss("read_npy: " + path + " is truncated: shape " + h.shape.to_string() + " of " + descr + " needs " +
                   std::to_string(t.nbytes()) + " bytes of data");
  if (t.nbytes() > 0) std::memcpy(t.raw_data(), bytes.data() + h.data_offset, t.nbytes());
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
