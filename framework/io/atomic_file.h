#pragma once
// Crash-safe file replacement: write to a temporary file beside the target, fsync it, rename it over the
// target, fsync the directory. A crash or failure at any point leaves the previous file intact.
#include <functional>
#include <string>

namespace ember::io {

// Calls writer(tmp_path), which must write the whole file at tmp_path (a unique ".<name>.tmp-<pid>-<n>"
// in the target's directory) and close it; then makes it durable and renames it to `path`. On any
// failure the temporary file is removed and an ember::Error saying that saving to `path` failed and why
// is thrown (of the writer's own ember::Error class when it threw one; an OS failure is Internal, or
// ResourceExhausted when the disk is full, with strerror). The previous `path` is never touched then.
void write_atomically(const std::string& path, const std::function<void(const std::string& tmp_path)>& writer);

}  // namespace ember::io
