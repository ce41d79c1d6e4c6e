// PNG through libpng's simplified API (png_image), JPEG through libjpeg(-turbo) with an error handler that
// jumps back out (libjpeg's default one calls exit()).
#include "framework/io/image_file.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include <jpeglib.h>
#include <png.h>

namespace ember::io {

namespace {

struct Pixels {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> data;
};

Pixels decode_png(const std::string& path) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str()))
    throw DataLoss("decode_image: " + path + ": not a readable PNG (" + image.message + ")");
  const bool color = image.format & PNG_FORMAT_FLAG_COLOR;
  const bool alpha = image.format & PNG_FORMAT_FLAG_ALPHA;
  Pixels p;
  p.channels = color ? (alpha ? 4 : 3) : (alpha ? 4 : 1);  // gray + alpha reads as RGBA, as PIL's "LA" converts
  image.format = p.channels == 1 ? PNG_FORMAT_GRAY : p.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  p.height = image.height;
  p.width = image.width;
  p.data.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, p.data.data(), 0, nullptr)) {
    const std::string message = image.message;
    png_image_free(&image);
    throw DataLoss("decode_image: " + path + ": corrupt or truncated PNG (" + message + ")");
  }
  return p;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  JpegError* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// libjpeg only warns about corrupt or truncated data (and decodes gray); like TF's decode_jpeg, fail instead.
void jpeg_emit_message(j_common_ptr cinfo, int level) {
  if (level < 0) jpeg_error_exit(cinfo);
}

// Only plain C objects live in this frame (longjmp skips destructors): the caller owns file and pixels.
bool decode_jpeg_into(std::FILE* file, Pixels& p, std::vector<uint8_t>& data, JpegError& err, bool& cmyk) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  err.mgr.emit_message = jpeg_emit_message;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_stdio_src(&cinfo, file);
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    cmyk = true;
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  p.height = cinfo.output_height;
  p.width = cinfo.output_width;
  p.channels = cinfo.output_components;
  data.resize(static_cast<size_t>(p.height * p.width * p.channels));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = data.data() + static_cast<size_t>(cinfo.output_scanline) * p.width * p.channels;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

Pixels decode_jpeg(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw NotFound("decode_image: cannot open " + path);
  Pixels p;
  JpegError err;
  err.message[0] = '\0';
  bool cmyk = false;
  if (!decode_jpeg_into(file.get(), p, p.data, err, cmyk)) {
    if (cmyk) throw Unimplemented("decode_image: " + path + " is a CMYK JPEG; only grayscale and RGB JPEGs are read");
    throw DataLoss("decode_image: " + path + ": corrupt or truncated JPEG (" + err.message + ")");
  }
  return p;
}

// PIL's conversions (Image.convert), which Keras's load_img uses.
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

}  // namespace

Tensor decode_image(const std::string& path, int channels) {
  EMBER_CHECK(channels == 0 || channels == 1 || channels == 3 || channels == 4, InvalidArgument)
      << "decode_image: channels must be 0 (the file's own), 1, 3 or 4; got " << channels;
  unsigned char magic[8] = {0};
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw NotFound("decode_image: cannot open " + path);
    in.read(reinterpret_cast<char*>(magic), sizeof magic);
  }
  Pixels p;
  if (std::memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0) {
    p = decode_png(path);
  } else if (magic[0] == 0xff && magic[1] == 0xd8 && magic[2] == 0xff) {
    p = decode_jpeg(path);
  } else {
    throw DataLoss("decode_image: " + path + " is neither a PNG nor a JPEG file");
  }
  return convert_channels(p, channels == 0 ? p.channels : channels);
}

}  // namespace ember::io
