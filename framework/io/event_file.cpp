#include "framework/io/event_file.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>
#include <utility>

#include "framework/core/error.h"
#include "framework/io/image_file.h"
#include "framework/io/proto_wire.h"
#include "framework/io/tfrecord.h"

namespace ember::io {
namespace {

namespace fs = std::filesystem;
using proto::Decoder;
using proto::Encoder;
using proto::Field;
using proto::WireType;

// Field numbers from tensorflow/core/util/event.proto, core/framework/summary.proto, tensor.proto,
// tensor_shape.proto and types.proto.
namespace event_field {
constexpr int kWallTime = 1, kStep = 2, kFileVersion = 3, kGraphDef = 4, kSummary = 5, kSourceMetadata = 10;
}
constexpr int kSourceMetadataWriter = 1;
constexpr int kSummaryValue = 1;
namespace value_field {
constexpr int kTag = 1, kSimpleValue = 2, kTensor = 8, kMetadata = 9;
}
namespace tensor_field {
constexpr int kDtype = 1, kShape = 2, kContent = 4, kFloatVal = 5, kDoubleVal = 6, kStringVal = 8;
}
constexpr int kShapeDim = 2;
constexpr int kMetadataPluginData = 1;
constexpr int kPluginName = 1;
constexpr uint64_t kDtFloat = 1, kDtDouble = 2, kDtString = 7;

constexpr const char* kFileVersion = "brain.Event:2";
constexpr const char* kFilePrefix = "events.out.tfevents.";

void expect_type(const Field& f, WireType type, const char* what) {
  EMBER_CHECK(f.type == type, DataLoss) << "protobuf: " << what << " (field " << f.field << ") has wire type "
                                        << int(f.type) << ", expected " << int(type);
}

std::string now_hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

double now_seconds() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count() / 1e6;
}

// The strings of a DT_STRING TensorProto (empty for other dtypes).
std::vector<std::string> decode_string_tensor(std::string_view bytes) {
  std::vector<std::string> strings;
  bool is_string = false;
  Decoder d(bytes);
  for (Field f; d.next(f);) {
    if (f.field == tensor_field::kDtype) {
      expect_type(f, WireType::Varint, "TensorProto.dtype");
      is_string = f.number == kDtString;
    } else if (f.field == tensor_field::kStringVal) {
      expect_type(f, WireType::LengthDelimited, "TensorProto.string_val");
      strings.emplace_back(f.bytes);
    }
  }
  if (!is_string) strings.clear();
  return strings;
}

// The scalar a TensorProto holds when it is a float32/float64 tensor of rank 0.
std::optional<double> decode_scalar_tensor(std::string_view bytes) {
  uint64_t dtype = 0;
  int rank = 0;
  std::string_view content;
  std::optional<double> listed;
  Decoder d(bytes);
  for (Field f; d.next(f);) {
    switch (f.field) {
      case tensor_field::kDtype:
        expect_type(f, WireType::Varint, "TensorProto.dtype");
        dtype = f.number;
        break;
      case tensor_field::kShape: {
        expect_type(f, WireType::LengthDelimited, "TensorProto.tensor_shape");
        Decoder shape(f.bytes);
        for (Field g; shape.next(g);) rank += g.field == kShapeDim;
        break;
      }
      case tensor_field::kContent:
        expect_type(f, WireType::LengthDelimited, "TensorProto.tensor_content");
        content = f.bytes;
        break;
      case tensor_field::kFloatVal: {
        float v;
        if (!listed && proto::first_packed_float(f, v)) listed = v;
        break;
      }
      case tensor_field::kDoubleVal: {
        double v;
        if (!listed && proto::first_packed_double(f, v)) listed = v;
        break;
      }
      default:
        break;
    }
  }
  if (rank != 0 || (dtype != kDtFloat && dtype != kDtDouble)) return std::nullopt;
  if (dtype == kDtFloat && content.size() == 4) return std::bit_cast<float>(proto::get_le<uint32_t>(content));
  if (dtype == kDtDouble && content.size() == 8) return std::bit_cast<double>(proto::get_le<uint64_t>(content));
  return listed;
}

std::string decode_plugin_name(std::string_view metadata) {
  Decoder d(metadata);
  for (Field f; d.next(f);) {
    if (f.field != kMetadataPluginData) continue;
    expect_type(f, WireType::LengthDelimited, "SummaryMetadata.plugin_data");
    Decoder plugin(f.bytes);
    for (Field g; plugin.next(g);)
      if (g.field == kPluginName) {
        expect_type(g, WireType::LengthDelimited, "PluginData.plugin_name");
        return std::string(g.bytes);
      }
  }
  return {};
}

SummaryValue decode_value(std::string_view bytes) {
  SummaryValue value;
  Decoder d(bytes);
  for (Field f; d.next(f);) {
    switch (f.field) {
      case value_field::kTag:
        expect_type(f, WireType::LengthDelimited, "Summary.Value.tag");
        value.tag = std::string(f.bytes);
        break;
      case value_field::kSimpleValue:
        expect_type(f, WireType::Fixed32, "Summary.Value.simple_value");
        value.scalar = f.as_float();
        break;
      case value_field::kTensor:
        expect_type(f, WireType::LengthDelimited, "Summary.Value.tensor");
        value.scalar = decode_scalar_tensor(f.bytes);
        value.strings = decode_string_tensor(f.bytes);
        break;
      case value_field::kMetadata:
        expect_type(f, WireType::LengthDelimited, "Summary.Value.metadata");
        value.plugin_name = decode_plugin_name(f.bytes);
        break;
      default:
        break;
    }
  }
  return value;
}

}  // namespace

