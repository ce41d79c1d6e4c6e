// Dataset loaders: the real Fashion-MNIST files, synthetic IDX files (gzip and plain), deliberately
// corrupted copies (truncated, bad magic, gzip garbage, mismatched counts), the directory search, and CSV.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "tests/data/data_testing.h"

using namespace ember;
using ember::testing::EnvGuard;
using ember::testing::TempDir;
using ember::testing::message_of;
using ember::testing::read_plain;
using ember::testing::write_gzip;
using ember::testing::write_plain;

namespace {

const char* const kImages[] = {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte"};
const char* const kLabels[] = {"train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"};

// The bytes of an IDX file: magic 0x000008<rank>, big-endian dimensions, then `data`.
std::string idx_bytes(const std::vector<uint32_t>& dims, const std::string& data) {
  std::string s = {0, 0, 8, static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) s.push_back(static_cast<char>((d >> shift) & 0xff));
  return s + data;
}

// n images whose pixel j of image i is (i * 31 + j) % 256, and labels i % 10.
std::string image_data(uint32_t n) {
  std::string s;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < 28 * 28; ++j) s.push_back(static_cast<char>((i * 31 + j) % 256));
  return s;
}
std::string label_data(uint32_t n) {
  std::string s;
  for (uint32_t i = 0; i < n; ++i) s.push_back(static_cast<char>(i % 10));
  return s;
}

// A complete synthetic dataset directory: 6 training and 4 test examples, gzip-compressed (or not).
void write_dataset(const TempDir& dir, bool gzip = true) {
  const uint32_t counts[] = {6, 4};
  for (int s = 0; s < 2; ++s) {
    const std::string img = idx_bytes({counts[s], 28, 28}, image_data(counts[s]));
    const std::string lab = idx_bytes({counts[s]}, label_data(counts[s]));
    if (gzip) {
      write_gzip(dir.file(std::string(kImages[s]) + ".gz"), img);
      write_gzip(dir.file(std::string(kLabels[s]) + ".gz"), lab);
    } else {
      write_plain(dir.file(kImages[s]), img);
      write_plain(dir.file(kLabels[s]), lab);
    }
  }
}

}  // namespace

TEST_CASE("data: fashion_mnist loads the real files", "[data][loaders][real]") {
  EnvGuard env("EMBER_DATA_DIR", std::nullopt);
  auto [train, test] = datasets::fashion_mnist::load_data();
  CHECK(train.x.shape() == Shape{60000, 28, 28});
  CHECK(train.y.shape() == Shape{60000});
  CHECK(test.x.shape() == Shape{10000, 28, 28});
  CHECK(test.y.shape() == Shape{10000});
  CHECK(train.x.dtype() == DType::UInt8);
  CHECK(train.y.dtype() == DType::UInt8);
  // Fashion-MNIST is balanced: 6000 training and 1000 test examples of each of the 10 classes.
  for (const auto& [labels, per_class] : {std::pair{train.y, 6000}, std::pair{test.y, 1000}}) {
    std::vector<int> counts(10, 0);
    for (uint8_t y : labels.to_vector<uint8_t>()) {
      REQUIRE(y <= 9);
      ++counts[y];
    }
    for (int c : counts) CHECK(c == per_class);
  }
  std::vector<uint8_t> first = train.x.slice_rows(0, 1).to_vector<uint8_t>();
  CHECK(*std::max_element(first.begin(), first.end()) > 200);  // an image, not zeros

  // The loader feeds the pipeline of API.md.
  auto ds = data::Dataset::from_tensor_slices({train.x, train.y}).shuffle(10000, {.seed = 42}).batch(256);
  CHECK(ds.cardinality() == 235);
  data::Element b = *ds.make_iterator().next();
  CHECK(b[0].shape() == Shape{256, 28, 28});
  CHECK(b[1].shape() == Shape{256});
}

TEST_CASE("data: loaders read synthetic files, gzip or plain, from a path or EMBER_DATA_DIR", "[data][loaders]") {
  TempDir gz("idx_gz"), plain("idx_plain");
  write_dataset(gz);
  write_dataset(plain, false);
  for (const TempDir* dir : {&gz, &plain}) {
    auto [train, test] = datasets::fashion_mnist::load_data(dir->path().string());
    CHECK(train.x.shape() == Shape{6, 28, 28});
    CHECK(test.y.shape() == Shape{4});
    std::string pixels = image_data(6);
    CHECK(train.x.to_vector<uint8_t>() == std::vector<uint8_t>(pixels.begin(), pixels.end()));
    CHECK(test.y.to_vector<uint8_t>() == std::vector<uint8_t>{0, 1, 2, 3});
    CHECK(datasets::mnist::load_data(dir->path().string()).train.x.shape() == Shape{6, 28, 28});
  }
  CHECK(datasets::read_idx(gz.file("t10k-labels-idx1-ubyte.gz")).shape() == Shape{4});

  // $EMBER_DATA_DIR/fashion-mnist and $EMBER_DATA_DIR/mnist come before the system directory.
  TempDir root("data_dir");
  std::filesystem::create_directories(root.path() / "fashion-mnist");
  std::filesystem::create_directories(root.path() / "mnist");
  for (const char* sub : {"fashion-mnist", "mnist"})
    for (const auto& f : std::filesystem::directory_iterator(gz.path()))
      std::filesystem::copy_file(f.path(), root.path() / sub / f.path().filename());
  EnvGuard env("EMBER_DATA_DIR", root.path().string());
  CHECK(datasets::fashion_mnist::load_data().train.x.shape() == Shape{6, 28, 28});
  CHECK(datasets::mnist::load_data().test.x.shape() == Shape{4, 28, 28});
}

