// The HDF5 wrapper (framework/io/hdf5_file.h) and atomic writes (framework/io/atomic_file.h): every
// dtype round trip, string attributes of each kind (including those h5py/Keras wrote in the fixtures),
// children order, and failures as ember::Errors naming the file and object.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "framework/core/error.h"
#include "framework/core/tensor.h"
#include "framework/io/atomic_file.h"
#include "framework/io/hdf5_file.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using namespace ember::io;
using testing::TempDir;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

fs::path h5test_fixture(const std::string& name) {
  return testing::fixture_path("checkpoints/" + name);
}

template <class T>
void h5test_round_trip(H5Group& root, const std::string& name, const std::vector<T>& values, const Shape& shape) {
  root.write_dataset(name, Tensor::from_vector<T>(values, shape));
}

template <class T>
void h5test_expect(const H5Group& root, const std::string& name, const std::vector<T>& values, const Shape& shape) {
  INFO("dataset " << name);
  Tensor t = root.read_dataset(name);
  CHECK(t.dtype() == dtype_v<T>);
  CHECK(t.shape() == shape);
  CHECK(root.dataset_shape(name) == shape);
  std::vector<T> got = t.to_vector<T>();
  REQUIRE(got.size() == values.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(static_cast<double>(got[i]) == static_cast<double>(values[i]));
}

}  // namespace

TEST_CASE("HDF5 datasets round-trip every dtype, scalars and empty shapes", "[io][h5]") {
  TempDir dir("h5file");
  const std::string path = dir.file("t.h5");
  const std::vector<float> f32{1.5f, -2.25f, 3e-8f, 1e30f, 0.f, 7.f};
  const std::vector<double> f64{1.0 / 3, -1e300};
  const std::vector<half> f16{half(1.5f), half(-0.0009765625f), half(65504.f)};
  const std::vector<bfloat16> bf16{bfloat16(1.5f), bfloat16(-3.f), bfloat16(1e20f)};
  const std::vector<int32_t> i32{-7, 0, 2147483647};
  const std::vector<int64_t> i64{int64_t(1) << 40, -3};
  const std::vector<uint8_t> u8{0, 255, 7};
  const std::vector<bool> b{true, false, true, true};
  {
    H5File file = H5File::create(path);
    H5Group root = file.root();
    h5test_round_trip(root, "f32", f32, {2, 3});
    h5test_round_trip(root, "f64", f64, {2});
    h5test_round_trip(root, "f16", f16, {3});
    h5test_round_trip(root, "bf16", bf16, {3, 1});
    h5test_round_trip(root, "i32", i32, {3});
    h5test_round_trip(root, "i64", i64, {2});
    h5test_round_trip(root, "u8", u8, {3});
    h5test_round_trip(root, "b", b, {2, 2});
    root.write_dataset("scalar", Tensor::scalar<int64_t>(42));
    root.write_dataset("empty", Tensor::from_vector<float>({}, Shape{0, 4}));
    root.write_dataset("deep/er/x", Tensor::scalar<float>(2.f));  // intermediate groups, as h5py
    file.close();
  }
  H5File file = H5File::open_read(path);
  H5Group root = file.root();
  h5test_expect(root, "f32", f32, {2, 3});
  h5test_expect(root, "f64", f64, {2});
  h5test_expect(root, "f16", f16, {3});
  h5test_expect(root, "bf16", bf16, {3, 1});
  h5test_expect(root, "i32", i32, {3});
  h5test_expect(root, "i64", i64, {2});
  h5test_expect(root, "u8", u8, {3});
  h5test_expect(root, "b", b, {2, 2});
  h5test_expect<int64_t>(root, "scalar", {42}, Shape{});
  h5test_expect<float>(root, "empty", {}, {0, 4});
  CHECK(root.has_group("deep/er"));
  CHECK(root.has_dataset("deep/er/x"));
  CHECK_FALSE(root.has_dataset("deep/er"));
  CHECK_FALSE(root.has("deep/nope/x"));
  CHECK(root.group("deep").group("er").read_dataset("x").item<float>() == 2.f);
  CHECK(root.children() == std::vector<std::string>{"b", "bf16", "deep", "empty", "f16", "f32", "f64", "i32",
                                                    "i64", "scalar", "u8"});
}

