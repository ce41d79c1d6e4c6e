// One reader for both conventions: PNG through libpng with the transformations of TF's PNG decoder
// (core/lib/png/png_io.cc), JPEG through libjpeg(-turbo) with an error handler that jumps back out (libjpeg's
// default one calls exit()). Both libraries report errors by longjmp: the functions that call setjmp hold only
// trivially destructible locals, so a jump skips no destructor.
#include "framework/io/image_file.h"

#include <jpeglib.h>
// jerror.h needs jpeglib.h first.
#include <jerror.h>
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <vector>

namespace ember::io {

namespace {

struct Pixels {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> data;
};

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

// The file's own channels: 1 gray, 3 colour (palette included), 4 with alpha or tRNS transparency.
int png_own_channels(png_structp png, png_infop info) {
  const int color = png_get_color_type(png, info);
  const bool alpha = (color & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  return alpha ? 4 : (color & PNG_COLOR_MASK_COLOR) != 0 ? 3 : 1;
}

// TF's transformations: alpha added, dropped or kept to reach `channels`, 16 bits cut to 8, palette and low
// bit depths expanded, gray and colour converted (gray with libpng's 0.299/0.587/0.114 weights).
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

// Decodes into `out` with `channels` (0: the file's own); false with r->error set on a libpng error.
bool png_decode(PngReader* r, int channels, Pixels* out) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, png_on_error, png_on_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
    return false;
  }
  png_set_read_fn(png, r, png_read_bytes);
  png_read_info(png, info);
  const int ch = channels != 0 ? channels : png_own_channels(png, info);
  png_setup(png, info, ch);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const png_uint_32 height = png_get_image_height(png, info), width = png_get_image_width(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  if (row_bytes != size_t{width} * static_cast<size_t>(ch)) png_error(png, "unexpected row size after conversion");
  out->height = height;
  out->width = width;
  out->channels = ch;
  out->data.resize(row_bytes * height);
  for (int p = 0; p < passes; ++p)
    for (png_uint_32 y = 0; y < height; ++y) png_read_row(png, out->data.data() + y * row_bytes, nullptr);
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

// libjpeg only warns when the data ends early (and decodes the rest gray); PIL and TF fail instead. Its other
// warnings (e.g. extraneous bytes before a marker) pass, as they do in PIL and TF.
void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_on_error(cinfo);
}

// Decodes into `out` as gray when `channels` is 1 (or 0 and the file is gray), else RGB; the fast integer DCT
// when `fast_dct` (TF's core/lib/jpeg/jpeg_mem.cc), libjpeg's default accurate one otherwise (PIL). False with
// err->message set on a libjpeg error, or with `cmyk` set for a CMYK/YCCK file.
bool jpeg_decode(const std::vector<unsigned char>& bytes, int channels, bool fast_dct, JpegError* err, Pixels* out,
                 bool* cmyk) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = jpeg_on_error;
  err->mgr.emit_message = jpeg_on_message;
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    *cmyk = true;
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  const bool gray = channels == 0 ? cinfo.num_components == 1 : channels == 1;
  cinfo.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  if (fast_dct) cinfo.dct_method = JDCT_IFAST;
  cinfo.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&cinfo);
  out->height = cinfo.output_height;
  out->width = cinfo.output_width;
  out->channels = cinfo.output_components;
  const size_t row_bytes = size_t{cinfo.output_width} * static_cast<size_t>(cinfo.output_components);
  out->data.resize(row_bytes * cinfo.output_height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->data.data() + cinfo.output_scanline * row_bytes;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

// PIL's conversions (Image.convert), which Keras's load_img uses; a copy when the channels already match.
Tensor convert_channels(const Pixels& p, int64_t to) {
  const int64_t n = p.height * p.width, from = p.channels;
  Tensor out = Tensor::empty(Shape{p.height, p.width, to}, DType::UInt8, Device::cpu());
  uint8_t* dst = out.data<uint8_t>();
  const uint8_t* src = p.data.data();
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(n * to));
    return out;
  }
  for (int64_t i = 0; i < n; ++i, src += from, dst += to) {
    if (to == 1) {
      // PIL's L24 rounding of 0.299 R + 0.587 G + 0.114 B.
      dst[0] = static_cast<uint8_t>((src[0] * 19595 + src[1] * 38470 + src[2] * 7471 + 0x8000) >> 16);
    } else {
      for (int64_t c = 0; c < 3; ++c) dst[c] = from == 1 ? src[0] : src[c];
      if (to == 4) dst[3] = from == 4 ? src[3] : 255;
    }
  }
  return out;
}

// Data that is not a readable PNG or JPEG: TF's decoders raise InvalidArgumentError; Ember's file readers DataLoss.
[[noreturn]] void throw_unreadable(ImageConvention convention, const std::string& path, const std::string& what) {
  const std::string message = "decode_image: " + path + " is not " + what;
  if (convention == ImageConvention::tensorflow) throw InvalidArgument(message);
  throw DataLoss(message);
}

// ---- PNG encoding (TF's png::WriteImageToBuffer) ----

struct PngWriter {
  std::string* out;
  char error[200];
};

