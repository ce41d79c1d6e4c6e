#pragma once
// NumPy's .npy format (numpy.save / numpy.load), for exchanging arrays with Python tools: version 1.0-3.0
// headers, little-endian, C order.
#include <string>

#include "framework/core/tensor.h"

namespace ember::io {

// Reads a .npy file into a CPU tensor: float16/32/64, int32/64, uint8 or bool ('<f2', '<f4', '<f8', '<i4',
// '<i8', '|u1', '|b1'), C order. Missing file NotFound; a file that is not .npy or is truncated DataLoss
// naming the path; another dtype, Fortran order or big-endian data Unimplemented saying which.
Tensor read_npy(const std::string& path);

// Writes `tensor` (any device, any dtype) as a version 1.0 .npy file numpy.load reads, atomically.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace ember::io