TEST_CASE("HDF5 string and numeric attributes of every kind", "[io][h5]") {
  TempDir dir("h5attr");
  const std::string path = dir.file("a.h5");
  {
    H5File file = H5File::create(path);
    H5Group root = file.root();
    H5Group g = root.create_group("a/b");
    g.set_attr_string("utf8", "naïve");
    g.set_attr_string("ascii", "tensorflow", /*utf8=*/false);
    g.set_attr_strings("vlen", {"dense", "dense_1", ""});
    g.set_attr_strings("fixed", {"x", "longer", ""}, /*fixed_length=*/true);
    g.set_attr_strings("none", {});
    g.set_attr_int64("i", -5);
    g.set_attr_double("d", 0.25);
    g.set_attr_string("utf8", "replaced");  // h5py's attrs[name] = value replaces
    file.close();
  }
  H5Group g = H5File::open_read(path).root().group("a/b");
  CHECK(g.path() == "/a/b");
  CHECK(g.attr_string("utf8") == "replaced");
  CHECK(g.attr_string("ascii") == "tensorflow");
  CHECK(g.attr_strings("vlen") == std::vector<std::string>{"dense", "dense_1", ""});
  CHECK(g.attr_strings("fixed") == std::vector<std::string>{"x", "longer", ""});
  CHECK(g.attr_strings("none").empty());
  CHECK(g.attr_int64("i") == -5);
  CHECK(g.attr_double("d") == 0.25);
  CHECK(g.attr_names() == std::vector<std::string>{"ascii", "d", "fixed", "i", "none", "utf8", "vlen"});
  CHECK_FALSE(g.has_attr("missing"));
  CHECK_THROWS_WITH(g.attr_string("missing"), Contains("no attribute 'missing'") && Contains("/a/b"));
  CHECK_THROWS_AS(g.attr_string("vlen"), DataLoss);  // three strings, not one
  CHECK_THROWS_AS(g.attr_strings("i"), DataLoss);
}

TEST_CASE("HDF5 reads the attributes h5py wrote in Keras's fixtures", "[io][h5]") {
  // Keras 3's legacy writer: variable-length ASCII arrays and scalars, an empty float64 array for a
  // layer without weights; the Keras 3 store: variable-length UTF-8 "name" attributes.
  H5Group mw = H5File::open_read(h5test_fixture("functional.h5").string()).root().group("model_weights");
  CHECK(mw.attr_string("backend") == "tensorflow");
  CHECK(mw.attr_strings("layer_names").size() == 7);
  CHECK(mw.group("add").attr_strings("weight_names").empty());
  CHECK(mw.group("dense_3").attr_strings("weight_names") ==
        std::vector<std::string>{"dense_3/kernel", "dense_3/bias"});
  H5Group ks = H5File::open_read(h5test_fixture("mlp.weights.h5").string()).root();
  CHECK(ks.group("vars").attr_string("name") == "mlp");
  CHECK(ks.group("layers").children() == std::vector<std::string>{"dense", "dense_1"});
  CHECK(ks.group("optimizer/vars").read_dataset("0").dtype() == DType::Int64);
  CHECK(ks.group("optimizer/vars").read_dataset("0").shape() == Shape{});
}

