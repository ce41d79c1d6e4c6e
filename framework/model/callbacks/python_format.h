#pragma once
// Python's text for numbers, where Keras's callbacks print them with str()/repr(): CSVLogger's cells and
// the learning rates in ReduceLROnPlateau's and LearningRateScheduler's messages.
#include <string>

namespace ember::callbacks {

// Python's repr(float): the shortest digits that read back to the same double, in fixed notation from
// 1e-4 up to below 1e16 ("0.0001", "1234.5", "1.0", "1000000000000000.0"), otherwise scientific with a
// signed exponent of at least two digits ("1e-05", "1e+16", "1.5e+300"); "nan", "inf", "-inf".
std::string python_float_repr(double value);

}  // namespace ember::callbacks
