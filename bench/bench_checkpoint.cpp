// Checkpoint throughput: save and load MB/s of a model with about 100 MB of float32 weights, in the
// Keras 3 `.weights.h5` layout, the legacy `.h5` full-model file and the `.keras` archive, beside the
// same bytes written with fwrite + fsync (and read back with fread) in the same run. Files go to
// $TMPDIR (default /tmp); each figure is the best of 3. speedup = ours / plain (1.0 = as fast as raw I/O).
// Usage: bench_checkpoint [--json]
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "framework/ember.h"

using namespace ember;
using namespace ember::bench;

namespace {

// Plain stdio: every weight's bytes in one file, fsync'ed (what a save must at least do).
void plain_write(const std::vector<Tensor>& weights, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "wb");
  for (const Tensor& w : weights) std::fwrite(w.raw_data(), 1, w.nbytes(), f);
  std::fflush(f);
  ::fsync(fileno(f));
  std::fclose(f);
}

void plain_read(std::vector<Tensor>& weights, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  for (Tensor& w : weights) {
    if (std::fread(w.raw_data(), 1, w.nbytes(), f) != w.nbytes()) std::fprintf(stderr, "short read\n");
  }
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = json_requested(argc, argv);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ember_bench_ckpt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  random::set_seed(1);
  // 2 x 3584 x 3584 float32 kernels + biases: about 103 MB.
  Sequential model({layers::Input({3584}), layers::Dense(3584), layers::Dense(3584)});
  std::vector<Tensor> weights = model.get_weights();
  size_t bytes = 0;
  for (const Tensor& w : weights) bytes += w.nbytes();
  const double mb = static_cast<double>(bytes) / 1e6;
  if (!json) std::printf("model weights: %.1f MB; files in %s\n", mb, dir.c_str());

  const std::string raw = (dir / "raw.bin").string();
  const double raw_write = best_seconds(3, [&] { plain_write(weights, raw); });
  const double raw_read = best_seconds(3, [&] { plain_read(weights, raw); });

  for (const char* name : {"model.weights.h5", "model.h5", "model.keras"}) {
    const std::string path = (dir / name).string();
    const bool weights_only = std::string(name) == "model.weights.h5";
    const double save = best_seconds(3, [&] {
      if (weights_only)
        model.save_weights(path);
      else
        model.save(path);
    });
    const double load = best_seconds(3, [&] {
      if (weights_only) {
        model.load_weights(path);
      } else {
        Model loaded = models::load_model(path);
        keep_alive(&loaded);
      }
    });
    const std::string label = std::string(name).substr(std::string(name).find('.'));
    print({"save " + label, "MB/s", "fwrite+fsync", mb / save, mb / raw_write, raw_write / save}, json);
    print({"load " + label, "MB/s", "fread", mb / load, mb / raw_read, raw_read / load}, json);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
