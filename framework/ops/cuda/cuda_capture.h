#pragma once
// The CUDA runtime's side of CUDA graph capture (cuda_graph.cpp), internal to Ember and for .cpp files only (the
// kernel files need none of it).
#include <cuda_runtime_api.h>

namespace ember::cuda {

// While this thread captures the device's stream, the runtime refuses
// what a replay could not repeat (host waits, uploads: Unimplemented naming `what`), the caching allocator
// serves this thread from the capture's private pool, workspace() hands out scratch memory of the capture's own,
// and device checks get tags of the captured graph's (reported after each launch of it).
bool capturing(int device);
void refuse_during_capture(int device, const char* what);
// Marks this thread as capturing the device's stream; the end frees the capture's scratch memory into its pool
// (call it while the pool still serves this thread) and returns whether the capture registered device checks.
void begin_capture_state(int device);
bool end_capture_state(int device);
// A launch of a captured graph with device checks: the next synchronize() reads the check slot.
void arm_captured_checks(int device);

// The caching allocator's private pools (for CUDA graphs): a new pool (its key); serving this thread's
// allocations of the device from `pool` (nullptr: from the shared cache again); handing a pool's blocks back
// to the shared cache, once the graph that used them is gone.
cudaStream_t new_memory_pool(int device);
void use_memory_pool(int device, cudaStream_t pool);
void release_memory_pool(int device, cudaStream_t pool);

}  // namespace ember::cuda
