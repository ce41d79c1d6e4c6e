#pragma once
// The math of each elementwise op, as EMBER_HOST_DEVICE functors shared by the CPU loops and CUDA
// kernels. Functors take and return the compute type (float for the half types); comparisons return
// bool. C++17 and nvcc-clean: no exceptions, no std::function, only <cmath> functions.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "framework/core/host_device.h"

// CUDA declares float and double overloads of the C math functions in the global namespace for host
// and device; on a plain host compile the std:: overloads keep float math in float.
#if defined(__CUDACC__)
#define EMBER_MATH(fn) ::fn
#else
#define EMBER_MATH(fn) std::fn
#endif

namespace ember::functors {

namespace detail {
template <class T>
inline constexpr bool is_signed_int = std::is_integral<T>::value && std::is_signed<T>::value;

// Signed integer overflow is UB in C++; TF's kernels wrap, so integer arithmetic goes through the
// unsigned type (same machine code, defined result).
template <class T>
EMBER_HOST_DEVICE T wrap_add(T a, T b) {
  if constexpr (is_signed_int<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return static_cast<T>(a + b);
  }
}
template <class T>
EMBER_HOST_DEVICE T wrap_sub(T a, T b) {
  if constexpr (is_signed_int<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return static_cast<T>(a - b);
  }
}
template <class T>
EMBER_HOST_DEVICE T wrap_mul(T a, T b) {
  if constexpr (is_signed_int<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return static_cast<T>(a * b);
  }
}
template <class T>
EMBER_HOST_DEVICE T wrap_neg(T a) {
  if constexpr (std::is_floating_point<T>::value) return -a;  // keeps -0.0 (0 - x would not)
  else return wrap_sub(T(0), a);
}
// Floating -> integer conversion that is defined everywhere (a plain C++ conversion is UB outside the
// range): truncates toward zero, NaN -> 0, values beyond the range saturate at its min/max.
template <class I>
EMBER_HOST_DEVICE I saturate_to_int(double d) {
  constexpr bool is_signed = std::is_signed<I>::value;
  constexpr I max = static_cast<I>(~uint64_t(0) >> (64 - sizeof(I) * 8 + (is_signed ? 1 : 0)));
  constexpr I min = is_signed ? static_cast<I>(-max - 1) : I(0);
  // max + 1 is a power of two, so exact in double (int64's max itself rounds to it).
  constexpr double past_max = static_cast<double>(max) + 1.0;
  if (d != d) return I(0);
  if (d >= past_max) return max;
  if (d <= static_cast<double>(min)) return min;
  return static_cast<I>(d);
}
template <class T>
EMBER_HOST_DEVICE T sigmoid(T x) {
  // exp of a non-positive argument never overflows, so both branches stay finite.
  if (x >= T(0)) return T(1) / (T(1) + EMBER_MATH(exp)(-x));
  T e = EMBER_MATH(exp)(x);
  return e / (T(1) + e);
}
}  // namespace detail

// ---- unary ----

struct Neg {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return detail::wrap_neg(x); }
};
struct Abs {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_floating_point<T>::value) return EMBER_MATH(fabs)(x);
    else return x < T(0) ? detail::wrap_neg(x) : x;
  }
};
struct Sign {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const {
    if (x != x) return x;  // NaN stays NaN
    return static_cast<T>((x > T(0)) - (x < T(0)));
  }
};
struct Exp {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return EMBER_MATH(exp)(x); }
};
struct Log {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return EMBER_MATH(log)(x); }
};
struct Log1p {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return EMBER_MATH(log1p)(x); }
};
struct Sqrt {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return EMBER_MATH(sqrt)(x); }
};
struct Rsqrt {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return T(1) / EMBER_MATH(sqrt)(x); }
};
struct Square {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return detail::wrap_mul(x, x); }
};
struct Reciprocal {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return T(1) / x; }
};
struct Sin {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return EMBER_MATH(sin)(x); }
};
struct Cos {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return EMBER_MATH(cos)(x); }
};
struct Tanh {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return EMBER_MATH(tanh)(x); }
};
struct Sigmoid {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return detail::sigmoid(x); }
};
// Written as max(x, 0) with x second so that NaN propagates, as TF's cwiseMax does.
struct Relu {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return x < T(0) ? T(0) : x; }
};
struct Relu6 {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const {
    T y = x < T(0) ? T(0) : x;
    return y > T(6) ? T(6) : y;
  }
};
struct Elu {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return x < T(0) ? EMBER_MATH(expm1)(x) : x; }
};
struct Selu {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const {
    const T scale = T(1.0507009873554804934193349852946);
    const T alpha = T(1.6732632423543772848170429916717);
    return x < T(0) ? scale * alpha * EMBER_MATH(expm1)(x) : scale * x;
  }
};
struct Gelu {
  bool approximate = false;
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const {
    if (approximate) {
      const T k = T(0.7978845608028654);  // sqrt(2 / pi)
      return T(0.5) * x * (T(1) + EMBER_MATH(tanh)(k * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + EMBER_MATH(erf)(x * T(0.7071067811865476)));
  }
};
// TF's threshold form: exp(x) below log(eps) + 2, x above its negation, log1p(exp(x)) between, so
// neither exp overflow nor the loss of tiny values in 1 + exp(x) can occur.
struct Softplus {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const {
    // log(epsilon) + 2 of the compute type (float for the half types too, which only helps them).
    const T threshold = sizeof(T) == sizeof(float) ? T(-13.942385152878742) : T(-34.04365338911715);
    if (x > -threshold) return x;
    T e = EMBER_MATH(exp)(x);
    if (x < threshold) return e;
    return EMBER_MATH(log1p)(e);
  }
};
struct Softsign {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return x / (T(1) + EMBER_MATH(fabs)(x)); }
};
struct Swish {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return x * detail::sigmoid(x); }
};
struct Floor {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return EMBER_MATH(floor)(x); }
};
struct Ceil {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return EMBER_MATH(ceil)(x); }
};
// rint honours the default rounding mode, round-half-to-even, which is TF's round.
struct Round {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return EMBER_MATH(rint)(x); }
};
struct IsFinite {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T x) const { return EMBER_MATH(isfinite)(x); }
};
struct LogicalNot {
  EMBER_HOST_DEVICE bool operator()(bool x) const { return !x; }
};

