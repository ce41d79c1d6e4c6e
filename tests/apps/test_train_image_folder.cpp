// apps/train_image_folder, run in-process on the committed folder of tiny images (three classes): it trains
// with augmentation, saves a checkpoint that loads back, runs an applications model under mixed_bfloat16,
// writes TensorBoard logs with a profile, and reports bad input as an error.
#include <catch2/catch.hpp>

#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/image_folder.h"
#include "framework/ember.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

struct Run {
  int status;
  std::string out, err;
};

Run run(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"train_image_folder"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int status = image_folder_app::train_image_folder_main(static_cast<int>(argv.size()), argv.data(), out, err);
  return {status, out.str(), err.str()};
}

const std::string kImages = testing::fixture_path("data/images").string();

}  // namespace

TEST_CASE("train_image_folder trains the small CNN with augmentation and checkpoints it", "[apps]") {
  backend::clear_session();
  testing::TempDir dir("train_image_folder");
  const std::string checkpoint = (dir.path() / "model.keras").string();
  const Run r = run({kImages, "--image-size", "32,32", "--batch-size", "4", "--epochs", "2", "--validation-split",
                     "0.3", "--verbose", "0", "--checkpoint", checkpoint});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("classes: ants bees cats"));
  CHECK_THAT(r.out, Contains("val_accuracy="));
  auto model = models::load_model(checkpoint);
  CHECK(model.predict(ops::zeros({2, 32, 32, 3})).shape() == Shape{2, 3});
}

TEST_CASE("train_image_folder runs an applications model under mixed_bfloat16", "[apps]") {
  backend::clear_session();
  const Run r = run({kImages, "--model", "mobilenet_v2", "--image-size", "32,32", "--batch-size", "8", "--epochs", "1",
                     "--no-augment", "--precision", "mixed_bfloat16", "--verbose", "0"});
  mixed_precision::set_global_policy("float32");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("val_loss="));
}

TEST_CASE("train_image_folder --logdir writes TensorBoard logs and --profile a trace of those batches",
          "[apps][profiler]") {
  backend::clear_session();
  testing::TempDir dir("train_image_folder_logs");
  const std::string logdir = (dir.path() / "logs").string();
  std::ostringstream table;  // the profiler prints its table to std::cout
  std::streambuf* saved = std::cout.rdbuf(table.rdbuf());
  Run r;
  try {
    r = run({kImages, "--image-size", "16,16", "--batch-size", "4", "--epochs", "1", "--no-augment", "--verbose", "0",
             "--logdir", logdir, "--profile", "2"});
  } catch (...) {
    std::cout.rdbuf(saved);
    throw;
  }
  std::cout.rdbuf(saved);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(table.str(), Contains("Profile: "));
  int events = 0, traces = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(logdir)) {
    const std::string name = e.path().filename().string();
    events += name.starts_with("events.out.tfevents.") && e.path().parent_path().filename() == "train";
    traces += name.ends_with(".trace.json.gz") &&
              e.path().string().find("/train/plugins/profile/") != std::string::npos;
  }
  CHECK(events == 1);
  CHECK(traces == 1);
  CHECK(run({kImages, "--profile", "2"}).status != 0);  // --profile needs --logdir
}

TEST_CASE("train_image_folder reports bad input as an error", "[apps]") {
  const Run missing = run({"/no/such/folder", "--verbose", "0"});
  CHECK(missing.status == 1);
  CHECK_THAT(missing.err, Contains("/no/such/folder"));
  const Run bad_model = run({kImages, "--model", "alexnet"});
  CHECK(bad_model.status != 0);
  CHECK_THROWS_AS(image_folder_app::make_model("alexnet", Shape{32, 32, 3}, 2, false, 1), InvalidArgument);
}