TEST_CASE("HDF5 failures are ember::Errors naming the file and object", "[io][h5]") {
  TempDir dir("h5err");
  CHECK_THROWS_AS(H5File::open_read(dir.file("missing.h5")), NotFound);
  CHECK_THROWS_WITH(H5File::open_read(dir.file("missing.h5")), Contains("missing.h5"));
  {
    std::ofstream(dir.file("text.h5")) << "this is not an HDF5 file at all, just some text\n";
  }
  CHECK_THROWS_AS(H5File::open_read(dir.file("text.h5")), DataLoss);
  CHECK_THROWS_WITH(H5File::open_read(dir.file("text.h5")), Contains("text.h5") && Contains("not an HDF5 file"));
  CHECK_FALSE(H5File::is_hdf5(dir.file("text.h5")));
  CHECK_THROWS_AS(H5File::open_read(dir.path().string()), InvalidArgument);
  {
    H5File f = H5File::create(dir.file("ok.h5"));
    f.root().create_group("g").write_dataset("x", Tensor::scalar<float>(1.f));
    f.close();
  }
  CHECK(H5File::is_hdf5(dir.file("ok.h5")));
  H5Group root = H5File::open_read(dir.file("ok.h5")).root();
  CHECK_THROWS_AS(root.group("nope"), NotFound);
  CHECK_THROWS_WITH(root.group("g/nope"), Contains("ok.h5") && Contains("/g/nope") && Contains("no group"));
  CHECK_THROWS_WITH(root.read_dataset("g/y"), Contains("no dataset") && Contains("/g/y"));
  CHECK_THROWS_WITH(root.group("g/x"), Contains("is not a group"));
  CHECK_THROWS_WITH(root.read_dataset("g"), Contains("is not a dataset"));
  // Creating in a missing directory fails as an error, not a crash.
  CHECK_THROWS_AS(H5File::create(dir.file("no/such/dir.h5")), Error);
}

TEST_CASE("write_atomically replaces the file only when the writer succeeds", "[io][h5]") {
  TempDir dir("atomic");
  const std::string path = dir.file("ckpt.h5");
  auto write_text = [](const std::string& text) {
    return [text](const std::string& tmp) { std::ofstream(tmp) << text; };
  };
  auto read_text = [&] {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto entries = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir.path())) n += e.path().filename() != "ckpt.h5";
    return n;
  };
  write_atomically(path, write_text("first"));
  CHECK(read_text() == "first");
  // A writer that throws midway (after writing part of the file): the old file stays, no tmp file left.
  std::string tmp_seen;
  auto failing = [&](const std::string& tmp) {
    tmp_seen = tmp;
    std::ofstream(tmp) << "partial";
    throw DataLoss("the writer gave up");
  };
  CHECK_THROWS_AS(write_atomically(path, failing), DataLoss);  // the writer's class is kept
  CHECK_THROWS_WITH(write_atomically(path, failing),
                    Contains("saving to '" + path + "' failed") && Contains("the writer gave up"));
  CHECK(fs::path(tmp_seen).parent_path() == dir.path());
  CHECK(fs::path(tmp_seen).filename().string().rfind(".ckpt.h5.tmp-", 0) == 0);
  CHECK_FALSE(fs::exists(tmp_seen));
  CHECK(read_text() == "first");
  CHECK(entries() == 0);
  // A non-Ember exception is reported as Internal.
  CHECK_THROWS_AS(write_atomically(path, [](const std::string&) { throw std::runtime_error("boom"); }), Internal);
  // A writer that writes nothing is an error too.
  CHECK_THROWS_AS(write_atomically(path, [](const std::string&) {}), Internal);
  CHECK(read_text() == "first");
  write_atomically(path, write_text("second"));
  CHECK(read_text() == "second");
  CHECK(entries() == 0);
  // A missing directory fails cleanly, naming the path.
  CHECK_THROWS_AS(write_atomically(dir.file("missing/ckpt.h5"), write_text("x")), NotFound);
  CHECK_THROWS_WITH(write_atomically(dir.file("missing/ckpt.h5"), write_text("x")),
                    Contains("missing/ckpt.h5") && Contains("does not exist"));
  CHECK_THROWS_AS(write_atomically(dir.path().string(), write_text("x")), InvalidArgument);
}
