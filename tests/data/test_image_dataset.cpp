// image_dataset_from_directory against what Keras gives for the same folder (tests/fixtures/data/images,
// recorded by tests/fixtures/data/make_data_fixtures.py): class names, file order after the seeded shuffle,
// the training/validation split, labels, and the decoded and resized pixels. Then the argument and file
// errors, and decoding (io::decode_image, tensorflow convention) and resize_image on their own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "framework/io/image_file.h"
#include "tests/data/data_testing.h"
#include "tests/support/json_fixtures.h"

using namespace ember;
using ember::testing::TempDir;
using ember::testing::message_of;
using ember::testing::write_plain;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string images_dir() { return ember::testing::fixture_path("data/images").string(); }

data::ImageDatasetOptions options_from(const json& args) {
  data::ImageDatasetOptions o;
  if (args.contains("labels")) o.labels = std::nullopt;  // the fixtures pass labels only as None
  if (args.contains("label_mode")) o.label_mode = args["label_mode"].get<std::string>();
  if (args.contains("class_names")) o.class_names = args["class_names"].get<std::vector<std::string>>();
  if (args.contains("color_mode")) o.color_mode = args["color_mode"];
  if (args.contains("batch_size"))
    o.batch_size = args["batch_size"].is_null() ? std::nullopt : std::optional<int64_t>(args["batch_size"].get<int64_t>());
  if (args.contains("image_size")) o.image_size = {args["image_size"][0], args["image_size"][1]};
  if (args.contains("shuffle")) o.shuffle = args["shuffle"];
  if (args.contains("seed")) o.seed = args["seed"].get<uint32_t>();
  if (args.contains("validation_split")) o.validation_split = args["validation_split"].get<double>();
  if (args.contains("subset")) o.subset = args["subset"].get<std::string>();
  if (args.contains("interpolation")) o.interpolation = args["interpolation"];
  if (args.contains("crop_to_aspect_ratio")) o.crop_to_aspect_ratio = args["crop_to_aspect_ratio"];
  return o;
}

std::vector<std::string> relative(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) out.push_back(fs::relative(p, images_dir()).string());
  return out;
}

// Every element of one pass, unbatched: {image, label...}.
std::vector<data::Element> elements(const data::Dataset& ds, bool batched) {
  std::vector<data::Element> out;
  for (const data::Element& e : batched ? ds.unbatch() : ds) out.push_back(e);
  return out;
}

// A label as Keras's JSON holds it: an int, or a list of floats.
json label_json(const Tensor& t) {
  if (t.dtype() == DType::Int32) return t.item<int32_t>();
  json out = json::array();
  for (float v : t.to_vector<float>()) out.push_back(v);
  return out;
}

void check_against_keras(const data::DirectoryDataset& ds, const json& want, const json& args, bool per_pass_shuffle) {
  const bool batched = !args.contains("batch_size") || !args["batch_size"].is_null();
  CHECK(ds.class_names() ==
        (want["class_names"].is_null() ? std::vector<std::string>{} : want["class_names"].get<std::vector<std::string>>()));
  const std::vector<std::string> files = relative(ds.file_paths());
  REQUIRE(files == want["file_paths"].get<std::vector<std::string>>());
  const std::vector<data::Element> es = elements(ds, batched);
  REQUIRE(es.size() == files.size());
  if (want.contains("labels")) {
    std::vector<json> got, expected = want["labels"].get<std::vector<json>>();
    for (const data::Element& e : es) got.push_back(label_json(e.at(1)));
    if (per_pass_shuffle) {  // TF's per-pass shuffle is its own random stream: compare as multisets
      std::sort(got.begin(), got.end());
      std::sort(expected.begin(), expected.end());
    }
    CHECK(got == expected);
  } else {
    for (const data::Element& e : es) CHECK(e.size() == 1);
  }
  if (!want.contains("images")) return;
  const Shape shape(want["images"]["shape"].get<std::vector<int64_t>>());
  const std::vector<float> values = want["images"]["values"].get<std::vector<float>>();
  const size_t per = static_cast<size_t>(shape.num_elements());
  for (size_t i = 0; i < es.size(); ++i) {
    INFO("image " << files[i]);
    REQUIRE(es[i][0].shape() == shape);
    REQUIRE(es[i][0].dtype() == DType::Float32);
    // libjpeg-turbo's fast integer DCT and TF's may round a pixel differently; PNG pixels are exact.
    const bool jpeg = files[i].size() > 4 && files[i].substr(files[i].size() - 4) == ".jpg";
    const std::vector<float> got = es[i][0].to_vector<float>();
    float worst = 0;
    for (size_t k = 0; k < per; ++k) worst = std::max(worst, std::abs(got[k] - values[i * per + k]));
    CHECK(worst <= (jpeg ? 2.0f : 1e-3f));
  }
}

