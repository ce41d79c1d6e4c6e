// image_dataset_from_directory: Keras's index_directory (sorted walk, one NumPy-seeded shuffle, the
// training/validation split), then a pipeline that decodes and resizes each file on worker threads.
#include "data/image_dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <numeric>

#include "data/image_io.h"
#include "data/numpy_random.h"
#include "framework/io/image_file.h"
#include "framework/ops/random.h"

namespace ember::data {

namespace {

namespace fs = std::filesystem;

constexpr const char* kWho = "image_dataset_from_directory";
constexpr const char* kFormats = "(.bmp, .gif, .jpeg, .jpg, .png)";

bool allowed_format(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
  for (const char* ext : {".bmp", ".gif", ".jpeg", ".jpg", ".png"}) {
    const std::string e = ext;
    if (name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

// os.walk(root) as Keras's iter_valid_files uses it: every (folder, file name) below root, symlinked folders
// entered only with follow_links.
void walk(const fs::path& root, bool follow_links, std::vector<std::pair<std::string, std::string>>& out) {
  std::error_code ec;
  std::vector<fs::path> subdirs;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2)) {
      if (follow_links || !it->is_symlink(ec2)) subdirs.push_back(it->path());
    } else {
      out.emplace_back(root.string(), it->path().filename().string());
    }
  }
  for (const fs::path& d : subdirs) walk(d, follow_links, out);
}

// The image files below `dir`, ordered as Keras orders them: by folder path, then by name.
std::vector<std::string> valid_files(const fs::path& dir, bool follow_links) {
  std::vector<std::pair<std::string, std::string>> found;
  walk(dir, follow_links, found);
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (const auto& [root, name] : found)
    if (allowed_format(name)) out.push_back((fs::path(root) / name).string());
  return out;
}

struct Index {
  std::vector<std::string> paths;
  std::vector<int32_t> labels;  // empty without labels
  std::vector<std::string> class_names;
};

// Keras's dataset_utils.index_directory.
Index index_directory(const std::string& directory, bool inferred, const std::vector<std::string>& class_names,
                      bool shuffle, uint32_t seed, bool follow_links) {
  std::error_code ec;
  EMBER_CHECK(fs::is_directory(directory, ec), NotFound) << kWho << ": no such directory: " << directory;
  Index index;
  std::vector<std::string> subdirs;
  if (inferred) {
    for (const fs::directory_entry& e : fs::directory_iterator(directory)) {
      const std::string name = e.path().filename().string();
      std::error_code ec2;
      if (e.is_directory(ec2) && name[0] != '.') subdirs.push_back(name);
    }
    std::sort(subdirs.begin(), subdirs.end());
    if (!class_names.empty()) {
      for (const std::string& c : class_names)
        if (std::find(subdirs.begin(), subdirs.end(), c) == subdirs.end()) {
          std::string have;
          for (const std::string& s : subdirs) have += (have.empty() ? "" : ", ") + s;
          throw InvalidArgument(std::string(kWho) + ": class_names must name subdirectories of " + directory +
                                " (" + have + "), but \"" + c + "\" is none of them");
        }
      subdirs = class_names;
    }
    index.class_names = subdirs;
    for (size_t c = 0; c < subdirs.size(); ++c)
      for (std::string& p : valid_files(fs::path(directory) / subdirs[c], follow_links)) {
        index.paths.push_back(std::move(p));
        index.labels.push_back(static_cast<int32_t>(c));
      }
  } else {
    index.paths = valid_files(directory, follow_links);
  }
  if (shuffle) {
    // Two generators from the same seed, as Keras shuffles the paths and the labels separately.
    detail::NumpyRandomState(seed).shuffle(index.paths);
    if (inferred) detail::NumpyRandomState(seed).shuffle(index.labels);
  }
  return index;
}

// Keras's get_training_or_validation_split: the last int(split * n) files are the validation subset.
std::pair<size_t, size_t> split_range(size_t n, const std::optional<double>& validation_split, const std::string& subset) {
  if (!validation_split) return {0, n};
  const size_t num_val = static_cast<size_t>(*validation_split * static_cast<double>(n));
  return subset == "training" ? std::pair<size_t, size_t>{0, n - num_val} : std::pair<size_t, size_t>{n - num_val, n};
}

struct Checked {
  std::optional<std::string> label_mode;
  int channels;
  uint32_t seed;
  bool has_split;
};

// Keras's argument checks, in its order.
Checked check_options(const ImageDatasetOptions& o) {
  Checked c{};
  EMBER_CHECK(!o.labels || *o.labels == "inferred", InvalidArgument)
        << kWho << ": labels must be \"inferred\" or std::nullopt (no labels), got \"" << *o.labels << "\"";
  EMBER_CHECK(!o.label_mode || *o.label_mode == "int" || *o.label_mode == "categorical" || *o.label_mode == "binary",
              InvalidArgument)
        << kWho << ": label_mode must be \"int\", \"categorical\", \"binary\" or std::nullopt, got \"" << *o.label_mode
        << "\"";
  // Without labels or without a label mode, neither is used (and the whole directory is indexed).
  c.label_mode = o.labels ? o.label_mode : std::nullopt;
  EMBER_CHECK(c.label_mode || o.class_names.empty(), InvalidArgument)
      << kWho << ": class_names can only be given with labels \"inferred\" and a label_mode";
  if (o.color_mode == "rgb") c.channels = 3;
  else if (o.color_mode == "rgba") c.channels = 4;
  else if (o.color_mode == "grayscale") c.channels = 1;
  else
    throw InvalidArgument(std::string(kWho) + ": color_mode must be \"rgb\", \"rgba\" or \"grayscale\", got \"" +
                          o.color_mode + "\"");
  EMBER_CHECK(o.image_size[0] >= 1 && o.image_size[1] >= 1, InvalidArgument)
      << kWho << ": image_size must be two positive integers, got {" << o.image_size[0] << ", " << o.image_size[1]
      << "}";
  std::string interpolation = o.interpolation;
  std::transform(interpolation.begin(), interpolation.end(), interpolation.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  if (interpolation != "bilinear" && interpolation != "nearest") {
    for (const char* keras_only : {"bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic"})
      EMBER_CHECK(interpolation != keras_only, Unimplemented)
          << kWho << ": interpolation \"" << o.interpolation << "\" is not implemented; use \"bilinear\" or \"nearest\"";
    throw InvalidArgument(std::string(kWho) + ": interpolation must be \"bilinear\" or \"nearest\", got \"" +
                          o.interpolation + "\"");
  }
  EMBER_CHECK(!o.batch_size || *o.batch_size >= 1, InvalidArgument)
      << kWho << ": batch_size must be >= 1 or std::nullopt, got " << *o.batch_size;
  // check_validation_split_arg (a split of 0 counts as none, as Python's truthiness has it).
  c.has_split = o.validation_split && *o.validation_split != 0;
  EMBER_CHECK(!c.has_split || (*o.validation_split > 0 && *o.validation_split < 1), InvalidArgument)
      << kWho << ": validation_split must be between 0 and 1, got " << *o.validation_split;
  EMBER_CHECK(c.has_split == o.subset.has_value(), InvalidArgument)
      << kWho << ": if subset is set, validation_split must be set, and inversely";
  EMBER_CHECK(!o.subset || *o.subset == "training" || *o.subset == "validation" || *o.subset == "both", InvalidArgument)
      << kWho << ": subset must be \"training\", \"validation\" or \"both\", got \"" << *o.subset << "\"";
  EMBER_CHECK(!(c.has_split && o.shuffle && !o.seed), InvalidArgument)
      << kWho << ": with validation_split and shuffle, a seed must be given, so that the training and validation "
                 "subsets do not overlap";
  if (o.seed) {
    c.seed = *o.seed;
  } else {
    // Keras draws np.random.randint(1e6); here ember::random's stream (deterministic after random::set_seed).
    c.seed = static_cast<uint32_t>(random::uniform({1}, {.minval = 0, .maxval = 1000000, .dtype = DType::Int64,
                                                         .seed = std::nullopt})
                                       .to(Device::cpu())
                                       .to_vector<int64_t>()[0]);
  }
  return c;
}

// The labels of files [begin, end) in label_mode's form: int32 [n], float32 one-hot [n, C] or float32 [n, 1].
Tensor label_tensor(const Index& index, size_t begin, size_t end, const std::string& label_mode) {
  const int64_t n = static_cast<int64_t>(end - begin);
  if (label_mode == "int")
    return Tensor::from_vector<int32_t>(std::vector<int32_t>(index.labels.begin() + begin, index.labels.begin() + end),
                                        Shape{n}, Device::cpu());
  if (label_mode == "binary") {
    std::vector<float> v(index.labels.begin() + begin, index.labels.begin() + end);
    return Tensor::from_vector<float>(v, Shape{n, 1}, Device::cpu());
  }
  const int64_t classes = static_cast<int64_t>(index.class_names.size());
  std::vector<float> v(static_cast<size_t>(n * classes), 0.0f);
  for (int64_t i = 0; i < n; ++i) v[i * classes + index.labels[begin + i]] = 1.0f;
  return Tensor::from_vector<float>(v, Shape{n, classes}, Device::cpu());
}

// Keras's paths_and_labels_to_dataset, then batch and prefetch.
DirectoryDataset make_dataset(const std::string& directory, const Index& index, std::pair<size_t, size_t> range,
                              const ImageDatasetOptions& o, const Checked& c, bool shuffle) {
  const auto [begin, end] = range;
  EMBER_CHECK(end > begin, InvalidArgument)
      << kWho << ": no images found in directory " << directory
      << (o.subset ? " for the " + *o.subset + " subset" : std::string()) << ". Allowed formats: " << kFormats;
  auto paths = std::make_shared<const std::vector<std::string>>(index.paths.begin() + begin, index.paths.begin() + end);
  std::vector<int64_t> order(end - begin);
  std::iota(order.begin(), order.end(), 0);
  std::vector<Tensor> columns{Tensor::from_vector<int64_t>(order, Device::cpu())};
  if (c.label_mode) columns.push_back(label_tensor(index, begin, end, *c.label_mode));
  Dataset ds = Dataset::from_tensor_slices(columns);
  if (shuffle) ds = ds.shuffle(o.batch_size ? *o.batch_size * 8 : 1024, {.seed = c.seed});
  std::string interpolation = o.interpolation;
  std::transform(interpolation.begin(), interpolation.end(), interpolation.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  ds = ds.map(
      [paths, channels = c.channels, size = o.image_size, interpolation, crop = o.crop_to_aspect_ratio](const Element& e) {
        Element out = e;
        const std::string& path = (*paths)[static_cast<size_t>(e[0].item<int64_t>())];
        const Tensor image = io::decode_image(path, channels, io::ImageConvention::tensorflow);
        out[0] = resize_image(image, size, interpolation, crop);
        return out;
      },
      {.num_parallel_calls = AUTOTUNE});
  if (o.batch_size) ds = ds.batch(*o.batch_size);
  ds = ds.prefetch(AUTOTUNE);
  return DirectoryDataset(std::move(ds), c.label_mode ? index.class_names : std::vector<std::string>{}, *paths);
}

Index build_index(const std::string& directory, const ImageDatasetOptions& o, const Checked& c) {
  Index index = index_directory(directory, c.label_mode.has_value(), o.class_names, o.shuffle, c.seed, o.follow_links);
  EMBER_CHECK(!(c.label_mode == "binary" && index.class_names.size() != 2), InvalidArgument)
      << kWho << ": label_mode \"binary\" needs exactly 2 classes, got " << index.class_names.size();
  return index;
}

}  // namespace

DirectoryDataset image_dataset_from_directory(const std::string& directory, ImageDatasetOptions options) {
  const Checked c = check_options(options);
  EMBER_CHECK(options.subset != "both", InvalidArgument)
      << kWho << ": subset \"both\" gives two datasets: call image_dataset_from_directory_both";
  const Index index = build_index(directory, options, c);
  return make_dataset(directory, index, split_range(index.paths.size(), options.validation_split, options.subset.value_or("")),
                      options, c, options.shuffle);
}

std::pair<DirectoryDataset, DirectoryDataset> image_dataset_from_directory_both(const std::string& directory,
                                                                                ImageDatasetOptions options) {
  EMBER_CHECK(!options.subset || *options.subset == "both", InvalidArgument)
      << "image_dataset_from_directory_both: subset must be unset or \"both\", got \"" << *options.subset << "\"";
  options.subset = "both";
  const Checked c = check_options(options);
  const Index index = build_index(directory, options, c);
  const size_t n = index.paths.size();
  options.subset = "training";
  DirectoryDataset train = make_dataset(directory, index, split_range(n, options.validation_split, "training"), options,
                                        c, options.shuffle);
  options.subset = "validation";
  DirectoryDataset val = make_dataset(directory, index, split_range(n, options.validation_split, "validation"), options,
                                      c, false);
  return {std::move(train), std::move(val)};
}

}  // namespace ember::data
