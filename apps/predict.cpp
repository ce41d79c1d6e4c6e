// ember_predict: batched inference on a saved Keras model from the command line.
#include "apps/predict.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <sstream>

#include <CLI/CLI.hpp>

#include "data/idx.h"
#include "framework/io/image_file.h"
#include "framework/io/model_file.h"
#include "framework/io/npy.h"

namespace ember::predict_app {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_image_file(const std::string& path) {
  const std::string p = lower(path);
  return ends_with(p, ".png") || ends_with(p, ".jpg") || ends_with(p, ".jpeg");
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw NotFound("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One CSV field as a number; false when it is not one.
bool parse_number(std::string field, double& value) {
  const size_t b = field.find_first_not_of(" \t\r"), e = field.find_last_not_of(" \t\r");
  if (b == std::string::npos) return false;
  field = field.substr(b, e - b + 1);
  char* end = nullptr;
  value = std::strtod(field.c_str(), &end);
  return end == field.c_str() + field.size();
}

// Rows of numbers (one sample a row) as a float64 (rows, columns) tensor; a first line that is not all
// numbers is a header.
Tensor read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw NotFound("cannot open " + path);
  std::vector<double> values;
  int64_t rows = 0, cols = -1, line_no = 0;
  bool header_seen = false;
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::vector<double> row;
    std::stringstream ss(line);
    std::string field;
    bool numeric = true;
    std::string bad;
    while (std::getline(ss, field, ',')) {
      double v = 0;
      if (!parse_number(field, v)) {
        numeric = false;
        if (bad.empty()) bad = field;
        continue;
      }
      row.push_back(v);
    }
    if (!numeric) {
      if (rows == 0 && !header_seen) {  // the header
        header_seen = true;
        continue;
      }
      throw InvalidArgument(path + " line " + std::to_string(line_no) + ": '" + bad +
                            "' is not a number (CSV inputs hold numbers, with an optional header line)");
    }
    if (cols < 0) cols = static_cast<int64_t>(row.size());
    if (static_cast<int64_t>(row.size()) != cols)
      throw InvalidArgument(path + " line " + std::to_string(line_no) + " has " +
                            std::to_string(row.size()) + " values, the lines before it " + std::to_string(cols));
    values.insert(values.end(), row.begin(), row.end());
    ++rows;
  }
  if (rows == 0) throw InvalidArgument(path + " has no rows of numbers");
  return Tensor::from_vector(values, Shape{rows, cols}, Device::cpu());
}

bool fits(const Shape& got, const Shape& want) {
  if (got.rank() != want.rank()) return false;
  for (int64_t d = 0; d < got.rank(); ++d)
    if (want[d] >= 0 && want[d] != got[d]) return false;
  return true;
}

// `t` in the shape of an input that expects `want` (batch axis first), or InvalidArgument.
Tensor fit_to_input(const Tensor& t, const Shape& want, const std::string& what) {
  if (fits(t.shape(), want)) return t;
  Shape sample(want.begin() + 1, want.end());
  const bool sample_known = want.rank() >= 1 && std::all_of(sample.begin(), sample.end(), [](int64_t d) { return d >= 0; });
  if (sample_known && t.rank() >= 1) {
    if (fits(t.shape(), sample)) {  // one sample
      Shape batched{1};
      for (int64_t d : t.shape()) batched.push_back(d);
      return t.view(batched);
    }
    const int64_t n = t.shape()[0];
    if (n > 0 && t.num_elements() == n * sample.num_elements()) {
      Shape reshaped{n};
      for (int64_t d : sample) reshaped.push_back(d);
      return t.view(reshaped);
    }
  }
  throw InvalidArgument(what + ": got shape " + t.shape().to_string() + ", the model expects " +
                        want.to_keras_string());
}

std::string layer_name_of(const Tensor& symbolic) {
  const auto& history = symbolic.keras_history();
  return history && history->node ? history->node->layer->name() : std::string("?");
}

// The file to write output `name` to: `out` itself for a one-output model, else "<stem>_<name><ext>".
std::string output_path(const std::string& out, const std::string& name, size_t num_outputs) {
  if (num_outputs == 1) return out;
  const std::filesystem::path p(out);
  return (p.parent_path() / (p.stem().string() + "_" + name + p.extension().string())).string();
}

// Each sample's values, flattened, one line a sample.
void write_csv(std::ostream& os, const Tensor& y) {
  const Tensor host = ops::cast(y.to(Device::cpu()), DType::Float64);
  const std::vector<double> v = host.to_vector<double>();
  const int64_t n = host.rank() == 0 ? 1 : host.shape()[0];
  const int64_t per = n ? static_cast<int64_t>(v.size()) / n : 0;
  os << std::setprecision(9);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < per; ++j) os << (j ? "," : "") << v[i * per + j];
    os << "\n";
  }
}

