// Tensor::to_string: TF's str() of a tensor, whose values are NumPy's str() of the array
// (numpy/_core/arrayprint.py with its default options and the pre-2.3 exponent cutoffs, legacy='2.2'),
// with each of NumPy's line breaks (and the indentation after it) written as one space.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/tensor.h"

namespace ember {

namespace {

// NumPy's print options: precision, threshold, edgeitems, linewidth.
constexpr int kPrecision = 8;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 75;
// Stands for NumPy's indentation while lines are laid out; dropped once they are joined into one.
constexpr char kIndent = '\x01';

// Decimal digits of a positive finite value: value = 0.digits x 10^exp, no trailing zeros in digits.
struct Decimal {
  std::string digits;
  int exp = 0;
};

// Reads "d.ddde+XX" or "de-XX" (printf's %e and to_chars' scientific output).
Decimal parse_scientific(const std::string& s) {
  Decimal d;
  size_t e = s.find('e');
  for (size_t i = 0; i < e; ++i)
    if (s[i] >= '0' && s[i] <= '9') d.digits += s[i];
  d.exp = std::atoi(s.c_str() + e + 1) + 1;
  while (d.digits.size() > 1 && d.digits.back() == '0') d.digits.pop_back();
  return d;
}

std::string printf_string(const char* format, int precision, double v) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, precision, v);
  return buf;
}

// Shortest digits that read back as the same float16 (NumPy's Dragon4 in unique mode). Tries each length,
// with the correctly rounded candidate and its two neighbours, against float16's rounding interval.
Decimal shortest_half(double v) {
  const uint16_t bits = Eigen::numext::bit_cast<uint16_t>(half(static_cast<float>(v)));
  auto value_of = [](int b) { return static_cast<double>(static_cast<float>(Eigen::numext::bit_cast<half>(
                                  static_cast<uint16_t>(b)))); };
  const double down = value_of(bits - 1);
  const double up = bits + 1 == 0x7c00 ? v + (v - down) : value_of(bits + 1);
  const double lo = (down + v) / 2, hi = (v + up) / 2;
  const bool inclusive = (bits & 1) == 0;  // round-half-even gives a tie to the even mantissa
  for (int p = 1; p <= 17; ++p) {
    Decimal rounded = parse_scientific(printf_string("%.*e", p - 1, v));
    long long m = std::atoll(rounded.digits.c_str());
    for (size_t i = rounded.digits.size(); i < static_cast<size_t>(p); ++i) m *= 10;
    const int e10 = rounded.exp - p;  // candidate = m' x 10^e10
    bool found = false;
    double best_dist = 0;
    long long best = 0;
    // The correctly rounded candidate first: on a tie it wins, as Dragon4 rounds ties to even too.
    for (long long c : {m, m - 1, m + 1}) {
      if (c <= 0) continue;
      const double cv = std::strtod((std::to_string(c) + "e" + std::to_string(e10)).c_str(), nullptr);
      const bool inside = inclusive ? (cv >= lo && cv <= hi) : (cv > lo && cv < hi);
      if (inside && (!found || std::abs(cv - v) < best_dist)) {
        found = true;
        best = c;
        best_dist = std::abs(cv - v);
      }
    }
    if (found) {
      std::string digits = std::to_string(best);
      Decimal d{digits, e10 + static_cast<int>(digits.size())};
      while (d.digits.size() > 1 && d.digits.back() == '0') d.digits.pop_back();
      return d;
    }
  }
  return parse_scientific(printf_string("%.*e", 16, v));
}

Decimal shortest(double v, DType t) {
  char buf[64];
  std::to_chars_result r;
  if (t == DType::Float64)
    r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  else if (t == DType::Float16)
    return shortest_half(v);
  else
    r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v), std::chars_format::scientific);
  return parse_scientific(std::string(buf, r.ptr));
}

void trim_zeros(std::string& s) {
  while (!s.empty() && s.back() == '0') s.pop_back();
}

// NumPy's dragon4_positional in unique mode: the integer part (with its sign) and the fraction digits,
// at most `precision` of them (-1: no limit), rounding the exact value when the shortest form is longer.
// With min_digits given (arrays pass 0) Dragon4 writes every integer digit exactly: 52384 stays 52384
// where the shortest form would print 52380.
struct Positional {
  std::string integer, fraction;
};
Positional positional(double x, DType t, int precision, bool exact_integer = false) {
  const double v = std::abs(x);
  Positional p;
  if (v == 0) {
    p.integer = "0";
  } else {
    Decimal d = shortest(v, t);
    const int len = static_cast<int>(d.digits.size());
    if (precision >= 0 && len - d.exp > precision) {
      std::string s = printf_string("%.*f", precision, v);
      size_t dot = s.find('.');
      p.integer = s.substr(0, dot);
      if (dot != std::string::npos) p.fraction = s.substr(dot + 1);
      trim_zeros(p.fraction);
    } else if (d.exp <= 0) {
      p.integer = "0";
      p.fraction = std::string(static_cast<size_t>(-d.exp), '0') + d.digits;
    } else if (len <= d.exp) {
      p.integer = exact_integer ? printf_string("%.*f", 0, v) : d.digits + std::string(static_cast<size_t>(d.exp - len), '0');
    } else {
      p.integer = d.digits.substr(0, static_cast<size_t>(d.exp));
      p.fraction = d.digits.substr(static_cast<size_t>(d.exp));
    }
  }
  if (std::signbit(x)) p.integer = "-" + p.integer;
  return p;
}