// A copy of the fixture folder to add broken files to.
void copy_images(const TempDir& dir) { fs::copy(images_dir(), dir.path(), fs::copy_options::recursive); }

}  // namespace

TEST_CASE("data: image_dataset_from_directory matches Keras on the fixture folder", "[data][images]") {
  const json doc = ember::testing::load_json_fixture("data/image_dataset.json");
  for (const json& c : doc["cases"]) {
    const std::string name = c["name"];
    SECTION(name) {
      const json& args = c["args"];
      const data::ImageDatasetOptions o = options_from(args);
      if (c.contains("training")) {
        auto [train, val] = data::image_dataset_from_directory_both(images_dir(), o);
        check_against_keras(train, c["training"], args, o.shuffle);
        check_against_keras(val, c["validation"], args, false);
      } else {
        const data::DirectoryDataset ds = data::image_dataset_from_directory(images_dir(), o);
        check_against_keras(ds, c["result"], args, o.shuffle);
      }
    }
  }
}

TEST_CASE("data: image_dataset_from_directory batches, shuffles per pass and reads lazily", "[data][images]") {
  const data::DirectoryDataset ds =
      data::image_dataset_from_directory(images_dir(), {.batch_size = 4, .image_size = {8, 6}, .seed = 5});
  CHECK(ds.cardinality() == 3);  // 9 files in batches of 4
  std::vector<Shape> shapes;
  std::vector<int32_t> first, second;
  for (const data::Element& b : ds) {
    shapes.push_back(b[0].shape());
    for (int32_t y : b[1].to_vector<int32_t>()) first.push_back(y);
  }
  CHECK(shapes == std::vector<Shape>{{4, 8, 6, 3}, {4, 8, 6, 3}, {1, 8, 6, 3}});
  for (const data::Element& b : ds)
    for (int32_t y : b[1].to_vector<int32_t>()) second.push_back(y);
  std::vector<int32_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<int32_t>{0, 0, 0, 1, 1, 1, 2, 2, 2});
  std::sort(second.begin(), second.end());
  CHECK(second == sorted);
  // Pixels stay in [0, 255].
  for (const data::Element& b : ds)
    for (float v : b[0].to_vector<float>()) REQUIRE((v >= 0.0f && v <= 255.0f));
}

