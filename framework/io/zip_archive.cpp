#include "framework/io/zip_archive.h"

#include <zip.h>

#include <filesystem>
#include <memory>

#include "framework/core/error.h"

namespace ember::io {

namespace {

std::string zip_open_error(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string message = zip_error_strerror(&error);
  zip_error_fini(&error);
  return message;
}

struct ZipCloser {
  void operator()(zip_t* archive) const { zip_discard(archive); }
};
using ZipHandle = std::unique_ptr<zip_t, ZipCloser>;

}  // namespace

void write_zip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& entries) {
  int code = 0;
  ZipHandle archive(zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code));
  EMBER_CHECK(archive, Internal) << "write_zip: cannot create '" << path << "': " << zip_open_error(code);
  for (const auto& [name, bytes] : entries) {
    // The archive holds pointers into `entries` until zip_close, which runs before they go away.
    zip_source_t* source = zip_source_buffer(archive.get(), bytes.data(), bytes.size(), 0);
    EMBER_CHECK(source, Internal) << "write_zip: '" << path << "': " << zip_strerror(archive.get());
    const zip_int64_t index = zip_file_add(archive.get(), name.c_str(), source, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
    if (index < 0) {
      zip_source_free(source);
      EMBER_CHECK(false, Internal) << "write_zip: '" << path << "': cannot add '" << name
                                   << "': " << zip_strerror(archive.get());
    }
    EMBER_CHECK(zip_set_file_compression(archive.get(), static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) == 0,
                Internal)
        << "write_zip: '" << path << "': " << zip_strerror(archive.get());
  }
  zip_t* raw = archive.release();
  if (zip_close(raw) != 0) {
    std::string reason = zip_strerror(raw);
    zip_discard(raw);
    EMBER_CHECK(false, Internal) << "write_zip: writing '" << path << "' failed: " << reason;
  }
}

std::map<std::string, std::string> read_zip(const std::string& path) {
  EMBER_CHECK(std::filesystem::exists(path), NotFound) << "read_zip: no such file: '" << path << "'";
  int code = 0;
  ZipHandle archive(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  EMBER_CHECK(archive, DataLoss) << "read_zip: '" << path << "' is not a readable zip archive: " << zip_open_error(code);
  std::map<std::string, std::string> out;
  const zip_int64_t n = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    EMBER_CHECK(zip_stat_index(archive.get(), static_cast<zip_uint64_t>(i), 0, &st) == 0, DataLoss)
        << "read_zip: '" << path << "': entry " << i << ": " << zip_strerror(archive.get());
    EMBER_CHECK((st.valid & ZIP_STAT_NAME) && (st.valid & ZIP_STAT_SIZE), DataLoss)
        << "read_zip: '" << path << "': entry " << i << " has no name or size";
    std::string bytes(static_cast<size_t>(st.size), '\0');
    zip_file_t* file = zip_fopen_index(archive.get(), static_cast<zip_uint64_t>(i), 0);
    EMBER_CHECK(file, DataLoss) << "read_zip: '" << path << "': cannot open entry '" << st.name
                                << "': " << zip_strerror(archive.get());
    zip_int64_t got = zip_fread(file, bytes.data(), st.size);
    // Reading to the end makes libzip verify the entry's CRC; a mismatch fails here.
    char extra = 0;
    zip_int64_t more = got == static_cast<zip_int64_t>(st.size) ? zip_fread(file, &extra, 1) : 0;
    std::string reason = got < 0 || more < 0 ? zip_file_strerror(file) : "";
    zip_fclose(file);
    EMBER_CHECK(got == static_cast<zip_int64_t>(st.size) && more == 0, DataLoss)
        << "read_zip: '" << path << "': entry '" << st.name << "' is truncated or corrupt"
        << (reason.empty() ? "" : ": " + reason);
    out.emplace(st.name, std::move(bytes));
  }
  return out;
}

}  // namespace ember::io