// NumPy's dragon4_scientific in unique mode: leading digit (with sign), fraction digits (at most
// `precision`, -1: no limit) and the decimal exponent. Below `min_digits` fraction digits Dragon4 goes on
// with the exact value's digits (rounding the last), so those come from printf's exact expansion.
struct Scientific {
  std::string integer, fraction;
  int exp = 0;
};
Scientific scientific(double x, DType t, int precision, int min_digits = 0) {
  const double v = std::abs(x);
  Scientific s;
  Decimal d{"0", 1};
  if (v != 0) {
    d = shortest(v, t);
    const int fraction_digits = static_cast<int>(d.digits.size()) - 1;
    if (precision >= 0 && fraction_digits > precision) {
      d = parse_scientific(printf_string("%.*e", precision, v));
    } else if (fraction_digits < min_digits) {
      d = parse_scientific(printf_string("%.*e", min_digits, v));
    }
  }
  s.integer = std::signbit(x) ? "-" : "";
  s.integer += d.digits[0];
  s.fraction = d.digits.substr(1);
  s.exp = d.exp - 1;
  return s;
}

// "e+05": the exponent with its sign and at least max(2, digits) digits.
std::string exponent_string(int e, int digits) {
  std::string n = std::to_string(std::abs(e));
  if (static_cast<int>(n.size()) < std::max(2, digits)) n.insert(0, std::max(2, digits) - n.size(), '0');
  return std::string("e") + (e < 0 ? "-" : "+") + n;
}

std::string nonfinite_string(double x) { return std::isnan(x) ? "nan" : (x < 0 ? "-inf" : "inf"); }

// NumPy's str() of a float scalar (scalartypes.c): positional between 1e-4 and 1e16, else scientific.
std::string float_scalar_string(double x, DType t) {
  if (!std::isfinite(x)) return nonfinite_string(x);
  const double v = std::abs(x);
  if (v == 0 || (v >= 1e-4 && v < 1e16)) {
    Positional p = positional(x, t, -1);
    return p.integer + "." + (p.fraction.empty() ? "0" : p.fraction);
  }
  Scientific s = scientific(x, t, -1);
  return s.integer + (s.fraction.empty() ? "" : "." + s.fraction) + exponent_string(s.exp, 2);
}

// Whether NumPy switches an array to scientific notation; it compares in the array's own dtype.
template <class T>
bool needs_exponent(double max_val, double min_val) {
  using C = compute_t<T>;
  const C ratio = static_cast<C>(static_cast<T>(static_cast<C>(max_val) / static_cast<C>(min_val)));
  auto as_t = [](double d) { return static_cast<C>(static_cast<T>(static_cast<C>(d))); };
  return static_cast<C>(max_val) >= as_t(1e8) || static_cast<C>(min_val) < as_t(1e-4) || ratio > as_t(1000.0);
}

// NumPy's FloatingFormat (floatmode 'maxprec'): one layout, fitted to the values shown, for every element.
class FloatFormat {
 public:
  FloatFormat(const std::vector<double>& values, DType t) : t_(t) {
    std::vector<double> finite;
    double max_val = 0, min_val = 0;
    bool any_nonzero = false, any_nonfinite = false, neg_inf = false;
    for (double x : values) {
      if (!std::isfinite(x)) {
        any_nonfinite = true;
        neg_inf |= std::isinf(x) && x < 0;
        continue;
      }
      finite.push_back(x);
      if (x == 0) continue;
      const double a = std::abs(x);
      max_val = any_nonzero ? std::max(max_val, a) : a;
      min_val = any_nonzero ? std::min(min_val, a) : a;
      any_nonzero = true;
    }
    if (any_nonzero) {
      if (t == DType::Float64) exp_format_ = needs_exponent<double>(max_val, min_val);
      else if (t == DType::Float16) exp_format_ = needs_exponent<half>(max_val, min_val);
      else exp_format_ = needs_exponent<float>(max_val, min_val);
    }
    if (finite.empty()) {
      pad_left_ = pad_right_ = 0;
    } else if (exp_format_) {
      int exp_len = 0;
      for (double x : finite) {
        Scientific s = scientific(x, t, kPrecision);
        precision_ = std::max(precision_, static_cast<int>(s.fraction.size()));
        pad_left_ = std::max(pad_left_, static_cast<int>(s.integer.size()));
        exp_len = std::max(exp_len, static_cast<int>(exponent_string(s.exp, 2).size()) - 1);
      }
      exp_size_ = exp_len - 1;
      pad_right_ = exp_size_ + 2 + precision_;
    } else {
      precision_ = kPrecision;
      for (double x : finite) {
        Positional p = positional(x, t, kPrecision);
        pad_left_ = std::max(pad_left_, static_cast<int>(p.integer.size()));
        pad_right_ = std::max(pad_right_, static_cast<int>(p.fraction.size()));
      }
    }
    if (any_nonfinite) {
      const int offset = pad_right_ + 1;
      pad_left_ = std::max({pad_left_, 3 - offset, 3 + (neg_inf ? 1 : 0) - offset});
    }
  }

