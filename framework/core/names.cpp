// The per-prefix counters behind unique_layer_name.
#include "framework/core/names.h"

#include <cstdint>
#include <map>
#include <mutex>

namespace ember {

namespace {
std::mutex g_names_mutex;
std::map<std::string, int64_t>& name_counts() {
  static std::map<std::string, int64_t> counts;
  return counts;
}
}  // namespace

std::string unique_layer_name(const std::string& base) {
  std::lock_guard lock(g_names_mutex);
  int64_t n = name_counts()[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

void reset_unique_names() {
  std::lock_guard lock(g_names_mutex);
  name_counts().clear();
}

}  // namespace ember
