// read_idx through zlib's gz* interface, which reads gzip and (transparently) uncompressed files alike.
#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>

namespace ember::datasets {

namespace {

struct GzClose {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzClose>;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Where the reader stands: the byte offset in the (decompressed) data, plus the compressed file's offset.
std::string where(gzFile f, uint64_t offset) {
  std::string s = "byte offset " + std::to_string(offset);
  if (!gzdirect(f)) s += " of the decompressed data (byte " + std::to_string(gzoffset(f)) + " of the gzip file)";
  return s;
}

// zlib's error message without the path it puts in front (ours names the file already).
std::string reason(const char* msg, const std::string& path) {
  std::string s = msg;
  if (s.rfind(path + ": ", 0) == 0) s.erase(0, path.size() + 2);
  return s;
}

// Reads exactly n bytes at `offset` into dst; anything less is a DataLoss naming what was being read.
void read_exact(gzFile f, const std::string& path, void* dst, uint64_t n, uint64_t offset, const char* what) {
  char* p = static_cast<char*>(dst);
  uint64_t got = 0;
  while (got < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<uint64_t>(n - got, INT_MAX / 2));
    const int r = gzread(f, p + got, chunk);
    int err = Z_OK;
    const char* msg = gzerror(f, &err);
    // A short read is the end of the data unless zlib flagged an error (a truncated gzip stream: Z_BUF_ERROR).
    if (r < 0 || (err != Z_OK && err != Z_STREAM_END))
      throw DataLoss(path + ": gzip error at " + where(f, offset + got + (r > 0 ? r : 0)) + " while reading " + what +
                     ": " + reason(msg, path));
    if (r == 0) break;
    got += static_cast<uint64_t>(r);
  }
  EMBER_CHECK(got == n, DataLoss) << path << ": truncated: " << what << " needs " << n << " bytes from byte offset "
                                  << offset << " but the file ends at " << where(f, offset + got);
}

}  // namespace

Tensor read_idx(const std::string& path, std::optional<int> expected_rank) {
  std::FILE* probe = std::fopen(path.c_str(), "rb");
  EMBER_CHECK(probe != nullptr, NotFound) << "read_idx: cannot open " << path;
  std::fclose(probe);
  GzFile f(gzopen(path.c_str(), "rb"));
  EMBER_CHECK(f != nullptr, NotFound) << "read_idx: cannot open " << path;
  gzbuffer(f.get(), 1 << 20);  // fewer, larger reads of the compressed file

  unsigned char magic[4];
  read_exact(f.get(), path, magic, 4, 0, "the IDX magic number");
  const uint32_t m = uint32_t{magic[0]} << 24 | uint32_t{magic[1]} << 16 | uint32_t{magic[2]} << 8 | magic[3];
  const int rank = magic[3];
  const bool ok = magic[0] == 0 && magic[1] == 0 && magic[2] == 0x08 && rank >= 1 &&
                  (!expected_rank || rank == *expected_rank);
  EMBER_CHECK(ok, DataLoss) << path << ": bad magic number " << hex32(m) << " at byte offset 0 (expected "
                            << (expected_rank ? hex32(0x800u + static_cast<uint32_t>(*expected_rank)) : "0x000008NN")
                            << ": an IDX file of unsigned bytes" << (expected_rank ? "" : ", NN dimensions") << ")";

  std::vector<unsigned char> header(static_cast<size_t>(4 * rank));
  read_exact(f.get(), path, header.data(), header.size(), 4, "the IDX dimensions");
  Shape shape;
  uint64_t total = 1;
  for (int i = 0; i < rank; ++i) {
    const unsigned char* b = header.data() + 4 * i;
    const uint64_t d = uint64_t{b[0]} << 24 | uint64_t{b[1]} << 16 | uint64_t{b[2]} << 8 | b[3];
    total *= d;
    EMBER_CHECK(total < (uint64_t{1} << 40), DataLoss)
        << path << ": implausible IDX dimensions at byte offset 4 (over 2^40 elements)";
    shape.push_back(static_cast<int64_t>(d));
  }
  const uint64_t data_offset = 4 + header.size();
  Tensor out = Tensor::empty(shape, DType::UInt8, Device::cpu());
  read_exact(f.get(), path, out.raw_data(), total, data_offset, "the IDX data");
  unsigned char extra;
  const int r = gzread(f.get(), &extra, 1);
  EMBER_CHECK(r == 0, DataLoss) << path << ": " << (r < 0 ? "gzip error" : "unexpected data") << " after the "
                                << total << " bytes the header " << shape << " promises, at "
                                << where(f.get(), data_offset + total)
                                << (r < 0 ? ": " + reason(gzerror(f.get(), nullptr), path) : std::string());
  return out;
}

}  // namespace ember::datasets