std::string encode_file_version_event(double wall_time) {
  Encoder source;
  source.add_bytes(kSourceMetadataWriter, "ember");
  Encoder e;
  if (wall_time != 0) e.add_double(event_field::kWallTime, wall_time);
  e.add_bytes(event_field::kFileVersion, kFileVersion);
  e.add_bytes(event_field::kSourceMetadata, source.bytes());
  return std::move(e).take();
}

namespace {
// The Event of tf.summary.write: one Summary.Value{tag, tensor, metadata.plugin_data.plugin_name}. proto3 leaves
// zero-valued fields out, so step 0 is absent, as in TF's files.
std::string encode_tensor_summary_event(std::string_view tag, std::string_view tensor, std::string_view plugin_name,
                                        int64_t step, double wall_time) {
  Encoder plugin;
  plugin.add_bytes(kPluginName, plugin_name);
  Encoder metadata;
  metadata.add_bytes(kMetadataPluginData, plugin.bytes());
  Encoder v;
  v.add_bytes(value_field::kTag, tag);
  v.add_bytes(value_field::kTensor, tensor);
  v.add_bytes(value_field::kMetadata, metadata.bytes());
  Encoder summary;
  summary.add_bytes(kSummaryValue, v.bytes());
  Encoder e;
  if (wall_time != 0) e.add_double(event_field::kWallTime, wall_time);
  if (step != 0) e.add_int64(event_field::kStep, step);
  e.add_bytes(event_field::kSummary, summary.bytes());
  return std::move(e).take();
}
}  // namespace

std::string encode_scalar_event(std::string_view tag, float value, int64_t step, double wall_time) {
  Encoder tensor;
  tensor.add_varint(tensor_field::kDtype, kDtFloat);
  tensor.add_bytes(tensor_field::kShape, "");  // rank 0: an empty TensorShapeProto, still present
  std::string content;
  proto::put_le(content, std::bit_cast<uint32_t>(value));
  tensor.add_bytes(tensor_field::kContent, content);
  return encode_tensor_summary_event(tag, tensor.bytes(), "scalars", step, wall_time);
}