TEST_CASE("data: a missing dataset is a NotFound naming every place tried", "[data][loaders]") {
  TempDir empty("empty");
  {
    EnvGuard env("EMBER_DATA_DIR", empty.path().string());
    const std::string m = message_of<NotFound>([&] { datasets::mnist::load_data(); });
    CHECK_THAT(m, Catch::Contains("mnist.load_data") && Catch::Contains(empty.file("mnist")) &&
                      Catch::Contains("no such directory") && Catch::Contains("$EMBER_DATA_DIR/mnist"));
  }
  // A path the caller names is the only place looked at, even when a copy exists elsewhere: the system
  // copy of Fashion-MNIST, or one under $EMBER_DATA_DIR.
  {
    TempDir root("data_dir_elsewhere");
    write_dataset(root);
    EnvGuard env("EMBER_DATA_DIR", root.path().string());
    for (auto load : {&datasets::fashion_mnist::load_data, &datasets::mnist::load_data}) {
      const std::string m = message_of<NotFound>([&] { load("/nonexistent"); });
      CHECK_THAT(m, Catch::Contains("load_data: dataset files not found in the given path") &&
                        Catch::Contains("/nonexistent (no such directory)") && !Catch::Contains(root.path().string()));
    }
  }
  // Only the Debian directory is left when it is absent too; the message names the package.
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    EnvGuard env("EMBER_DATA_DIR", std::nullopt);
    const std::string m = message_of<NotFound>([] { datasets::fashion_mnist::load_data(); });
    CHECK_THAT(m, Catch::Contains("/usr/share/datasets/fashion-mnist") &&
                      Catch::Contains("sudo apt-get install dataset-fashion-mnist"));
  }
  // A directory with some of the files says which are missing.
  TempDir partial("partial");
  write_gzip(partial.file("train-images-idx3-ubyte.gz"), idx_bytes({1, 28, 28}, image_data(1)));
  EnvGuard env("EMBER_DATA_DIR", empty.path().string());
  const std::string m = message_of<NotFound>([&] { datasets::mnist::load_data(partial.path().string()); });
  CHECK_THAT(m, Catch::Contains("lacks train-labels-idx1-ubyte[.gz]") && !Catch::Contains("lacks train-images"));
  CHECK_THAT(message_of<NotFound>([&] { datasets::read_idx(empty.file("x.gz")); }), Catch::Contains("x.gz"));
}

