// CSVLogger (Keras 3 keras/src/callbacks/csv_logger.py) and python_float_repr. The expected file
// contents are what real Keras 3.15 writes for the same logs.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "tests/framework/model/callbacks/callback_testing.h"

using namespace ember;
using namespace ember::callbacks;
using namespace ember::testing;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ember_cb_" + std::to_string(::getpid()) + "_" + name)).string();
}

}  // namespace

TEST_CASE("python_float_repr writes floats as Python's repr", "[callbacks][csv]") {
  const std::vector<std::pair<double, std::string>> cases = {
      {0.1, "0.1"},
      {1.0, "1.0"},
      {100.0, "100.0"},
      {1e+16, "1e+16"},
      {1000000000000000.0, "1000000000000000.0"},
      {1.2345678901234568e+17, "1.2345678901234568e+17"},
      {1e-05, "1e-05"},
      {0.0001, "0.0001"},
      {0.00012345, "0.00012345"},
      {1.5e-10, "1.5e-10"},
      {-0.0, "-0.0"},
      {0.0, "0.0"},
      {5e-324, "5e-324"},
      {1.7976931348623157e+308, "1.7976931348623157e+308"},
      {static_cast<double>(0.1f), "0.10000000149011612"},
      {1e+22, "1e+22"},
      {12345.678, "12345.678"},
      {-2.5, "-2.5"},
      {9999999999999998.0, "9999999999999998.0"},
      {0.1 + 0.2, "0.30000000000000004"},
      {1e-4 * 0.99, "9.900000000000001e-05"},
      {std::numeric_limits<double>::quiet_NaN(), "nan"},
      {std::numeric_limits<double>::infinity(), "inf"},
      {-std::numeric_limits<double>::infinity(), "-inf"},
  };
  for (const auto& [value, text] : cases) {
    INFO(text);
    CHECK(python_float_repr(value) == text);
  }
}

TEST_CASE("CSVLogger writes a sorted header and one row per epoch as Keras", "[callbacks][csv]") {
  const std::string path = temp_path("log.csv");
  auto model = small_model();
  CSVLogger logger(path);
  logger.set_model(model.get());
  logger.on_train_begin({});
  Logs e0{{"val_loss", 0.5}, {"loss", 1e-5}, {"accuracy", 1234.5}, {"b", std::numeric_limits<double>::quiet_NaN()},
          {"a", 0.0001},     {"z", 1e16},    {"y", 0.1 + 0.2}};
  logger.on_epoch_end(0, e0);
  // Rows are flushed as they are written.
  CHECK(read_file(path) ==
        "epoch,a,accuracy,b,loss,val_loss,y,z\r\n0,0.0001,1234.5,nan,1e-05,0.5,0.30000000000000004,1e+16\r\n");
  // Columns stay those of the first epoch; missing ones are NA, new ones are dropped.
  Logs e1{{"val_loss", 0.25}, {"loss", std::numeric_limits<double>::infinity()}, {"accuracy", 3.0}, {"new", 1.0}};
  logger.on_epoch_end(1, e1);
  logger.on_train_end({});
  const std::string first =
      "epoch,a,accuracy,b,loss,val_loss,y,z\r\n"
      "0,0.0001,1234.5,nan,1e-05,0.5,0.30000000000000004,1e+16\r\n"
      "1,NA,3.0,NA,inf,0.25,NA,NA\r\n";
  CHECK(read_file(path) == first);

  // append adds rows without a second header, with its own separator.
  CSVLogger more(path, {.separator = ";", .append = true});
  more.on_train_begin({});
  Logs e2{{"val_loss", 0.5}, {"loss", 2.0}};
  more.on_epoch_end(0, e2);
  more.on_train_end({});
  CHECK(read_file(path) == first + "0;2.0;0.5\r\n");

  // Without append the file is overwritten.
  CSVLogger fresh(path);
  fresh.on_train_begin({});
  Logs e3{{"loss", 0.5}};
  fresh.on_epoch_end(0, e3);
  fresh.on_train_end({});
  CHECK(read_file(path) == "epoch,loss\r\n0,0.5\r\n");
  std::remove(path.c_str());

  // append to a file that does not exist yet writes the header.
  CSVLogger created(path, {.append = true});
  created.on_train_begin({});
  created.on_epoch_end(0, e3);
  created.on_train_end({});
  CHECK(read_file(path) == "epoch,loss\r\n0,0.5\r\n");
  std::remove(path.c_str());
}

TEST_CASE("CSVLogger quotes names holding the separator, and rejects bad input", "[callbacks][csv]") {
  const std::string path = temp_path("quoted.csv");
  CSVLogger logger(path, {.separator = " "});
  logger.on_train_begin({});
  Logs logs{{"top 5", 0.5}, {"say \"hi\"", 1.0}};
  logger.on_epoch_end(3, logs);
  logger.on_train_end({});
  CHECK(read_file(path) == "epoch \"say \"\"hi\"\"\" \"top 5\"\r\n3 1.0 0.5\r\n");
  std::remove(path.c_str());

  CHECK_THROWS_WITH(CSVLogger(path, {.separator = ", "}),
                    "CSVLogger: separator must be a 1-character string; got \", \"");
  CHECK_THROWS_AS(CSVLogger(path, {.separator = "\""}), InvalidArgument);
  CHECK_THROWS_AS(CSVLogger(""), InvalidArgument);
  CSVLogger nowhere("/nonexistent-dir/ember/log.csv");
  CHECK_THROWS_WITH(nowhere.on_train_begin({}), Catch::Contains("cannot open \"/nonexistent-dir/ember/log.csv\""));
  CHECK_THROWS_AS(nowhere.on_train_begin({}), NotFound);
}