// No fused multiply-adds (-march=native would contract lo + i * step): TF's edges are rounded twice.
[[gnu::optimize("fp-contract=off")]] std::vector<HistogramBucket> histogram_buckets(std::span<const double> data,
                                                                                    int bucket_count) {
  const auto k = static_cast<size_t>(std::max(0, bucket_count));
  std::vector<HistogramBucket> buckets(k);
  if (data.empty() || k == 0) return buckets;  // TF: zeros (bucket_count, 3)
  const auto [lo_it, hi_it] = std::minmax_element(data.begin(), data.end());
  const double lo = *lo_it, hi = *hi_it, range = hi - lo;
  if (range == 0) {  // every bucket's edges at the value, the whole count in the last
    for (HistogramBucket& b : buckets) b.left = b.right = hi;
    buckets.back().count = static_cast<double>(data.size());
    return buckets;
  }
  // TF's arithmetic: index floor((x - min) / (range / k)) clamped to k - 1; edges linspace(min, max, k + 1)
  // (start + i * step) with the last edge set to max.
  const double width = range / static_cast<double>(k);
  for (double x : data) {
    const double index = std::floor((x - lo) / width);
    const size_t i = index >= static_cast<double>(k - 1) ? k - 1 : static_cast<size_t>(index);
    buckets[i].count += 1;
  }
  const double step = range / static_cast<double>(k);
  for (size_t i = 0; i < k; ++i) {
    buckets[i].left = lo + static_cast<double>(i) * step;
    buckets[i].right = i + 1 == k ? hi : lo + static_cast<double>(i + 1) * step;
  }
  return buckets;
}

std::string encode_histogram_event(std::string_view tag, std::span<const HistogramBucket> buckets, int64_t step,
                                   double wall_time) {
  Encoder tensor;
  tensor.add_varint(tensor_field::kDtype, kDtDouble);
  Encoder shape;
  for (uint64_t size : {static_cast<uint64_t>(buckets.size()), uint64_t{3}}) {
    Encoder dim;
    if (size != 0) dim.add_varint(1, size);  // TensorShapeProto.Dim.size; proto3 leaves 0 out
    shape.add_bytes(kShapeDim, dim.bytes());
  }
  tensor.add_bytes(tensor_field::kShape, shape.bytes());
  std::string content;
  for (const HistogramBucket& b : buckets)
    for (double v : {b.left, b.right, b.count}) proto::put_le(content, std::bit_cast<uint64_t>(v));
  if (!content.empty()) tensor.add_bytes(tensor_field::kContent, content);
  return encode_tensor_summary_event(tag, tensor.bytes(), "histograms", step, wall_time);
}

uint8_t image_pixel(float value) {
  // TF multiplies in float32 by dtype max + 0.5 and saturate_casts: clamp, then truncate toward zero.
  const float scaled = value * 255.5f;
  if (!(scaled > 0.0f)) return 0;  // negative or NaN
  return scaled >= 255.0f ? uint8_t{255} : static_cast<uint8_t>(scaled);
}

namespace {
// A DT_STRING TensorProto of these strings: rank 0 for rank0, else rank 1.
std::string encode_string_tensor(std::span<const std::string_view> strings, bool rank0) {
  Encoder tensor;
  tensor.add_varint(tensor_field::kDtype, kDtString);
  Encoder shape;
  if (!rank0) {
    Encoder dim;
    if (!strings.empty()) dim.add_varint(1, strings.size());  // TensorShapeProto.Dim.size; proto3 leaves 0 out
    shape.add_bytes(kShapeDim, dim.bytes());
  }
  tensor.add_bytes(tensor_field::kShape, shape.bytes());
  for (std::string_view s : strings) tensor.add_bytes(tensor_field::kStringVal, s);
  return std::move(tensor).take();
}
}  // namespace