// Converts one value from compute type From to compute type To. Floating -> integer truncates toward
// zero with NaN -> 0 and saturation (saturate_to_int); integer -> narrower integer wraps (two's
// complement, as TF); anything -> bool is x != 0 (so NaN -> true, as in TF).
template <class To>
struct CastTo {
  template <class From>
  EMBER_HOST_DEVICE To operator()(From x) const {
    if constexpr (std::is_same<To, bool>::value) {
      return x != From(0);
    } else if constexpr (std::is_floating_point<From>::value && std::is_integral<To>::value) {
      return detail::saturate_to_int<To>(static_cast<double>(x));
    } else {
      return static_cast<To>(x);
    }
  }
};

// ---- binary ----

struct Add {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const { return detail::wrap_add(a, b); }
};
struct Sub {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const { return detail::wrap_sub(a, b); }
};
struct Mul {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const { return detail::wrap_mul(a, b); }
};
// Integers truncate toward zero; the caller rejects b == 0 first. INT_MIN / -1 wraps to INT_MIN.
struct Div {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (detail::is_signed_int<T>) {
      if (b == T(-1)) return detail::wrap_neg(a);
    }
    return static_cast<T>(a / b);
  }
};
// TF DivNoNan (floating types): 0 where b == 0, whatever a is (NaN and infinities too), else a / b.
struct DivNoNan {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    return b == T(0) ? T(0) : a / b;
  }
};
// Rounds toward -inf: floor(a / b) for floats (TF's floor_div_real), a corrected quotient for integers.
struct FloorDiv {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      return EMBER_MATH(floor)(a / b);
    } else if constexpr (detail::is_signed_int<T>) {
      if (b == T(-1)) return detail::wrap_neg(a);
      T q = static_cast<T>(a / b);
      T r = static_cast<T>(a % b);
      return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? static_cast<T>(q - T(1)) : q;
    } else {
      return static_cast<T>(a / b);  // unsigned: truncation is the floor
    }
  }
};
// Floor modulo: the result takes the sign of b (Python's %, TF's FloorMod), floats included.
struct Mod {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      T r = EMBER_MATH(fmod)(a, b);
      return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
    } else if constexpr (detail::is_signed_int<T>) {
      if (b == T(-1)) return T(0);
      T r = static_cast<T>(a % b);
      return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? static_cast<T>(r + b) : r;
    } else {
      return static_cast<T>(a % b);
    }
  }
};
// Integer powers by squaring with wrapping products; the caller rejects negative integer exponents.
struct Pow {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      return EMBER_MATH(pow)(a, b);
    } else {
      T result = T(1);
      while (b > T(0)) {
        if (b & T(1)) result = detail::wrap_mul(result, a);
        a = detail::wrap_mul(a, a);
        b = static_cast<T>(b >> 1);
      }
      return result;
    }
  }
};
// NaN in either operand gives NaN, as TF's maximum/minimum (Eigen::PropagateNaN).
struct Maximum {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if (a != a) return a;
    if (b != b) return b;
    return a < b ? b : a;
  }
};
struct Minimum {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if (a != a) return a;
    if (b != b) return b;
    return b < a ? b : a;
  }
};
struct SquaredDifference {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    T d = detail::wrap_sub(a, b);
    return detail::wrap_mul(d, d);
  }
};
// relu's gradient: dy where the feature (relu's input, or its output: the signs agree) is positive. A select,
// not TF's dy * (x > 0), so a NaN or infinite dy at an inactive unit gives 0, as where(x > 0, dy, 0) did.
struct ReluGrad {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T dy, T x) const { return x > T(0) ? dy : T(0); }
};
struct Equal {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a == b; }
};
struct NotEqual {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a != b; }
};
struct Less {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a < b; }
};
struct LessEqual {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a <= b; }
};
struct Greater {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a > b; }
};
struct GreaterEqual {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a >= b; }
};
struct LogicalAnd {
  EMBER_HOST_DEVICE bool operator()(bool a, bool b) const { return a && b; }
};
struct LogicalOr {
  EMBER_HOST_DEVICE bool operator()(bool a, bool b) const { return a || b; }
};