TEST_CASE("data: image_dataset_from_directory's argument errors follow Keras", "[data][images]") {
  const std::string dir = images_dir();
  CHECK_THAT(message_of<NotFound>([] { data::image_dataset_from_directory("/nonexistent/images"); }),
             Catch::Contains("/nonexistent/images"));
  CHECK_THAT(message_of<InvalidArgument>([&] { data::image_dataset_from_directory(dir, {.validation_split = 0.2}); }),
             Catch::Contains("validation_split must be set, and inversely"));
  CHECK_THAT(message_of<InvalidArgument>([&] { data::image_dataset_from_directory(dir, {.subset = "training"}); }),
             Catch::Contains("validation_split must be set, and inversely"));
  CHECK_THAT(message_of<InvalidArgument>(
                 [&] { data::image_dataset_from_directory(dir, {.validation_split = 0.2, .subset = "training"}); }),
             Catch::Contains("a seed must be given"));
  CHECK_THAT(message_of<InvalidArgument>([&] {
               data::image_dataset_from_directory(dir, {.seed = 1, .validation_split = 1.5, .subset = "training"});
             }),
             Catch::Contains("between 0 and 1"));
  CHECK_THAT(message_of<InvalidArgument>(
                 [&] { data::image_dataset_from_directory(dir, {.seed = 1, .validation_split = 0.2, .subset = "test"}); }),
             Catch::Contains("\"test\""));
  CHECK_THAT(message_of<InvalidArgument>([&] {
               data::image_dataset_from_directory(dir, {.seed = 1, .validation_split = 0.2, .subset = "both"});
             }),
             Catch::Contains("image_dataset_from_directory_both"));
  // Unshuffled, a split needs no seed.
  CHECK(data::image_dataset_from_directory(dir, {.shuffle = false, .validation_split = 0.5, .subset = "validation"})
            .file_paths()
            .size() == 4);  // int(0.5 * 9)
  CHECK_THAT(message_of<InvalidArgument>([&] { data::image_dataset_from_directory(dir, {.label_mode = "binary"}); }),
             Catch::Contains("exactly 2 classes, got 3"));
  CHECK_THAT(message_of<InvalidArgument>([&] { data::image_dataset_from_directory(dir, {.label_mode = "sparse"}); }),
             Catch::Contains("\"sparse\""));
  CHECK_THAT(message_of<InvalidArgument>([&] { data::image_dataset_from_directory(dir, {.color_mode = "cmyk"}); }),
             Catch::Contains("\"cmyk\""));
  CHECK_THAT(message_of<InvalidArgument>([&] { data::image_dataset_from_directory(dir, {.labels = "folders"}); }),
             Catch::Contains("\"folders\""));
  CHECK_THAT(message_of<InvalidArgument>([&] { data::image_dataset_from_directory(dir, {.class_names = {"dogs"}}); }),
             Catch::Contains("\"dogs\"") && Catch::Contains("ants, bees, cats"));
  CHECK_THAT(message_of<InvalidArgument>(
                 [&] { data::image_dataset_from_directory(dir, {.labels = std::nullopt, .class_names = {"ants"}}); }),
             Catch::Contains("class_names"));
  CHECK_THAT(message_of<InvalidArgument>([&] { data::image_dataset_from_directory(dir, {.image_size = {0, 4}}); }),
             Catch::Contains("image_size"));
  CHECK_THAT(message_of<Unimplemented>([&] { data::image_dataset_from_directory(dir, {.interpolation = "bicubic"}); }),
             Catch::Contains("bicubic"));
  CHECK_THAT(message_of<InvalidArgument>([&] { data::image_dataset_from_directory(dir, {.interpolation = "cubic"}); }),
             Catch::Contains("cubic"));
  TempDir empty("no_images");
  fs::create_directories(empty.path() / "a");
  write_plain(empty.file("a/readme.txt"), "text");
  CHECK_THAT(message_of<InvalidArgument>([&] { data::image_dataset_from_directory(empty.path().string()); }),
             Catch::Contains("no images found") && Catch::Contains(".png"));
}

