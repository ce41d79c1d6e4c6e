#pragma once
// A small RAII wrapper over the HDF5 C library, enough for Keras's HDF5 layouts (internal: not part of
// framework/ember.h). No HDF5 type appears here: object ids are held as int64_t. Every failure is an
// ember::Error naming the file and the object: a missing file NotFound, a file that is not HDF5 or is
// truncated/corrupt DataLoss, a missing group/dataset/attribute NotFound.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/tensor.h"

namespace ember::io {

namespace detail {
struct H5FileState;
struct H5Object;
}  // namespace detail

// The order in which H5Group::children lists names.
enum class H5Order {
  Name,      // sorted by name (HDF5's name index, what h5py's keys() gives)
  Creation,  // creation order where the group tracks it, name order otherwise
};

// An open group (or the file's root group). Copies share the handle; it keeps the file open.
class H5Group {
 public:
  // The file this group belongs to (for messages) and the group's path in it ("/" for the root).
  const std::string& file_path() const;
  const std::string& path() const { return path_; }

  // --- links ---
  // True when `name` (a relative path, may contain '/') names an existing object.
  bool has(const std::string& name) const;
  bool has_group(const std::string& name) const;
  bool has_dataset(const std::string& name) const;
  // Opens a child group (NotFound naming the file and the path when absent, DataLoss when unreadable).
  H5Group group(const std::string& name) const;
  // Creates a group, with its intermediate groups (h5py's create_group("a/b")).
  H5Group create_group(const std::string& name);
  // The names of the direct children (groups and datasets).
  std::vector<std::string> children(H5Order order = H5Order::Name) const;

  // --- datasets ---
  // Writes a CPU or device tensor as a dataset (intermediate groups created, as h5py does for names with
  // '/'). float32/float64/int32/int64/uint8 as the IEEE/STD little-endian types, float16 as IEEE half
  // (numpy "<f2"), bool as h5py's enum {FALSE, TRUE} over int8, bfloat16 as Keras 3's H5IOStore does: a
  // 2-byte opaque dataset with the attribute dtype="bfloat16". A 0-d tensor becomes a scalar dataset.
  void write_dataset(const std::string& name, const Tensor& value);
  // Reads a dataset into a new CPU tensor with the dtype mapping above (other integer widths widen to
  // int32/int64); an unsupported HDF5 type is DataLoss naming it.
  Tensor read_dataset(const std::string& name) const;
  // The dataset's shape without reading it.
  Shape dataset_shape(const std::string& name) const;

  // --- attributes (on this group) ---
  bool has_attr(const std::string& name) const;
  std::vector<std::string> attr_names() const;
  // A scalar string attribute: variable-length, UTF-8 (h5py's str) or ASCII (h5py's bytes).
  void set_attr_string(const std::string& name, const std::string& value, bool utf8 = true);
  // A scalar string attribute of any HDF5 string kind (fixed or variable length, ASCII or UTF-8).
  std::string attr_string(const std::string& name) const;
  // A 1-D string array attribute: variable-length ASCII (what h5py writes for a list of bytes), or
  // fixed-length `S<n>` (a numpy bytes array) when fixed_length. An empty list is written as h5py writes
  // np.asarray([]): an empty float64 array.
  void set_attr_strings(const std::string& name, const std::vector<std::string>& values, bool fixed_length = false);
  // A string array attribute of any string kind; an empty numeric array reads as no strings.
  std::vector<std::string> attr_strings(const std::string& name) const;
  // Numeric scalar attributes.
  void set_attr_int64(const std::string& name, int64_t value);
  int64_t attr_int64(const std::string& name) const;
  void set_attr_double(const std::string& name, double value);
  double attr_double(const std::string& name) const;

  // "<file>: <object path>" for messages.
  std::string where(const std::string& child = {}) const;

 private:
  friend class H5File;
  H5Group(std::shared_ptr<detail::H5FileState> file, std::shared_ptr<detail::H5Object> object, std::string path);
  std::string child_path(const std::string& name) const;
  std::shared_ptr<detail::H5FileState> file_;
  std::shared_ptr<detail::H5Object> object_;
  std::string path_;
};

// An open HDF5 file. Groups opened from it keep it open until they are gone too.
class H5File {
 public:
  // Opens an existing file read-only: NotFound when it does not exist, DataLoss naming the path when it
  // is not an HDF5 file or cannot be read (truncated, corrupt).
  static H5File open_read(const std::string& path);
  // Creates (truncates) a file for writing.
  static H5File create(const std::string& path);
  // True when the file starts with the HDF5 signature (false also for a missing or unreadable file).
  static bool is_hdf5(const std::string& path);

  H5Group root() const;
  const std::string& path() const;
  // Names the file `shown` in messages from now on (a file read through a scratch copy, such as a .keras
  // archive's weights, is named after what the user opened).
  void set_display_path(const std::string& shown);
  // Flushes and closes the file, throwing when HDF5 reports a failure (e.g. the disk is full). Groups
  // must not be used afterwards. The destructor closes silently.
  void close();

 private:
  explicit H5File(std::shared_ptr<detail::H5FileState> state);
  std::shared_ptr<detail::H5FileState> state_;
};

}  // namespace ember::io
