// Model::summary against the text tf-keras prints for the same models (tests/fixtures/summary/*.txt,
// written by tests/fixtures/make_summary_fixtures.py): the seed's Sequential, a functional MLP and a
// functional DAG with two inputs, a shared layer and two outputs. Byte-for-byte equality.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/fixtures.h"
#include "framework/ember.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

fs::path summary_fixture(const std::string& name) { return ember::testing::fixture_path("summary/" + name + ".txt"); }

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  INFO("fixture " << path.string() << " (regenerate with python3 tests/fixtures/make_summary_fixtures.py)");
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Equality with a readable report. Catch wraps messages at 80 columns, which garbles 98-column tables, so
// the Catch message names the first differing line and both texts go to stderr unwrapped.
void check_same_text(const std::string& got, const std::string& keras) {
  if (got == keras) {
    SUCCEED();
    return;
  }
  const std::vector<std::string> g = split_lines(got), k = split_lines(keras);
  size_t i = 0;
  while (i < g.size() && i < k.size() && g[i] == k[i]) ++i;
  std::cerr << "--- ember summary ---\n" << got << "--- tf-keras summary ---\n" << keras << "---\n";
  FAIL_CHECK("summary differs from tf-keras from line " << i + 1 << " on (both texts on stderr):\n  ember: \""
                                                        << (i < g.size() ? g[i] : std::string("<end>"))
                                                        << "\"\n  keras: \""
                                                        << (i < k.size() ? k[i] : std::string("<end>")) << "\"");
}

}  // namespace

TEST_CASE("summary matches tf-keras for the seed's Sequential model", "[model][summary]") {
  backend::clear_session();
  Sequential model({
      layers::Input({28, 28, 1}, {.name = "image"}),
      layers::Conv2D(32, 3, {.activation = "relu"}),
      layers::GlobalAveragePooling2D(),
      layers::Dropout(0.2),
      layers::Dense(10),
  });
  check_same_text(model.summary_string(), read_text(summary_fixture("sequential_seed")));
}

TEST_CASE("summary matches tf-keras for a functional MLP", "[model][summary]") {
  backend::clear_session();
  Tensor inputs = layers::Input({784}, {.name = "pixels"});
  Tensor h = layers::Dense(64, {.activation = "relu"})(inputs);
  Tensor outputs = layers::Dense(10)(h);
  Model mlp(inputs, outputs, {.name = "mlp"});
  check_same_text(mlp.summary_string(), read_text(summary_fixture("functional_mlp")));
}

TEST_CASE("summary matches tf-keras for a two-input, two-output DAG with a shared layer", "[model][summary]") {
  backend::clear_session();
  Tensor a = layers::Input({4}, {.name = "a"});
  Tensor b = layers::Input({4}, {.name = "b"});
  auto shared = std::make_shared<layers::Dense>(8);
  Tensor ha = (*shared)(a);
  Tensor hb = (*shared)(b);
  Tensor s = layers::Add()(std::vector<Tensor>{ha, hb});
  Tensor n = layers::BatchNormalization()(s);
  Tensor out1 = layers::Dense(1, {.activation = "sigmoid"})(n);
  Tensor out2 = layers::Dense(3)(ha);
  Model dag(std::vector<Tensor>{a, b}, std::vector<Tensor>{out1, out2}, {.name = "dag"});
  check_same_text(dag.summary_string(), read_text(summary_fixture("functional_dag")));
}
