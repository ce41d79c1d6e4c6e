#pragma once
// CRC-32C (Castagnoli), the checksum of TFRecord framing (event files), and TensorFlow's mask of it.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ember::io {

// The CRC-32C of n more bytes, continuing from crc (0 for a fresh checksum), as TF's crc32c::Extend.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);
// The CRC-32C of bytes ("123456789" -> 0xE3069283).
inline uint32_t crc32c(std::string_view bytes) { return crc32c_extend(0, bytes.data(), bytes.size()); }

// TF stores CRCs masked (rotate right 15, add a constant) because the CRC of a string that itself
// embeds CRCs is prone to degenerate values.
inline uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
// The CRC mask_crc32c was given.
inline uint32_t unmask_crc32c(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}
// mask_crc32c(crc32c(bytes)): what a TFRecord stores after its length and after its data.
inline uint32_t masked_crc32c(std::string_view bytes) { return mask_crc32c(crc32c(bytes)); }

}  // namespace ember::io
