// Compiled on its own (not in a unity batch), so that this pragma covers only <regex>: GCC 12 reports
// -Wmaybe-uninitialized inside libstdc++'s regex automaton (std::function moves in _State), a false
// positive of the same family as GCC bug 105593.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "optimizers/name_pattern.h"

#include <regex>

#include "framework/core/error.h"

namespace ember::optimizers::detail {

struct NamePattern::Impl {
  std::regex re;
};

NamePattern::NamePattern(const std::string& pattern, const std::string& who) {
  try {
    impl_ = std::make_shared<const Impl>(Impl{std::regex(pattern)});
  } catch (const std::regex_error& e) {
    throw make_error<InvalidArgument>(who, ": '", pattern, "' is not a valid regular expression: ", e.what());
  }
}

bool NamePattern::search(const std::string& name) const { return std::regex_search(name, impl_->re); }

}  // namespace ember::optimizers::detail
