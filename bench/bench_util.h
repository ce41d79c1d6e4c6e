#pragma once
// Shared by the bench programs: the result row and its two output formats, timing, and keep_alive.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

namespace ember::bench {

using Clock = std::chrono::steady_clock;

// Makes the compiler assume p's memory is read and written here, so the work producing it is kept.
inline void keep_alive(const void* p) { asm volatile("" : : "g"(p) : "memory"); }

// Seconds of CPU time the whole process has used: on a machine other programs keep busy, one thread's work timed
// by it leaves out the time spent waiting for a core.
inline double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Best seconds of `reps` calls of fn.
template <class F>
double best_seconds(int reps, F&& fn) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// One figure beside its reference; speedup > 1 means Ember is faster.
struct Row {
  std::string name, unit, reference;
  double value, reference_value, speedup;
};

// Whether the program was asked for JSON output (`--json` as its first argument).
inline bool json_requested(int argc, char** argv) { return argc > 1 && std::strcmp(argv[1], "--json") == 0; }

// One JSON object per line with --json, else an aligned human-readable line.
inline void print(const Row& row, bool json) {
  if (json) {
    std::printf("{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", \"reference\": \"%s\", \"reference_value\": %.6g, "
                "\"speedup\": %.4f}\n",
                row.name.c_str(), row.value, row.unit.c_str(), row.reference.c_str(), row.reference_value, row.speedup);
  } else {
    std::printf("%-20s ember %10.3f %-7s %s %10.3f %-7s speedup %.3fx\n", row.name.c_str(), row.value,
                row.unit.c_str(), row.reference.c_str(), row.reference_value, row.unit.c_str(), row.speedup);
  }
  std::fflush(stdout);
}

}  // namespace ember::bench