void png_write_bytes(png_structp png, png_bytep data, png_size_t n) {
  static_cast<PngWriter*>(png_get_io_ptr(png))->out->append(reinterpret_cast<const char*>(data), n);
}

void png_write_flush(png_structp) {}

void png_on_write_error(png_structp png, png_const_charp msg) {
  auto* w = static_cast<PngWriter*>(png_get_error_ptr(png));
  std::snprintf(w->error, sizeof(w->error), "%s", msg);
  png_longjmp(png, 1);
}

bool png_encode(PngWriter* w, const uint8_t* pixels, png_uint_32 height, png_uint_32 width, int channels) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, w, png_on_write_error, png_on_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, info ? &info : nullptr);
    return false;
  }
  static constexpr int kColorTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                        PNG_COLOR_TYPE_RGB_ALPHA};
  png_set_write_fn(png, w, png_write_bytes, png_write_flush);
  png_set_IHDR(png, info, width, height, 8, kColorTypes[channels - 1], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, -1);  // Z_DEFAULT_COMPRESSION, as tf.io.encode_png's default
  png_write_info(png, info);
  const size_t row_bytes = size_t{width} * static_cast<size_t>(channels);
  for (png_uint_32 y = 0; y < height; ++y) png_write_row(png, pixels + y * row_bytes);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

std::string encode_png(std::span<const uint8_t> pixels, int64_t height, int64_t width, int64_t channels) {
  constexpr int64_t kMaxSide = 0x7fffffff;  // PNG's limit on each side
  EMBER_CHECK(channels >= 1 && channels <= 4, InvalidArgument)
      << "encode_png: channels must be 1 (gray), 2 (gray and alpha), 3 (RGB) or 4 (RGBA); got " << channels;
  EMBER_CHECK(height >= 1 && height <= kMaxSide && width >= 1 && width <= kMaxSide, InvalidArgument)
      << "encode_png: height and width must be in [1, 2^31 - 1]; got " << height << " x " << width;
  EMBER_CHECK(static_cast<uint64_t>(pixels.size()) ==
                  static_cast<uint64_t>(height) * static_cast<uint64_t>(width) * static_cast<uint64_t>(channels),
              InvalidArgument)
      << "encode_png: " << height << " x " << width << " x " << channels << " pixels expected; got "
      << pixels.size() << " values";
  std::string out;
  PngWriter w{&out, "out of memory"};
  EMBER_CHECK(png_encode(&w, pixels.data(), static_cast<png_uint_32>(height), static_cast<png_uint_32>(width),
                         static_cast<int>(channels)),
              Internal)
      << "encode_png: libpng failed: " << w.error;
  return out;
}

Tensor decode_image(const std::string& path, int channels, ImageConvention convention) {
  const bool tf = convention == ImageConvention::tensorflow;
  EMBER_CHECK(channels == 1 || channels == 3 || channels == 4 || (channels == 0 && !tf), InvalidArgument)
      << "decode_image: channels must be " << (tf ? "" : "0 (the file's own), ") << "1, 3 or 4; got " << channels;
  std::vector<unsigned char> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    EMBER_CHECK(in.good(), NotFound) << "decode_image: cannot open " << path;
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto starts_with = [&](std::initializer_list<unsigned char> magic) {
    return bytes.size() >= magic.size() && std::equal(magic.begin(), magic.end(), bytes.begin());
  };
  // The conventions differ in who converts channels: libpng/libjpeg as TF asks them, or PIL's formulas after
  // decoding the file's own channels.
  const int decode_channels = tf ? channels : 0;
  Pixels p;
  if (starts_with({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'})) {
    PngReader r{bytes.data(), bytes.size(), 0, "out of memory"};
    if (!png_decode(&r, decode_channels, &p))
      throw_unreadable(convention, path, std::string("a valid PNG file (corrupt or truncated): ") + r.error);
  } else if (starts_with({0xff, 0xd8, 0xff})) {
    EMBER_CHECK(!(tf && channels == 4), InvalidArgument)
        << "decode_image: " << path << " is a JPEG, which TF's decoder gives no 4-channel (RGBA) form; ask for 1 "
        << "or 3 channels (color_mode \"grayscale\" or \"rgb\")";
    JpegError err{};
    bool cmyk = false;
    if (!jpeg_decode(bytes, decode_channels, tf, &err, &p, &cmyk)) {
      EMBER_CHECK(!cmyk, Unimplemented)
          << "decode_image: " << path << " is a CMYK JPEG; only grayscale and RGB JPEGs are read";
      throw_unreadable(convention, path, std::string("a valid JPEG file (corrupt or truncated): ") + err.message);
    }
  } else {
    const bool gif = starts_with({'G', 'I', 'F', '8'}), bmp = starts_with({'B', 'M'});
    EMBER_CHECK(!gif && !bmp, Unimplemented) << "decode_image: " << path << " is a " << (gif ? "GIF" : "BMP")
                                             << " file; only PNG and JPEG are decoded: convert it to PNG";
    throw_unreadable(convention, path, "an image file: neither a PNG nor a JPEG");
  }
  return convert_channels(p, channels == 0 ? p.channels : channels);
}

}  // namespace ember::io
