// Writes the first N training and M test images of Fashion-MNIST as plain IDX files into a directory, so
// that ctest can run the examples on a slice (EMBER_DATA_DIR pointing there) in seconds.
//   slice_fashion_mnist OUT_DIR N M
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/ember.h"
using namespace ember;

namespace {

// IDX: two zero bytes, the type (0x08: unsigned byte), the rank, each dimension as a big-endian uint32,
// then the data in row-major order.
void write_idx(const std::filesystem::path& path, const Tensor& t, int64_t count) {
  const Shape& s = t.shape();
  std::ofstream out(path, std::ios::binary);
  const unsigned char magic[4] = {0, 0, 0x08, static_cast<unsigned char>(s.rank())};
  out.write(reinterpret_cast<const char*>(magic), 4);
  int64_t row = 1;
  for (int64_t d = 0; d < s.rank(); ++d) {
    const uint32_t dim = static_cast<uint32_t>(d == 0 ? count : s[d]);
    const unsigned char be[4] = {static_cast<unsigned char>(dim >> 24), static_cast<unsigned char>(dim >> 16),
                                 static_cast<unsigned char>(dim >> 8), static_cast<unsigned char>(dim)};
    out.write(reinterpret_cast<const char*>(be), 4);
    if (d > 0) row *= s[d];
  }
  const std::vector<uint8_t> bytes = t.to_vector<uint8_t>();
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(count * row));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: slice_fashion_mnist OUT_DIR N_TRAIN N_TEST\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    const int64_t n_train = std::atoll(argv[2]), n_test = std::atoll(argv[3]);
    auto [train, test] = datasets::fashion_mnist::load_data();
    std::filesystem::create_directories(dir);
    write_idx(dir / "train-images-idx3-ubyte", train.x, n_train);
    write_idx(dir / "train-labels-idx1-ubyte", train.y, n_train);
    write_idx(dir / "t10k-images-idx3-ubyte", test.x, n_test);
    write_idx(dir / "t10k-labels-idx1-ubyte", test.y, n_test);
    std::cout << "wrote " << n_train << " training and " << n_test << " test images to " << dir.string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "slice_fashion_mnist: " << e.what() << "\n";
    return 1;
  }
}
