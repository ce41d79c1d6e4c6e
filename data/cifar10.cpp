// cifar10::load_data: find the archive or the extracted batch files, then turn the records (a label byte,
// then 1024 red, 1024 green and 1024 blue bytes) into Keras's channels-last arrays.
#include "data/cifar10.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "data/tar.h"

namespace ember::datasets::cifar10 {

namespace {

namespace fs = std::filesystem;

constexpr const char* kWho = "cifar10.load_data";
constexpr const char* kArchive = "cifar-10-binary.tar.gz";
constexpr const char* kFolder = "cifar-10-batches-bin";
constexpr std::array<const char*, 6> kFiles = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                               "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
constexpr int64_t kRecord = 1 + 3 * 32 * 32;

// The six files' bytes (kFiles order) and where each came from, for error messages.
struct Files {
  std::array<std::string, 6> bytes;
  std::array<std::string, 6> where;
};

Files from_archive(const std::string& archive) {
  std::map<std::string, std::string> found;
  auto base = [](const std::string& name) { return fs::path(name).filename().string(); };
  datasets::detail::read_tar(
      archive,
      [&](const std::string& name) {
        for (const char* f : kFiles)
          if (base(name) == f) return true;
        return false;
      },
      [&](const std::string& name, std::string data) { found[base(name)] = std::move(data); });
  Files out;
  std::string missing;
  for (size_t i = 0; i < kFiles.size(); ++i) {
    auto it = found.find(kFiles[i]);
    if (it == found.end()) {
      missing += std::string(missing.empty() ? "" : ", ") + kFiles[i];
      continue;
    }
    out.bytes[i] = std::move(it->second);
    out.where[i] = archive + ":" + kFolder + "/" + kFiles[i];
  }
  EMBER_CHECK(missing.empty(), DataLoss) << kWho << ": " << archive << " lacks " << missing;
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EMBER_CHECK(in.good(), NotFound) << kWho << ": cannot open " << p.string();
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Where the data is in `dir` (the archive, the extracted folder or the bare files), or what it lacks.
std::optional<Files> from_directory(const fs::path& dir, std::string& lacks) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    lacks = "no such directory";
    return std::nullopt;
  }
  if (fs::is_regular_file(dir / kArchive, ec)) return from_archive((dir / kArchive).string());
  for (const fs::path& d : {dir / kFolder, dir}) {
    bool all = true;
    for (const char* f : kFiles) all = all && fs::is_regular_file(d / f, ec);
    if (!all) continue;
    Files out;
    for (size_t i = 0; i < kFiles.size(); ++i) {
      out.bytes[i] = read_file(d / kFiles[i]);
      out.where[i] = (d / kFiles[i]).string();
    }
    return out;
  }
  lacks = std::string("lacks ") + kArchive + " and " + kFolder + "/";
  return std::nullopt;
}

Files locate(const std::optional<std::string>& path) {
  std::error_code ec;
  if (path && fs::is_regular_file(*path, ec)) return from_archive(*path);
  std::vector<fs::path> dirs;
  const char* env = std::getenv("EMBER_DATA_DIR");
  if (path) {
    dirs.emplace_back(*path);
  } else if (env && *env) {
    dirs.push_back(fs::path(env) / "cifar10");
    dirs.emplace_back(env);
  }
  std::string tried;
  for (const fs::path& d : dirs) {
    std::string lacks;
    if (std::optional<Files> f = from_directory(d, lacks)) return std::move(*f);
    tried += "\n  " + d.string() + " (" + lacks + ")";
  }
  if (!path && (!env || !*env)) tried += "\n  $EMBER_DATA_DIR (not set)";
  throw NotFound(std::string(kWho) + ": CIFAR-10 not found. Tried:" + tried +
                 "\nNothing is downloaded: put " + kArchive + " (https://www.cs.toronto.edu/~kriz/" + kArchive +
                 ") or its extracted " + kFolder + "/ folder into $EMBER_DATA_DIR/cifar10, or pass its path");
}

// Appends the records of one batch file to x (channels last) and y.
void append_records(const std::string& bytes, const std::string& where, std::vector<uint8_t>& x, std::vector<uint8_t>& y) {
  const int64_t size = static_cast<int64_t>(bytes.size());
  EMBER_CHECK(size % kRecord == 0, DataLoss)
      << kWho << ": " << where << " holds " << size << " bytes, not a whole number of " << kRecord
      << "-byte records (a label byte and a 32x32x3 image)";
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  for (int64_t r = 0; r < size / kRecord; ++r) {
    const uint8_t* rec = b + r * kRecord;
    EMBER_CHECK(rec[0] <= 9, DataLoss) << kWho << ": " << where << ": label " << int{rec[0]} << " at byte offset "
                                       << r * kRecord << " is outside 0..9";
    y.push_back(rec[0]);
    for (int p = 0; p < 32 * 32; ++p)
      for (int c = 0; c < 3; ++c) x.push_back(rec[1 + c * 1024 + p]);
  }
}

Split make_split(const Files& f, size_t first, size_t last) {
  std::vector<uint8_t> x, y;
  size_t bytes = 0;
  for (size_t i = first; i < last; ++i) bytes += f.bytes[i].size();
  x.reserve(bytes);
  for (size_t i = first; i < last; ++i) append_records(f.bytes[i], f.where[i], x, y);
  const int64_t n = static_cast<int64_t>(y.size());
  return {Tensor::from_vector<uint8_t>(x, Shape{n, 32, 32, 3}, Device::cpu()),
          Tensor::from_vector<uint8_t>(y, Shape{n, 1}, Device::cpu())};
}

}  // namespace

TrainTest load_data(std::optional<std::string> path) {
  const Files f = locate(path);
  return {make_split(f, 0, 5), make_split(f, 5, 6)};
}

}  // namespace ember::datasets::cifar10
