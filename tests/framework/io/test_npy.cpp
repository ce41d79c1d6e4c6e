// io::read_npy / write_npy: files NumPy wrote (tests/fixtures/predict/, make_predict_fixtures.py) read back
// exactly, every dtype round-trips, and what the format allows but Ember does not read is a clear error.
#include <catch2/catch.hpp>

#include <fstream>

#include "framework/ember.h"
#include "framework/io/npy.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

std::string npy_fixture(const std::string& name) { return testing::fixture_path("predict/" + name).string(); }

}  // namespace

TEST_CASE("read_npy reads the arrays NumPy wrote", "[io][npy]") {
  const Tensor f8 = io::read_npy(npy_fixture("f8.npy"));
  CHECK(f8.dtype() == DType::Float64);
  CHECK(f8.shape() == Shape{2, 3});
  CHECK(f8.to_vector<double>() == std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.25});
  const Tensor v2 = io::read_npy(npy_fixture("f4_v2.npy"));  // a version 2.0 header
  CHECK(v2.shape() == Shape{3, 2});
  CHECK(v2.to_vector<float>() == std::vector<float>{-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f});
  const Tensor u1 = io::read_npy(npy_fixture("u1.npy"));
  CHECK(u1.dtype() == DType::UInt8);
  CHECK(u1.shape() == Shape{2, 2, 3});
  CHECK(u1.to_vector<uint8_t>()[11] == 220);
  const Tensor i4 = io::read_npy(npy_fixture("i4.npy"));
  CHECK(i4.shape() == Shape{});
  CHECK(i4.item<int32_t>() == -7);
  CHECK(io::read_npy(npy_fixture("i8.npy")).to_vector<int64_t>() == std::vector<int64_t>{-3, 0, int64_t{1} << 40});
  const Tensor b1 = io::read_npy(npy_fixture("b1.npy"));
  CHECK(b1.dtype() == DType::Bool);
  CHECK(b1.to_vector<bool>() == std::vector<bool>{true, false, false, true});
}

TEST_CASE("write_npy round-trips every dtype and rank", "[io][npy]") {
  testing::TempDir dir("npy");
  const std::vector<Tensor> tensors = {
      Tensor::from_vector<float>({1.5f, -2, 3, 4, 5, 6}, Shape{2, 1, 3}),
      Tensor::from_vector<double>({0.1, 0.2}),
      Tensor::scalar<int32_t>(42),
      Tensor::from_vector<int64_t>({int64_t{1} << 50, -1}, Shape{1, 2}),
      Tensor::from_vector<uint8_t>({0, 255, 7}),
      ops::cast(Tensor::from_vector<float>({1, 0, 1}), DType::Bool),
      ops::cast(Tensor::from_vector<float>({0.5f, -1}), DType::Float16),
      Tensor::empty(Shape{0, 4}, DType::Float32, Device::cpu()),
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(i << ": " << tensors[i].to_string());
    const std::string path = dir.file("t" + std::to_string(i) + ".npy");
    io::write_npy(path, tensors[i]);
    // numpy aligns the data to 64 bytes: the header's length is part of the format's promise.
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    CHECK((static_cast<size_t>(in.tellg()) - tensors[i].nbytes()) % 64 == 0);
    const Tensor back = io::read_npy(path);
    CHECK(back.dtype() == tensors[i].dtype());
    CHECK(back.shape() == tensors[i].shape());
    CHECK(std::memcmp(back.raw_data(), tensors[i].raw_data(), tensors[i].nbytes()) == 0);
  }
}

TEST_CASE("read_npy names the file and the problem", "[io][npy]") {
  testing::TempDir dir("npy_bad");
  CHECK_THROWS_AS(io::read_npy(dir.file("missing.npy")), NotFound);
  CHECK_THROWS_WITH(io::read_npy(npy_fixture("f4_fortran.npy")), Contains("Fortran order"));
  CHECK_THROWS_AS(io::read_npy(npy_fixture("f4_fortran.npy")), Unimplemented);
  CHECK_THROWS_WITH(io::read_npy(npy_fixture("f4_big.npy")), Contains("big-endian"));
  CHECK_THROWS_WITH(io::read_npy(npy_fixture("c8.npy")), Contains("'<c8'") && Contains("supported"));
  CHECK_THROWS_AS(io::read_npy(npy_fixture("rgb.png")), DataLoss);
  CHECK_THROWS_WITH(io::read_npy(npy_fixture("rgb.png")), Contains("rgb.png") && Contains("not a .npy file"));
  // A header that promises more data than the file holds.
  const std::string truncated = dir.file("truncated.npy");
  {
    std::ifstream in(npy_fixture("f8.npy"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() - 8);
  }
  CHECK_THROWS_AS(io::read_npy(truncated), DataLoss);
  CHECK_THROWS_WITH(io::read_npy(truncated), Contains("truncated") && Contains("(2, 3)"));
}
