#pragma once
// A regular expression searched in variable names, as Keras's exclude_from_weight_decay does with
// re.search. <regex> stays in name_pattern.cpp: it is heavy to compile, and GCC 12 warns falsely
// inside it.
#include <memory>
#include <string>

namespace ember::optimizers::detail {

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
