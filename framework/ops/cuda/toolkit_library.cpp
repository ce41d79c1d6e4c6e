// Loading the CUDA toolkit's libraries on first use (toolkit_library.h).
#include "framework/ops/cuda/toolkit_library.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>

#include "framework/core/error.h"

namespace ember::cuda {
namespace {

void* toolkit_library(const char* soname, const char* user) {
  static std::mutex mu;
  static std::map<std::string, void*> handles;
  std::lock_guard<std::mutex> lock(mu);
  void*& handle = handles[soname];
  if (handle) return handle;
  handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  std::string error = handle ? "" : dlerror();
#ifdef EMBER_CUDA_LIBRARY_DIR
  if (!handle) handle = dlopen((std::string(EMBER_CUDA_LIBRARY_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
  EMBER_CHECK(handle, FailedPrecondition) << user << ": " << soname << " could not be loaded: " << error
                                          << "; it comes with the CUDA toolkit Ember was built with";
  return handle;
}

}  // namespace

void* toolkit_symbol(const char* soname, const char* user, const char* name) {
  void* sym = dlsym(toolkit_library(soname, user), name);
  EMBER_CHECK(sym, FailedPrecondition) << user << ": " << soname << " has no function " << name;
  return sym;
}

}  // namespace ember::cuda