std::string encode_image_event(std::string_view tag, std::span<const float> data, const std::array<int64_t, 4>& shape,
                               int64_t step, int max_outputs, double wall_time) {
  const auto [k, h, w, c] = shape;
  EMBER_CHECK(k >= 0 && h >= 1 && w >= 1 && c >= 1 && c <= 4, InvalidArgument)
      << "tensorboard image \"" << tag << "\": shape must be [images >= 0, height >= 1, width >= 1, channels 1..4]; "
      << "got [" << k << ", " << h << ", " << w << ", " << c << "]";
  const size_t image_size = static_cast<size_t>(h) * static_cast<size_t>(w) * static_cast<size_t>(c);
  EMBER_CHECK(data.size() == static_cast<size_t>(k) * image_size, InvalidArgument)
      << "tensorboard image \"" << tag << "\": shape [" << k << ", " << h << ", " << w << ", " << c << "] needs "
      << static_cast<size_t>(k) * image_size << " values; got " << data.size();
  EMBER_CHECK(max_outputs >= 0, InvalidArgument)
      << "tensorboard image \"" << tag << "\": max_outputs must be >= 0; got " << max_outputs;
  // TF's dimensions are the whole batch's, even when max_outputs leaves no image.
  const std::string width = std::to_string(w), height = std::to_string(h);
  std::vector<std::string> pngs;
  std::vector<uint8_t> pixels(image_size);
  for (int64_t i = 0; i < std::min<int64_t>(k, max_outputs); ++i) {
    const std::span<const float> image = data.subspan(static_cast<size_t>(i) * image_size, image_size);
    std::transform(image.begin(), image.end(), pixels.begin(), image_pixel);
    pngs.push_back(encode_png(pixels, h, w, c));
  }
  std::vector<std::string_view> strings = {width, height};
  strings.insert(strings.end(), pngs.begin(), pngs.end());
  return encode_tensor_summary_event(tag, encode_string_tensor(strings, false), "images", step, wall_time);
}

std::string encode_text_event(std::string_view tag, std::string_view text, int64_t step, double wall_time) {
  const std::string_view strings[] = {text};
  return encode_tensor_summary_event(tag, encode_string_tensor(strings, true), "text", step, wall_time);
}

std::string encode_graph_event(std::string_view graph_def, double wall_time) {
  Encoder e;
  if (wall_time != 0) e.add_double(event_field::kWallTime, wall_time);
  e.add_bytes(event_field::kGraphDef, graph_def);
  return std::move(e).take();
}

Event decode_event(std::string_view bytes) {
  Event event;
  Decoder d(bytes);
  for (Field f; d.next(f);) {
    switch (f.field) {
      case event_field::kWallTime:
        expect_type(f, WireType::Fixed64, "Event.wall_time");
        event.wall_time = f.as_double();
        break;
      case event_field::kStep:
        expect_type(f, WireType::Varint, "Event.step");
        event.step = static_cast<int64_t>(f.number);
        break;
      case event_field::kFileVersion:
        expect_type(f, WireType::LengthDelimited, "Event.file_version");
        event.file_version = std::string(f.bytes);
        break;
      case event_field::kGraphDef:
        expect_type(f, WireType::LengthDelimited, "Event.graph_def");
        event.graph_def = std::string(f.bytes);
        break;
      case event_field::kSummary: {
        expect_type(f, WireType::LengthDelimited, "Event.summary");
        Decoder summary(f.bytes);
        for (Field g; summary.next(g);)
          if (g.field == kSummaryValue) {
            expect_type(g, WireType::LengthDelimited, "Summary.value");
            event.values.push_back(decode_value(g.bytes));
          }
        break;
      }
      default:
        break;
    }
  }
  return event;
}

// --- EventFileWriter ---

EventFileWriter::EventFileWriter(const std::string& log_dir, EventFileWriterOptions options) {
  // Per-process count of writers, so two writers opened in the same second get distinct names.
  static std::atomic<int64_t> file_counter{0};
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  EMBER_CHECK(!ec, FailedPrecondition) << "EventFileWriter: cannot create log directory " << log_dir << ": "
                                       << ec.message();
  const std::time_t seconds = std::time(nullptr);
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%010lld", static_cast<long long>(seconds));
  const std::string name = std::string(kFilePrefix) + stamp + "." + now_hostname() + "." +
                           std::to_string(::getpid()) + "." + std::to_string(file_counter.fetch_add(1)) +
                           options.filename_suffix;
  path_ = (fs::path(log_dir) / name).string();
  file_ = std::fopen(path_.c_str(), "wb");
  EMBER_CHECK(file_ != nullptr, FailedPrecondition)
      << "EventFileWriter: cannot create event file " << path_ << ": " << std::strerror(errno);
  // TF stamps the version event with whole seconds, the same as the file name.
  add_event(encode_file_version_event(static_cast<double>(seconds)));
}

