#pragma once
// Internal: NumPy's legacy np.random.RandomState (MT19937 seeded by init_genrand) and its shuffle. Keras
// shuffles file lists (image_dataset_from_directory) and datasets (imdb.load_data) with it, so the same seed
// gives the same order here as there.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ember::data::detail {

class NumpyRandomState {
 public:
  // np.random.RandomState(seed) for an integer seed in [0, 2^32).
  explicit NumpyRandomState(uint32_t seed) {
    mt_[0] = seed;
    for (int i = 1; i < kN; ++i) mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
    pos_ = kN;
  }

  // The next 32 random bits (MT19937's genrand_int32).
  uint32_t next_uint32() {
    if (pos_ >= kN) twist();
    uint32_t y = mt_[pos_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
  }

  // Uniform in [0, max] by masked rejection (NumPy's random_interval, 32-bit draws while max fits them).
  uint64_t interval(uint64_t max) {
    if (max == 0) return 0;
    uint64_t mask = max;
    for (int s = 1; s <= 32; s *= 2) mask |= mask >> s;
    uint64_t v;
    if (max <= 0xffffffffu) {
      do v = next_uint32() & mask; while (v > max);
    } else {
      do v = ((static_cast<uint64_t>(next_uint32()) << 32) | next_uint32()) & mask; while (v > max);
    }
    return v;
  }

  // RandomState.shuffle of a 1-D sequence: Fisher-Yates from the back.
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i-- > 1;) std::swap(v[i], v[static_cast<size_t>(interval(i))]);
  }

 private:
  static constexpr int kN = 624;
  void twist() {
    constexpr int kM = 397;
    for (int i = 0; i < kN; ++i) {
      const uint32_t y = (mt_[i] & 0x80000000u) | (mt_[(i + 1) % kN] & 0x7fffffffu);
      mt_[i] = mt_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    pos_ = 0;
  }
  uint32_t mt_[kN];
  int pos_;
};

}  // namespace ember::data::detail
