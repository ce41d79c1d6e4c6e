#pragma once
// Per-op attributes: one small struct per op family, carried in the Attrs variant so that kernels,
// the tape and backward formulas all read the same resolved values.
#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "framework/core/dtype.h"
#include "framework/core/shape.h"
#include "framework/ops/attr_map.h"
#include "framework/ops/op.h"

namespace ember {

enum class Padding : uint8_t { Valid, Same };

// Attributes compare equal when an op given either computes the same (the graph compiler's common-subexpression
// elimination): floating values by their bits, so that -0.0 and 0.0 differ (a fill with either gives other bits)
// and a NaN equals itself. A structure with a floating field spells its comparison out; a field added there must
// join it.
namespace detail {
inline bool same_bits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }
}  // namespace detail

struct GeluAttrs {
  bool approximate = false;  // tanh approximation
  bool operator==(const GeluAttrs&) const = default;
};
struct CastAttrs {
  DType dtype = DType::Float32;
  bool operator==(const CastAttrs&) const = default;
};
// Reductions: axes are normalised (non-negative, sorted, unique); empty means none are reduced.
struct ReduceAttrs {
  std::vector<int64_t> axes;
  bool keepdims = false;
  bool operator==(const ReduceAttrs&) const = default;
};
struct ArgReduceAttrs {
  int64_t axis = 0;  // normalised
  DType output_type = DType::Int64;
  bool operator==(const ArgReduceAttrs&) const = default;
};
// The activation matmul_bias and conv2d_bias apply to their biased output, as TF's _FusedMatMul and _FusedConv2D do
// (fused_ops [BiasAdd, Relu | Tanh | Sigmoid]). relu comes from matmul_bias_relu and conv2d_bias_relu; the graph
// compiler moves an activation that follows one of them in (fuse_bias_activation).
enum class FusedActivation : uint8_t { None, Relu, Tanh, Sigmoid };
// "relu", "tanh", "sigmoid" ("" for None).
inline const char* fused_activation_name(FusedActivation a) {
  switch (a) {
    case FusedActivation::Relu: return "relu";
    case FusedActivation::Tanh: return "tanh";
    case FusedActivation::Sigmoid: return "sigmoid";
    default: return "";
  }
}

