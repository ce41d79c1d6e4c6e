#pragma once
// The static memory plan of a traced graph (TFLite's arena planner, XLA's buffer assignment): values whose
// type is known at trace time and whose buffer lives only inside a replay get a place in an arena that the
// replay keeps from call to call, so a replay allocates nothing for them. Places are reused once every
// value sharing the buffer (its views, an op's update in place) has been read for the last time.
#include <cstdint>
#include <vector>

#include "framework/graph/graph.h"

namespace ember::graph {

// Values sharing one buffer (an op's output aliasing its input, a view, an update in place), with what the
// whole buffer allows: a union-find over value ids.
struct BufferGroups {
  std::vector<int> parent;
  std::vector<int> last_use;  // per root: the last node reading any member (-1: none)
  std::vector<char> pinned;   // per root: held outside the replay's values (input, constant, variable, output...)
  int find(int v) {
    int& p = parent[static_cast<size_t>(v)];
    return p == v ? v : p = find(p);
  }
  void join(int a, int b);
};
// The buffer groups of `g` as its nodes say now (views, derivations, outputs aliasing an input, updates in place).
BufferGroups buffer_groups(const Graph& g);

// What a plan holds, for tests and benchmarks.
struct MemoryPlanStats {
  int planned_values = 0;   // buffers placed in the arenas
  int64_t arena_bytes = 0;  // the arenas' sizes together
  int64_t naive_bytes = 0;  // the planned buffers' sizes together (what one buffer each would take)
};

struct MemoryPlan {
  // One arena per dtype (a tensor views memory of one dtype); CPU only.
  struct Arena {
    DType dtype = DType::Float32;
    int64_t elements = 0;
  };
  struct Slot {
    int arena = -1;        // -1: the value is not planned (its op allocates it, or it shares a planned buffer)
    int64_t element = 0;   // its first element in the arena
  };
  std::vector<Arena> arenas;
  std::vector<Slot> slots;  // per value
  MemoryPlanStats stats;
};

// Plans the buffers of `g`'s CPU op outputs of a fully known shape that never leave a replay: not returned,
// assigned to a variable, handed to a host call, to control flow (whose tape may keep it) or to a cached cast.
// Places are aligned to 64 bytes, the biggest buffers placed first, each at the lowest place free while it lives.
MemoryPlan plan_memory(const Graph& g);

// The most bytes of the buffers plan_memory would place that are alive at once: what its arenas need at least.
int64_t liveness_peak_bytes(const Graph& g);

}  // namespace ember::graph