TEST_CASE("data: corrupted dataset files are a DataLoss naming the file and byte offset", "[data][loaders]") {
  auto load_with = [](const std::function<void(const TempDir&)>& corrupt) {
    TempDir dir("corrupt");
    write_dataset(dir);
    corrupt(dir);
    return message_of<DataLoss>([&] { datasets::fashion_mnist::load_data(dir.path().string()); });
  };
  const std::string images = "train-images-idx3-ubyte.gz", labels = "train-labels-idx1-ubyte.gz";

  // The header promises 6 images; the data holds 3.
  std::string m = load_with([&](const TempDir& d) {
    write_gzip(d.file(images), idx_bytes({6, 28, 28}, image_data(3)));
  });
  CHECK_THAT(m, Catch::Contains(images) && Catch::Contains("truncated") && Catch::Contains("byte offset 16") &&
                    Catch::Contains(std::to_string(16 + 3 * 784)));

  // The gzip stream itself cut short.
  m = load_with([&](const TempDir& d) {
    const std::string whole = read_plain(d.file(images));
    write_plain(d.file(images), whole.substr(0, whole.size() / 2));
  });
  CHECK_THAT(m, Catch::Contains(images) && Catch::Contains("byte offset"));

  // A labels file where the images file belongs: magic 0x00000801 instead of 0x00000803.
  m = load_with([&](const TempDir& d) { write_gzip(d.file(images), idx_bytes({6}, label_data(6))); });
  CHECK_THAT(m, Catch::Contains(images) && Catch::Contains("bad magic number 0x00000801") &&
                    Catch::Contains("byte offset 0") && Catch::Contains("0x00000803"));

  // Not IDX at all (zlib reads a non-gzip file as it is).
  m = load_with([&](const TempDir& d) { write_plain(d.file(labels), "PK\3\4 this is a zip file, not IDX"); });
  CHECK_THAT(m, Catch::Contains(labels) && Catch::Contains("bad magic number 0x504b0304"));

  // A gzip header followed by garbage.
  m = load_with([&](const TempDir& d) {
    std::string junk = {'\x1f', '\x8b', '\x08', 0, 0, 0, 0, 0, 0, '\x03'};
    for (int i = 0; i < 4000; ++i) junk.push_back(static_cast<char>((i * 7919) % 251));
    write_plain(d.file(images), junk);
  });
  CHECK_THAT(m, Catch::Contains(images) && Catch::Contains("gzip error") && Catch::Contains("byte offset"));

  // Bytes flipped in the middle of the gzip stream: its CRC no longer matches.
  m = load_with([&](const TempDir& d) {
    std::string bytes = read_plain(d.file(images));
    for (size_t i = bytes.size() / 3; i < bytes.size() / 3 + 16; ++i) bytes[i] = static_cast<char>(~bytes[i]);
    write_plain(d.file(images), bytes);
  });
  CHECK_THAT(m, Catch::Contains(images) && Catch::Contains("byte offset"));

  // 6 images but 5 labels.
  m = load_with([&](const TempDir& d) { write_gzip(d.file(labels), idx_bytes({5}, label_data(5))); });
  CHECK_THAT(m, Catch::Contains(labels) && Catch::Contains("5 labels") && Catch::Contains("6 images"));

  // A label outside 0..9, and bytes after the promised data.
  m = load_with([&](const TempDir& d) { write_gzip(d.file(labels), idx_bytes({6}, std::string("\0\1\2\3\x0c\5", 6))); });
  CHECK_THAT(m, Catch::Contains("label 12 at byte offset 12"));
  m = load_with([&](const TempDir& d) { write_gzip(d.file(labels), idx_bytes({6}, label_data(6) + "xx")); });
  CHECK_THAT(m, Catch::Contains(labels) && Catch::Contains("unexpected data") && Catch::Contains("byte offset 14"));
}

TEST_CASE("data: csv::load reads numbers into a float32 matrix", "[data][csv]") {
  TempDir dir("csv");
  write_plain(dir.file("a.csv"), "x, y ,z\r\n1,2.5,-3\r\n\r\n 4e2 ,\"5\",+6\r\nnan,inf,0.125\n");
  Tensor t = datasets::csv::load(dir.file("a.csv"), {.header = true, .delimiter = ','});
  CHECK(t.dtype() == DType::Float32);
  REQUIRE(t.shape() == Shape{3, 3});
  std::vector<float> v = t.to_vector<float>();
  CHECK(v[0] == 1);
  CHECK(v[1] == 2.5f);
  CHECK(v[2] == -3);
  CHECK(v[3] == 400);
  CHECK(v[4] == 5);
  CHECK(v[5] == 6);
  CHECK(std::isnan(v[6]));
  CHECK(std::isinf(v[7]));
  CHECK(v[8] == 0.125f);

  write_plain(dir.file("b.tsv"), "1;2\n3;4\n");
  CHECK(datasets::csv::load(dir.file("b.tsv"), {.delimiter = ';'}).to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  write_plain(dir.file("h.csv"), "a,b,c\n");
  CHECK(datasets::csv::load(dir.file("h.csv"), {.header = true}).shape() == Shape{0, 3});

  write_plain(dir.file("bad.csv"), "1,2,3\n4,5,6\n7,abc,9\n");
  CHECK_THAT(message_of<InvalidArgument>([&] { datasets::csv::load(dir.file("bad.csv")); }),
             Catch::Contains(dir.file("bad.csv") + ":3:3") && Catch::Contains("'abc'"));
  write_plain(dir.file("ragged.csv"), "1,2,3\n4,5\n");
  CHECK_THAT(message_of<InvalidArgument>([&] { datasets::csv::load(dir.file("ragged.csv")); }),
             Catch::Contains(dir.file("ragged.csv") + ":2") && Catch::Contains("2 fields, expected 3"));
  write_plain(dir.file("empty_field.csv"), "1,,3\n");
  CHECK_THAT(message_of<InvalidArgument>([&] { datasets::csv::load(dir.file("empty_field.csv")); }),
             Catch::Contains(":1:3"));
  CHECK_THROWS_AS(datasets::csv::load(dir.file("missing.csv")), NotFound);

  // Rows become dataset elements.
  auto rows = data::Dataset::from_tensor_slices(t).batch(2);
  CHECK(rows.cardinality() == 2);
}
