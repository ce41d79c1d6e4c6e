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
// The float forms below are written so that a loop over them vectorises (no call, no branch): the C library's
// tanhf, erff, expf, logf, expm1f and log1pf are a call per element, 7 to 50 times slower over a tensor. Every
// multiply-add is an explicit fma, so the CPU's and the GPU's bits agree; each is checked over the floats in
// test_elementwise.cpp.
// They are always inlined: GCC otherwise keeps them out of line in larger files, and a loop calling them is scalar.
#if defined(__CUDACC__)
#define EMBER_VECTOR_MATH EMBER_HOST_DEVICE
#else
#define EMBER_VECTOR_MATH inline __attribute__((always_inline))
#endif

// A float's bits and back (bit_cast, in host and device code alike).
EMBER_VECTOR_MATH float float_from_bits(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float f;
  __builtin_memcpy(&f, &b, sizeof f);
  return f;
#endif
}
EMBER_VECTOR_MATH uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t b;
  __builtin_memcpy(&b, &f, sizeof b);
  return b;
#endif
}

// c ? a : b computed on the bits, with no branch for the compiler to move code into: GCC sinks work used by one
// side of a select into a conditional block, and the loop over log_float then no longer vectorises.
EMBER_VECTOR_MATH float select_bits(bool c, float a, float b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(c);
  return float_from_bits((float_bits(a) & mask) | (float_bits(b) & ~mask));
}
// c ? a : b in T: select_bits for float, the plain select otherwise.
template <class T>
EMBER_VECTOR_MATH T select(bool c, T a, T b) {
  if constexpr (std::is_same<T, float>::value) return select_bits(c, a, b);
  else return c ? a : b;
}

