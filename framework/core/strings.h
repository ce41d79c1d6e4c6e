#pragma once
// Small string helpers shared by the name registries and option parsers.
#include <cctype>
#include <string>

namespace ember {

// ASCII lower case, as Python's str.lower() on identifiers ("Adam" -> "adam"); other bytes pass through.
inline std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Keras's snake_case of a class name ("GlobalAveragePooling2D" -> "global_average_pooling2d"): how layers
// and optimizers are named by default.
inline std::string to_snake_case(const std::string& name) {
  // Keras 3: re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name) then re.sub("([a-z])([A-Z])", r"\1_\2", ...).lower()
  std::string a;
  for (size_t i = 0; i < name.size(); ++i) {
    if (i > 0 && std::isupper(static_cast<unsigned char>(name[i])) && i + 1 < name.size() &&
        std::islower(static_cast<unsigned char>(name[i + 1])))
      a += '_';
    a += name[i];
  }
  std::string b;
  for (size_t i = 0; i < a.size(); ++i) {
    if (i > 0 && std::isupper(static_cast<unsigned char>(a[i])) &&
        std::islower(static_cast<unsigned char>(a[i - 1])))
      b += '_';
    b += a[i];
  }
  return ascii_lower(std::move(b));
}

}  // namespace ember
