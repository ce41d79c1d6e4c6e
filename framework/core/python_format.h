#pragma once
// Python's text for numbers, where Keras prints them with str()/repr(): CSVLogger's cells, the learning
// rates in ReduceLROnPlateau's and LearningRateScheduler's messages, optimizers' argument errors.
#include <cstdint>
#include <map>
#include <string>
#include <variant>

namespace ember {

// A value for python_str_format: an int, a float or a string, as Python would hold it.
using PythonFormatArg = std::variant<int64_t, double, std::string>;

// Python's str.format with named fields only (how ModelCheckpoint names files: "ckpt-{epoch:02d}-
// {val_loss:.2f}.weights.h5"): "{{"/"}}" escapes and the format-spec mini-language [[fill]align][sign]
// [#][0][width][,][.precision][type] with types d, f/F, e/E, g/G, %, s and none. A field that is not in
// `args` is InvalidArgument naming it (Python's KeyError); a spec that does not fit the value's type
// (e.g. "d" for a float) is InvalidArgument, as Python's ValueError.
std::string python_str_format(const std::string& format, const std::map<std::string, PythonFormatArg>& args);

// Python's repr(float): the shortest digits that read back to the same double, in fixed notation from
// 1e-4 up to below 1e16 ("0.0001", "1234.5", "1.0", "1000000000000000.0"), otherwise scientific with a
// signed exponent of at least two digits ("1e-05", "1e+16", "1.5e+300"); "nan", "inf", "-inf".
std::string python_float_repr(double value);

}  // namespace ember
