#include "framework/model/callbacks/python_format.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace ember::callbacks {

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string out = std::signbit(value) ? "-" : "";
  if (value == 0) return out + "0.0";

  // to_chars without a precision gives the shortest round-trip digits, as Python's repr does.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, std::abs(value), std::chars_format::scientific);
  const std::string s(buf, r.ptr);
  const size_t e = s.find('e');
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int exponent = std::atoi(s.c_str() + e + 1);  // value = d.ddd x 10^exponent
  const int decpt = exponent + 1;                     // value = 0.dddd x 10^decpt
  const int n = static_cast<int>(digits.size());

  // CPython's float_repr_style "short" ('r' format): scientific when decpt <= -4 or decpt > 16.
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (n > 1) out.append(1, '.').append(digits, 1, std::string::npos);
    const int a = std::abs(exponent);
    out += exponent < 0 ? "e-" : "e+";
    if (a < 10) out += "0";
    return out + std::to_string(a);
  }
  if (decpt <= 0) return out.append("0.").append(static_cast<size_t>(-decpt), '0').append(digits);
  if (decpt >= n) return out.append(digits).append(static_cast<size_t>(decpt - n), '0').append(".0");
  const size_t point = static_cast<size_t>(decpt);
  return out.append(digits, 0, point).append(1, '.').append(digits, point, std::string::npos);
}

}  // namespace ember::callbacks
