#pragma once
// The math of each elementwise op, as EMBER_HOST_DEVICE functors shared by the CPU loops and CUDA
// kernels. Functors take and return the compute type (float for the half types).
#include <cmath>

#include "framework/core/host_device.h"

namespace ember::functors {

struct Relu {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return x > T(0) ? x : T(0); }
};

struct Sigmoid {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return T(1) / (T(1) + exp(-x)); }
};

}  // namespace ember::functors