// Softmax of `row` unless it already is a probability distribution (the model ends in a softmax).
std::vector<double> probabilities(std::vector<double> row) {
  double sum = 0;
  bool in_range = true;
  for (double v : row) {
    sum += v;
    in_range = in_range && v >= 0 && v <= 1;
  }
  if (in_range && std::abs(sum - 1) < 1e-3) return row;
  const double m = *std::max_element(row.begin(), row.end());
  double z = 0;
  for (double& v : row) z += (v = std::exp(v - m));
  for (double& v : row) v /= z;
  return row;
}

void print_top_k(std::ostream& os, const Tensor& y, const std::string& name, int k,
                 const std::vector<std::string>& labels) {
  EMBER_CHECK(y.rank() == 2, InvalidArgument)
      << "--top-k needs a classifier's output of shape (batch, classes); output '" << name
      << "' has shape " << y.shape();
  const int64_t n = y.shape()[0], classes = y.shape()[1];
  EMBER_CHECK(labels.empty() || static_cast<int64_t>(labels.size()) == classes, InvalidArgument)
      << "--labels gives " << labels.size() << " names, output '" << name << "' has " << classes
      << " classes";
  const std::vector<double> v = ops::cast(y.to(Device::cpu()), DType::Float64).to_vector<double>();
  const int64_t top = std::min<int64_t>(k, classes);
  os << std::fixed << std::setprecision(4);
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<double> p = probabilities(std::vector<double>(v.begin() + i * classes, v.begin() + (i + 1) * classes));
    std::vector<int64_t> order(classes);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    os << i << ":";
    for (int64_t r = 0; r < top; ++r) {
      const int64_t c = order[r];
      os << (r ? ", " : " ") << (labels.empty() ? std::to_string(c) : labels[c]) << " (" << p[c] << ")";
    }
    os << "\n";
  }
  os.unsetf(std::ios::floatfield);
  os << std::setprecision(6);
}

std::vector<std::string> read_labels(const std::string& path) {
  std::istringstream in(read_text(path));
  std::vector<std::string> labels;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) labels.push_back(line);
  }
  return labels;
}

struct PredictFlags {
  std::string model, config, output, labels;
  std::vector<std::string> inputs;
  int64_t batch_size = 32;
  std::string device = "cpu";
  int top_k = 0;
  double scale = 1.0;
};

int run_predict(const PredictFlags& f, std::ostream& out) {
  EMBER_CHECK(f.device != "gpu" || device_count(DeviceType::CUDA) > 0, FailedPrecondition)
      << "--device gpu, but no CUDA GPU is visible (or Ember was built without CUDA)";
  // Flags that can be checked without the model are checked before the (possibly long) prediction.
  const std::string ext = lower(std::filesystem::path(f.output).extension().string());
  EMBER_CHECK(f.output.empty() || ext == ".npy" || ext == ".csv", InvalidArgument)
      << "-o " << f.output << ": the output file must end in .npy or .csv";
  const std::vector<std::string> labels = f.labels.empty() ? std::vector<std::string>{} : read_labels(f.labels);
  DeviceScope on_device(f.device == "gpu" ? Device::cuda(0) : Device::cpu());
  std::shared_ptr<Model> model = load_model_for_predict(f.model, f.config);
  const std::vector<Tensor> x = read_model_inputs(*model, f.inputs, f.scale);
  const std::vector<Tensor> y = model->predict_outputs(x, {.batch_size = f.batch_size, .verbose = 0});

  if (!f.output.empty()) {
    for (size_t j = 0; j < y.size(); ++j) {
      const std::string path = output_path(f.output, output_name(*model, j), y.size());
      if (ext == ".npy") {
        io::write_npy(path, y[j]);
      } else {
        std::ofstream os(path);
        EMBER_CHECK(os.good(), NotFound) << "cannot write " << path;
        write_csv(os, y[j]);
      }
    }
  }
  for (size_t j = 0; j < y.size(); ++j) {
    if (y.size() > 1 && (f.top_k > 0 || f.output.empty()))
      out << "# output '" << output_name(*model, j) << "' " << y[j].shape() << "\n";
    if (f.top_k > 0) print_top_k(out, y[j], output_name(*model, j), f.top_k, labels);
    else if (f.output.empty()) write_csv(out, y[j]);
  }
  return 0;
}

}  // namespace

std::shared_ptr<Model> load_model_for_predict(const std::string& model_path, const std::string& config_path) {
  if (config_path.empty()) {
    EMBER_CHECK(!ends_with(lower(model_path), ".weights.h5"), InvalidArgument)
        << model_path
        << " holds weights only; give the architecture with --config model.json (Keras's model.to_json())";
    try {
      return io::load_model_file(model_path, /*compile=*/false);
    } catch (const Error& e) {
      // A weights-only legacy .h5 has no architecture either; say how to give one here.
      if (std::string(e.what()).find("weights-only") == std::string::npos) throw;
      throw InvalidArgument(std::string(e.what()) + "; for ember_predict, give the architecture with --config model.json");
    }
  }
  std::shared_ptr<Model> model = models::model_from_json(read_text(config_path));
  model->load_weights(model_path);
  return model;
}