// exp of a float within 1 ulp: x = n ln2 + r (n an integer, ln2 in two parts, |r| <= ln2/2), e^r from a degree-7
// polynomial (Cephes's coefficients), times 2^n as two powers of two (each a normal float, so that the one rounding
// of a subnormal result happens last). Overflow gives inf, underflow 0, NaN stays NaN.
EMBER_VECTOR_MATH float exp_float(float a) {
  const float x = a != a ? 0.0f : (a > 89.0f ? 89.0f : (a < -104.0f ? -104.0f : a));
  const float big = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = EMBER_MATH(fma)(x, 1.44269504088896341f, big) - big;
  float r = EMBER_MATH(fma)(n, -0.693359375f, x);
  r = EMBER_MATH(fma)(n, 2.12194440e-4f, r);
  float p = EMBER_MATH(fma)(r, 1.9875691500e-4f, 1.3981999507e-3f);
  p = EMBER_MATH(fma)(p, r, 8.3334519073e-3f);
  p = EMBER_MATH(fma)(p, r, 4.1665795894e-2f);
  p = EMBER_MATH(fma)(p, r, 1.6666665459e-1f);
  p = EMBER_MATH(fma)(p, r, 5.0000001201e-1f);
  p = EMBER_MATH(fma)(p, r * r, r) + 1.0f;
  const int32_t k = static_cast<int32_t>(n), k1 = k >> 1, k2 = k - k1;
  const float s1 = float_from_bits(static_cast<uint32_t>(k1 + 127) << 23);
  const float s2 = float_from_bits(static_cast<uint32_t>(k2 + 127) << 23);
  const float y = p * s1 * s2;
  return a != a ? a : y;
}
// expm1 of a float within 3 ulp: a degree-7 polynomial where |x| < ln2 / 2 (where exp(x) - 1 would lose the low
// bits), exp(x) - 1 beyond.
EMBER_VECTOR_MATH float expm1_float(float a) {
  float p = EMBER_MATH(fma)(a, 1.9841270e-4f, 1.3888889e-3f);
  p = EMBER_MATH(fma)(p, a, 8.3333333e-3f);
  p = EMBER_MATH(fma)(p, a, 4.1666667e-2f);
  p = EMBER_MATH(fma)(p, a, 1.6666667e-1f);
  p = EMBER_MATH(fma)(p, a, 0.5f);
  const float near_zero = EMBER_MATH(fma)(p, a * a, a);
  const float r = EMBER_MATH(fabs)(a) < 0.34657359f ? near_zero : exp_float(a) - 1.0f;
  return a != a ? a : r;
}
// log of a float within 1 ulp: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) from a degree-10 polynomial in
// m - 1 (Cephes's coefficients), e ln2 in two parts; subnormals scaled by 2^23 first. log(0) = -inf, log of a
// negative number NaN, log(inf) = inf.
EMBER_VECTOR_MATH float log_float(float a) {
  // (zero and negative numbers are settled at the end)
  const float scale = select_bits(a < 1.17549435e-38f, 8388608.0f, 1.0f);
  const uint32_t b = float_bits(a * scale);
  const float m = float_from_bits((b & 0x007fffffu) | 0x3f000000u);  // in [0.5, 1)
  const bool low = m < 0.707106781186547524f;
  const int32_t exponent = static_cast<int32_t>(b >> 23) - static_cast<int32_t>(float_bits(scale) >> 23) + 1;
  const float e = static_cast<float>(exponent - static_cast<int32_t>(low));
  const float x = select_bits(low, m + m, m) - 1.0f;
  const float z = x * x;
  float y = EMBER_MATH(fma)(7.0376836292e-2f, x, -1.1514610310e-1f);
  y = EMBER_MATH(fma)(y, x, 1.1676998740e-1f);
  y = EMBER_MATH(fma)(y, x, -1.2420140846e-1f);
  y = EMBER_MATH(fma)(y, x, 1.4249322787e-1f);
  y = EMBER_MATH(fma)(y, x, -1.6668057665e-1f);
  y = EMBER_MATH(fma)(y, x, 2.0000714765e-1f);
  y = EMBER_MATH(fma)(y, x, -2.4999993993e-1f);
  y = EMBER_MATH(fma)(y, x, 3.3333331174e-1f);
  y = y * x * z;
  y = EMBER_MATH(fma)(e, -2.12194440e-4f, y);
  y = EMBER_MATH(fma)(z, -0.5f, y);
  const float r = EMBER_MATH(fma)(e, 0.693359375f, x + y);
  const float inf = float_from_bits(0x7f800000u);
  const float special = select_bits(a == inf, inf, select_bits(a == 0.0f, -inf, float_from_bits(0x7fc00000u)));
  const bool finite_positive = (a > 0.0f) & (a < inf);
  return select_bits(a != a, a, select_bits(finite_positive, r, special));
}
// log1p of a float within 1 ulp: log(u) for u = 1 + x, less the rounding of that sum, ((u - 1) - x) / u (Kahan's
// correction); x itself where u is 1.
EMBER_VECTOR_MATH float log1p_float(float a) {
  const float u = 1.0f + a;
  const float inf = float_from_bits(0x7f800000u);
  const float r = select_bits(u == 1.0f, a, log_float(u) - ((u - 1.0f) - a) / u);
  return select_bits((a != a) | (a == inf), a, select_bits(u == 0.0f, -inf, r));
}
// erf of a float as TensorFlow's CPU kernels compute it (Eigen's fast erf): x times an even rational function of
// degrees 12 and 8 on [-4, 4], +-1 beyond; within 7 ulp. (x multiplies the quotient rather than the numerator, so
// that no subnormal intermediate loses the precision of tiny x.)
EMBER_VECTOR_MATH float erf_float(float a) {
  const float x = a > 4.0f ? 4.0f : (a < -4.0f ? -4.0f : a);
  const float x2 = x * x;
  float p = EMBER_MATH(fma)(x2, -2.72614225801306e-10f, 2.77068142495902e-08f);
  p = EMBER_MATH(fma)(x2, p, -2.10102402082508e-06f);
  p = EMBER_MATH(fma)(x2, p, -5.69250639462346e-05f);
  p = EMBER_MATH(fma)(x2, p, -7.34990630326855e-04f);
  p = EMBER_MATH(fma)(x2, p, -2.95459980854025e-03f);
  p = EMBER_MATH(fma)(x2, p, -1.60960333262415e-02f);
  float q = EMBER_MATH(fma)(x2, -1.45660718464996e-05f, -2.13374055278905e-04f);
  q = EMBER_MATH(fma)(x2, q, -1.68282697438203e-03f);
  q = EMBER_MATH(fma)(x2, q, -7.37332916720468e-03f);
  q = EMBER_MATH(fma)(x2, q, -1.42647390514189e-02f);
  return a != a ? a : x * (p / q);
}
// exp, erf, expm1, log and log1p in T (tanh below): the float forms for float (and the half types, which compute in
// float), the C library's otherwise.
#define EMBER_FLOAT_FORM(name)                                             \
  template <class T>                                                       \
  EMBER_VECTOR_MATH T name(T x) {                                          \
    if constexpr (std::is_same<T, float>::value) return name##_float(x);   \
    else return EMBER_MATH(name)(x);                                       \
  }