  std::string operator()(double x) const {
    if (!std::isfinite(x)) {
      std::string r = nonfinite_string(x);
      return std::string(static_cast<size_t>(std::max(0, pad_left_ + pad_right_ + 1 - static_cast<int>(r.size()))), ' ') + r;
    }
    std::string out;
    if (exp_format_) {
      Scientific s = scientific(x, t_, precision_, precision_);
      s.fraction.resize(std::max(s.fraction.size(), static_cast<size_t>(precision_)), '0');
      out = pad(s.integer, pad_left_) + "." + s.fraction + exponent_string(s.exp, exp_size_);
    } else {
      Positional p = positional(x, t_, precision_, true);
      p.fraction.resize(std::max(p.fraction.size(), static_cast<size_t>(pad_right_)), ' ');
      out = pad(p.integer, pad_left_) + "." + p.fraction;
    }
    return out;
  }

 private:
  static std::string pad(const std::string& s, int width) {
    return std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(s.size()))), ' ') + s;
  }
  DType t_;
  bool exp_format_ = false;
  int precision_ = 0, pad_left_ = 0, pad_right_ = 0, exp_size_ = -1;
};

// bfloat16 is not a NumPy floating type: TF's bfloat16 (ml_dtypes) prints each element as C++'s
// `os << float(x)` would (%g, 6 digits), without alignment, and NaN without a sign.
std::string bfloat16_string(double x) {
  if (std::isnan(x)) return "nan";
  return printf_string("%.*g", 6, x);
}

std::string rstrip(const std::string& s) {
  size_t end = s.find_last_not_of(' ');
  return end == std::string::npos ? std::string() : s.substr(0, end + 1);
}

// NumPy's _formatArray: nested brackets, "..." for summarised axes, and rows wrapped at kLineWidth.
class Layout {
 public:
  Layout(const Shape& shape, bool summarise, std::function<std::string(int64_t)> element)
      : shape_(shape), strides_(shape.strides()), summarise_(summarise), element_(std::move(element)) {}

  std::string format() const { return recurse(0, 0, std::string(1, kIndent), kLineWidth); }

 private:
  // NumPy's _extendLine: starts a new line when the word would pass the width (unless it cannot help).
  static void extend(std::string& s, std::string& line, const std::string& word, int width,
                     const std::string& prefix) {
    bool wrap = static_cast<int>(line.size() + word.size()) > width && line.size() > prefix.size();
    if (wrap) {
      s += rstrip(line) + "\n";
      line = prefix;
    }
    line += word;
  }

  std::string recurse(int64_t axis, int64_t offset, const std::string& hang, int width) const {
    if (axis == shape_.rank()) return element_(offset);
    const std::string next_hang = hang + kIndent;
    const int next_width = width - 1;
    const int64_t len = shape_[axis];
    const bool summary = summarise_ && 2 * kEdgeItems < len;
    const int64_t leading = summary ? kEdgeItems : 0, trailing = summary ? kEdgeItems : len;
    auto child = [&](int64_t i) { return recurse(axis + 1, offset + i * strides_[axis], next_hang, next_width); };
    std::string s;
    if (axis == shape_.rank() - 1) {
      const int elem_width = width - 1;
      std::string line = hang;
      for (int64_t i = 0; i < leading; ++i) {
        extend(s, line, child(i), elem_width, hang);
        line += ' ';
      }
      if (summary) {
        extend(s, line, "...", elem_width, hang);
        line += ' ';
      }
      for (int64_t i = trailing; i > 1; --i) {
        extend(s, line, child(len - i), elem_width, hang);
        line += ' ';
      }
      extend(s, line, child(len - 1), elem_width, hang);
      s += line;
    } else {
      const std::string line_sep(static_cast<size_t>(shape_.rank() - axis - 1), '\n');
      for (int64_t i = 0; i < leading; ++i) s += hang + child(i) + line_sep;
      if (summary) s += hang + "..." + line_sep;
      for (int64_t i = trailing; i > 1; --i) s += hang + child(len - i) + line_sep;
      s += hang + child(len - 1);
    }
    return "[" + s.substr(hang.size()) + "]";
  }

