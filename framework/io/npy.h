#pragma once
// NumPy's .npy format (numpy.save / numpy.load), for exchanging arrays with Python tools: version 1.0-3.0
// headers, little-endian, C order.
#include <cstddef>
#include <string>
#include <string_view>

#include "framework/core/tensor.h"

namespace ember::io {

// A .npy header: the dtype descriptor as NumPy writes it ('<f4', '|u1', '|O', ...), the element order, the
// shape, and the offset of the elements from the start of the file.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
  size_t data_offset = 0;
};

// Parses the header of the .npy held in `bytes` (the whole file, or at least its header), e.g. a member of an
// .npz archive; `where` names it in errors ("read_npy: file.npy", "archive.npz:x.npy"). No \x93NUMPY magic or
// a header cut short or malformed DataLoss; an unknown version Unimplemented. The descr is not checked.
NpyHeader parse_npy_header(std::string_view bytes, const std::string& where);

// Reads a .npy file into a CPU tensor: float16/32/64, int32/64, uint8 or bool ('<f2', '<f4', '<f8', '<i4',
// '<i8', '|u1', '|b1'), C order. Missing file NotFound; a file that is not .npy or is truncated DataLoss
// naming the path; another dtype, Fortran order or big-endian data Unimplemented saying which.
Tensor read_npy(const std::string& path);

// Writes `tensor` (any device, any dtype) as a version 1.0 .npy file numpy.load reads, atomically.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace ember::io