EMBER_FLOAT_FORM(exp)
EMBER_FLOAT_FORM(erf)
EMBER_FLOAT_FORM(expm1)
EMBER_FLOAT_FORM(log)
EMBER_FLOAT_FORM(log1p)
// 1 / (1 + e^-x), from e = exp(-|x|), which never overflows: 1 / (1 + e) for x >= 0, e / (1 + e) below. A NaN
// comes back as it came (its sign too, which -|x| would lose).
template <class T>
EMBER_VECTOR_MATH T sigmoid(T x) {
  const T e = exp(-EMBER_MATH(fabs)(x));
  const T s = (x >= T(0) ? T(1) : e) / (T(1) + e);
  return x != x ? x : s;
}
// tanh of a float as TensorFlow's CPU kernels compute it (Eigen's fast tanh in its FMA form): a rational function,
// an odd polynomial of degree 13 over an even one of degree 6, on [-c, c] (c where it reaches +-1), x itself where
// |x| < 0.0004, NaN kept; within 5 ulp.
EMBER_VECTOR_MATH float tanh_float(float a) {
  const float c = 7.99881172180175781f;
  const float x = a > c ? c : (a < -c ? -c : a);
  const float x2 = x * x;
  float p = EMBER_MATH(fma)(x2, -2.76076847742355e-16f, 2.00018790482477e-13f);
  p = EMBER_MATH(fma)(x2, p, -8.60467152213735e-11f);
  p = EMBER_MATH(fma)(x2, p, 5.12229709037114e-08f);
  p = EMBER_MATH(fma)(x2, p, 1.48572235717979e-05f);
  p = EMBER_MATH(fma)(x2, p, 6.37261928875436e-04f);
  p = EMBER_MATH(fma)(x2, p, 4.89352455891786e-03f);
  p = x * p;
  float q = EMBER_MATH(fma)(x2, 1.19825839466702e-06f, 1.18534705686654e-04f);
  q = EMBER_MATH(fma)(x2, q, 2.26843463243900e-03f);
  q = EMBER_MATH(fma)(x2, q, 4.89352518554385e-03f);
  const float r = p / q;
  return EMBER_MATH(fabs)(a) < 0.0004f || a != a ? a : r;
}
EMBER_FLOAT_FORM(tanh)
#undef EMBER_FLOAT_FORM
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
  EMBER_VECTOR_MATH T operator()(T x) const { return detail::exp(x); }
};
struct Log {
  template <class T>
  EMBER_VECTOR_MATH T operator()(T x) const { return detail::log(x); }
};
struct Log1p {
  template <class T>
  EMBER_VECTOR_MATH T operator()(T x) const { return detail::log1p(x); }
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
  EMBER_VECTOR_MATH T operator()(T x) const { return detail::tanh(x); }
};
struct Sigmoid {
  template <class T>
  EMBER_VECTOR_MATH T operator()(T x) const { return detail::sigmoid(x); }
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
  EMBER_VECTOR_MATH T operator()(T x) const { return x < T(0) ? detail::expm1(x) : x; }
};
struct Selu {
  template <class T>
  EMBER_VECTOR_MATH T operator()(T x) const {
    const T scale = T(1.0507009873554804934193349852946);
    const T alpha = T(1.6732632423543772848170429916717);
    return x < T(0) ? scale * alpha * detail::expm1(x) : scale * x;
  }
};
// gelu's two forms, also as functors of their own: a CPU loop picks one before it starts (Gelu's flag, read in the
// loop, keeps it from vectorising).
struct GeluExact {
  template <class T>
  EMBER_VECTOR_MATH T operator()(T x) const {
    return T(0.5) * x * (T(1) + detail::erf(x * T(0.7071067811865476)));
  }
};
struct GeluTanh {
  template <class T>
  EMBER_VECTOR_MATH T operator()(T x) const {
    const T k = T(0.7978845608028654);  // sqrt(2 / pi)
    return T(0.5) * x * (T(1) + detail::tanh(k * (x + T(0.044715) * x * x * x)));
  }
};
struct Gelu {
  bool approximate = false;
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const {
    return approximate ? GeluTanh{}(x) : GeluExact{}(x);
  }
};
// TF's threshold form: exp(x) below log(eps) + 2, x above its negation, log1p(exp(x)) between, so
// neither exp overflow nor the loss of tiny values in 1 + exp(x) can occur.
struct Softplus {
  template <class T>
  EMBER_VECTOR_MATH T operator()(T x) const {
    // log(epsilon) + 2 of the compute type (float for the half types too, which only helps them).
    const T threshold = sizeof(T) == sizeof(float) ? T(-13.942385152878742) : T(-34.04365338911715);
    const T e = detail::exp(x);
    return detail::select(x > -threshold, x, detail::select(x < threshold, e, detail::log1p(e)));
  }
};
struct Softsign {
  template <class T>
  EMBER_HOST_DEVICE T operator()(T x) const { return x / (T(1) + EMBER_MATH(fabs)(x)); }
};
struct Swish {
  template <class T>
  EMBER_VECTOR_MATH T operator()(T x) const { return x * detail::sigmoid(x); }
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
