#pragma once
// Internal: the process-wide oneDNN CPU engine and stream (oneDNN runs on the shared OpenMP pool),
// and a small cache of primitives keyed by a string of their shapes and attributes.
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

namespace ember::dnnl_ctx {

dnnl::engine& engine();
// One stream per calling thread (data-pipeline threads may run ops too).
dnnl::stream& stream();

// Returns the cached value for key, creating it with make() on first use. Thread-safe.
template <class P, class Make>
P& cached(const std::string& key, Make&& make) {
  static std::mutex mu;
  static std::unordered_map<std::string, P> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make()).first;
  return it->second;
}

}  // namespace ember::dnnl_ctx
