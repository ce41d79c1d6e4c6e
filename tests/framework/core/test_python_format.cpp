// python_str_format: Python's str.format with named fields, as ModelCheckpoint formats file paths. The
// expected strings are what CPython 3.11 prints for the same format and values.
#include <catch2/catch.hpp>

#include <tuple>
#include <vector>

#include "framework/ember.h"

using namespace ember;
using ember::callbacks::python_str_format;

TEST_CASE("python_str_format matches Python's str.format", "[callbacks][format]") {
  using Args = std::map<std::string, callbacks::PythonFormatArg>;
  CHECK(python_str_format("ckpt-{epoch:02d}-{val_loss:.2f}.weights.h5", Args{{"epoch", int64_t{3}}, {"val_loss", 0.123456}}) ==
        "ckpt-03-0.12.weights.h5");
  CHECK(python_str_format("{epoch}", Args{{"epoch", int64_t{7}}}) == "7");
  CHECK(python_str_format("{loss}", Args{{"loss", 0.1}}) == "0.1");
  CHECK(python_str_format("{loss:.3}", Args{{"loss", 1.0}}) == "1.0");
  CHECK(python_str_format("{loss:.3}", Args{{"loss", 1234.5}}) == "1.23e+03");
  CHECK(python_str_format("{loss:e}", Args{{"loss", 0.000123}}) == "1.230000e-04");
  CHECK(python_str_format("{loss:10.4f}|", Args{{"loss", -3.14159}}) == "   -3.1416|");
  CHECK(python_str_format("{loss:<8.2f}|", Args{{"loss", 2.5}}) == "2.50    |");
  CHECK(python_str_format("{loss:^9.1f}|", Args{{"loss", 2.5}}) == "   2.5   |");
  CHECK(python_str_format("{loss:+.1%}", Args{{"loss", 0.256}}) == "+25.6%");
  CHECK(python_str_format("{n:,}", Args{{"n", int64_t{1234567}}}) == "1,234,567");
  CHECK(python_str_format("{n:+05d}", Args{{"n", int64_t{42}}}) == "+0042");
  CHECK(python_str_format("{n:.2f}", Args{{"n", int64_t{3}}}) == "3.00");
  CHECK(python_str_format("{x:g}", Args{{"x", 1e-5}}) == "1e-05");
  CHECK(python_str_format("{x:G}", Args{{"x", std::numeric_limits<double>::infinity()}}) == "INF");
  CHECK(python_str_format("{{literal}}-{s}", Args{{"s", std::string("abc")}}) == "{literal}-abc");
  CHECK(python_str_format("{s:>5}", Args{{"s", std::string("ab")}}) == "   ab");
  CHECK(python_str_format("{x:*^7.2f}", Args{{"x", 1.5}}) == "*1.50**");
  CHECK(python_str_format("{x:010.3f}", Args{{"x", -1.5}}) == "-00001.500");
  CHECK(python_str_format("{x}", Args{{"x", 1e20}}) == "1e+20");
  // Precision without a type: the exponent form from exponent precision - 1 on, one earlier than 'g'.
  const std::vector<std::tuple<double, const char*, const char*>> no_type = {
      {12.0, "{x:.2}", "1.2e+01"},  {100.0, "{x:.3}", "1e+02"},   {1.5, "{x:.0}", "2e+00"},
      {1234.0, "{x:.4}", "1.234e+03"}, {0.0, "{x:.1}", "0e+00"},  {0.0, "{x:.2}", "0.0"},
      {99.96, "{x:.3}", "1e+02"},   {9.99, "{x:.2}", "1e+01"},    {0.00012345, "{x:.3}", "0.000123"},
      {12.0, "{x:#.2}", "1.2e+01"}, {120.0, "{x:#.3}", "1.20e+02"}, {5.0, "{x:.1}", "5e+00"},
      {0.5, "{x:.1}", "0.5"},       {12.5, "{x:.3}", "12.5"}};
  for (const auto& [v, format, want] : no_type) {
    INFO(format << " of " << v);
    CHECK(python_str_format(format, Args{{"x", v}}) == want);
  }
}

TEST_CASE("python_str_format rejects what Python rejects", "[callbacks][format]") {
  using Args = std::map<std::string, callbacks::PythonFormatArg>;
  CHECK_THROWS_WITH(python_str_format("{val_acc}.h5", Args{{"loss", 1.0}}), Catch::Contains("'val_acc'"));
  CHECK_THROWS_WITH(python_str_format("{loss:d}", Args{{"loss", 1.0}}),
                    Catch::Contains("Unknown format code 'd' for object of type 'float'"));
  CHECK_THROWS_WITH(python_str_format("{epoch:.2d}", Args{{"epoch", int64_t{1}}}), Catch::Contains("Precision not allowed"));
  CHECK_THROWS_AS(python_str_format("{loss", Args{{"loss", 1.0}}), InvalidArgument);
  CHECK_THROWS_AS(python_str_format("loss}", Args{{"loss", 1.0}}), InvalidArgument);
  CHECK_THROWS_AS(python_str_format("{loss:.f}", Args{{"loss", 1.0}}), InvalidArgument);
}
