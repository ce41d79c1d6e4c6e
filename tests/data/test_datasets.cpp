// cifar10::load_data and imdb::load_data on synthetic files: CIFAR-10 batch files written here (as the
// archive cifar-10-binary.tar.gz, its extracted folder, or bare), and a tiny imdb.npz written by numpy
// (tests/fixtures/data/imdb_tiny.npz) with what Keras's imdb.load_data returns for it.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

#include "tests/data/data_testing.h"
#include "tests/support/json_fixtures.h"

using namespace ember;
using ember::testing::EnvGuard;
using ember::testing::TempDir;
using ember::testing::message_of;
using ember::testing::write_gzip;
using ember::testing::write_plain;
namespace fs = std::filesystem;

namespace {

const char* const kBatches[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

// Record `id` of a CIFAR-10 batch file: label id % 10, then the red, green and blue planes, each byte
// (id * 7 + c * 50 + p) % 256 for channel c and pixel p = row * 32 + column.
std::string record(int id) {
  std::string r(1, static_cast<char>(id % 10));
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 1024; ++p) r.push_back(static_cast<char>((id * 7 + c * 50 + p) % 256));
  return r;
}

// Batch file i (0..5) holds records 10 * i and, for the first and the test batch, 10 * i + 1 too.
std::string batch(int i) { return record(10 * i) + (i == 0 || i == 5 ? record(10 * i + 1) : std::string()); }

// A ustar archive of the given files.
std::string tar_bytes(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out;
  for (const auto& [name, data] : files) {
    char h[512] = {};
    std::snprintf(h, 100, "%s", name.c_str());
    std::snprintf(h + 100, 8, "%07o", 0644);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    std::snprintf(h + 124, 12, "%011o", static_cast<unsigned>(data.size()));
    std::snprintf(h + 136, 12, "%011o", 0);
    h[156] = '0';
    std::memcpy(h + 257, "ustar", 6);
    std::memcpy(h + 263, "00", 2);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char ch : h) sum += ch;
    std::snprintf(h + 148, 8, "%06o", sum);
    out.append(h, 512);
    out += data;
    out.append((512 - data.size() % 512) % 512, '\0');
  }
  return out + std::string(1024, '\0');
}

std::vector<std::pair<std::string, std::string>> batch_files(int skip = -1) {
  std::vector<std::pair<std::string, std::string>> files = {{"cifar-10-batches-bin/batches.meta.txt", "airplane\n"}};
  for (int i = 0; i < 6; ++i)
    if (i != skip) files.emplace_back(std::string("cifar-10-batches-bin/") + kBatches[i], batch(i));
  return files;
}

void check_cifar(const datasets::TrainTest& d) {
  REQUIRE(d.train.x.shape() == Shape{6, 32, 32, 3});
  REQUIRE(d.train.y.shape() == Shape{6, 1});
  REQUIRE(d.test.x.shape() == Shape{2, 32, 32, 3});
  CHECK(d.train.x.dtype() == DType::UInt8);
  CHECK(d.train.y.dtype() == DType::UInt8);
  const std::vector<int> train_ids = {0, 1, 10, 20, 30, 40}, test_ids = {50, 51};
  for (const auto& [split, ids] : {std::pair{&d.train, train_ids}, std::pair{&d.test, test_ids}}) {
    const std::vector<uint8_t> x = split->x.to_vector<uint8_t>(), y = split->y.to_vector<uint8_t>();
    for (size_t n = 0; n < ids.size(); ++n) {
      CHECK(y[n] == ids[n] % 10);
      for (int p : {0, 1, 33, 1023})
        for (int c = 0; c < 3; ++c) CHECK(x[(n * 1024 + p) * 3 + c] == (ids[n] * 7 + c * 50 + p) % 256);
    }
  }
}

}  // namespace

