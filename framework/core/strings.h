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

}  // namespace ember
