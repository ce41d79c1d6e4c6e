#pragma once
// Per-op attributes: one small struct per op family, carried in the Attrs variant so that kernels,
// the tape and backward formulas all read the same resolved values.
#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "framework/core/dtype.h"
#include "framework/core/shape.h"

namespace ember {

enum class Padding : uint8_t { Valid, Same };

struct GeluAttrs {
  bool approximate = false;  // tanh approximation
};
struct CastAttrs {
  DType dtype = DType::Float32;
};
// Reductions: axes are normalised (non-negative, sorted, unique); empty means none are reduced.
struct ReduceAttrs {
  std::vector<int64_t> axes;
  bool keepdims = false;
};
struct ArgReduceAttrs {
  int64_t axis = 0;  // normalised
  DType output_type = DType::Int64;
};
struct MatMulAttrs {
  bool transpose_a = false, transpose_b = false;
  bool relu = false;  // matmul_bias only: relu of the biased product (fused_ops [BiasAdd, Relu])
};
// reshape and broadcast_to: the resolved output shape (no -1).
struct ShapeAttrs {
  Shape shape;
};
struct TransposeAttrs {
  std::vector<int64_t> perm;  // normalised permutation
};
// concat, softmax, log_softmax: normalised axis.
struct AxisAttrs {
  int64_t axis = 0;
};
// strided_slice after mask resolution: per input dimension, begin and stride, and the output shape
// before new/shrink axes are applied (the front end reshapes for those).
struct StridedSliceAttrs {
  std::vector<int64_t> begin, strides;
  Shape out_shape;
};
struct GatherAttrs {
  int64_t axis = 0;  // normalised
  int64_t batch_dims = 0;
};
struct SegmentAttrs {
  int64_t num_segments = 0;
};
struct OneHotAttrs {
  int64_t depth = 0;
  int64_t axis = -1;  // normalised to [0, rank] of the output
  double on_value = 1, off_value = 0;
  DType dtype = DType::Float32;
};
enum class PadMode : uint8_t { Constant, Reflect, Symmetric };
struct PadAttrs {
  std::vector<std::pair<int64_t, int64_t>> paddings;  // per dim (before, after)
  PadMode mode = PadMode::Constant;
  double constant_value = 0;
};
struct TileAttrs {
  std::vector<int64_t> multiples;
};
// fill, range, linspace: output shape and dtype; a = value/start, b = stop, c = delta.
struct CreationAttrs {
  Shape shape;
  DType dtype = DType::Float32;
  double a = 0, b = 0, c = 0;
};
// random_*: Philox key/counter chosen by the front end from the global and op seeds; a, b are
// minval/maxval (uniform) or mean/stddev (normal, truncated_normal).
struct RandomAttrs {
  Shape shape;
  DType dtype = DType::Float32;
  uint64_t key = 0;
  uint64_t counter = 0;
  double a = 0, b = 1;
  std::optional<uint64_t> op_seed{};  // the call's op seed, from which a replayed graph draws key and counter again
};
// conv2d family, NHWC input, HWIO filter. For the backprop ops `shape` is the input (backprop_input)
// or filter (backprop_filter) shape being produced. Padding is resolved to explicit (top, bottom,
// left, right) with TF's SAME rule (the extra pixel goes after).
struct Conv2DAttrs {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  int64_t groups = 1;
  Padding padding = Padding::Valid;
  Shape shape;
  bool relu = false;  // conv2d_bias only: relu of the biased output (fused_ops [BiasAdd, Relu])
};
// pooling, NHWC; pads resolved as for conv2d.
struct Pool2DAttrs {
  std::array<int64_t, 2> ksize{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  Padding padding = Padding::Valid;
  Shape shape;  // avg_pool2d_grad: the original input shape
};

// apply_adam: Keras's Adam step with the bias correction folded into alpha; the coefficients are rounded
// to the variable's dtype before use, exactly as the unfused ops would round their scalars.
struct AdamAttrs {
  double alpha = 0, one_minus_beta_1 = 0, one_minus_beta_2 = 0, epsilon = 0;
};

using Attrs = std::variant<std::monostate, GeluAttrs, CastAttrs, ReduceAttrs, ArgReduceAttrs, MatMulAttrs, ShapeAttrs,
                           TransposeAttrs, AxisAttrs, StridedSliceAttrs, GatherAttrs, SegmentAttrs, OneHotAttrs,
                           PadAttrs, TileAttrs, CreationAttrs, RandomAttrs, Conv2DAttrs, Pool2DAttrs, AdamAttrs>;

}  // namespace ember
