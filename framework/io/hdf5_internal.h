#pragma once
// Internals shared by hdf5_file.cpp and hdf5_attributes.cpp (the only files that include <hdf5.h>).
#include <hdf5.h>

#include <memory>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ember::io {

namespace detail {
// The open file; closed when the last H5File/H5Group referring to it is gone.
struct H5FileState {
  std::string path;
  hid_t id = H5I_INVALID_HID;
  bool writable = false;
  // A file opened by open_read: what a child process read from it (hdf5_snapshot.cpp); no HDF5 id.
  std::shared_ptr<const nlohmann::json> snapshot;
  std::shared_ptr<const std::string> raw;  // the datasets' bytes, at the offsets the snapshot records
  ~H5FileState() {
    if (id >= 0) H5Fclose(id);
  }
};
// One open group (or any object closed with H5Oclose).
struct H5Object {
  hid_t id = H5I_INVALID_HID;
  // In a snapshot file: this group's node (owned by the file's snapshot), and no id.
  const nlohmann::json* snap = nullptr;
  explicit H5Object(hid_t i) : id(i) {}
  explicit H5Object(const nlohmann::json* node) : snap(node) {}
  ~H5Object() {
    if (id >= 0) H5Oclose(id);
  }
};
}  // namespace detail

namespace h5detail {

// Closes any HDF5 id by its kind when it goes out of scope.
class H5fileId {
 public:
  explicit H5fileId(hid_t id = H5I_INVALID_HID) : id_(id) {}
  ~H5fileId() { reset(); }
  H5fileId(const H5fileId&) = delete;
  H5fileId& operator=(const H5fileId&) = delete;
  void reset() {
    if (id_ < 0) return;
    switch (H5Iget_type(id_)) {
      case H5I_DATATYPE: H5Tclose(id_); break;
      case H5I_DATASPACE: H5Sclose(id_); break;
      case H5I_ATTR: H5Aclose(id_); break;
      case H5I_GENPROP_LST: H5Pclose(id_); break;
      case H5I_DATASET: case H5I_GROUP: H5Oclose(id_); break;
      default: break;
    }
    id_ = H5I_INVALID_HID;
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
};

// Silences HDF5's automatic error printing once per process.
void h5file_init();
// HDF5's error-stack text (innermost first), then clears the stack.
std::string h5file_error_text();
// A write failure: disk full is ResourceExhausted, anything else Internal.
[[noreturn]] void h5file_write_failure(const std::string& what);
// Reads an open attribute of string type into strings (any padding, length kind and character set).
std::vector<std::string> h5file_read_strings(hid_t attr, hid_t ftype, const std::string& where);
// --- snapshots (hdf5_snapshot.cpp) ---
// Opens `path` read-only in this process (what the snapshot's child process does).
hid_t h5file_open_direct(const std::string& path);
// A recorded call's value, or its recorded error thrown as DataLoss.
const nlohmann::json& h5snap_value(const nlohmann::json& result);
// How `name` (may contain '/') resolves under a snapshot group: 'm' missing, 's' a soft/external link or
// an object that cannot be opened, 'g' group, 'd' dataset, 'h' another object; `parent` and `leaf` are
// set to the last group node on the way and the last component.
char h5snap_resolve(const nlohmann::json& node, const std::string& name, const nlohmann::json*& parent, std::string& leaf);
// A recorded attribute call (key "s", "l", "i" or "d"), NotFound when the attribute does not exist.
const nlohmann::json& h5snap_attr(const nlohmann::json& node, const std::string& name, const char* key,
                                  const std::string& where);

}  // namespace h5detail
}  // namespace ember::io
