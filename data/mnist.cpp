// fashion_mnist::load_data and mnist::load_data: directory search, then read_idx on the four files.
#include "data/mnist.h"

#include <array>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "data/idx.h"

namespace ember::datasets {

namespace {

namespace fs = std::filesystem;

constexpr std::array<const char*, 4> kFiles = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

struct Source {
  const char* loader;       // "fashion_mnist.load_data"
  const char* subdir;       // under $EMBER_DATA_DIR
  bool data_dir_root;       // also look in $EMBER_DATA_DIR itself
  const char* system_dir;   // a distribution's install location, or nullptr
  const char* install_hint;
};

// `name` in dir, gzip-compressed first; empty when neither spelling exists.
std::string find_file(const fs::path& dir, const char* name) {
  std::error_code ec;
  for (const std::string& candidate : {std::string(name) + ".gz", std::string(name)})
    if (fs::is_regular_file(dir / candidate, ec)) return (dir / candidate).string();
  return {};
}

// The four paths from the first directory holding them all; NotFound listing what each candidate lacked.
std::array<std::string, 4> locate(const Source& src, const std::optional<std::string>& path) {
  // A path the caller names is the only candidate: loading another copy in its place would hide the typo.
  std::vector<fs::path> dirs;
  if (path) dirs.emplace_back(*path);
  const char* env = std::getenv("EMBER_DATA_DIR");
  if (!path && env && *env) {
    dirs.push_back(fs::path(env) / src.subdir);
    if (src.data_dir_root) dirs.emplace_back(env);
  }
  if (!path && src.system_dir) dirs.emplace_back(src.system_dir);

  std::string tried;
  for (const fs::path& dir : dirs) {
    std::array<std::string, 4> found;
    std::string missing;
    for (size_t i = 0; i < kFiles.size(); ++i) {
      found[i] = find_file(dir, kFiles[i]);
      if (found[i].empty()) missing += std::string(missing.empty() ? "" : ", ") + kFiles[i] + "[.gz]";
    }
    if (missing.empty()) return found;
    std::error_code ec;
    tried += "\n  " + dir.string() + (fs::is_directory(dir, ec) ? " (lacks " + missing + ")" : " (no such directory)");
  }
  if (path)
    throw NotFound(std::string(src.loader) + ": dataset files not found in the given path:" + tried +
                   "\nPass the directory holding the four files, or no path to search $EMBER_DATA_DIR" +
                   (src.system_dir ? std::string(" and ") + src.system_dir : std::string()));
  if (!env || !*env) tried += "\n  $EMBER_DATA_DIR (not set)";
  throw NotFound(std::string(src.loader) + ": dataset files not found. Tried:" + tried + "\n" + src.install_hint);
}

// Reads images and labels of one split and checks that they belong together.
Split read_split(const std::string& images_path, const std::string& labels_path) {
  Split s{read_idx(images_path, 3), read_idx(labels_path, 1)};
  EMBER_CHECK(s.x.shape()[0] == s.y.shape()[0], DataLoss)
      << labels_path << " holds " << s.y.shape()[0] << " labels (header at byte offset 4) but " << images_path
      << " holds " << s.x.shape()[0] << " images";
  const uint8_t* y = s.y.data<uint8_t>();
  for (int64_t i = 0; i < s.y.num_elements(); ++i)
    EMBER_CHECK(y[i] <= 9, DataLoss) << labels_path << ": label " << int{y[i]} << " at byte offset " << 8 + i
                                     << " of the decompressed data is outside 0..9";
  return s;
}

TrainTest load_split(const Source& src, const std::optional<std::string>& path) {
  const std::array<std::string, 4> files = locate(src, path);
  return {read_split(files[0], files[1]), read_split(files[2], files[3])};
}

}  // namespace

namespace fashion_mnist {
TrainTest load_data(std::optional<std::string> path) {
  static const Source src{"fashion_mnist.load_data", "fashion-mnist", true, "/usr/share/datasets/fashion-mnist",
                          "Install it with: sudo apt-get install dataset-fashion-mnist (or point EMBER_DATA_DIR at a "
                          "directory holding the files)"};
  return load_split(src, path);
}
}  // namespace fashion_mnist

namespace mnist {
TrainTest load_data(std::optional<std::string> path) {
  static const Source src{"mnist.load_data", "mnist", false, nullptr,
                          "Debian packages no MNIST: put the four files (e.g. from "
                          "https://storage.googleapis.com/cvdf-datasets/mnist/) into $EMBER_DATA_DIR/mnist or pass "
                          "their directory"};
  return load_split(src, path);
}
}  // namespace mnist

}  // namespace ember::datasets
