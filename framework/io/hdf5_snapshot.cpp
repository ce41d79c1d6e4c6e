// H5File::open_read: a file is read by a child process, never by this one. HDF5 1.10 trusts what it
// decodes: a damaged file can crash it, make it loop, or silently corrupt the heap (an overlong global-heap
// object copied by H5HG_read). So a forked child opens the file, records every answer the H5Group read
// API can give (children, link kinds, attributes through each accessor, datasets with their bytes, or
// the error each call raised) and sends it over a pipe as CBOR; this process answers from that record.
// A child that dies or hangs turns into DataLoss naming the path, and whatever HDF5 did to its memory
// dies with it.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "framework/core/config.h"
#include "framework/core/device.h"
#include "framework/io/hdf5_file.h"
#include "framework/io/hdf5_internal.h"

namespace ember::io {

using namespace h5detail;
using nlohmann::json;

namespace {

// A call's value, or the ember::Error it raised.
template <class F>
json h5snap_record(F&& fn) {
  try {
    return json{{"v", fn()}};
  } catch (const Error& e) {
    return json{{"e", e.what()}};
  }
}

// Dataset bytes travel after the record, raw: the record holds their offset and size.
struct H5SnapRaw {
  std::vector<Tensor> tensors;
  uint64_t bytes = 0;
};

json h5snap_tensor(const Tensor& t, H5SnapRaw& raw) {
  json j = {{"dtype", static_cast<int>(t.dtype())},
            {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
            {"off", raw.bytes},
            {"n", static_cast<uint64_t>(t.nbytes())}};
  raw.bytes += t.nbytes();
  raw.tensors.push_back(t);
  return j;
}

// Everything the read API can say about `g` and below (in the child).
json h5snap_capture(const H5Group& g, int depth, H5SnapRaw& raw) {
  json node;
  node["an"] = h5snap_record([&] { return g.attr_names(); });
  json attrs = json::object();
  if (node["an"].contains("v")) {
    for (const std::string& a : node["an"]["v"].get<std::vector<std::string>>()) {
      attrs[a] = {{"s", h5snap_record([&] { return g.attr_string(a); })},
                  {"l", h5snap_record([&] { return g.attr_strings(a); })},
                  {"i", h5snap_record([&] { return g.attr_int64(a); })},
                  {"d", h5snap_record([&] { return g.attr_double(a); })}};
    }
  }
  node["a"] = std::move(attrs);
  node["cn"] = h5snap_record([&] { return g.children(H5Order::Name); });
  node["cc"] = h5snap_record([&] { return g.children(H5Order::Creation); });
  json kinds = json::object(), groups = json::object(), datasets = json::object();
  for (const char* order : {"cn", "cc"}) {
    if (!node[order].contains("v")) continue;
    for (const std::string& name : node[order]["v"].get<std::vector<std::string>>()) {
      if (kinds.contains(name)) continue;
      const char kind = !g.has(name) ? 's' : g.has_group(name) ? 'g' : g.has_dataset(name) ? 'd' : 'h';
      kinds[name] = std::string(1, kind);
      if (kind == 'g') {
        if (depth >= 64) {
          groups[name] = {{"e", "HDF5: groups nested over 64 deep at " + g.where(name) + " (a link cycle?)"}};
        } else {
          try {
            groups[name] = h5snap_capture(g.group(name), depth + 1, raw);
          } catch (const Error& e) {
            groups[name] = {{"e", e.what()}};
          }
        }
      } else if (kind == 'd') {
        datasets[name] = {{"t", h5snap_record([&] { return h5snap_tensor(g.read_dataset(name), raw); })},
                          {"sh", h5snap_record([&] {
                             Shape s = g.dataset_shape(name);
                             return std::vector<int64_t>(s.begin(), s.end());
                           })}};
      }
    }
  }
  node["k"] = std::move(kinds);
  node["g"] = std::move(groups);
  node["ds"] = std::move(datasets);
  return node;
}

void h5snap_write_all(int fd, const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(4);
    done += static_cast<size_t>(n);
  }
}

// The child's side: silence, one thread, the CPU, an alarm; then `capture` and its record down the pipe.
template <class F>
[[noreturn]] void h5snap_child(int fd, unsigned timeout_s, F&& capture) {
  // Die quietly: default signal actions (not a test framework's handlers), no crash reports.
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGALRM}) std::signal(sig, SIG_DFL);
  if (int null_fd = ::open("/dev/null", O_WRONLY); null_fd >= 0) {
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
  }
  ::alarm(timeout_s);  // a corrupt heap address can also make HDF5 loop forever
  try {
    // Only this thread exists here: OpenMP must not wake the parent's pool, nor a device be used.
    config::set_intra_op_parallelism_threads(1);
    DeviceScope on_cpu(Device::cpu());
    json out;
    H5SnapRaw raw;
    try {
      out["root"] = capture(raw);
    } catch (const Error& e) {
      out = {{"error", e.what()}};
      raw = {};
    }
    out["raw"] = raw.bytes;
    // [record size][CBOR record][dataset bytes in offset order]
    const std::vector<uint8_t> record = json::to_cbor(out);
    const uint64_t size = record.size();
    h5snap_write_all(fd, &size, sizeof size);
    h5snap_write_all(fd, record.data(), record.size());
    for (const Tensor& t : raw.tensors) h5snap_write_all(fd, t.raw_data(), t.nbytes());
  } catch (...) {
    ::_exit(3);
  }
  ::_exit(0);  // no atexit handlers, no destructors of the parent's statics
}