EventFileWriter::~EventFileWriter() {
  if (file_) std::fclose(file_);
}

EventFileWriter::EventFileWriter(EventFileWriter&& other) noexcept
    : path_(std::move(other.path_)), file_(std::exchange(other.file_, nullptr)) {}

EventFileWriter& EventFileWriter::operator=(EventFileWriter&& other) noexcept {
  if (this != &other) {
    if (file_) std::fclose(file_);
    path_ = std::move(other.path_);
    file_ = std::exchange(other.file_, nullptr);
  }
  return *this;
}

void EventFileWriter::add_scalar(std::string_view tag, double value, int64_t step, std::optional<double> wall_time) {
  add_event(encode_scalar_event(tag, static_cast<float>(value), step, wall_time ? *wall_time : now_seconds()));
}

void EventFileWriter::add_graph(std::string_view graph_def, std::optional<double> wall_time) {
  add_event(encode_graph_event(graph_def, wall_time ? *wall_time : now_seconds()));
}

void EventFileWriter::add_histogram(std::string_view tag, std::span<const double> data, int64_t step,
                                    std::optional<double> wall_time) {
  add_event(encode_histogram_event(tag, histogram_buckets(data), step, wall_time ? *wall_time : now_seconds()));
}

void EventFileWriter::add_image(std::string_view tag, std::span<const float> data,
                                const std::array<int64_t, 4>& shape, int64_t step, int max_outputs,
                                std::optional<double> wall_time) {
  add_event(encode_image_event(tag, data, shape, step, max_outputs, wall_time ? *wall_time : now_seconds()));
}

void EventFileWriter::add_text(std::string_view tag, std::string_view text, int64_t step,
                               std::optional<double> wall_time) {
  add_event(encode_text_event(tag, text, step, wall_time ? *wall_time : now_seconds()));
}

void EventFileWriter::add_event(std::string_view serialized_event) {
  EMBER_CHECK(file_ != nullptr, FailedPrecondition) << "EventFileWriter: " << path_ << " is closed";
  const std::string record = frame_record(serialized_event);
  EMBER_CHECK(std::fwrite(record.data(), 1, record.size(), file_) == record.size(), FailedPrecondition)
      << "EventFileWriter: cannot write to " << path_ << ": " << std::strerror(errno);
}

void EventFileWriter::flush() {
  EMBER_CHECK(file_ != nullptr, FailedPrecondition) << "EventFileWriter: " << path_ << " is closed";
  EMBER_CHECK(std::fflush(file_) == 0, FailedPrecondition)
      << "EventFileWriter: cannot flush " << path_ << ": " << std::strerror(errno);
}

void EventFileWriter::close() {
  if (!file_) return;
  std::FILE* f = std::exchange(file_, nullptr);
  EMBER_CHECK(std::fclose(f) == 0, FailedPrecondition)
      << "EventFileWriter: cannot close " << path_ << ": " << std::strerror(errno);
}

// --- EventFileReader ---

EventFileReader::EventFileReader(const std::string& path) : path_(path) {
  for (const Record& record : read_records(path)) {
    try {
      events_.push_back(decode_event(record.data));
    } catch (const DataLoss& e) {
      throw DataLoss("event file " + path + ": record at byte " + std::to_string(record.offset) +
                     " is not a valid Event: " + e.what());
    }
  }
}

std::string EventFileReader::file_version() const {
  return events_.empty() ? std::string() : events_.front().file_version;
}

std::vector<ScalarEvent> EventFileReader::scalars() const {
  std::vector<ScalarEvent> out;
  for (const Event& e : events_)
    for (const SummaryValue& v : e.values)
      if (v.scalar) out.push_back({e.wall_time, e.step, v.tag, *v.scalar});
  return out;
}

std::vector<ScalarEvent> EventFileReader::scalars(std::string_view tag) const {
  std::vector<ScalarEvent> out = scalars();
  std::erase_if(out, [&](const ScalarEvent& s) { return s.tag != tag; });
  return out;
}

std::vector<std::string> list_event_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename().string().starts_with(kFilePrefix)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace ember::io
