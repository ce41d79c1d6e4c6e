#pragma once
// TensorBoard event files: EventFileWriter writes scalar summaries byte for byte as TF2's
// tf.summary.scalar does, and graphs as tf.summary.graph does (a serialized GraphDef in Event.graph_def),
// in TFRecord framing that TensorBoard reads; EventFileReader reads them back, as well as files written
// by TensorFlow (TF1 simple_value scalars or TF2 tensor scalars). Scalars, histograms, images (as
// tf.summary.image), text (as tf.summary.text) and graphs are encoded; when read, histograms and other
// plugins' summaries are values without a scalar, and string tensors (images, text) keep their strings.
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember::io {

// One scalar read from an event file.
struct ScalarEvent {
  double wall_time = 0;
  int64_t step = 0;
  std::string tag;
  double value = 0;
  bool operator==(const ScalarEvent&) const = default;
};

// One Summary.Value as read: its tag, the plugin that wrote it ("scalars" for tf.summary.scalar; empty
// for TF1 simple values), its scalar when it holds one (simple_value, or a float32/float64 tensor
// of rank 0) and the values of a string tensor (tf.summary.image's [width, height, PNG files...],
// tf.summary.text's text).
struct SummaryValue {
  std::string tag;
  std::string plugin_name;
  std::optional<double> scalar;
  std::vector<std::string> strings;
};

// One Event record as read (fields other than these are skipped).
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;  // set on the first record of a file: "brain.Event:2"
  std::string graph_def;     // a serialized tensorflow.GraphDef (tf.summary.graph's event)
  std::vector<SummaryValue> values;
};

// The serialized Event that opens an event file (file_version "brain.Event:2", source writer "ember").
std::string encode_file_version_event(double wall_time);
// The serialized Event of one scalar as tf.summary.scalar writes it: Summary.Value{tag, tensor =
// float32 rank-0 TensorProto with tensor_content, metadata.plugin_data.plugin_name = "scalars"}.
std::string encode_scalar_event(std::string_view tag, float value, int64_t step, double wall_time);
// One bucket of a histogram summary: [left, right] and how many values fell in it.
struct HistogramBucket {
  double left = 0, right = 0, count = 0;
  bool operator==(const HistogramBucket&) const = default;
};
// tf.summary.histogram's buckets (TensorBoard's summary_v2._buckets, default 30) of data: bucket_count
// equal-width buckets from min to max; all in the last when every value is equal; zeros when data is empty.
std::vector<HistogramBucket> histogram_buckets(std::span<const double> data, int bucket_count = 30);
// The serialized Event of tf.summary.histogram: Summary.Value{tag, tensor = float64 [k, 3] TensorProto of
// (left, right, count) rows, metadata.plugin_data.plugin_name = "histograms"}.
std::string encode_histogram_event(std::string_view tag, std::span<const HistogramBucket> buckets, int64_t step,
                                   double wall_time);
// tf.summary.image's pixel for a float32 value: tf.image.convert_image_dtype(x, tf.uint8, saturate=True),
// i.e. x * 255.5 clamped to [0, 255] and truncated (so [0, 1] maps onto 0..255; NaN gives 0).
uint8_t image_pixel(float value);
// The serialized Event of tf.summary.image(tag, data, step, max_outputs): data is float32 [k, h, w, c] (shape),
// row-major, c 1 (gray), 2 (gray, alpha), 3 (RGB) or 4 (RGBA); the first max_outputs images are converted
// (image_pixel) and PNG-encoded (encode_png, as tf.io.encode_png) into Summary.Value{tag, tensor = DT_STRING
// rank-1 TensorProto [str(w), str(h), png...], metadata.plugin_data.plugin_name = "images"}. A shape or size
// that does not fit, or max_outputs < 0, is InvalidArgument.
std::string encode_image_event(std::string_view tag, std::span<const float> data, const std::array<int64_t, 4>& shape,
                               int64_t step, int max_outputs, double wall_time);
