#pragma once
// Compiling CUDA C++ at run time with NVRTC (libnvrtc, loaded on first use: toolkit_library.h), for the kernels
// Ember generates. Needs no GPU: the architecture is named, not queried. Internal; C++ only, no CUDA header.
#include <string>
#include <vector>

namespace ember::cuda {

// A header the program #includes, given in memory: `name` as the #include spells it, `text` its contents.
struct NvrtcHeader {
  const char* name;
  const char* text;
};
// A compiled program: its PTX, and the machine code of the architecture it was compiled for.
struct NvrtcProgram {
  std::string ptx;
  std::string cubin;
};

// Compiles `source` for the GPU architecture `arch` (major * 10 + minor: 90 for sm_90) with C++17, `headers` and
// the extra `options`. A compile error throws Internal naming `what`, with NVRTC's log and the source.
NvrtcProgram nvrtc_compile(const std::string& source, int arch, const std::vector<NvrtcHeader>& headers,
                           const std::vector<std::string>& options, const std::string& what);

// Whether libnvrtc loads (asked once; logs why not, once). Loads it.
bool nvrtc_available();

// The newest architecture NVRTC compiles for that is at most `arch` (a device newer than the toolkit runs the
// machine code of an older architecture it supports).
int nvrtc_arch_for(int arch);

}  // namespace ember::cuda
