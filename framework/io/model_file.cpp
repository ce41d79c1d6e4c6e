#include "framework/io/model_file.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "framework/core/dtype.h"
#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/io/atomic_file.h"
#include "framework/io/hdf5_file.h"
#include "framework/io/model_config.h"
#include "framework/io/weights_h5.h"
#include "framework/io/zip_archive.h"
#include "framework/model/model.h"
#include "optimizers/optimizer.h"

namespace ember::io {

namespace fs = std::filesystem;

namespace {

bool model_file_ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in, Internal) << "cannot read '" << path << "'";
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// True when the file starts with a zip local-file header (a .keras archive, whatever its name).
bool is_zip_file(const std::string& path) {
  std::string magic(4, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(magic.data(), 4);
  return in.gcount() == 4 && magic == std::string("PK\x03\x04", 4);
}

// A scratch file name beside nothing in particular, removed by the guard's destructor.
struct ScratchFile {
  explicit ScratchFile(const std::string& dir_hint) {
    static std::atomic<uint64_t> counter{0};
    fs::path dir = dir_hint.empty() ? fs::temp_directory_path() : fs::path(dir_hint);
    path = (dir / (".ember-scratch-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".h5")).string();
  }
  ~ScratchFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::string path;
};

// An HDF5 file held in memory (a .keras archive's model.weights.h5), opened through a scratch copy; the
// copy is gone on return (open_read keeps what it read, not the file). Messages name `archive`, the file
// the user gave, never the scratch copy.
H5File open_archived_h5(const std::string& bytes, const std::string& archive) {
  ScratchFile scratch("");
  {
    std::ofstream out(scratch.path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EMBER_CHECK(out.good(), Internal) << "load_model: cannot write a scratch copy of the weights at '" << scratch.path << "'";
  }
  try {
    H5File file = H5File::open_read(scratch.path);
    file.set_display_path(archive);
    return file;
  } catch (const DataLoss& e) {
    std::string message = e.what();
    for (size_t at; (at = message.find(scratch.path)) != std::string::npos;)
      message.replace(at, scratch.path.size(), archive + " (model.weights.h5)");
    throw DataLoss(message);
  }
}

// Runs fn (building a model from a file's config); an error it throws comes back as the same type with
// the file named first, since the config readers know no file.
template <class F>
auto naming_file(const std::string& path, F&& fn) {
  const std::string where = "load_model: '" + path + "': ";
  try {
    return fn();
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(where + e.what());
  } catch (const NotFound& e) {
    throw NotFound(where + e.what());
  } catch (const Unimplemented& e) {
    throw Unimplemented(where + e.what());
  } catch (const FailedPrecondition& e) {
    throw FailedPrecondition(where + e.what());
  } catch (const OutOfRange& e) {
    throw OutOfRange(where + e.what());
  }
}

// "3.15.1" -> 3; unparsable -> 0.
int major_version(const std::string& version) {
  try {
    return std::stoi(version);
  } catch (...) {
    return 0;
  }
}

void check_format_version(const std::string& version, const std::string& path) {
  EMBER_CHECK(major_version(version) <= 3, Unimplemented)
      << "load_model: '" << path << "' was written by Keras " << version
      << ", a newer format than Ember reads (Keras 3 and tf-keras 2.x files)";
}

std::string now_keras_date() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d@%H:%M:%S", &tm);
  return buf;
}

void write_keras_archive(const Model& model, const std::string& tmp_path) {
  const nlohmann::json config = serialize_model(model);
  nlohmann::json metadata;
  metadata["keras_version"] = kLegacyKerasVersion;
  metadata["date_saved"] = now_keras_date();
  std::string weights;
  {
    ScratchFile scratch(fs::path(tmp_path).parent_path().string());
    H5File file = H5File::create(scratch.path);
    write_keras3_weights(file.root(), model);
    file.close();
    weights = read_whole_file(scratch.path);
  }
  // Keras's entry order: metadata.json, config.json, model.weights.h5.
  write_zip(tmp_path, {{"metadata.json", metadata.dump()}, {"config.json", config.dump()}, {"model.weights.h5", weights}});
}

void write_legacy_h5(const Model& model, const std::string& tmp_path, bool include_optimizer) {
  H5File file = H5File::create(tmp_path);
  H5Group root = file.root();
  root.set_attr_string("keras_version", kLegacyKerasVersion);
  root.set_attr_string("backend", kLegacyBackend);
  root.set_attr_string("model_config", legacy_model_config(model).dump(), /*utf8=*/false);
  const bool with_optimizer = include_optimizer && model.compiled();
  if (with_optimizer) root.set_attr_string("training_config", legacy_training_config(model).dump(), false);
  write_legacy_model_weights(root.create_group("model_weights"), model);
  if (with_optimizer && model.optimizer().built()) {
    const std::vector<Variable> vars = model.optimizer().variables();
    if (!vars.empty()) {
      H5Group group = root.create_group("optimizer_weights");
      std::vector<std::string> names;
      for (const Variable& v : vars) names.push_back(v.name());
      write_split_strings(group, "weight_names", names);
      for (const Variable& v : vars) group.write_dataset(v.name(), v.value());
    }
  }
  file.close();
}

std::shared_ptr<Model> load_keras_archive(const std::string& path, bool compile) {
  std::map<std::string, std::string> files = read_zip(path);
  for (const char* name : {"config.json", "model.weights.h5"})
    EMBER_CHECK(files.count(name), DataLoss) << "load_model: '" << path << "' is a zip archive without " << name
                                             << ", not a Keras .keras file";
  nlohmann::json config;
  try {
    if (files.count("metadata.json")) {
      const nlohmann::json metadata = nlohmann::json::parse(files["metadata.json"]);
      if (metadata.contains("keras_version")) check_format_version(metadata["keras_version"].get<std::string>(), path);
    }
    config = nlohmann::json::parse(files["config.json"]);
  } catch (const nlohmann::json::exception& e) {
    EMBER_CHECK(false, DataLoss) << "load_model: '" << path << "' holds invalid JSON: " << e.what();
  }
  std::shared_ptr<Model> model = naming_file(path, [&] { return deserialize_model(config, compile); });
  try {
    H5File weights = open_archived_h5(files["model.weights.h5"], path);
    read_keras3_weights(weights.root(), *model);
  } catch (const DataLoss& e) {
    EMBER_CHECK(false, DataLoss) << "load_model: '" << path << "': model.weights.h5 is damaged: " << e.what();
  }
  return model;
}

std::shared_ptr<Model> load_legacy_h5(const std::string& path, bool compile) {
  H5File file = H5File::open_read(path);
  H5Group root = file.root();
  EMBER_CHECK(root.has_attr("model_config"), InvalidArgument)
      << "load_model: no model config found in the file at '" << path
      << "' (a weights-only file: build the model and call load_weights)";
  if (root.has_attr("keras_version")) check_format_version(root.attr_string("keras_version"), path);
  nlohmann::json model_config, training_config;
  try {
    model_config = nlohmann::json::parse(root.attr_string("model_config"));
    if (root.has_attr("training_config")) training_config = nlohmann::json::parse(root.attr_string("training_config"));
  } catch (const nlohmann::json::exception& e) {
    EMBER_CHECK(false, DataLoss) << "load_model: '" << path << "' holds an invalid JSON config: " << e.what();
  }
  std::shared_ptr<Model> model = naming_file(path, [&] { return deserialize_model(model_config, false); });
  read_legacy_model_weights(root.group("model_weights"), *model);
  if (!compile) return model;
  if (training_config.is_null()) {
    logging::warn("No training configuration found in the save file, so the model was *not* compiled. Compile it "
                  "manually.");
    return model;
  }
  naming_file(path, [&] { compile_from_training_config(*model, training_config); });
  if (root.has_group("optimizer_weights")) {
    H5Group group = root.group("optimizer_weights");
    std::vector<Tensor> values;
    for (const std::string& name : read_split_strings(group, "weight_names")) values.push_back(group.read_dataset(name));
    optimizers::Optimizer& optimizer = model->optimizer();
    optimizer.build(model->trainable_weights());
    try {
      optimizer.set_weights(values);
    } catch (const InvalidArgument& e) {
      // Keras does the same: older optimizers (tf-keras OptimizerV2) order their slots differently.
      logging::warn(std::string("Error in loading the saved optimizer state (") + e.what() +
                    "). As a result, your model is starting with a freshly initialized optimizer.");
    }
  }
  return model;
}

}  // namespace

void save_model_file(const Model& model, const std::string& path, bool overwrite, bool include_optimizer) {
  const bool keras = model_file_ends_with(path, ".keras");
  const bool h5 = model_file_ends_with(path, ".h5") || model_file_ends_with(path, ".hdf5");
  EMBER_CHECK(keras || h5, InvalidArgument)
      << "Model.save: invalid filepath extension for saving '" << path
      << "'. Please add either a `.keras` extension for the native Keras format (recommended) or a `.h5` "
         "extension for the legacy HDF5 format";
  EMBER_CHECK(model.is_graph_model(), Unimplemented)
      << "Model.save: model '" << model.name()
      << "' is a subclassed model, whose architecture cannot be serialized; save its weights with save_weights";
  EMBER_CHECK(overwrite || !fs::exists(path), FailedPrecondition)
      << "Model.save: '" << path << "' exists and overwrite is false";
  write_atomically(path, [&](const std::string& tmp) {
    if (keras)
      write_keras_archive(model, tmp);
    else
      write_legacy_h5(model, tmp, include_optimizer);
  });
}

std::shared_ptr<Model> load_model_file(const std::string& path, bool compile) {
  EMBER_CHECK(fs::exists(path), NotFound) << "load_model: no such file: '" << path << "'";
  EMBER_CHECK(!fs::is_directory(path), InvalidArgument)
      << "load_model: '" << path << "' is a directory (TensorFlow SavedModel directories are not supported; "
                                    "save as .keras or .h5)";
  if (is_zip_file(path)) return load_keras_archive(path, compile);
  if (H5File::is_hdf5(path)) return load_legacy_h5(path, compile);
  EMBER_CHECK(false, DataLoss) << "load_model: '" << path
                               << "' is neither a Keras .keras archive nor an HDF5 file (truncated or corrupt?)";
  return nullptr;
}

namespace {

// One line per group (name/ and its attribute names) and per dataset (dtype and shape), indented by depth.
void describe_h5_tree(const H5Group& group, std::ostream& os, int depth, int64_t& datasets, int64_t& bytes) {
  const std::string pad(static_cast<size_t>(2 * depth), ' ');
  for (const std::string& name : group.children(H5Order::Name)) {
    if (group.has_group(name)) {
      H5Group child = group.group(name);
      os << pad << name << "/";
      const std::vector<std::string> attrs = child.attr_names();
      if (!attrs.empty()) {
        os << "  [attrs:";
        for (const std::string& a : attrs) os << " " << a;
        os << "]";
      }
      os << "\n";
      describe_h5_tree(child, os, depth + 1, datasets, bytes);
    } else if (group.has_dataset(name)) {
      const Tensor t = group.read_dataset(name);
      os << pad << name << "  " << dtype_name(t.dtype()) << " " << t.shape().to_keras_string() << "\n";
      ++datasets;
      bytes += t.num_elements() * static_cast<int64_t>(dtype_size(t.dtype()));
    }
  }
}

void describe_weights(const H5Group& root, std::ostream& os) {
  int64_t datasets = 0, bytes = 0;
  std::ostringstream tree;
  describe_h5_tree(root, tree, 1, datasets, bytes);
  os << "Weights tree (" << datasets << " datasets, " << bytes << " bytes):\n";
  const std::vector<std::string> attrs = root.attr_names();
  os << "  /";
  if (!attrs.empty()) {
    os << "  [attrs:";
    for (const std::string& a : attrs) os << " " << a;
    os << "]";
  }
  os << "\n" << tree.str();
}

// The model's summary, or why the file's architecture cannot be rebuilt here.
void describe_model(const std::string& path, std::ostream& os) {
  try {
    std::shared_ptr<Model> model = load_model_file(path, /*compile=*/false);
    model->summary(os);
  } catch (const Error& e) {
    os << "Model: not rebuilt by Ember: " << e.what() << "\n";
  }
}

}  // namespace

void describe_model_file(const std::string& path, std::ostream& os) {
  EMBER_CHECK(fs::exists(path), NotFound) << "inspect: no such file: '" << path << "'";
  os << "File: " << path << " (" << fs::file_size(path) << " bytes)\n";
  if (is_zip_file(path)) {
    std::map<std::string, std::string> files = read_zip(path);
    os << "Format: Keras 3 archive (.keras)\n";
    if (files.count("metadata.json")) os << "metadata.json: " << files["metadata.json"] << "\n";
    os << "Entries:";
    for (const auto& [name, bytes] : files) os << " " << name << " (" << bytes.size() << " bytes)";
    os << "\n";
    describe_model(path, os);
    EMBER_CHECK(files.count("model.weights.h5"), DataLoss) << "inspect: '" << path << "' has no model.weights.h5";
    H5File weights = open_archived_h5(files["model.weights.h5"], path);
    describe_weights(weights.root(), os);
    return;
  }
  H5File file = H5File::open_read(path);  // DataLoss when it is not HDF5 either
  H5Group root = file.root();
  const WeightsLayout layout = detect_weights_layout(root);
  const char* kind = layout == WeightsLayout::LegacyFullModel ? "legacy Keras full-model HDF5 (.h5)"
                     : layout == WeightsLayout::Keras3        ? "Keras 3 weights (.weights.h5), no architecture"
                     : layout == WeightsLayout::LegacyWeights ? "legacy Keras weights-only HDF5, no architecture"
                                                              : "HDF5, not a Keras layout Ember knows";
  os << "Format: " << kind << "\n";
  H5Group versions = layout == WeightsLayout::LegacyFullModel ? root.group("model_weights") : root;
  for (const char* a : {"keras_version", "backend"}) {
    if (root.has_attr(a))
      os << a << ": " << root.attr_string(a) << "\n";
    else if (versions.has_attr(a))
      os << a << ": " << versions.attr_string(a) << "\n";
  }
  if (layout == WeightsLayout::LegacyFullModel) {
    if (root.has_attr("training_config")) {
      try {
        const nlohmann::json tc = nlohmann::json::parse(root.attr_string("training_config"));
        os << "training_config: optimizer " << tc["optimizer_config"].value("class_name", std::string("?"))
           << ", loss " << tc.value("loss", nlohmann::json()).dump() << "\n";
      } catch (const nlohmann::json::exception& e) {
        os << "training_config: unreadable (" << e.what() << ")\n";
      }
    }
    describe_model(path, os);
  }
  describe_weights(root, os);
}

void convert_model_file(const std::string& in, const std::string& out, bool overwrite) {
  EMBER_CHECK(fs::exists(in), NotFound) << "convert: no such file: '" << in << "'";
  if (!is_zip_file(in)) {
    H5File file = H5File::open_read(in);
    const WeightsLayout layout = detect_weights_layout(file.root());
    EMBER_CHECK(layout == WeightsLayout::LegacyFullModel, InvalidArgument)
        << "convert: '" << in << "' holds "
        << (layout == WeightsLayout::Unknown ? "no Keras model" : "weights only (no architecture)")
        << "; convert reads a model file (.keras or a full-model .h5 from model.save). To move weights-only files, "
           "build the model and use load_weights/save_weights";
  }
  std::shared_ptr<Model> model = load_model_file(in, /*compile=*/true);
  if (model_file_ends_with(out, ".weights.h5"))
    save_weights_file(*model, out, overwrite);
  else
    save_model_file(*model, out, overwrite, /*include_optimizer=*/true);
}

}  // namespace ember::io