TEST_CASE("data: cifar10 reads the archive, the extracted folder or the bare files", "[data][loaders]") {
  TempDir dir("cifar");
  write_gzip(dir.file("cifar-10-binary.tar.gz"), tar_bytes(batch_files()));
  check_cifar(datasets::cifar10::load_data(dir.file("cifar-10-binary.tar.gz")));
  check_cifar(datasets::cifar10::load_data(dir.path().string()));
  // An uncompressed tar reads too.
  write_plain(dir.file("plain.tar"), tar_bytes(batch_files()));
  check_cifar(datasets::cifar10::load_data(dir.file("plain.tar")));

  TempDir root("cifar_env");
  fs::create_directories(root.path() / "cifar10" / "cifar-10-batches-bin");
  for (int i = 0; i < 6; ++i) write_plain((root.path() / "cifar10" / "cifar-10-batches-bin" / kBatches[i]).string(), batch(i));
  {
    EnvGuard env("EMBER_DATA_DIR", root.path().string());
    check_cifar(datasets::cifar10::load_data());
  }
  TempDir bare("cifar_bare");
  for (int i = 0; i < 6; ++i) write_plain(bare.file(kBatches[i]), batch(i));
  check_cifar(datasets::cifar10::load_data(bare.path().string()));
}

TEST_CASE("data: cifar10's missing and corrupt files are NotFound and DataLoss naming them", "[data][loaders]") {
  TempDir empty("cifar_empty");
  {
    EnvGuard env("EMBER_DATA_DIR", empty.path().string());
    const std::string m = message_of<NotFound>([] { datasets::cifar10::load_data(); });
    CHECK_THAT(m, Catch::Contains("cifar10.load_data") && Catch::Contains(empty.file("cifar10")) &&
                      Catch::Contains("cifar-10-binary.tar.gz") && Catch::Contains("$EMBER_DATA_DIR/cifar10"));
  }
  {
    EnvGuard env("EMBER_DATA_DIR", std::nullopt);
    CHECK_THAT(message_of<NotFound>([] { datasets::cifar10::load_data(); }), Catch::Contains("$EMBER_DATA_DIR (not set)"));
  }
  CHECK_THAT(message_of<NotFound>([] { datasets::cifar10::load_data("/nonexistent/cifar"); }),
             Catch::Contains("/nonexistent/cifar (no such directory)"));

  TempDir dir("cifar_corrupt");
  write_gzip(dir.file("no_test.tar.gz"), tar_bytes(batch_files(5)));
  CHECK_THAT(message_of<DataLoss>([&] { datasets::cifar10::load_data(dir.file("no_test.tar.gz")); }),
             Catch::Contains("no_test.tar.gz lacks test_batch.bin"));
  const std::string whole = tar_bytes(batch_files());
  write_gzip(dir.file("cut.tar.gz"), whole.substr(0, whole.size() / 2));
  CHECK_THAT(message_of<DataLoss>([&] { datasets::cifar10::load_data(dir.file("cut.tar.gz")); }),
             Catch::Contains("cut.tar.gz") && Catch::Contains("truncated"));
  write_plain(dir.file("garbage.tar.gz"), std::string("\x1f\x8b\x08\x00garbage", 11) + std::string(600, 'x'));
  CHECK_THROWS_AS(datasets::cifar10::load_data(dir.file("garbage.tar.gz")), DataLoss);

  TempDir bad("cifar_bad_batch");
  for (int i = 0; i < 6; ++i) write_plain(bad.file(kBatches[i]), batch(i));
  write_plain(bad.file("data_batch_3.bin"), batch(2).substr(0, 3000));
  CHECK_THAT(message_of<DataLoss>([&] { datasets::cifar10::load_data(bad.path().string()); }),
             Catch::Contains(bad.file("data_batch_3.bin")) && Catch::Contains("3000 bytes"));
  std::string wrong_label = batch(5);
  wrong_label[3073] = 12;
  write_plain(bad.file("data_batch_3.bin"), batch(2));
  write_plain(bad.file("test_batch.bin"), wrong_label);
  CHECK_THAT(message_of<DataLoss>([&] { datasets::cifar10::load_data(bad.path().string()); }),
             Catch::Contains(bad.file("test_batch.bin")) && Catch::Contains("label 12 at byte offset 3073"));
}