  const Shape& shape_;
  std::vector<int64_t> strides_;
  bool summarise_;
  std::function<std::string(int64_t)> element_;
};

// Flat indices of the elements NumPy shows (all, or the edge items of each long axis when summarising).
void shown_elements(const Shape& shape, const std::vector<int64_t>& strides, bool summarise, int64_t axis,
                    int64_t offset, std::vector<int64_t>& out) {
  if (axis == shape.rank()) {
    out.push_back(offset);
    return;
  }
  const int64_t len = shape[axis];
  for (int64_t i = 0; i < len; ++i) {
    if (summarise && len > 2 * kEdgeItems && i == kEdgeItems) i = len - kEdgeItems;
    shown_elements(shape, strides, summarise, axis + 1, offset + i * strides[axis], out);
  }
}

// Joins NumPy's lines: indentation dropped, each run of line breaks becomes one space.
std::string join_lines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == kIndent) continue;
    if (s[i] == '\n') {
      if (i == 0 || s[i - 1] != '\n') out += ' ';
      continue;
    }
    out += s[i];
  }
  return out;
}

// Python's repr of a bytes object, as TF prints a tf.string element: b'a\tb', b"it's".
std::string bytes_repr(const std::string& s) {
  const char quote = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out = "b";
  out += quote;
  for (unsigned char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

// The value text of a CPU tensor: NumPy's str() of the array.
std::string values_string(const Tensor& t) {
  const DType dt = t.dtype();
  if (dt == DType::String) {
    const std::string* strings = static_cast<const std::string*>(t.raw_data());
    if (t.rank() == 0) return bytes_repr(strings[0]);
    if (t.num_elements() == 0) return "[]";
    return join_lines(Layout(t.shape(), t.num_elements() > kThreshold, [strings](int64_t i) {
                        return bytes_repr(strings[i]);
                      }).format());
  }
  const void* data = t.raw_data();
  std::function<double(int64_t)> as_double;
  EMBER_DISPATCH_ALL(dt, "Tensor::to_string", {
    as_double = [data](int64_t i) { return static_cast<double>(static_cast<const scalar_t*>(data)[i]); };
  });
  auto as_int = [&](int64_t i) -> std::string {
    if (dt == DType::Int64) return std::to_string(static_cast<const int64_t*>(data)[i]);
    return std::to_string(static_cast<int64_t>(as_double(i)));
  };
  if (t.rank() == 0) {
    if (dt == DType::Bool) return as_double(0) != 0 ? "True" : "False";
    if (dt == DType::BFloat16) return bfloat16_string(as_double(0));
    if (is_floating(dt)) return float_scalar_string(as_double(0), dt);
    return as_int(0);
  }
  if (t.num_elements() == 0) return "[]";

  const bool summarise = t.num_elements() > kThreshold;
  const Shape& shape = t.shape();
  std::vector<int64_t> shown;
  shown_elements(shape, shape.strides(), summarise, 0, 0, shown);
  std::function<std::string(int64_t)> element;
  if (dt == DType::Bool) {
    element = [&](int64_t i) -> std::string { return as_double(i) != 0 ? " True" : "False"; };
  } else if (dt == DType::BFloat16) {
    element = [&](int64_t i) { return bfloat16_string(as_double(i)); };
  } else if (is_floating(dt)) {
    std::vector<double> values;
    for (int64_t i : shown) values.push_back(as_double(i));
    auto format = std::make_shared<FloatFormat>(values, dt);
    element = [format, &as_double](int64_t i) { return (*format)(as_double(i)); };
  } else {
    size_t width = 0;
    for (int64_t i : shown) width = std::max(width, as_int(i).size());
    element = [width, &as_int](int64_t i) {
      std::string s = as_int(i);
      return std::string(width - std::min(width, s.size()), ' ') + s;
    };
  }
  return join_lines(Layout(shape, summarise, element).format());
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "ember.Tensor(<undefined>)";
  if (is_symbolic())
    return "<KerasTensor shape=" + shape().to_keras_string() + ", dtype=" + dtype_name(dtype()) + ">";
  const Tensor host = device().is_cpu() ? *this : to(Device::cpu());
  return "ember.Tensor(" + values_string(host) + ", shape=" + shape().to_string() + ", dtype=" + dtype_name(dtype()) +
         ", device=" + device().to_string() + ")";
}

}  // namespace ember
