// Input pipeline throughput. map_parallel: a CPU-heavy augmentation of 28x28 uint8 images (float
// conversion, a random shift, four 3x3 blur passes, normalisation) mapped with num_parallel_calls =
// AUTOTUNE, in elements/s, beside num_parallel_calls = 1 in the same run (speedup = AUTOTUNE / 1; target
// >= 1.8 on 2 cores). prefetch_overlap: a producer and a consumer that each spin T per batch; the value is
// epoch_time / (n * T) with prefetch(AUTOTUNE) (ideal 1, target <= 1.15), the reference the same without
// prefetch (about 2); speedup = reference / value.
// Usage: bench_data [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/bench_util.h"
#include "framework/ember.h"

using namespace ember;
using namespace ember::bench;

namespace {

constexpr int64_t kImages = 2048;
constexpr int kSide = 28;

// The augmentation: about a third of a millisecond of scalar float work per image.
Tensor augment(const Tensor& image, int64_t index) {
  const uint8_t* src = image.data<uint8_t>();
  std::vector<float> a(kSide * kSide), b(kSide * kSide);
  const int dx = static_cast<int>(index % 5) - 2, dy = static_cast<int>(index / 5 % 5) - 2;
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x) {
      const int sx = std::clamp(x - dx, 0, kSide - 1), sy = std::clamp(y - dy, 0, kSide - 1);
      a[y * kSide + x] = src[sy * kSide + sx] * (1.0f / 255.0f);
    }
  for (int pass = 0; pass < 4; ++pass) {
    for (int y = 0; y < kSide; ++y)
      for (int x = 0; x < kSide; ++x) {
        float s = 0;
        for (int ky = -1; ky <= 1; ++ky)
          for (int kx = -1; kx <= 1; ++kx)
            s += a[std::clamp(y + ky, 0, kSide - 1) * kSide + std::clamp(x + kx, 0, kSide - 1)];
        b[y * kSide + x] = s * (1.0f / 9.0f);
      }
    std::swap(a, b);
  }
  float mean = 0;
  for (float v : a) mean += v;
  mean /= static_cast<float>(a.size());
  for (float& v : a) v = (v - mean) * 4.0f;
  return Tensor::from_vector<float>(a, Shape{kSide, kSide}, Device::cpu());
}

// Elements per second of one full pass over `ds` (best of `reps`).
double elements_per_second(const data::Dataset& ds, int64_t n, int reps) {
  const double t = best_seconds(reps, [&] {
    int64_t seen = 0;
    for (const data::Element& e : ds) {
      keep_alive(e[0].raw_data());
      ++seen;
    }
    if (seen != n) std::fprintf(stderr, "bench_data: expected %lld elements, got %lld\n", (long long)n, (long long)seen);
  });
  return static_cast<double>(n) / t;
}

void spin(double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
  }
}

// epoch_time / (n * T) of a producer and a consumer that each spin T per batch.
double overlap_ratio(bool prefetch, int64_t n, double T) {
  data::Dataset ds = data::Dataset::range(n).map([T](const Tensor& x) {
    spin(T);
    return x;
  });
  if (prefetch) ds = ds.prefetch(data::AUTOTUNE);
  const double t = best_seconds(3, [&] {
    for (const data::Element& e : ds) {
      keep_alive(&e);
      spin(T);
    }
  });
  return t / (static_cast<double>(n) * T);
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = json_requested(argc, argv);
  if (!json)
    std::printf("AUTOTUNE = %lld map workers (usable CPUs); %lld 28x28 images per pass\n",
                (long long)data::autotune_parallelism(), (long long)kImages);

  std::vector<uint8_t> pixels(static_cast<size_t>(kImages) * kSide * kSide);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  const Tensor images = Tensor::from_vector<uint8_t>(pixels, Shape{kImages, kSide, kSide}, Device::cpu());
  const Tensor ids = Tensor::from_vector<int64_t>(std::vector<int64_t>(kImages, 0), Device::cpu());
  const data::Dataset source = data::Dataset::from_tensor_slices({images, ids});
  auto fn = [](const Tensor& image, const Tensor&) { return augment(image, image.data<uint8_t>()[0]); };
  const double one = elements_per_second(source.map(fn, {.num_parallel_calls = 1}), kImages, 3);
  const double tuned = elements_per_second(source.map(fn, {.num_parallel_calls = data::AUTOTUNE}), kImages, 3);
  print({"map_parallel", "elem/s", "calls=1", tuned, one, tuned / one}, json);

  const int64_t n = 100;
  const double T = 0.002;
  const double with = overlap_ratio(true, n, T), without = overlap_ratio(false, n, T);
  print({"prefetch_overlap", "x nT", "no prefetch", with, without, without / with}, json);
  return 0;
}
