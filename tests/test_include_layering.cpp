// Which folders' sources may include which (STYLE.md, "The shape of the system"): dependencies point one
// way, and a helper two folders share lives below both. Reads the #include lines of the sources.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = fs::path(__FILE__).parent_path().parent_path();

struct Include {
  std::string file;  // relative to the repository root
  std::string header;
};

// The quoted includes of every .h/.cpp/.cu/.cuh under `folder` (relative to the root).
std::vector<Include> includes_under(const std::string& folder) {
  static const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<Include> out;
  for (const auto& e : fs::recursive_directory_iterator(kRoot / folder)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh")) continue;
    std::ifstream in(e.path());
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
      if (std::regex_search(line, m, include_line))
        out.push_back({fs::relative(e.path(), kRoot).generic_string(), m[1].str()});
  }
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("the layering check reads includes", "[layering]") {
  // A guard on the harness: a folder known to include framework headers yields them.
  bool found = false;
  for (const Include& i : includes_under("losses")) found = found || starts_with(i.header, "framework/");
  CHECK(found);
}

TEST_CASE("losses include no metrics header", "[layering]") {
  for (const Include& i : includes_under("losses")) {
    INFO(i.file << " includes " << i.header);
    CHECK_FALSE(starts_with(i.header, "framework/model/metrics/"));
  }
}

TEST_CASE("metrics include no loss class", "[layering]") {
  for (const Include& i : includes_under("framework/model/metrics")) {
    if (!starts_with(i.header, "losses/")) continue;
    INFO(i.file << " includes " << i.header);
    // metrics::get reads the compiled loss's class to resolve "accuracy", as Keras's compile does; the
    // loss-based metrics reach their losses through framework/model/loss_values.h.
    CHECK((i.file == "framework/model/metrics/get.cpp" && i.header == "losses/loss.h"));
  }
}

TEST_CASE("framework/model includes framework/io only from the callbacks' file writers", "[layering]") {
  // framework/io saves and reads models, so it knows framework/model; Model::save and friends are defined
  // in framework/io/model_saving.cpp. TensorBoard and BackupAndRestore write through io's low-level
  // writers, which include nothing of framework/model.
  for (const Include& i : includes_under("framework/model")) {
    if (!starts_with(i.header, "framework/io/")) continue;
    INFO(i.file << " includes " << i.header);
    CHECK(starts_with(i.file, "framework/model/callbacks/"));
    CHECK((i.header == "framework/io/event_file.h" || i.header == "framework/io/atomic_file.h"));
  }
  for (const char* writer : {"framework/io/event_file", "framework/io/atomic_file"})
    for (const Include& i : includes_under("framework/io"))
      if (starts_with(i.file, writer)) {
        INFO(i.file << " includes " << i.header);
        CHECK_FALSE(starts_with(i.header, "framework/model/"));
      }
}

TEST_CASE("optimizers take no helper from layers or callbacks", "[layering]") {
  for (const Include& i : includes_under("optimizers")) {
    INFO(i.file << " includes " << i.header);
    CHECK_FALSE(starts_with(i.header, "framework/model/callbacks/"));
    CHECK(i.header != "framework/model/layer.h");
  }
}

TEST_CASE("framework/distribute lies below the trainer, the layers, losses and optimizers", "[layering]") {
  // The trainer knows the strategy (as it knows the optimizer base); the strategy knows variables and tensors.
  for (const Include& i : includes_under("framework/distribute")) {
    INFO(i.file << " includes " << i.header);
    for (const char* above : {"framework/model/", "layers/", "losses/", "optimizers/"}) CHECK_FALSE(starts_with(i.header, above));
  }
}