// ---- ternary ----

struct Where {
  template <class T>
  EMBER_HOST_DEVICE T operator()(bool c, T a, T b) const { return c ? a : b; }
};
// TF's clip_by_value is maximum(minimum(x, hi), lo): lo wins when lo > hi, NaN propagates.
struct ClipByValue {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x, T lo, T hi) const { return Maximum{}(Minimum{}(x, hi), lo); }
};

// ---- optimizer updates ----

// Keras's Adam step for one element, each operation rounded to T as the unfused ops would round it:
// m += (g - m) * (1 - beta_1); v += (g^2 - v) * (1 - beta_2); w -= m * alpha / (sqrt(v) + epsilon).
struct AdamStep {
  template <class T>
  EMBER_HOST_DEVICE void operator()(T& w, T& m, T& v, T g, T alpha, T one_minus_beta_1, T one_minus_beta_2,
                                    T epsilon) const {
    m = m + (g - m) * one_minus_beta_1;
    v = v + (g * g - v) * one_minus_beta_2;
    w = w - (m * alpha) / (EMBER_MATH(sqrt)(v) + epsilon);
  }
};

// Keras's SGD step, as its ops round: without momentum w = w - g lr; with it m = m momentum - g lr, then
// w = w + (m momentum - g lr) (Nesterov) or w = w + m.
struct SgdStep {
  template <class T>
  EMBER_HOST_DEVICE void operator()(T& w, T& m, T g, T learning_rate, T momentum, bool has_momentum,
                                    bool nesterov) const {
    if (!has_momentum) {
      w = w - g * learning_rate;
      return;
    }
    m = m * momentum - g * learning_rate;
    w = nesterov ? w + (m * momentum - g * learning_rate) : w + m;
  }
};

// Keras's Adam step size at step t (the count of updates before this one, plus 1), rounded in T at every
// operation as its float32 (or float64) tensors round: lr sqrt(1 - beta_2^t) / (1 - beta_1^t).
struct AdamStepSize {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T learning_rate, T beta_1, T beta_2, T t) const {
    return learning_rate * EMBER_MATH(sqrt)(T(1) - EMBER_MATH(pow)(beta_2, t)) / (T(1) - EMBER_MATH(pow)(beta_1, t));
  }
};

}  // namespace ember::functors