TEST_CASE("data: a broken image file is an error naming it when the pass reaches it", "[data][images]") {
  TempDir dir("broken_images");
  copy_images(dir);
  auto first_error = [&](const std::string& file, const std::string& bytes, std::string color_mode = "rgb") {
    write_plain(dir.file(file), bytes);
    const data::DirectoryDataset ds = data::image_dataset_from_directory(
        dir.path().string(), {.color_mode = color_mode, .batch_size = std::nullopt, .image_size = {4, 4}, .shuffle = false});
    std::string m;
    try {
      for ([[maybe_unused]] const data::Element& e : ds) {
      }
    } catch (const InvalidArgument& e) {
      m = e.what();
    }
    fs::remove(dir.file(file));
    return m;
  };
  const std::string png_signature = "\x89PNG\r\n\x1a\n";
  CHECK_THAT(first_error("bees/broken.png", png_signature + "garbage garbage garbage"),
             Catch::Contains("bees/broken.png") && Catch::Contains("not a valid PNG"));
  // A PNG cut short after its header.
  const std::string whole = ember::testing::read_plain(dir.file("ants/a1.png"));
  CHECK_THAT(first_error("ants/cut.png", whole.substr(0, 40)), Catch::Contains("ants/cut.png") && Catch::Contains("PNG"));
  const std::string jpeg = ember::testing::read_plain(dir.file("bees/b2.jpg"));
  CHECK_THAT(first_error("bees/cut.jpg", jpeg.substr(0, 30)),
             Catch::Contains("bees/cut.jpg") && Catch::Contains("not a valid JPEG"));
  CHECK_THAT(first_error("cats/text.png", "hello, not an image"),
             Catch::Contains("cats/text.png") && Catch::Contains("not an image file"));
  // JPEG has no RGBA form (TF's decoder refuses it too).
  CHECK_THAT(first_error("cats/zz_rgba.png", whole, "rgba"), Catch::Contains("bees/b2.jpg") && Catch::Contains("RGBA"));
  // GIF and BMP files are listed, as Keras lists them, but not decoded.
  write_plain(dir.file("ants/anim.gif"), "GIF89a\x01\x00\x01\x00");
  const data::DirectoryDataset ds =
      data::image_dataset_from_directory(dir.path().string(), {.batch_size = std::nullopt, .shuffle = false});
  CHECK(ds.file_paths().front() == dir.file("ants/A2.png"));
  CHECK(ds.file_paths()[3] == dir.file("ants/anim.gif"));
  CHECK_THROWS_AS([&] {
    for ([[maybe_unused]] const data::Element& e : ds) {
    }
  }(), Unimplemented);
}

TEST_CASE("data: decode_image as TF and resize_image", "[data][images]") {
  const std::string dir = images_dir();
  const Tensor rgb = io::decode_image(dir + "/ants/a0.png", 3, io::ImageConvention::tensorflow);
  CHECK(rgb.shape() == Shape{5, 5, 3});
  CHECK(rgb.dtype() == DType::UInt8);
  // Gray from RGB with TF's weights, and RGBA with an opaque alpha added.
  const Tensor gray = io::decode_image(dir + "/ants/a0.png", 1, io::ImageConvention::tensorflow);
  const Tensor rgba = io::decode_image(dir + "/ants/a0.png", 4, io::ImageConvention::tensorflow);
  const std::vector<uint8_t> c = rgb.to_vector<uint8_t>(), g = gray.to_vector<uint8_t>(), a = rgba.to_vector<uint8_t>();
  for (size_t i = 0; i < g.size(); ++i) {
    CHECK(std::abs(g[i] - (0.299 * c[3 * i] + 0.587 * c[3 * i + 1] + 0.114 * c[3 * i + 2])) <= 1.0);
    CHECK(a[4 * i + 3] == 255);
    CHECK(a[4 * i] == c[3 * i]);
  }
  // The same size is the identity; one pixel is the mean of a 2x2 image.
  const Tensor same = data::resize_image(rgb, {5, 5});
  const std::vector<float> s = same.to_vector<float>();
  for (size_t i = 0; i < c.size(); ++i) CHECK(s[i] == static_cast<float>(c[i]));
  const Tensor four = Tensor::from_vector<float>({0, 10, 20, 30}, Shape{2, 2, 1}, Device::cpu());
  CHECK(data::resize_image(four, {1, 1}).item<float>() == Approx(15.0f));
  CHECK(data::resize_image(four, {1, 1}, "nearest").item<float>() == 30.0f);
  CHECK_THROWS_AS(io::decode_image(dir + "/missing.png", 3, io::ImageConvention::tensorflow), NotFound);
  CHECK_THROWS_AS(io::decode_image(dir + "/ants/a0.png", 2, io::ImageConvention::tensorflow), InvalidArgument);
  CHECK_THROWS_AS(data::resize_image(four, {1, 1}, "area"), InvalidArgument);
}
