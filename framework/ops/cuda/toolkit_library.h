#pragma once
// CUDA toolkit libraries loaded on first use (cuBLASLt, NVRTC), not linked: linked, each maps and relocates its
// hundred-odd MB at every program start, tens of MiB of resident memory even on machines without a GPU
// (TensorFlow loads its CUDA libraries lazily for the same reason). Ember defines the functions it calls of such
// a library; each forwards to the real one, found with dlsym in the library dlopen'd by the first call.
namespace ember::cuda {

// The function `name` of the toolkit library `soname` (the one the toolkit's headers match), the library loaded
// on first use from the loader's path, then from the toolkit's library directory. Throws FailedPrecondition
// naming `user` (what needs the library) when either cannot be found.
void* toolkit_symbol(const char* soname, const char* user, const char* name);

}  // namespace ember::cuda

// One forwarding definition per library function Ember calls: ret name(params) calls the real name(args).
#define EMBER_TOOLKIT_FORWARD(soname, user, ret, name, params, args)                                                \
  extern "C" ret name params {                                                                                    \
    static decltype(name)* const real =                                                                           \
        reinterpret_cast<decltype(name)*>(ember::cuda::toolkit_symbol((soname), (user), #name));                  \
    return real args;                                                                                             \
  }

#define EMBER_TOOLKIT_STR2(x) #x
#define EMBER_TOOLKIT_STR(x) EMBER_TOOLKIT_STR2(x)
