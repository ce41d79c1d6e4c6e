// write_atomically: the tmp-file + fsync + rename + directory fsync sequence that keeps the old file
// loadable whatever happens during a save.
#include "framework/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "framework/core/error.h"

namespace ember::io {

namespace {

namespace fs = std::filesystem;

// Rethrows `e` as the same ember::Error subclass with "saving to '<path>' failed: " in front.
[[noreturn]] void atomic_rethrow(const Error& e, const std::string& prefix) {
  std::string msg = prefix + e.what();
  if (dynamic_cast<const InvalidArgument*>(&e)) throw InvalidArgument(msg);
  if (dynamic_cast<const NotFound*>(&e)) throw NotFound(msg);
  if (dynamic_cast<const FailedPrecondition*>(&e)) throw FailedPrecondition(msg);
  if (dynamic_cast<const OutOfRange*>(&e)) throw OutOfRange(msg);
  if (dynamic_cast<const ResourceExhausted*>(&e)) throw ResourceExhausted(msg);
  if (dynamic_cast<const Unimplemented*>(&e)) throw Unimplemented(msg);
  if (dynamic_cast<const DataLoss*>(&e)) throw DataLoss(msg);
  if (dynamic_cast<const Internal*>(&e)) throw Internal(msg);
  throw Error(msg);
}

// An OS call failed: Internal with strerror (ResourceExhausted for a full disk or quota).
[[noreturn]] void atomic_os_failure(const std::string& prefix, const std::string& what, int err) {
  std::string msg = prefix + what + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) throw ResourceExhausted(msg);
  throw Internal(msg);
}

// fsync of a file or directory; returns errno (0 on success).
int atomic_fsync(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) return errno;
  int rc = ::fsync(fd);
  int err = rc == 0 ? 0 : errno;
  ::close(fd);
  // Some file systems cannot fsync a directory; the rename itself has still happened.
  if (directory && (err == EINVAL || err == EROFS)) err = 0;
  return err;
}

}  // namespace

void write_atomically(const std::string& path, const std::function<void(const std::string& tmp_path)>& writer) {
  static std::atomic<uint64_t> counter{0};
  const std::string prefix = "saving to '" + path + "' failed: ";
  const fs::path target(path);
  EMBER_CHECK(!target.filename().empty(), InvalidArgument) << prefix << "the path names no file";
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  EMBER_CHECK(fs::is_directory(dir, ec), NotFound) << prefix << "the directory '" << dir.string() << "' does not exist";
  EMBER_CHECK(!fs::is_directory(target, ec), InvalidArgument) << prefix << "it is a directory";

  // Appended piecewise: GCC 12's -Wrestrict misreads "." + std::string once this is inlined (a false positive).
  std::string tmp_name = ".";
  tmp_name += target.filename().string();
  tmp_name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  const std::string tmp = (dir / tmp_name).string();
  auto remove_tmp = [&] { ::unlink(tmp.c_str()); };
  try {
    writer(tmp);
  } catch (const Error& e) {
    remove_tmp();
    atomic_rethrow(e, prefix);
  } catch (const std::exception& e) {
    remove_tmp();
    throw Internal(prefix + e.what());
  } catch (...) {
    remove_tmp();
    throw;
  }
  if (!fs::is_regular_file(tmp, ec)) {
    remove_tmp();
    throw Internal(prefix + "the writer did not create '" + tmp + "'");
  }
  if (int err = atomic_fsync(tmp, false)) {
    remove_tmp();
    atomic_os_failure(prefix, "fsync of '" + tmp + "'", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    remove_tmp();
    atomic_os_failure(prefix, "renaming '" + tmp + "' to it", err);
  }
  if (int err = atomic_fsync(dir.string(), true)) atomic_os_failure(prefix, "fsync of directory '" + dir.string() + "'", err);
}

}  // namespace ember::io
