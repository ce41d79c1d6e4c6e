// TensorBoard event files: CRC-32C and its mask, TFRecord framing, our writer read back by our reader,
// files written by real TensorFlow/TensorBoard (tests/fixtures/tensorboard/, made by
// make_tensorboard_fixture.py) parsed and re-encoded byte for byte, and corrupt files as DataLoss.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <array>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"
#include "framework/core/error.h"
#include "framework/io/crc32c.h"
#include "framework/io/event_file.h"
#include "framework/io/proto_wire.h"
#include "framework/io/tfrecord.h"

using namespace ember;
using testing::TempDir;
using namespace ember::io;
namespace fs = std::filesystem;
using json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

const fs::path kFixtures = ember::testing::fixture_path("tensorboard");

const json& expected() {
  static const json j = [] {
    std::ifstream in(kFixtures / "expected.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return j;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The message of the DataLoss that reading path throws ("" when it reads fine).
std::string data_loss_message(const fs::path& path) {
  try {
    EventFileReader reader(path.string());
  } catch (const DataLoss& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("crc32c: known vectors (RFC 3720 B.4 and TF's crc32c_test)", "[io][crc32c]") {
  CHECK(crc32c("") == 0u);
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c("a") == 0xC1D04330u);
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(crc32c(std::string(32, '\xff')) == 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  CHECK(crc32c(ascending) == 0x46DD794Eu);
  CHECK(crc32c(descending) == 0x113FDB5Cu);
}

TEST_CASE("crc32c: extending in pieces equals one pass, at every split", "[io][crc32c]") {
  const std::string text = "The quick brown fox jumps over the lazy dog, again and again.";
  const uint32_t whole = crc32c(text);
  for (size_t split = 0; split <= text.size(); ++split) {
    const uint32_t first = crc32c_extend(0, text.data(), split);
    CHECK(crc32c_extend(first, text.data() + split, text.size() - split) == whole);
  }
}

TEST_CASE("crc32c: TF's mask changes the CRC and unmask inverts it", "[io][crc32c]") {
  const uint32_t crc = crc32c("foo");
  CHECK(mask_crc32c(crc) != crc);
  CHECK(mask_crc32c(mask_crc32c(crc)) != crc);
  CHECK(unmask_crc32c(mask_crc32c(crc)) == crc);
  CHECK(unmask_crc32c(unmask_crc32c(mask_crc32c(mask_crc32c(crc)))) == crc);
  CHECK(mask_crc32c(0) == 0xa282ead8u);
  CHECK(masked_crc32c("123456789") == mask_crc32c(0xE3069283u));
}

TEST_CASE("tfrecord: framing round trip and layout", "[io][tfrecord]") {
  const std::string a = "hello", b(300, 'x'), empty;
  const std::string framed = frame_record(a) + frame_record(empty) + frame_record(b);
  REQUIRE(framed.size() == 3 * 16 + a.size() + b.size());
  // Header: little-endian length, then the masked CRC of those 8 bytes; footer: masked CRC of the data.
  CHECK(proto::get_le<uint64_t>(framed) == a.size());
  CHECK(proto::get_le<uint32_t>(framed.substr(8)) == masked_crc32c(framed.substr(0, 8)));
  CHECK(proto::get_le<uint32_t>(framed.substr(12 + a.size())) == masked_crc32c(a));
  const std::vector<Record> records = parse_records(framed, "mem");
  REQUIRE(records.size() == 3);
  CHECK(records[0].data == a);
  CHECK(records[1].data == empty);
  CHECK(records[2].data == b);
  CHECK(records[0].offset == 0);
  CHECK(records[1].offset == 16 + a.size());
  CHECK(records[2].offset == 32 + a.size());
}

TEST_CASE("protobuf wire: varints, fixed numbers and nested fields decode as encoded", "[io][proto]") {
  proto::Encoder e;
  e.add_varint(1, 300);
  e.add_int64(2, -1);  // ten bytes, as protobuf writes negative int64
  e.add_double(3, 2.5);
  e.add_float(4, -0.75f);
  e.add_bytes(5, "abc");
  e.add_varint(100000, 1);  // a multi-byte tag
  CHECK(e.bytes().substr(0, 3) == std::string("\x08\xac\x02", 3));
  proto::Decoder d(e.bytes());
  proto::Field f;
  REQUIRE(d.next(f));
  CHECK((f.field == 1 && f.number == 300));
  REQUIRE(d.next(f));
  CHECK((f.field == 2 && static_cast<int64_t>(f.number) == -1));
  REQUIRE(d.next(f));
  CHECK((f.field == 3 && f.as_double() == 2.5));
  REQUIRE(d.next(f));
  CHECK((f.field == 4 && f.as_float() == -0.75f));
  REQUIRE(d.next(f));
  CHECK((f.field == 5 && f.bytes == "abc"));
  REQUIRE(d.next(f));
  CHECK((f.field == 100000 && f.number == 1));
  CHECK_FALSE(d.next(f));

  proto::Decoder truncated(std::string_view(e.bytes()).substr(0, e.bytes().size() - 1));
  CHECK_THROWS_AS([&] { while (truncated.next(f)) {} }(), DataLoss);
  const std::string group_bytes("\x0b", 1);  // field 1, wire type 3 (start group)
  proto::Decoder group(group_bytes);
  CHECK_THROWS_WITH(group.next(f), Contains("wire type 3"));
}

TEST_CASE("EventFileWriter: TF's file name, a version event, scalars read back", "[io][event_file]") {
  TempDir tmp("event_file");
  const fs::path dir = tmp.path() / "nested" / "train";  // created with its parents
  EventFileWriter writer(dir.string());
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::regex name("events\\.out\\.tfevents\\.\\d{10}\\." + std::regex_replace(std::string(host), std::regex("\\."), "\\.") +
                        "\\." + std::to_string(::getpid()) + "\\.\\d+\\.v2");
  CHECK(std::regex_match(fs::path(writer.path()).filename().string(), name));
  CHECK(fs::path(writer.path()).parent_path() == dir);

  writer.add_scalar("epoch_loss", 0.5, 0, 1700000000.125);
  writer.add_scalar("epoch_loss", 0.1, 1, 1700000001.0);  // stored as float32
  writer.add_scalar("batch_loss", -3.0, 1234567890123LL, 1700000002.0);
  writer.add_scalar("neg_step", 7.0, -5, 1700000003.0);
  writer.add_scalar("now", 1.0, 2);
  writer.flush();

  // After flush (and before close) the records are on disk.
  const EventFileReader reader(writer.path());
  CHECK(reader.file_version() == "brain.Event:2");
  const double version_time = reader.events().front().wall_time;
  CHECK(version_time == std::floor(version_time));  // whole seconds, as TF stamps it
  const std::vector<ScalarEvent> scalars = reader.scalars();
  REQUIRE(scalars.size() == 5);
  CHECK(scalars[0] == ScalarEvent{1700000000.125, 0, "epoch_loss", 0.5});
  CHECK(scalars[1] == ScalarEvent{1700000001.0, 1, "epoch_loss", double(0.1f)});
  CHECK(scalars[2] == ScalarEvent{1700000002.0, 1234567890123LL, "batch_loss", -3.0});
  CHECK(scalars[3] == ScalarEvent{1700000003.0, -5, "neg_step", 7.0});
  CHECK(scalars[4].tag == "now");
  CHECK(std::abs(scalars[4].wall_time - version_time) < 60);
  CHECK(scalars[4].wall_time != std::floor(scalars[4].wall_time));  // sub-second resolution
  CHECK(reader.scalars("epoch_loss").size() == 2);
  CHECK(reader.events()[1].values.at(0).plugin_name == "scalars");
  writer.close();
  CHECK(writer.closed());
  writer.close();  // closing twice does nothing
}

TEST_CASE("EventFileWriter: a graph event holds the GraphDef bytes as Event.graph_def (field 4)", "[io][event_file]") {
  // tf.summary.graph's Event: wall_time (field 1, fixed64), then graph_def (field 4, length-delimited); step 0
  // is left out, as proto3 does.
  const std::string graph_def("\x0a\x03\x0a\x01x", 5);  // GraphDef{node {name: "x"}}
  CHECK(encode_graph_event(graph_def, 0) == std::string("\x22\x05", 2) + graph_def);
  std::string timed("\x09", 1);
  proto::put_le(timed, std::bit_cast<uint64_t>(1700000000.5));
  CHECK(encode_graph_event(graph_def, 1700000000.5) == timed + std::string("\x22\x05", 2) + graph_def);

  TempDir tmp("event_file");
  EventFileWriter writer(tmp.path().string());
  writer.add_graph(graph_def, 1700000000.5);
  writer.add_scalar("epoch_loss", 0.5, 0, 1700000001.0);
  writer.close();
  const EventFileReader reader(writer.path());
  REQUIRE(reader.events().size() == 3);
  CHECK(reader.events()[1].graph_def == graph_def);
  CHECK(reader.events()[1].wall_time == 1700000000.5);
  CHECK(reader.events()[1].values.empty());
  CHECK(reader.events()[2].graph_def.empty());
  CHECK(reader.scalars().size() == 1);  // the graph is no scalar
}

TEST_CASE("EventFileWriter: writers in one directory get distinct files", "[io][event_file]") {
  TempDir tmp("event_file");
  EventFileWriter a(tmp.path().string()), b(tmp.path().string());
  CHECK(a.path() != b.path());
  a.close();
  b.close();
  CHECK(list_event_files(tmp.path().string()) == std::vector<std::string>{std::min(a.path(), b.path()), std::max(a.path(), b.path())});
  CHECK(list_event_files((tmp.path() / "missing").string()).empty());
}

TEST_CASE("EventFileWriter: IO errors name the path", "[io][event_file]") {
  TempDir tmp("event_file");
  const fs::path blocker = tmp.path() / "file";
  write_bytes(blocker, "x");
  CHECK_THROWS_AS(EventFileWriter((blocker / "logs").string()), FailedPrecondition);
  CHECK_THROWS_WITH(EventFileWriter((blocker / "logs").string()), Contains((blocker / "logs").string()));
  EventFileWriter writer(tmp.path().string());
  writer.close();
  CHECK_THROWS_AS(writer.add_scalar("loss", 1, 0), FailedPrecondition);
  CHECK_THROWS_WITH(writer.flush(), Contains(writer.path()) && Contains("closed"));
  CHECK_THROWS_AS(EventFileReader((tmp.path() / "none").string()), NotFound);
}

TEST_CASE("EventFileReader: TF2 tf.summary.scalar fixture matches what TensorFlow reads", "[io][event_file][keras]") {
  const json& want = expected().at("files").at("tf2_scalars.tfevents");
  const EventFileReader reader((kFixtures / "tf2_scalars.tfevents").string());
  CHECK(reader.file_version() == want.at("file_version").get<std::string>());
  const std::vector<ScalarEvent> got = reader.scalars();
  REQUIRE(got.size() == want.at("scalars").size());
  for (size_t i = 0; i < got.size(); ++i) {
    const json& w = want.at("scalars")[i];
    INFO("scalar " << i << " " << w.dump());
    CHECK(got[i] == ScalarEvent{w.at("wall_time").get<double>(), w.at("step").get<int64_t>(),
                                w.at("tag").get<std::string>(), w.at("value").get<double>()});
  }
  // The tf.summary.text value is read, but holds no scalar.
  bool saw_text = false;
  for (const Event& e : reader.events())
    for (const SummaryValue& v : e.values)
      if (v.tag == "note") {
        saw_text = true;
        CHECK(v.plugin_name == "text");
        CHECK_FALSE(v.scalar.has_value());
      }
  CHECK(saw_text);
}

TEST_CASE("EventFileWriter: scalar records are byte-identical to TensorFlow's", "[io][event_file][keras]") {
  const std::vector<Record> records = read_records((kFixtures / "tf2_scalars.tfevents").string());
  int compared = 0;
  for (const Record& record : records) {
    const Event e = decode_event(record.data);
    if (e.values.size() != 1 || !e.values[0].scalar) continue;
    INFO("record at byte " << record.offset << ": " << e.values[0].tag);
    CHECK(encode_scalar_event(e.values[0].tag, static_cast<float>(*e.values[0].scalar), e.step, e.wall_time) == record.data);
    ++compared;
  }
  CHECK(compared == 5);
  // And our framing of those bytes is the file's, CRCs included.
  const std::string file = read_file_bytes((kFixtures / "tf2_scalars.tfevents").string());
  std::string reframed;
  for (const Record& record : records) reframed += frame_record(record.data);
  CHECK(reframed == file);
}

TEST_CASE("EventFileReader: TensorBoard's simple_value fixture matches what TensorFlow reads", "[io][event_file][keras]") {
  const json& want = expected().at("files").at("tb_simple_values.tfevents");
  const EventFileReader reader((kFixtures / "tb_simple_values.tfevents").string());
  CHECK(reader.file_version() == want.at("file_version").get<std::string>());
  const std::vector<ScalarEvent> got = reader.scalars();
  REQUIRE(got.size() == want.at("scalars").size());
  for (size_t i = 0; i < got.size(); ++i) {
    const json& w = want.at("scalars")[i];
    CHECK(got[i] == ScalarEvent{w.at("wall_time").get<double>(), w.at("step").get<int64_t>(),
                                w.at("tag").get<std::string>(), w.at("value").get<double>()});
    CHECK(reader.events()[i + 1].values.at(0).plugin_name.empty());
  }
}

TEST_CASE("EventFileReader: a corrupt or truncated file is DataLoss naming the file and offset", "[io][event_file]") {
  TempDir tmp("event_file");
  const std::string good = read_file_bytes((kFixtures / "tf2_scalars.tfevents").string());
  const std::vector<Record> records = parse_records(good, "fixture");
  REQUIRE(records.size() >= 3);
  const size_t second = records[1].offset;
  const fs::path path = tmp.path() / "events.out.tfevents.bad";

  SECTION("a flipped data byte fails the data CRC") {
    std::string bad = good;
    bad[second + 12 + 3] ^= 0x01;
    write_bytes(path, bad);
    const std::string msg = data_loss_message(path);
    CHECK_THAT(msg, Contains(path.string()) && Contains("byte " + std::to_string(second)) && Contains("data CRC"));
  }
  SECTION("a flipped length byte fails the length CRC") {
    std::string bad = good;
    bad[second] ^= 0x10;
    write_bytes(path, bad);
    CHECK_THAT(data_loss_message(path), Contains("byte " + std::to_string(second)) && Contains("length CRC"));
  }
  SECTION("a flipped data CRC byte") {
    std::string bad = good;
    bad[records[2].offset - 1] ^= 0xff;
    write_bytes(path, bad);
    CHECK_THAT(data_loss_message(path), Contains("byte " + std::to_string(second)) && Contains("data CRC"));
  }
  SECTION("cut inside the last record's data") {
    write_bytes(path, good.substr(0, good.size() - 7));
    CHECK_THAT(data_loss_message(path), Contains(path.string()) && Contains("truncated") &&
                                            Contains("byte " + std::to_string(records.back().offset)));
  }
  SECTION("cut inside a record header") {
    write_bytes(path, good.substr(0, second + 5));
    CHECK_THAT(data_loss_message(path), Contains("truncated") && Contains("byte " + std::to_string(second)));
  }
  SECTION("cut exactly between records still reads") {
    write_bytes(path, good.substr(0, second));
    CHECK(data_loss_message(path).empty());
    CHECK(EventFileReader(path.string()).events().size() == 1);
  }
  SECTION("valid framing around bytes that are not an Event") {
    write_bytes(path, frame_record("\x0b\x01"));  // field 1 with the obsolete group wire type
    CHECK_THAT(data_loss_message(path), Contains("byte 0") && Contains("not a valid Event"));
  }
}

TEST_CASE("EventFileWriter: histogram records are byte-identical to tf.summary.histogram's", "[io][event_file][keras]") {
  // histograms.json (make_histogram_fixture.py): TF's buckets and serialized events for spread, constant,
  // single, empty and edge-hitting data.
  std::ifstream in(kFixtures / "histograms.json");
  REQUIRE(in.good());
  const json fixture = json::parse(in);
  REQUIRE(fixture["cases"].size() == 6);
  for (const json& c : fixture["cases"]) {
    const std::string tag = c["tag"];
    INFO(tag);
    const std::vector<double> data = c["data"].get<std::vector<double>>();
    const std::vector<HistogramBucket> buckets = histogram_buckets(data);
    REQUIRE(buckets.size() == c["buckets"].size());
    for (size_t i = 0; i < buckets.size(); ++i) {
      INFO("bucket " << i);
      CHECK(buckets[i].left == c["buckets"][i][0].get<double>());
      CHECK(buckets[i].right == c["buckets"][i][1].get<double>());
      CHECK(buckets[i].count == c["buckets"][i][2].get<double>());
    }
    std::string hex;
    for (unsigned char b : encode_histogram_event(tag, buckets, c["step"].get<int64_t>(), /*wall_time=*/0)) {
      static const char* digits = "0123456789abcdef";
      hex += digits[b >> 4];
      hex += digits[b & 15];
    }
    CHECK(hex == c["event_without_wall_time_hex"].get<std::string>());
  }
}

TEST_CASE("EventFileWriter: add_histogram writes a value the reader sees as a histogram", "[io][event_file]") {
  TempDir dir("histogram");
  std::string path;
  {
    EventFileWriter writer(dir.path().string());
    path = writer.path();
    const std::vector<double> data = {1, 2, 3};
    writer.add_histogram("w/histogram", data, 4);
  }
  EventFileReader reader(path);
  REQUIRE(reader.events().size() == 2);
  const Event& e = reader.events()[1];
  CHECK(e.step == 4);
  REQUIRE(e.values.size() == 1);
  CHECK(e.values[0].tag == "w/histogram");
  CHECK(e.values[0].plugin_name == "histograms");
  CHECK_FALSE(e.values[0].scalar);
  CHECK(histogram_buckets(std::vector<double>{}, 0).empty());
}

namespace {

std::string hex_of(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) {
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

const json& images_text() {
  static const json j = [] {
    std::ifstream in(kFixtures / "images_text.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return j;
}

}  // namespace

TEST_CASE("EventFileWriter: image records are byte-identical to tf.summary.image's", "[io][event_file][keras]") {
  // images_text.json (make_image_text_fixture.py): gray, RGB and RGBA batches, out-of-range values, a batch
  // cut by max_outputs, and the pixels TensorBoard decodes from each PNG TF wrote.
  const json& cases = images_text()["images"];
  REQUIRE(cases.size() == 6);
  for (const json& c : cases) {
    const std::string tag = c["tag"];
    INFO(tag);
    const std::vector<float> data = c["data"].get<std::vector<float>>();
    const auto shape = c["shape"].get<std::array<int64_t, 4>>();
    const size_t image_size = static_cast<size_t>(shape[1] * shape[2] * shape[3]);
    const auto pixels = c["pixels"].get<std::vector<std::vector<int>>>();
    for (size_t i = 0; i < pixels.size(); ++i)
      for (size_t j = 0; j < image_size; ++j) {
        INFO("image " << i << " value " << j << " = " << data[i * image_size + j]);
        REQUIRE(int(image_pixel(data[i * image_size + j])) == pixels[i][j]);
      }
    const std::string event =
        encode_image_event(tag, data, shape, c["step"].get<int64_t>(), c["max_outputs"].get<int>(), /*wall_time=*/0);
    CHECK(hex_of(event) == c["event_without_wall_time_hex"].get<std::string>());
    const Event decoded = decode_event(event);
    REQUIRE(decoded.values.size() == 1);
    CHECK(decoded.values[0].plugin_name == "images");
    REQUIRE(decoded.values[0].strings.size() == 2 + pixels.size());
    CHECK(decoded.values[0].strings[0] == std::to_string(c["width"].get<int>()));
    CHECK(decoded.values[0].strings[1] == std::to_string(c["height"].get<int>()));
  }
}

TEST_CASE("EventFileWriter: text records are byte-identical to tf.summary.text's", "[io][event_file][keras]") {
  const json& cases = images_text()["texts"];
  REQUIRE(cases.size() == 4);
  for (const json& c : cases) {
    const std::string tag = c["tag"], text = c["text"];
    INFO(tag);
    CHECK(hex_of(encode_text_event(tag, text, c["step"].get<int64_t>(), /*wall_time=*/0)) ==
          c["event_without_wall_time_hex"].get<std::string>());
  }
}

TEST_CASE("EventFileWriter: add_image and add_text write values the reader gives back", "[io][event_file]") {
  TempDir dir("image_text");
  std::string path;
  const std::vector<float> data = {0, 0.25f, 0.5f, 1, 2, -1};  // two 1 x 3 gray images
  {
    EventFileWriter writer(dir.path().string());
    path = writer.path();
    writer.add_image("w/image", data, {2, 1, 3, 1}, 5, /*max_outputs=*/1);
    writer.add_text("notes", "a *note*", 6);
    CHECK_THROWS_AS(writer.add_image("w/image", data, {2, 1, 2, 1}, 5), InvalidArgument);  // 4 values expected
    CHECK_THROWS_AS(writer.add_image("w/image", data, {1, 1, 1, 6}, 5), InvalidArgument);  // channels 1..4
    CHECK_THROWS_AS(writer.add_image("w/image", data, {2, 1, 3, 1}, 5, -1), InvalidArgument);
  }
  EventFileReader reader(path);
  REQUIRE(reader.events().size() == 3);
  const Event& image = reader.events()[1];
  CHECK(image.step == 5);
  REQUIRE(image.values.size() == 1);
  CHECK(image.values[0].tag == "w/image");
  CHECK(image.values[0].plugin_name == "images");
  CHECK_FALSE(image.values[0].scalar);
  REQUIRE(image.values[0].strings.size() == 3);  // width, height, one PNG (max_outputs 1)
  CHECK(image.values[0].strings[0] == "3");
  CHECK(image.values[0].strings[1] == "1");
  CHECK(image.values[0].strings[2].starts_with("\x89PNG\r\n\x1a\n"));
  const Event& text = reader.events()[2];
  REQUIRE(text.values.size() == 1);
  CHECK(text.values[0].plugin_name == "text");
  CHECK(text.values[0].strings == std::vector<std::string>{"a *note*"});
  CHECK(reader.scalars().empty());
}
