#pragma once
// Zip archives of stored (uncompressed) entries through libzip: the container of Keras 3's .keras files.
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ember::io {

// Writes a zip archive at `path` holding `entries` (name, bytes) in order, uncompressed (ZIP_STORED) as
// Keras writes .keras files. Replaces an existing file. Errors name the path and libzip's reason.
void write_zip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& entries);

// Every entry of the zip archive at `path`, by name. A missing file is NotFound; a file that is not a zip
// archive, is truncated or fails its CRC is DataLoss naming the path.
std::map<std::string, std::string> read_zip(const std::string& path);

}  // namespace ember::io
