// read_tar: POSIX ustar headers (512-byte blocks: name, octal size, type flag, prefix) over zlib's gz*
// reader, which reads gzip and uncompressed files alike.
#include "data/tar.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <cstdio>
#include <memory>

#include "framework/core/error.h"

namespace ember::datasets::detail {

namespace {

struct GzClose {
  void operator()(gzFile f) const { gzclose(f); }
};

// Reads n bytes; false when the data ends first. A gzip error is a DataLoss.
bool read_block(gzFile f, const std::string& path, char* dst, size_t n, uint64_t offset) {
  size_t got = 0;
  while (got < n) {
    const int r = gzread(f, dst + got, static_cast<unsigned>(std::min<size_t>(n - got, INT_MAX / 2)));
    int err = Z_OK;
    const char* msg = gzerror(f, &err);
    EMBER_CHECK(r >= 0 && (err == Z_OK || err == Z_STREAM_END), DataLoss)
        << path << ": gzip error near byte offset " << offset + got << " of the tar data: " << msg;
    if (r == 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

uint64_t octal(const char* field, size_t n, const std::string& path, uint64_t offset) {
  uint64_t v = 0;
  size_t i = 0;
  while (i < n && field[i] == ' ') ++i;
  for (; i < n && field[i] >= '0' && field[i] <= '7'; ++i) v = v * 8 + static_cast<uint64_t>(field[i] - '0');
  EMBER_CHECK(i == n || field[i] == '\0' || field[i] == ' ', DataLoss)
      << path << ": not a tar archive (bad size field in the header at byte offset " << offset << ")";
  return v;
}

}  // namespace

void read_tar(const std::string& path, const std::function<bool(const std::string&)>& want,
              const std::function<void(const std::string&, std::string)>& keep) {
  std::FILE* probe = std::fopen(path.c_str(), "rb");
  EMBER_CHECK(probe != nullptr, NotFound) << "cannot open " << path;
  std::fclose(probe);
  std::unique_ptr<gzFile_s, GzClose> f(gzopen(path.c_str(), "rb"));
  EMBER_CHECK(f != nullptr, NotFound) << "cannot open " << path;
  gzbuffer(f.get(), 1 << 20);
  uint64_t offset = 0;
  char header[512];
  while (true) {
    EMBER_CHECK(read_block(f.get(), path, header, 512, offset), DataLoss)
        << path << ": truncated tar archive: no end-of-archive block after byte offset " << offset;
    bool zero = true;
    for (char ch : header) zero = zero && ch == 0;
    if (zero) return;  // the end-of-archive blocks
    const bool ustar = std::string(header + 257, 5) == "ustar";
    std::string name(header, strnlen(header, 100));
    if (ustar && header[345]) name = std::string(header + 345, strnlen(header + 345, 155)) + "/" + name;
    const uint64_t size = octal(header + 124, 12, path, offset);
    const char type = header[156];
    offset += 512;
    const bool regular = type == '0' || type == '\0';
    const uint64_t padded = (size + 511) / 512 * 512;
    if (regular && want(name)) {
      std::string data(static_cast<size_t>(size), '\0');
      EMBER_CHECK(read_block(f.get(), path, data.data(), data.size(), offset), DataLoss)
          << path << ": truncated: " << name << " needs " << size << " bytes from byte offset " << offset
          << " of the tar data";
      std::string pad(static_cast<size_t>(padded - size), '\0');
      EMBER_CHECK(read_block(f.get(), path, pad.data(), pad.size(), offset + size), DataLoss)
          << path << ": truncated after " << name;
      keep(name, std::move(data));
    } else {
      EMBER_CHECK(gzseek(f.get(), static_cast<z_off_t>(padded), SEEK_CUR) >= 0, DataLoss)
          << path << ": truncated while skipping " << name << " at byte offset " << offset;
    }
    offset += padded;
  }
}

}  // namespace ember::datasets::detail