TEST_CASE("data: imdb matches Keras's load_data on a tiny imdb.npz", "[data][loaders]") {
  const std::string npz = ember::testing::fixture_path("data/imdb_tiny.npz").string();
  const nlohmann::json doc = ember::testing::load_json_fixture("data/imdb.json");
  for (const nlohmann::json& c : doc["cases"]) {
    INFO("arguments " << c["args"].dump());
    const nlohmann::json& a = c["args"];
    datasets::imdb::Options o{.path = npz};
    if (a.contains("num_words")) o.num_words = a["num_words"].get<int64_t>();
    if (a.contains("skip_top")) o.skip_top = a["skip_top"];
    if (a.contains("maxlen")) o.maxlen = a["maxlen"].get<int64_t>();
    if (a.contains("seed")) o.seed = a["seed"];
    if (a.contains("start_char")) o.start_char = a["start_char"].is_null() ? std::nullopt : std::optional<int64_t>(a["start_char"].get<int64_t>());
    if (a.contains("oov_char")) o.oov_char = a["oov_char"].is_null() ? std::nullopt : std::optional<int64_t>(a["oov_char"].get<int64_t>());
    if (a.contains("index_from")) o.index_from = a["index_from"];
    const datasets::imdb::TrainTest d = datasets::imdb::load_data(o);
    CHECK(d.train.x == c["x_train"].get<std::vector<std::vector<int64_t>>>());
    CHECK(d.train.y.to_vector<int64_t>() == c["y_train"].get<std::vector<int64_t>>());
    CHECK(d.test.x == c["x_test"].get<std::vector<std::vector<int64_t>>>());
    CHECK(d.test.y.to_vector<int64_t>() == c["y_test"].get<std::vector<int64_t>>());
    CHECK(d.train.y.dtype() == DType::Int64);
  }
  CHECK_THAT(message_of<InvalidArgument>([&] { datasets::imdb::load_data({.path = npz, .maxlen = 2}); }),
             Catch::Contains("Increase maxlen"));
}

TEST_CASE("data: imdb finds imdb.npz and names what is missing or corrupt", "[data][loaders]") {
  const std::string npz = ember::testing::fixture_path("data/imdb_tiny.npz").string();
  TempDir root("imdb");
  fs::create_directories(root.path() / "imdb");
  fs::copy_file(npz, root.path() / "imdb" / "imdb.npz");
  {
    EnvGuard env("EMBER_DATA_DIR", root.path().string());
    CHECK(datasets::imdb::load_data().train.x.size() == 7);
    CHECK(datasets::imdb::load_data({.path = (root.path() / "imdb").string()}).test.x.size() == 5);
  }
  TempDir empty("imdb_empty");
  {
    EnvGuard env("EMBER_DATA_DIR", empty.path().string());
    CHECK_THAT(message_of<NotFound>([] { datasets::imdb::load_data(); }),
               Catch::Contains(empty.file("imdb/imdb.npz")) && Catch::Contains("imdb.npz") &&
                   Catch::Contains("$EMBER_DATA_DIR/imdb"));
  }
  write_plain(empty.file("garbage.npz"), "this is not a zip archive at all");
  CHECK_THAT(message_of<DataLoss>([&] { datasets::imdb::load_data({.path = empty.file("garbage.npz")}); }),
             Catch::Contains("garbage.npz"));
  const std::string whole = ember::testing::read_plain(npz);
  write_plain(empty.file("cut.npz"), whole.substr(0, whole.size() / 2));
  CHECK_THROWS_AS(datasets::imdb::load_data({.path = empty.file("cut.npz")}), DataLoss);
}