Tensor read_input_file(const std::string& path, int channels) {
  const std::string p = lower(path);
  if (ends_with(p, ".npy")) return io::read_npy(path);
  if (ends_with(p, ".csv")) return read_csv(path);
  if (is_image_file(path)) return io::decode_image(path, channels);
  if (ends_with(p, "ubyte") || ends_with(p, "ubyte.gz") || ends_with(p, ".idx") || ends_with(p, ".idx.gz"))
    return datasets::read_idx(path);
  throw InvalidArgument(path +
                        ": unknown input format; expected .npy, .csv, .png, .jpg/.jpeg or an IDX file "
                        "(*-ubyte, *-ubyte.gz, *.idx)");
}

std::string input_name(const Model& model, size_t i) { return layer_name_of(model.inputs().at(i)); }
std::string output_name(const Model& model, size_t j) { return layer_name_of(model.outputs().at(j)); }

std::vector<Tensor> read_model_inputs(const Model& model, const std::vector<std::string>& files, double scale) {
  EMBER_CHECK(model.is_graph_model(), InvalidArgument)
      << "model '" << model.name() << "' has no known inputs (a Sequential without an input shape)";
  const size_t n = model.num_inputs();
  const bool image_batch =
      n == 1 && files.size() > 1 && std::all_of(files.begin(), files.end(), [](const std::string& f) { return is_image_file(f); });
  if (!image_batch && files.size() != n) {
    std::string names;
    for (size_t i = 0; i < n; ++i) names += (i ? ", " : "") + input_name(model, i);
    throw InvalidArgument("model '" + model.name() + "' has " + std::to_string(n) + " input" +
                          (n == 1 ? "" : "s") + " (" + names + "), given " + std::to_string(files.size()) +
                          " input files; give one file per input, in this order");
  }
  std::vector<Tensor> xs;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& symbolic = model.inputs()[i];
    const Shape& want = symbolic.shape();
    // An image input's channel count picks the decoding (grayscale, RGB or RGBA), as load_img's color_mode.
    const int64_t last = want.rank() > 0 ? want[want.rank() - 1] : 0;
    const int channels = last == 1 || last == 3 || last == 4 ? static_cast<int>(last) : 0;
    Tensor t;
    std::string what = "input '" + input_name(model, i) + "' from ";
    if (image_batch) {
      std::vector<Tensor> images;
      for (const std::string& f : files) {
        images.push_back(read_input_file(f, channels));
        EMBER_CHECK(images.back().shape() == images.front().shape(), InvalidArgument)
            << f << " is " << images.back().shape() << " (height, width, channels), "
            << files.front() << " " << images.front().shape() << "; the images of one batch must have one size";
      }
      t = ops::stack(images, 0);
      what += std::to_string(files.size()) + " images";
    } else {
      t = read_input_file(files[i], channels);
      what += files[i];
    }
    t = fit_to_input(t, want, what);
    t = ops::cast(t, symbolic.dtype());
    if (scale != 1.0 && is_floating(symbolic.dtype())) t = t * scale;
    xs.push_back(t);
  }
  return xs;
}

int ember_predict_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"Runs a saved Keras model (.keras, .h5, or .weights.h5 with --config) on input files and prints or "
               "writes its predictions."};
  PredictFlags f;
  f.device = device_count(DeviceType::CUDA) > 0 ? "gpu" : "cpu";
  app.add_option("MODEL", f.model, "a .keras or full-model .h5 file, or a weights file (.weights.h5, .h5) with --config")
      ->required();
  app.add_option("INPUT", f.inputs,
                 "one file per model input, in order: .npy, .csv (one sample a row), an IDX file, or PNG/JPEG "
                 "images (several images make one batch for a one-input model)")
      ->required();
  app.add_option("--config", f.config, "the model's architecture as JSON (Keras: model.to_json()), for a weights file");
  app.add_option("-o,--output", f.output,
                 "write the predictions to OUT.npy or OUT.csv (several outputs: OUT_<name>.npy each) instead of printing them");
  app.add_option("--batch-size", f.batch_size, "samples per predict batch")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--device", f.device, "cpu or gpu (default: gpu when one is visible)")
      ->check(CLI::IsMember({"cpu", "gpu"}))
      ->capture_default_str();
  CLI::Option* top_k = app.add_option("--top-k", f.top_k,
                                      "print each sample's K most probable classes with their probabilities "
                                      "(softmax applied to outputs that are not probabilities)")
                           ->check(CLI::PositiveNumber);
  app.add_option("--labels", f.labels, "class names for --top-k, one a line")->needs(top_k);
  app.add_option("--scale", f.scale, "multiply floating-point inputs by this (e.g. 0.00392156862745098 for pixels in [0, 1])")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }
  try {
    return run_predict(f, out);
  } catch (const std::exception& e) {  // ember::Error, and JSON or allocation failures
    err << "ember_predict: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ember::predict_app
