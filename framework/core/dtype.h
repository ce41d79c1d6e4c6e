#pragma once
// DType, its traits table, and the dispatch macros that turn a runtime dtype into a C++ type.
// GCC 12's own AVX-512 intrinsics header trips its -Wmaybe-uninitialized (-Wuninitialized at -O1) wherever
// Eigen's packet code inlines it (GCC bug 105593, fixed in GCC 13): hundreds of warnings about GCC's code,
// none about ours.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop
#else
#include <Eigen/Core>
#endif
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace ember {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

// String (TF's tf.string): each element a std::string of bytes; host-only, and only the ops that move
// elements around (reshape, slicing, concat, gather, ...) and the data pipeline take it.
enum class DType : uint8_t { Float32, Float64, Float16, BFloat16, Int32, Int64, UInt8, Bool, String };
inline constexpr int kNumDTypes = 9;

// Static facts about one dtype.
struct DTypeTraits {
  const char* name;     // TF spelling: "float32", "bfloat16", "bool", ...
  size_t size;          // bytes per element
  bool is_floating;
  bool is_integer;      // Int32, Int64, UInt8 (not Bool)
};

// The traits of `t`.
const DTypeTraits& traits(DType t);
inline const char* dtype_name(DType t) { return traits(t).name; }
inline size_t dtype_size(DType t) { return traits(t).size; }
inline bool is_floating(DType t) { return traits(t).is_floating; }
inline bool is_integer(DType t) { return traits(t).is_integer; }
// Parses a TF dtype name ("float32", "int64", ...); throws InvalidArgument otherwise.
DType dtype_from_name(std::string_view name);
std::ostream& operator<<(std::ostream& os, DType t);
// Copies `count` elements of `dtype` between host buffers: strings are assigned (both buffers must hold
// constructed std::strings), every other dtype is copied bytewise. Every element copy that may meet a
// string tensor goes through here.
void copy_host_elements(void* dst, const void* src, size_t count, DType dtype);

// C++ type -> DType.
template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <> struct dtype_of<half> { static constexpr DType value = DType::Float16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };
template <> struct dtype_of<std::string> { static constexpr DType value = DType::String; };
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

// The type kernels compute in: float for the half types, the type itself otherwise.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<half> { using type = float; };
template <> struct compute_type<bfloat16> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

}  // namespace ember

// EMBER_DISPATCH_<SET>(dtype, "opname", body): runs body with scalar_t bound to the C++ type of dtype;
// a dtype outside the set throws InvalidArgument naming the op.
#define EMBER_DTYPE_CASE_(D, CT, ...) \
  case ::ember::DType::D: {           \
    using scalar_t = CT;              \
    __VA_ARGS__;                      \
    break;                            \
  }
#define EMBER_DTYPE_DEFAULT_(dtype, opname, what)                                               \
  default:                                                                                   \
    throw ::ember::make_error<::ember::InvalidArgument>(opname, ": dtype ", dtype, " is not supported (expected ", \
                                                        what, ")");

#define EMBER_DISPATCH_FLOAT(dtype, opname, ...)                       \
  switch (dtype) {                                                     \
    EMBER_DTYPE_CASE_(Float32, float, __VA_ARGS__)                     \
    EMBER_DTYPE_CASE_(Float64, double, __VA_ARGS__)                    \
    EMBER_DTYPE_CASE_(Float16, ::ember::half, __VA_ARGS__)             \
    EMBER_DTYPE_CASE_(BFloat16, ::ember::bfloat16, __VA_ARGS__)        \
    EMBER_DTYPE_DEFAULT_(dtype, opname, "a floating dtype")            \
  }

#define EMBER_DISPATCH_NUMERIC(dtype, opname, ...)                     \
  switch (dtype) {                                                     \
    EMBER_DTYPE_CASE_(Float32, float, __VA_ARGS__)                     \
    EMBER_DTYPE_CASE_(Float64, double, __VA_ARGS__)                    \
    EMBER_DTYPE_CASE_(Float16, ::ember::half, __VA_ARGS__)             \
    EMBER_DTYPE_CASE_(BFloat16, ::ember::bfloat16, __VA_ARGS__)        \
    EMBER_DTYPE_CASE_(Int32, int32_t, __VA_ARGS__)                     \
    EMBER_DTYPE_CASE_(Int64, int64_t, __VA_ARGS__)                     \
    EMBER_DTYPE_CASE_(UInt8, uint8_t, __VA_ARGS__)                     \
    EMBER_DTYPE_DEFAULT_(dtype, opname, "a numeric dtype")             \
  }

#define EMBER_DISPATCH_ALL(dtype, opname, ...)                         \
  switch (dtype) {                                                     \
    EMBER_DTYPE_CASE_(Float32, float, __VA_ARGS__)                     \
    EMBER_DTYPE_CASE_(Float64, double, __VA_ARGS__)                    \
    EMBER_DTYPE_CASE_(Float16, ::ember::half, __VA_ARGS__)             \
    EMBER_DTYPE_CASE_(BFloat16, ::ember::bfloat16, __VA_ARGS__)        \
    EMBER_DTYPE_CASE_(Int32, int32_t, __VA_ARGS__)                     \
    EMBER_DTYPE_CASE_(Int64, int64_t, __VA_ARGS__)                     \
    EMBER_DTYPE_CASE_(UInt8, uint8_t, __VA_ARGS__)                     \
    EMBER_DTYPE_CASE_(Bool, bool, __VA_ARGS__)                         \
    EMBER_DTYPE_DEFAULT_(dtype, opname, "a numeric or bool dtype")     \
  }

// Dispatch over the dtypes the sign-carrying numeric ops accept: floats, int32 and int64.
#define EMBER_DISPATCH_SIGNED(dtype, opname, ...)                      \
  switch (dtype) {                                                     \
    EMBER_DTYPE_CASE_(Float32, float, __VA_ARGS__)                     \
    EMBER_DTYPE_CASE_(Float64, double, __VA_ARGS__)                    \
    EMBER_DTYPE_CASE_(Float16, ::ember::half, __VA_ARGS__)             \
    EMBER_DTYPE_CASE_(BFloat16, ::ember::bfloat16, __VA_ARGS__)        \
    EMBER_DTYPE_CASE_(Int32, int32_t, __VA_ARGS__)                     \
    EMBER_DTYPE_CASE_(Int64, int64_t, __VA_ARGS__)                     \
    EMBER_DTYPE_DEFAULT_(dtype, opname, "float32, float64, float16, bfloat16, int32 or int64") \
  }

// The dtype sets kernels register with (EMBER_REGISTER_KERNEL) and the ops document.
#define EMBER_FLOAT_DTYPES ::ember::DType::Float32, ::ember::DType::Float64, ::ember::DType::Float16, ::ember::DType::BFloat16
#define EMBER_SIGNED_DTYPES EMBER_FLOAT_DTYPES, ::ember::DType::Int32, ::ember::DType::Int64
#define EMBER_NUMERIC_DTYPES EMBER_SIGNED_DTYPES, ::ember::DType::UInt8
#define EMBER_ALL_DTYPES EMBER_NUMERIC_DTYPES, ::ember::DType::Bool
