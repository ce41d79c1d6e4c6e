#pragma once
// Internal: the regular files of a (gzip-compressed or plain) tar archive, read through zlib.
#include <functional>
#include <string>

namespace ember::datasets::detail {

// Calls want(name) for each regular file of the archive (its path inside the archive) and, where it returns
// true, keep(name, bytes) with the file's contents. NotFound when the archive cannot be opened; DataLoss
// naming it and the byte offset when it is corrupt or truncated.
void read_tar(const std::string& path, const std::function<bool(const std::string&)>& want,
              const std::function<void(const std::string&, std::string)>& keep);

}  // namespace ember::datasets::detail
