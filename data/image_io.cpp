// decode_image_file through Debian's libpng and libjpeg-turbo, and resize_image's interpolation loops. Both
// libraries report errors by longjmp: the functions that call setjmp hold only trivially destructible
// locals, so a jump skips no destructor.
#include "data/image_io.h"

#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace ember::data {

namespace {

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), NotFound) << "decode_image: cannot open " << path;
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// ---- PNG ----

struct PngReader {
  const unsigned char* data;
  size_t size, pos;
  char error[200];
};

void png_read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) png_error(png, "file ends early");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

void png_on_error(png_structp png, png_const_charp msg) {
  auto* r = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(r->error, sizeof r->error, "%s", msg);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}

// The transformations of TF's PNG decoder (core/lib/png/png_io.cc): alpha added, dropped or kept to reach
// `channels`, 16 bits cut to 8, palette and low bit depths expanded, gray and colour converted.
void png_setup(png_structp png, png_infop info, int channels) {
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  const bool has_alpha = (color & PNG_COLOR_MASK_ALPHA) != 0;
  if (channels % 2 == 0) {
    if (!has_alpha) {
      if (has_trns) png_set_tRNS_to_alpha(png);
      else png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
    }
  } else if (has_alpha || has_trns) {
    png_set_strip_alpha(png);
  }
  if (depth > 8) png_set_strip_16(png);
  png_set_packing(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  const bool is_gray = (color & PNG_COLOR_MASK_COLOR) == 0;
  if (is_gray && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (channels < 3 && !is_gray) png_set_rgb_to_gray(png, 1, 0.299, 0.587);
  if (channels >= 3 && is_gray) png_set_gray_to_rgb(png);
}

// Decodes into *out (resized here); false with r->error set on a libpng error.
bool png_decode(PngReader* r, int channels, std::vector<unsigned char>* out, png_uint_32* height, png_uint_32* width) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, png_on_error, png_on_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
    return false;
  }
  png_set_read_fn(png, r, png_read_bytes);
  png_read_info(png, info);
  png_setup(png, info, channels);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  *height = png_get_image_height(png, info);
  *width = png_get_image_width(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  if (row_bytes != size_t{*width} * static_cast<size_t>(channels)) png_error(png, "unexpected row size after conversion");
  out->resize(row_bytes * *height);
  for (int p = 0; p < passes; ++p)
    for (png_uint_32 y = 0; y < *height; ++y) png_read_row(png, out->data() + y * row_bytes, nullptr);
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

// ---- JPEG ----

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void jpeg_quiet(j_common_ptr, int) {}

// TF's JPEG decoder settings (core/lib/jpeg/jpeg_mem.cc): the fast integer DCT, fancy upsampling.
bool jpeg_decode(const std::vector<unsigned char>& bytes, int channels, JpegError* err, std::vector<unsigned char>* out,
                 JDIMENSION* height, JDIMENSION* width) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = jpeg_on_error;
  err->mgr.emit_message = jpeg_quiet;
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo.dct_method = JDCT_IFAST;
  cinfo.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&cinfo);
  *height = cinfo.output_height;
  *width = cinfo.output_width;
  const size_t row_bytes = size_t{cinfo.output_width} * static_cast<size_t>(cinfo.output_components);
  out->resize(row_bytes * cinfo.output_height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->data() + cinfo.output_scanline * row_bytes;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

Tensor decode_image_file(const std::string& path, int channels) {
  EMBER_CHECK(channels == 1 || channels == 3 || channels == 4, InvalidArgument)
      << "decode_image: channels must be 1, 3 or 4, got " << channels;
  const std::vector<unsigned char> bytes = read_file(path);
  auto starts_with = [&](std::initializer_list<unsigned char> magic) {
    return bytes.size() >= magic.size() && std::equal(magic.begin(), magic.end(), bytes.begin());
  };
  std::vector<unsigned char> pixels;
  int64_t height = 0, width = 0;
  if (starts_with({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'})) {
    PngReader r{bytes.data(), bytes.size(), 0, "out of memory"};
    png_uint_32 h = 0, w = 0;
    EMBER_CHECK(png_decode(&r, channels, &pixels, &h, &w), InvalidArgument)
        << "decode_image: " << path << " is not a valid PNG file: " << r.error;
    height = h;
    width = w;
  } else if (starts_with({0xff, 0xd8, 0xff})) {
    EMBER_CHECK(channels != 4, InvalidArgument)
        << "decode_image: " << path << " is a JPEG, which has no 4-channel (RGBA) form; use color_mode "
        << "\"rgb\" or \"grayscale\"";
    JpegError err{};
    JDIMENSION h = 0, w = 0;
    EMBER_CHECK(jpeg_decode(bytes, channels, &err, &pixels, &h, &w), InvalidArgument)
        << "decode_image: " << path << " is not a valid JPEG file: " << err.message;
    height = h;
    width = w;
  } else {
    const bool gif = starts_with({'G', 'I', 'F', '8'}), bmp = starts_with({'B', 'M'});
    EMBER_CHECK(!gif && !bmp, Unimplemented)
        << "decode_image: " << path << " is a " << (gif ? "GIF" : "BMP")
        << " file; only PNG and JPEG are decoded: convert it to PNG";
    throw InvalidArgument("decode_image: " + path + " is not an image file: PNG or JPEG expected");
  }
  Tensor out = Tensor::empty({height, width, channels}, DType::UInt8, Device::cpu());
  std::memcpy(out.raw_data(), pixels.data(), pixels.size());
  return out;
}

Tensor resize_image(const Tensor& image, std::array<int64_t, 2> size, const std::string& interpolation,
                    bool crop_to_aspect_ratio) {
  EMBER_CHECK(image.rank() == 3, InvalidArgument)
      << "resize_image: expected an image [height, width, channels], got shape " << image.shape();
  EMBER_CHECK(size[0] >= 1 && size[1] >= 1, InvalidArgument)
      << "resize_image: size must be two positive integers, got {" << size[0] << ", " << size[1] << "}";
  EMBER_CHECK(interpolation == "bilinear" || interpolation == "nearest", InvalidArgument)
      << "resize_image: interpolation must be \"bilinear\" or \"nearest\", got \"" << interpolation << "\"";
  EMBER_CHECK(image.dtype() == DType::UInt8 || image.dtype() == DType::Float32, InvalidArgument)
      << "resize_image: expected a uint8 or float32 image, got " << image.dtype();
  const Tensor host = image.to(Device::cpu());
  const int64_t in_h = host.shape()[0], in_w = host.shape()[1], c = host.shape()[2];
  std::vector<float> pixels;
  if (host.dtype() == DType::UInt8) {
    const uint8_t* p = host.data<uint8_t>();
    pixels.assign(p, p + host.num_elements());
  }
  const float* in = host.dtype() == DType::UInt8 ? pixels.data() : host.data<float>();
  // smart_resize's window, computed in float32 as Keras does on a tf.data graph's dynamic shape.
  int64_t h = in_h, w = in_w, top = 0, left = 0;
  if (crop_to_aspect_ratio) {
    h = std::max<int64_t>(std::min<int64_t>(in_h, static_cast<int64_t>(static_cast<float>(in_w * size[0]) / size[1])), 1);
    w = std::max<int64_t>(std::min<int64_t>(in_w, static_cast<int64_t>(static_cast<float>(in_h * size[1]) / size[0])), 1);
    top = static_cast<int64_t>(static_cast<float>(in_h - h) / 2);
    left = static_cast<int64_t>(static_cast<float>(in_w - w) / 2);
  }
  auto at = [&](int64_t y, int64_t x, int64_t k) { return in[((top + y) * in_w + left + x) * c + k]; };
  Tensor out = Tensor::empty({size[0], size[1], c}, DType::Float32, Device::cpu());
  float* o = out.data<float>();
  const float sy = static_cast<float>(h) / static_cast<float>(size[0]);
  const float sx = static_cast<float>(w) / static_cast<float>(size[1]);
  if (interpolation == "nearest") {
    // TF's resize_nearest_neighbor with half_pixel_centers: floor((i + 0.5) * scale), clamped.
    for (int64_t i = 0; i < size[0]; ++i) {
      const int64_t y = std::min<int64_t>(static_cast<int64_t>(std::floor((i + 0.5f) * sy)), h - 1);
      for (int64_t j = 0; j < size[1]; ++j) {
        const int64_t x = std::min<int64_t>(static_cast<int64_t>(std::floor((j + 0.5f) * sx)), w - 1);
        for (int64_t k = 0; k < c; ++k) *o++ = at(y, x, k);
      }
    }
    return out;
  }
  // TF's resize_bilinear with half_pixel_centers: source (i + 0.5) * scale - 0.5, the two neighbours
  // clamped to the image, interpolated along x and then y.
  struct Weight {
    int64_t lo, hi;
    float frac;
  };
  auto weights = [](int64_t out_n, int64_t in_n, float scale) {
    std::vector<Weight> ws(static_cast<size_t>(out_n));
    for (int64_t i = 0; i < out_n; ++i) {
      const float s = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
      const float f = std::floor(s);
      ws[i] = {std::max<int64_t>(static_cast<int64_t>(f), 0), std::min<int64_t>(static_cast<int64_t>(std::ceil(s)), in_n - 1),
               s - f};
    }
    return ws;
  };
  const std::vector<Weight> wy = weights(size[0], h, sy), wx = weights(size[1], w, sx);
  for (const Weight& y : wy)
    for (const Weight& x : wx)
      for (int64_t k = 0; k < c; ++k) {
        const float tl = at(y.lo, x.lo, k), tr = at(y.lo, x.hi, k), bl = at(y.hi, x.lo, k), br = at(y.hi, x.hi, k);
        const float t = tl + (tr - tl) * x.frac, b = bl + (br - bl) * x.frac;
        *o++ = t + (b - t) * y.frac;
      }
  return out;
}

}  // namespace ember::data
