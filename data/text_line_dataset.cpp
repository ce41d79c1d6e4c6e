#include "data/text_line_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "framework/core/error.h"

namespace ember::data {

namespace {

constexpr const char* kOp = "text_line_dataset";
constexpr size_t kDefaultBufferSize = size_t{256} << 10;

enum class Compression { None, Gzip, Zlib };

Compression parse_compression(const std::string& type) {
  if (type.empty()) return Compression::None;
  if (type == "GZIP") return Compression::Gzip;
  if (type == "ZLIB") return Compression::Zlib;
  throw make_error<InvalidArgument>(kOp, ": compression_type '", type, "' is not supported (expected \"\", \"GZIP\" or \"ZLIB\")");
}

struct FileClose {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// One file's lines, read through a buffer of decoded bytes (inflated for GZIP/ZLIB).
class LineReader {
 public:
  LineReader(std::string path, Compression compression, size_t buffer_size)
      : path_(std::move(path)), compression_(compression), buf_(buffer_size) {
    file_.reset(std::fopen(path_.c_str(), "rb"));
    if (!file_) {
      const int err = errno;
      if (err == ENOENT) throw make_error<NotFound>(kOp, ": ", path_, ": no such file");
      throw make_error<DataLoss>(kOp, ": cannot open ", path_, ": ", std::strerror(err));
    }
    if (compression_ != Compression::None) {
      in_.resize(buffer_size);
      // 15 window bits read a zlib stream; +16 a gzip one (TF's ZlibCompressionOptions::GZIP).
      const int window_bits = compression_ == Compression::Gzip ? MAX_WBITS + 16 : MAX_WBITS;
      EMBER_CHECK(inflateInit2(&zs_, window_bits) == Z_OK, ResourceExhausted)
          << kOp << ": cannot start zlib for " << path_;
      inflating_ = true;
    }
  }
  ~LineReader() {
    if (inflating_) inflateEnd(&zs_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line, or std::nullopt at the end of the file (TF's BufferedInputStream::ReadLine).
  std::optional<std::string> next() {
    std::string line;
    while (pos_ < limit_ || fill()) {
      const char* start = buf_.data() + pos_;
      const char* end = buf_.data() + limit_;
      const char* newline = static_cast<const char*>(std::memchr(start, '\n', static_cast<size_t>(end - start)));
      const char* stop = newline ? newline : end;
      for (const char* p = start; p < stop;) {  // the bytes up to the line break, every '\r' left out
        const char* cr = static_cast<const char*>(std::memchr(p, '\r', static_cast<size_t>(stop - p)));
        const char* run_end = cr ? cr : stop;
        line.append(p, run_end);
        p = cr ? cr + 1 : stop;
      }
      pos_ = static_cast<size_t>(stop - buf_.data()) + (newline ? 1 : 0);
      if (newline) return line;
    }
    if (line.empty()) return std::nullopt;  // nothing after the last "\n" (or only "\r"s) is no line
    return line;
  }

 private:
  // Refills buf_ with the file's next decoded bytes; false at the end.
  bool fill() {
    pos_ = limit_ = 0;
    if (compression_ == Compression::None) {
      limit_ = read_file(buf_.data(), buf_.size());
      return limit_ > 0;
    }
    while (limit_ == 0) {
      if (zs_.avail_in == 0) {
        const size_t n = read_file(in_.data(), in_.size());
        if (n == 0) {
          EMBER_CHECK(stream_ended_, DataLoss)
              << kOp << ": " << path_ << ": the " << (compression_ == Compression::Gzip ? "GZIP" : "ZLIB")
              << " data ends early (truncated file)";
          return false;
        }
        zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
        zs_.avail_in = static_cast<uInt>(n);
      }
      if (stream_ended_) {  // more data after a finished stream: another member (concatenated gzip files)
        inflateReset(&zs_);
        stream_ended_ = false;
      }
      zs_.next_out = reinterpret_cast<Bytef*>(buf_.data());
      zs_.avail_out = static_cast<uInt>(buf_.size());
      const int r = inflate(&zs_, Z_NO_FLUSH);
      if (r == Z_STREAM_END) {
        stream_ended_ = true;
      } else if (r != Z_OK && r != Z_BUF_ERROR) {
        throw make_error<DataLoss>(kOp, ": ", path_, ": corrupt ", compression_ == Compression::Gzip ? "GZIP" : "ZLIB",
                                   " data (zlib: ", zs_.msg ? zs_.msg : "error " + std::to_string(r),
                                   "); is compression_type right?");
      }
      limit_ = buf_.size() - zs_.avail_out;
    }
    return true;
  }

  size_t read_file(char* dst, size_t n) {
    const size_t got = std::fread(dst, 1, n, file_.get());
    if (got < n && std::ferror(file_.get()))
      throw make_error<DataLoss>(kOp, ": error reading ", path_, ": ", std::strerror(errno));
    return got;
  }

  std::string path_;
  Compression compression_;
  std::unique_ptr<std::FILE, FileClose> file_;
  std::vector<char> in_, buf_;  // compressed input; decoded bytes
  size_t pos_ = 0, limit_ = 0;  // the unread decoded bytes are buf_[pos_, limit_)
  z_stream zs_{};
  bool inflating_ = false, stream_ended_ = false;
};

// One pass: files opened into `cycle` slots, each visit taking one line (TF's InterleaveDataset order).
class Pass {
 public:
  Pass(std::shared_ptr<const std::vector<std::string>> files, Compression compression, size_t buffer_size, size_t cycle)
      : files_(std::move(files)), compression_(compression), buffer_size_(buffer_size), slots_(cycle) {}

  std::optional<Element> next() {
    while (next_file_ < files_->size() || open_ > 0) {
      std::unique_ptr<LineReader>& slot = slots_[cycle_index_];
      if (slot) {
        std::optional<std::string> line = slot->next();
        if (!line) {  // the file is done: the next one takes its place when the cycle comes back here
          slot.reset();
          --open_;
          advance();
          continue;
        }
        advance();
        Tensor t = Tensor::empty(Shape{}, DType::String, Device::cpu());
        *t.data<std::string>() = std::move(*line);
        return Element{std::move(t)};
      } else if (next_file_ < files_->size()) {
        slot = std::make_unique<LineReader>((*files_)[next_file_++], compression_, buffer_size_);
        ++open_;
      } else {
        advance();
      }
    }
    return std::nullopt;
  }

 private:
  void advance() { cycle_index_ = (cycle_index_ + 1) % slots_.size(); }

  std::shared_ptr<const std::vector<std::string>> files_;
  Compression compression_;
  size_t buffer_size_;
  std::vector<std::unique_ptr<LineReader>> slots_;
  size_t cycle_index_ = 0, next_file_ = 0, open_ = 0;
};

}  // namespace

Dataset text_line_dataset(const std::vector<std::string>& filenames, TextLineDatasetOptions options) {
  const Compression compression = parse_compression(options.compression_type);
  EMBER_CHECK(options.buffer_size >= 0, InvalidArgument)
      << kOp << ": buffer_size must be >= 0 (0 for the default), got " << options.buffer_size;
  EMBER_CHECK(options.num_parallel_reads >= 0 || options.num_parallel_reads == AUTOTUNE, InvalidArgument)
      << kOp << ": num_parallel_reads must be >= 0 or AUTOTUNE, got " << options.num_parallel_reads;
  const size_t buffer_size = options.buffer_size > 0 ? static_cast<size_t>(options.buffer_size) : kDefaultBufferSize;
  const int64_t reads = options.num_parallel_reads == AUTOTUNE ? autotune_parallelism() : options.num_parallel_reads;
  const size_t cycle = static_cast<size_t>(std::max<int64_t>(reads, 1));
  auto files = std::make_shared<const std::vector<std::string>>(filenames);
  return Dataset::from_generator([files, compression, buffer_size, cycle] {
    auto pass = std::make_shared<Pass>(files, compression, buffer_size, cycle);
    return [pass]() { return pass->next(); };
  });
}

}  // namespace ember::data
