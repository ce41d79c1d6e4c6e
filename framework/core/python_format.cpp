#include "framework/core/python_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <string>

#include "framework/core/error.h"

namespace ember {

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

namespace {

struct PyFormatSpec {
  char fill = ' ';
  char align = 0;  // '<', '>', '^', '=' or 0 (the type's default)
  char sign = '-';
  bool alternate = false;
  int width = 0;
  bool grouping = false;
  int precision = -1;
  char type = 0;
};

PyFormatSpec parse_py_format_spec(const std::string& spec, const std::string& format) {
  PyFormatSpec f;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (spec.size() >= 2 && is_align(spec[1])) {
    f.fill = spec[0];
    f.align = spec[1];
    i = 2;
  } else if (!spec.empty() && is_align(spec[0])) {
    f.align = spec[0];
    i = 1;
  }
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) f.sign = spec[i++];
  if (i < spec.size() && spec[i] == '#') f.alternate = (++i, true);
  if (i < spec.size() && spec[i] == '0') {
    if (!f.align) {
      f.fill = '0';
      f.align = '=';
    }
    ++i;
  }
  while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) f.width = f.width * 10 + (spec[i++] - '0');
  if (i < spec.size() && spec[i] == ',') f.grouping = (++i, true);
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    EMBER_CHECK(i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])), InvalidArgument)
        << "python_str_format: \"" << format << "\": format specifier missing precision in '" << spec << "'";
    f.precision = 0;
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])))
      f.precision = f.precision * 10 + (spec[i++] - '0');
  }
  if (i < spec.size()) f.type = spec[i++];
  EMBER_CHECK(i == spec.size(), InvalidArgument)
      << "python_str_format: \"" << format << "\": invalid format specifier '" << spec << "'";
  return f;
}

std::string py_group_thousands(const std::string& digits) {
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// The digits of a float under a printf conversion, Python's spelling of nan/inf.
std::string py_float_digits(double v, char type, int precision, bool alternate) {
  if (std::isnan(v)) return std::isupper(static_cast<unsigned char>(type)) ? "NAN" : "nan";
  if (std::isinf(v)) return std::isupper(static_cast<unsigned char>(type)) ? "INF" : "inf";
  const std::string conv = std::string("%") + (alternate ? "#" : "") + ".*" + type;
  char buf[512];
  std::snprintf(buf, sizeof buf, conv.c_str(), precision, v);
  return buf;
}

std::string py_apply_spec(const PythonFormatArg& arg, const PyFormatSpec& f, const std::string& field,
                          const std::string& format) {
  auto type_error = [&](const char* type_name) {
    EMBER_CHECK(false, InvalidArgument) << "python_str_format: \"" << format << "\": Unknown format code '" << f.type
                                        << "' for object of type '" << type_name << "' (field '" << field << "')";
  };
  std::string body;
  bool negative = false;
  bool numeric = true;
  if (const auto* s = std::get_if<std::string>(&arg)) {
    if (f.type && f.type != 's') type_error("str");
    body = f.precision >= 0 ? s->substr(0, static_cast<size_t>(f.precision)) : *s;
    numeric = false;
  } else if (const auto* n = std::get_if<int64_t>(&arg); n && (f.type == 0 || f.type == 'd')) {
    EMBER_CHECK(f.precision < 0, InvalidArgument)
        << "python_str_format: \"" << format << "\": Precision not allowed in integer format specifier (field '"
        << field << "')";
    negative = *n < 0;
    body = std::to_string(negative ? -static_cast<unsigned long long>(*n) : static_cast<unsigned long long>(*n));
    if (f.grouping) body = py_group_thousands(body);
  } else {
    const double v = n ? static_cast<double>(*n) : std::get<double>(arg);
    if (!n && f.type == 'd') type_error("float");
    if (f.type && std::string("fFeEgG%").find(f.type) == std::string::npos) type_error(n ? "int" : "float");
    negative = std::signbit(v) && !std::isnan(v);
    const double a = std::abs(v);
    if (f.type == 0 && f.precision < 0) {
      body = python_float_repr(a);
    } else if (f.type == 0) {
      // Precision without a type: like 'g', but a float keeps a ".0", and the exponent form starts one
      // decimal exponent earlier, at precision - 1 (CPython's format_float_short with ADD_DOT_0):
      // format(12.0, ".2") is "1.2e+01".
      const int p = std::max(f.precision, 1);
      body = py_float_digits(a, 'g', p, f.alternate);
      if (std::isfinite(a) && body.find('e') == std::string::npos) {
        const std::string e = py_float_digits(a, 'e', p - 1, f.alternate);
        if (std::stoi(e.substr(e.find('e') + 1)) == p - 1) {  // the exponent after rounding to p digits
          body = e;
          if (!f.alternate) {  // 'g' drops the mantissa's trailing zeros
            const size_t exp_at = body.find('e');
            size_t end = body.find('.') == std::string::npos ? exp_at : body.find_last_not_of('0', exp_at - 1) + 1;
            if (body[end - 1] == '.') --end;
            body = body.substr(0, end) + body.substr(exp_at);
          }
        }
      }
      if (std::isfinite(a) && body.find_first_of(".e") == std::string::npos) body += ".0";
    } else if (f.type == '%') {
      body = py_float_digits(a * 100, 'f', f.precision < 0 ? 6 : f.precision, f.alternate) + "%";
    } else {
      body = py_float_digits(a, f.type, f.precision < 0 ? 6 : f.precision, f.alternate);
    }
    if (f.grouping && std::isfinite(a)) {
      const size_t int_end = body.find_first_not_of("0123456789");
      body = py_group_thousands(body.substr(0, int_end)) + (int_end == std::string::npos ? "" : body.substr(int_end));
    }
  }
  std::string sign;
  if (numeric) sign = negative ? "-" : f.sign == '+' ? "+" : f.sign == ' ' ? " " : "";
  const char align = f.align ? f.align : numeric ? '>' : '<';
  const int pad = std::max(0, f.width - static_cast<int>(sign.size() + body.size()));
  const std::string fill(static_cast<size_t>(pad), f.fill);
  switch (align) {
    case '<': return sign + body + fill;
    case '^': return fill.substr(0, fill.size() / 2) + sign + body + fill.substr(fill.size() / 2);
    case '=': return sign + fill + body;
    default: return fill + sign + body;
  }
}

}  // namespace

std::string python_str_format(const std::string& format, const std::map<std::string, PythonFormatArg>& args) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      EMBER_CHECK(i + 1 < format.size() && format[i + 1] == '}', InvalidArgument)
          << "python_str_format: \"" << format << "\": Single '}' encountered in format string";
      out += '}';
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    EMBER_CHECK(close != std::string::npos, InvalidArgument)
        << "python_str_format: \"" << format << "\": Single '{' encountered in format string";
    const std::string field = format.substr(i + 1, close - i - 1);
    const size_t colon = field.find(':');
    const std::string name = field.substr(0, colon);
    const std::string spec = colon == std::string::npos ? "" : field.substr(colon + 1);
    const auto it = args.find(name);
    EMBER_CHECK(it != args.end(), InvalidArgument)
        << "python_str_format: \"" << format << "\" names '" << name << "', which is not among the values given";
    out += py_apply_spec(it->second, parse_py_format_spec(spec, format), name, format);
    i = close;
  }
  return out;
}

}  // namespace ember