// The serialized Event of tf.summary.text(tag, text): a DT_STRING rank-0 TensorProto holding text (UTF-8;
// TensorBoard renders it as Markdown), metadata.plugin_data.plugin_name = "text".
std::string encode_text_event(std::string_view tag, std::string_view text, int64_t step, double wall_time);
// The serialized Event of tf.summary.graph: the serialized GraphDef as Event.graph_def (step 0, so absent).
std::string encode_graph_event(std::string_view graph_def, double wall_time);
// Decodes one serialized Event; DataLoss when it is malformed.
Event decode_event(std::string_view bytes);

struct EventFileWriterOptions {
  // Ends the file name, after ".<pid>.<n>" (TF2's tf.summary.create_file_writer uses ".v2").
  std::string filename_suffix = ".v2";
};

// Writes one event file, <log_dir>/events.out.tfevents.<10-digit seconds>.<hostname>.<pid>.<n><suffix>
// (TF's name; n counts the writers this process opened), as TF's summary file writer does. Records
// are buffered until flush(); TensorBoard sees them after that.
class EventFileWriter {
 public:
  // Creates log_dir (with its parents) and the file, and writes the file_version event. An IO
  // failure is FailedPrecondition naming the path and the system's reason.
  explicit EventFileWriter(const std::string& log_dir, EventFileWriterOptions options = {});
  // Flushes and closes; an error here is lost (call close() to see it).
  ~EventFileWriter();
  EventFileWriter(EventFileWriter&& other) noexcept;
  EventFileWriter& operator=(EventFileWriter&& other) noexcept;
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // The event file's path.
  const std::string& path() const { return path_; }
  // Appends tf.summary.scalar(tag, value, step): the value is stored as float32, as TF does; the
  // wall time defaults to now (seconds since the epoch, microsecond resolution).
  void add_scalar(std::string_view tag, double value, int64_t step, std::optional<double> wall_time = std::nullopt);
  // Appends tf.summary.histogram(tag, data, step) with TF's default 30 buckets; the wall time defaults to now.
  void add_histogram(std::string_view tag, std::span<const double> data, int64_t step,
                     std::optional<double> wall_time = std::nullopt);
  // Appends tf.summary.image(tag, data, step, max_outputs) (see encode_image_event): data is float32
  // [k, h, w, c], values in [0, 1] (others are clamped); the wall time defaults to now.
  void add_image(std::string_view tag, std::span<const float> data, const std::array<int64_t, 4>& shape, int64_t step,
                 int max_outputs = 3, std::optional<double> wall_time = std::nullopt);
  // Appends tf.summary.text(tag, text, step): TensorBoard's Text tab renders it as Markdown; the wall time
  // defaults to now.
  void add_text(std::string_view tag, std::string_view text, int64_t step,
                std::optional<double> wall_time = std::nullopt);
  // Appends tf.summary.graph's event for a serialized tensorflow.GraphDef (TensorBoard's Graphs tab shows
  // it); the wall time defaults to now.
  void add_graph(std::string_view graph_def, std::optional<double> wall_time = std::nullopt);
  // Appends a serialized Event as one record.
  void add_event(std::string_view serialized_event);
  // Writes the buffered records to the file.
  void flush();
  // Flushes and closes the file; later writes are FailedPrecondition. Closing twice does nothing.
  void close();
  bool closed() const { return file_ == nullptr; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Reads a whole event file, checking both CRCs of every record: a corrupt or truncated file is
// DataLoss naming the path and the byte offset of the bad record; a missing one is NotFound.
class EventFileReader {
 public:
  explicit EventFileReader(const std::string& path);
  const std::string& path() const { return path_; }
  // Every event, in file order.
  const std::vector<Event>& events() const { return events_; }
  // The file_version of the first event ("brain.Event:2"); empty when it has none.
  std::string file_version() const;
  // Every scalar value in file order, as {wall_time, step, tag, value}.
  std::vector<ScalarEvent> scalars() const;
  // The scalars with this tag, in file order.
  std::vector<ScalarEvent> scalars(std::string_view tag) const;

 private:
  std::string path_;
  std::vector<Event> events_;
};

// The event files (names starting "events.out.tfevents.") directly inside dir, sorted by name; empty
// when dir does not exist.
std::vector<std::string> list_event_files(const std::string& dir);

}  // namespace ember::io