// Reads exactly `size` bytes; false at an early end of the stream.
bool h5snap_read_all(int fd, void* data, size_t size) {
  auto* bytes = static_cast<uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

namespace h5detail {

hid_t h5file_open_direct(const std::string& path) {
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EMBER_CHECK(id >= 0, DataLoss) << "HDF5: cannot read '" << path << "' (truncated or corrupt HDF5 file): "
                                 << h5file_error_text();
  return id;
}

const json& h5snap_value(const json& result) {
  if (result.contains("e")) throw DataLoss(result["e"].get<std::string>());
  return result.at("v");
}

char h5snap_resolve(const json& node, const std::string& name, const json*& parent, std::string& leaf) {
  const json* at = &node;
  std::vector<std::string> parts;
  for (size_t start = 0; start <= name.size();) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    if (end > start) parts.push_back(name.substr(start, end - start));
    start = end + 1;
  }
  char kind = 'm';
  for (size_t i = 0; i < parts.size(); ++i) {
    h5snap_value((*at)["cn"]);  // a group whose members cannot be listed is DataLoss
    parent = at;
    leaf = parts[i];
    const json& kinds = (*at)["k"];
    kind = kinds.contains(parts[i]) ? kinds[parts[i]].get<std::string>()[0] : 'm';
    if (i + 1 < parts.size()) {
      if (kind != 'g') return kind == 's' ? 's' : 'm';
      const json& sub = (*at)["g"][parts[i]];
      if (sub.contains("e")) throw DataLoss(sub["e"].get<std::string>());
      at = &sub;
    }
  }
  return parts.empty() ? 'm' : kind;
}

const json& h5snap_attr(const json& node, const std::string& name, const char* key, const std::string& where) {
  const json& names = h5snap_value(node["an"]);
  EMBER_CHECK(std::find(names.begin(), names.end(), name) != names.end(), NotFound)
      << "HDF5: no attribute '" << name << "' on " << where;
  return h5snap_value(node["a"][name][key]);
}

}  // namespace h5detail

H5File H5File::open_read(const std::string& path) {
  h5file_init();
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  EMBER_CHECK(std::filesystem::exists(status), NotFound) << "HDF5: cannot open '" << path << "': no such file";
  EMBER_CHECK(std::filesystem::is_regular_file(status), InvalidArgument)
      << "HDF5: cannot open '" << path << "': it is not a regular file";
  {
    std::ifstream readable(path, std::ios::binary);
    EMBER_CHECK(readable.good(), NotFound) << "HDF5: cannot open '" << path << "': " << std::strerror(errno);
  }
  htri_t is = H5Fis_hdf5(path.c_str());
  EMBER_CHECK(is > 0, DataLoss) << "HDF5: '" << path << "' is not an HDF5 file (no HDF5 signature found"
                                << (is < 0 ? ": " + h5file_error_text() : std::string()) << ")";
  const auto size = std::filesystem::file_size(path, ec);
  const unsigned timeout_s = 30 + static_cast<unsigned>(ec ? 0 : size >> 26);  // + 1 s per 64 MiB

  int fds[2];
  EMBER_CHECK(::pipe(fds) == 0, Internal) << "HDF5: cannot read '" << path << "': pipe: " << std::strerror(errno);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw make_error<Internal>("HDF5: cannot read '", path, "': fork: ", std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    h5snap_child(fds[1], timeout_s, [&](H5SnapRaw& raw) {
      auto state = std::make_shared<detail::H5FileState>();
      state->path = path;
      state->id = h5file_open_direct(path);
      return h5snap_capture(H5File(state).root(), 0, raw);
    });
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);  // fewer, larger reads (best effort)
  // Everything the child sends; short when it died. Large dataset bytes go straight into one buffer.
  uint64_t record_size = 0;
  std::vector<uint8_t> record;
  auto raw = std::make_shared<std::string>();
  bool complete = h5snap_read_all(fds[0], &record_size, sizeof record_size) && record_size < (uint64_t(1) << 34);
  if (complete) {
    record.resize(record_size);
    complete = h5snap_read_all(fds[0], record.data(), record.size());
  }
  auto doc = std::make_shared<json>();
  if (complete) {
    try {
      *doc = json::from_cbor(record);
      const uint64_t raw_size = doc->at("raw").get<uint64_t>();
      raw->resize(raw_size);
      complete = h5snap_read_all(fds[0], raw->data(), raw->size());
    } catch (const json::exception&) {
      complete = false;
    }
  }
  ::close(fds[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(wstatus)) {
    EMBER_CHECK(WTERMSIG(wstatus) != SIGALRM, DataLoss)
        << "HDF5: '" << path << "' is corrupt: reading it did not finish within " << timeout_s
        << " s (the HDF5 library loops on it)";
    throw make_error<DataLoss>("HDF5: '", path, "' is corrupt: reading it crashes the HDF5 library (signal ",
                               WTERMSIG(wstatus), ")");
  }
  EMBER_CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, DataLoss)
      << "HDF5: '" << path << "' could not be read (the reading process ended with status "
      << (WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1) << ")";
  EMBER_CHECK(complete, Internal) << "HDF5: reading '" << path << "': the reading process sent an incomplete record";
  if (doc->contains("error")) throw DataLoss((*doc)["error"].get<std::string>());
  auto state = std::make_shared<detail::H5FileState>();
  state->path = path;
  state->snapshot = std::move(doc);
  state->raw = std::move(raw);
  return H5File(state);
}

}  // namespace ember::io
