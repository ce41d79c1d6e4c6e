// io::decode_image: PNG and JPEG files decode to the pixels PIL gives (what Keras's load_img uses), in
// each color mode (tests/fixtures/predict/pixels.json, make_predict_fixtures.py); bad files are clear errors.
#include <catch2/catch.hpp>

#include <fstream>

#include "framework/ember.h"
#include "framework/io/image_file.h"
#include "tests/support/fixtures.h"
#include "tests/support/json_fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using Catch::Matchers::Contains;

TEST_CASE("decode_image gives PIL's pixels in every color mode", "[io][image]") {
  const nlohmann::json pixels = testing::load_json_fixture("predict/pixels.json");
  const std::map<std::string, int64_t> own_channels = {{"gray12.png", 1}, {"rgb.png", 3}, {"rgba.png", 4}, {"rgb.jpg", 3}};
  for (const auto& [name, own] : own_channels) {
    const std::string path = testing::fixture_path("predict/" + name).string();
    const int64_t h = pixels[name]["shape"][0], w = pixels[name]["shape"][1];
    CHECK(io::decode_image(path).shape() == Shape{h, w, own});
    for (int channels : {1, 3, 4}) {
      INFO(name << " channels=" << channels);
      const Tensor img = io::decode_image(path, channels);
      REQUIRE(img.shape() == Shape{h, w, channels});
      CHECK(img.dtype() == DType::UInt8);
      const std::vector<uint8_t> got = img.to_vector<uint8_t>();
      const std::vector<int> want = pixels[name][std::to_string(channels)];
      // PNG is lossless: exact. libjpeg-turbo's decoder may round an IDCT differently from PIL's build: 1 level.
      const int tolerance = name == "rgb.jpg" ? 1 : 0;
      int worst = 0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(int(got[i]) - want[i]));
      CHECK(worst <= tolerance);
    }
  }
}

TEST_CASE("decode_image names the file and the problem", "[io][image]") {
  testing::TempDir dir("image_bad");
  CHECK_THROWS_AS(io::decode_image(dir.file("missing.png")), NotFound);
  const std::string npy = testing::fixture_path("predict/f8.npy").string();
  CHECK_THROWS_AS(io::decode_image(npy), DataLoss);
  CHECK_THROWS_WITH(io::decode_image(npy), Contains("f8.npy") && Contains("neither a PNG nor a JPEG"));
  CHECK_THROWS_AS(io::decode_image(testing::fixture_path("predict/rgb.png").string(), 2), InvalidArgument);
  for (const std::string name : {"rgb.png", "rgb.jpg"}) {
    std::ifstream in(testing::fixture_path("predict/" + name), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string cut = dir.file("cut_" + name);
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    INFO(name);
    CHECK_THROWS_AS(io::decode_image(cut), DataLoss);
    CHECK_THROWS_WITH(io::decode_image(cut), Contains(cut));
  }
}

TEST_CASE("decode_image fails on a JPEG cut short and passes libjpeg's other warnings, as PIL and TF do",
          "[io][image]") {
  testing::TempDir dir("image_jpeg_warnings");
  std::ifstream in(testing::fixture_path("predict/rgb.jpg"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = dir.file("cut.jpg");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() * 2 / 3);
  CHECK_THROWS_AS(io::decode_image(cut, 3), DataLoss);
  CHECK_THROWS_AS(io::decode_image(cut, 3, io::ImageConvention::tensorflow), InvalidArgument);
  CHECK_THROWS_WITH(io::decode_image(cut, 3, io::ImageConvention::tensorflow),
                    Contains(cut) && Contains("Premature end of JPEG file"));
  // "Corrupt JPEG data: 3 extraneous bytes before marker 0xdb": a warning, the pixels are whole.
  const size_t dqt = bytes.find("\xff\xdb");
  REQUIRE(dqt != std::string::npos);
  const std::string extra = dir.file("extra.jpg");
  std::ofstream(extra, std::ios::binary) << bytes.substr(0, dqt) + std::string("\x00\x01\x02", 3) + bytes.substr(dqt);
  for (io::ImageConvention convention : {io::ImageConvention::pil, io::ImageConvention::tensorflow}) {
    const std::string original = testing::fixture_path("predict/rgb.jpg").string();
    CHECK(io::decode_image(extra, 3, convention).to_vector<uint8_t>() ==
          io::decode_image(original, 3, convention).to_vector<uint8_t>());
  }
}

TEST_CASE("encode_png writes a PNG that decode_image reads back exactly, in every channel count", "[io][image]") {
  testing::TempDir dir("encode_png");
  for (int64_t channels : {1, 2, 3, 4}) {
    INFO("channels=" << channels);
    const int64_t h = 5, w = 7;
    std::vector<uint8_t> pixels(static_cast<size_t>(h * w * channels));
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37 % 256);
    const std::string png = io::encode_png(pixels, h, w, channels);
    const std::string path = (dir.path() / ("c" + std::to_string(channels) + ".png")).string();
    std::ofstream(path, std::ios::binary) << png;
    const Tensor img = io::decode_image(path);  // the file's own channels (gray+alpha is read as RGBA)
    const std::vector<uint8_t> got = img.to_vector<uint8_t>();
    if (channels == 2) {
      REQUIRE(img.shape() == Shape{h, w, 4});
      for (size_t p = 0; p < size_t(h * w); ++p) {
        CHECK(got[p * 4] == pixels[p * 2]);
        CHECK(got[p * 4 + 1] == pixels[p * 2]);
        CHECK(got[p * 4 + 3] == pixels[p * 2 + 1]);
      }
    } else {
      REQUIRE(img.shape() == Shape{h, w, channels});
      CHECK(got == pixels);
    }
  }
  const std::vector<uint8_t> six(6);
  CHECK_THROWS_AS(io::encode_png(six, 2, 2, 1), InvalidArgument);  // 4 values expected
  CHECK_THROWS_AS(io::encode_png(six, 1, 1, 6), InvalidArgument);
  CHECK_THROWS_AS(io::encode_png({}, 0, 3, 1), InvalidArgument);
}