struct MatMulAttrs {
  bool transpose_a = false, transpose_b = false;
  FusedActivation activation = FusedActivation::None;  // matmul_bias only
  bool operator==(const MatMulAttrs&) const = default;
};
// reshape and broadcast_to: the resolved output shape (no -1).
struct ShapeAttrs {
  Shape shape;
  bool operator==(const ShapeAttrs&) const = default;
};
struct TransposeAttrs {
  std::vector<int64_t> perm;  // normalised permutation
  bool operator==(const TransposeAttrs&) const = default;
};
// concat, softmax, log_softmax: normalised axis.
struct AxisAttrs {
  int64_t axis = 0;
  bool operator==(const AxisAttrs&) const = default;
};
// strided_slice after mask resolution: per input dimension, begin and stride, and the output shape
// before new/shrink axes are applied (the front end reshapes for those).
struct StridedSliceAttrs {
  std::vector<int64_t> begin, strides;
  Shape out_shape;
  bool operator==(const StridedSliceAttrs&) const = default;
};
struct GatherAttrs {
  int64_t axis = 0;  // normalised
  int64_t batch_dims = 0;
  bool operator==(const GatherAttrs&) const = default;
};
struct SegmentAttrs {
  int64_t num_segments = 0;
  bool operator==(const SegmentAttrs&) const = default;
};
struct OneHotAttrs {
  int64_t depth = 0;
  int64_t axis = -1;  // normalised to [0, rank] of the output
  double on_value = 1, off_value = 0;
  DType dtype = DType::Float32;
  bool operator==(const OneHotAttrs& o) const {
    return depth == o.depth && axis == o.axis && detail::same_bits(on_value, o.on_value) &&
           detail::same_bits(off_value, o.off_value) && dtype == o.dtype;
  }
};
enum class PadMode : uint8_t { Constant, Reflect, Symmetric };
struct PadAttrs {
  std::vector<std::pair<int64_t, int64_t>> paddings;  // per dim (before, after)
  PadMode mode = PadMode::Constant;
  double constant_value = 0;
  bool operator==(const PadAttrs& o) const {
    return paddings == o.paddings && mode == o.mode && detail::same_bits(constant_value, o.constant_value);
  }
};
struct TileAttrs {
  std::vector<int64_t> multiples;
  bool operator==(const TileAttrs&) const = default;
};
// fill, range, linspace: output shape and dtype; a = value/start, b = stop, c = delta.
struct CreationAttrs {
  Shape shape;
  DType dtype = DType::Float32;
  double a = 0, b = 0, c = 0;
  bool operator==(const CreationAttrs& o) const {
    return shape == o.shape && dtype == o.dtype && detail::same_bits(a, o.a) && detail::same_bits(b, o.b) &&
           detail::same_bits(c, o.c);
  }
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
  bool operator==(const RandomAttrs& o) const {
    return shape == o.shape && dtype == o.dtype && key == o.key && counter == o.counter && detail::same_bits(a, o.a) &&
           detail::same_bits(b, o.b) && op_seed == o.op_seed;
  }
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
  FusedActivation activation = FusedActivation::None;  // conv2d_bias only
  bool operator==(const Conv2DAttrs&) const = default;
};
// pooling, NHWC; pads resolved as for conv2d.
struct Pool2DAttrs {
  std::array<int64_t, 2> ksize{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  Padding padding = Padding::Valid;
  Shape shape;  // avg_pool2d_grad: the original input shape
  bool operator==(const Pool2DAttrs&) const = default;
};
// affine_transform: image_math's fill mode and interpolation codes, and the value read outside the image.
struct AffineTransformAttrs {
  int fill_mode = 2;      // image_math::kFillConstant
  int interpolation = 1;  // image_math::kInterpolationBilinear
  double fill_value = 0;
  bool operator==(const AffineTransformAttrs& o) const {
    return fill_mode == o.fill_mode && interpolation == o.interpolation && detail::same_bits(fill_value, o.fill_value);
  }
};
// fused_attention and its gradient: the scores' scale and whether query i sees only keys 0..i (top-left aligned).
struct FusedAttentionAttrs {
  double scale = 1;
  bool causal = false;
  bool operator==(const FusedAttentionAttrs& o) const {
    return detail::same_bits(scale, o.scale) && causal == o.causal;
  }
};

// fused_batch_norm and its gradient: what follows the normalization in the same pass (cuDNN's
// cudnnBatchNormOps_t): nothing, relu, or the addition of a side input (a residual) and relu.
enum class BatchNormOps : uint8_t { Bn, BnRelu, BnAddRelu };
struct BatchNormAttrs {
  double epsilon = 1e-3;
  BatchNormOps ops = BatchNormOps::Bn;
  bool operator==(const BatchNormAttrs& o) const { return detail::same_bits(epsilon, o.epsilon) && ops == o.ops; }
};

// gru_sequence and its gradient: Keras's reset_after (the reset gate applied after the recurrent product, with a
// separate recurrent bias: bias (2, 3 * units)) or before it (bias (3 * units)). Unused by the LSTM ops.
struct RnnSequenceAttrs {
  bool reset_after = true;
  bool operator==(const RnnSequenceAttrs&) const = default;
};

// apply_adam: Keras's Adam step with the bias correction folded into alpha; the coefficients are rounded
// to the variable's dtype before use, exactly as the unfused ops would round their scalars.
struct AdamAttrs {
  double alpha = 0, one_minus_beta_1 = 0, one_minus_beta_2 = 0, epsilon = 0;
  bool operator==(const AdamAttrs& o) const {
    return detail::same_bits(alpha, o.alpha) && detail::same_bits(one_minus_beta_1, o.one_minus_beta_1) &&
           detail::same_bits(one_minus_beta_2, o.one_minus_beta_2) && detail::same_bits(epsilon, o.epsilon);
  }
};

namespace ops {
struct CustomOpDef;
}  // namespace ops
// custom: the registered op (framework/ops/custom_op.h; registrations live as long as the process) and the
// call's attributes.
struct CustomOpAttrs {
  const ops::CustomOpDef* def = nullptr;
  AttrMap values;
  bool operator==(const CustomOpAttrs&) const = default;
};

// apply_adam_multi: Keras's Adam hyperparameters as given; the kernel makes the step size from the step count and
// the learning rate, which are tensors.
struct MultiAdamAttrs {
  double beta_1 = 0, beta_2 = 0, epsilon = 0;
  bool operator==(const MultiAdamAttrs& o) const {
    return detail::same_bits(beta_1, o.beta_1) && detail::same_bits(beta_2, o.beta_2) &&
           detail::same_bits(epsilon, o.epsilon);
  }
};

// apply_sgd_multi: Keras's SGD hyperparameters (the learning rate is a tensor); without momentum the variables have
// no momentum slot.
struct MultiSgdAttrs {
  double momentum = 0;
  bool nesterov = false;
  bool operator==(const MultiSgdAttrs& o) const { return detail::same_bits(momentum, o.momentum) && nesterov == o.nesterov; }
};

// update_loss_scale: Keras's dynamic_growth_steps (consecutive finite steps that double the scale).
struct LossScaleAttrs {
  int64_t growth_steps = 0;
  bool operator==(const LossScaleAttrs&) const = default;
};

using Attrs = std::variant<std::monostate, GeluAttrs, CastAttrs, ReduceAttrs, ArgReduceAttrs, MatMulAttrs, ShapeAttrs,
                           TransposeAttrs, AxisAttrs, StridedSliceAttrs, GatherAttrs, SegmentAttrs, OneHotAttrs,
                           PadAttrs, TileAttrs, CreationAttrs, RandomAttrs, Conv2DAttrs, Pool2DAttrs, AdamAttrs,
                           AffineTransformAttrs, CustomOpAttrs, FusedAttentionAttrs, MultiAdamAttrs,
                           MultiSgdAttrs, BatchNormAttrs, RnnSequenceAttrs, LossScaleAttrs>;

// The name users know an op by, in messages and the profiler: a custom op's registered name, else the table's.
const char* op_name(OpId op, const Attrs& attrs);

// The activation a matmul_bias's or conv2d_bias's attrs carry (None for any other attrs).
inline FusedActivation fused_activation_of(const Attrs& attrs) {
  if (const auto* m = std::get_if<MatMulAttrs>(&attrs)) return m->activation;
  if (const auto* c = std::get_if<Conv2DAttrs>(&attrs)) return c->activation;
  return FusedActivation::None;
}

}  // namespace ember
