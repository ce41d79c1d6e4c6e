#pragma once
// A regular expression searched in variable names, as Keras's exclude_from_weight_decay and Muon's
// exclude_layers do with re.search. <regex> stays in name_pattern.cpp: it is heavy to compile, and GCC 12
// warns falsely inside it.
#include <memory>
#include <string>

namespace ember::optimizers::detail {

// Keras's `variable.name`: the last component of the variable's path ("dense/kernel" -> "kernel"); Ember's
// variable names are paths.
inline std::string keras_variable_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class NamePattern {
 public:
  // Throws InvalidArgument, naming `who`, when `pattern` is not a valid (ECMAScript) regular expression.
  NamePattern(const std::string& pattern, const std::string& who);
  // True when the pattern matches anywhere in `name` (re.search, not re.match).
  bool search(const std::string& name) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ember::optimizers::detail
