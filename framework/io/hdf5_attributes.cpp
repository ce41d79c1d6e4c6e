// HDF5 attributes (strings of every kind, numbers) and the library's error handling.

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "framework/io/hdf5_file.h"
#include "framework/io/hdf5_internal.h"

namespace ember::io {

using namespace h5detail;

namespace h5detail {

// Silences HDF5's automatic error printing once per process (the library is the serial build, whose
// error settings are global).
void h5file_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

herr_t h5file_collect_error(unsigned n, const H5E_error2_t* e, void* data) {
  auto* out = static_cast<std::string*>(data);
  if (e->desc && *e->desc) {
    if (!out->empty()) *out += "; ";
    *out += e->desc;
  }
  return n < 4 ? 0 : 1;  // the innermost few entries say what went wrong
}

// HDF5's error-stack text (innermost first), then clears the stack.
std::string h5file_error_text() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5file_collect_error, &text);
  H5Eclear2(H5E_DEFAULT);
  return text.empty() ? std::string("no detail from HDF5") : text;
}

// A write failure: disk full is ResourceExhausted, anything else Internal.
[[noreturn]] void h5file_write_failure(const std::string& what) {
  int err = errno;
  std::string text = h5file_error_text();
  bool full = err == ENOSPC || text.find("No space left") != std::string::npos;
  if (full) throw make_error<ResourceExhausted>("HDF5: ", what, ": no space left on device (", text, ")");
  throw make_error<Internal>("HDF5: ", what, " failed: ", text);
}

// Reads an open attribute of string type into strings (any padding, length kind and character set).
std::vector<std::string> h5file_read_strings(hid_t attr, hid_t ftype, const std::string& where) {
  H5fileId space(H5Aget_space(attr));
  hssize_t n = space.ok() ? H5Sget_simple_extent_npoints(space.get()) : -1;
  EMBER_CHECK(n >= 0, DataLoss) << "HDF5: cannot read the string attribute " << where << ": " << h5file_error_text();
  // Bounds a corrupt header could break (an attribute is metadata: megabytes at the very most).
  EMBER_CHECK(n <= (hssize_t(1) << 24), DataLoss) << "HDF5: the string attribute " << where << " declares " << n
                                                   << " strings (corrupt file?)";
  std::vector<std::string> out;
  if (H5Tis_variable_str(ftype) > 0) {
    H5fileId mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(ftype));  // no ASCII<->UTF-8 conversion: bytes are kept
    std::vector<char*> buf(static_cast<size_t>(n), nullptr);
    if (n > 0 && H5Aread(attr, mem.get(), buf.data()) < 0)
      throw make_error<DataLoss>("HDF5: cannot read the string attribute ", where, ": ", h5file_error_text());
    for (char* s : buf) out.emplace_back(s ? s : "");
    if (n > 0) H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, buf.data());
    return out;
  }
  size_t size = H5Tget_size(ftype);
  EMBER_CHECK(size > 0 && size <= (size_t(1) << 30) / static_cast<size_t>(std::max<hssize_t>(n, 1)), DataLoss)
      << "HDF5: the string attribute " << where << " declares " << n << " strings of " << size
      << " bytes (corrupt file?)";
  std::vector<char> buf(size * static_cast<size_t>(n) + 1, '\0');
  H5fileId mem(H5Tcopy(ftype));
  if (n > 0 && H5Aread(attr, mem.get(), buf.data()) < 0)
    throw make_error<DataLoss>("HDF5: cannot read the string attribute ", where, ": ", h5file_error_text());
  bool space_pad = H5Tget_strpad(ftype) == H5T_STR_SPACEPAD;
  for (hssize_t i = 0; i < n; ++i) {
    std::string s(buf.data() + i * size, size);
    if (space_pad) {
      s.erase(s.find_last_not_of(' ') + 1);
    } else if (size_t nul = s.find('\0'); nul != std::string::npos) {
      s.resize(nul);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace h5detail

// --- attributes ---

bool H5Group::has_attr(const std::string& name) const {
  if (object_->snap) {
    const nlohmann::json& names = h5snap_value((*object_->snap)["an"]);
    return std::find(names.begin(), names.end(), name) != names.end();
  }
  htri_t e = H5Aexists(object_->id, name.c_str());
  if (e < 0) throw make_error<DataLoss>("HDF5: cannot read the attributes of ", where(), ": ", h5file_error_text());
  return e > 0;
}

namespace {
herr_t h5file_collect_attr(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

// Opens an attribute for reading (NotFound naming it when absent).
hid_t h5file_open_attr(hid_t obj, const std::string& name, const std::string& where) {
  htri_t e = H5Aexists(obj, name.c_str());
  EMBER_CHECK(e >= 0, DataLoss) << "HDF5: cannot read the attributes of " << where << ": " << h5file_error_text();
  EMBER_CHECK(e > 0, NotFound) << "HDF5: no attribute '" << name << "' on " << where;
  hid_t a = H5Aopen(obj, name.c_str(), H5P_DEFAULT);
  EMBER_CHECK(a >= 0, DataLoss) << "HDF5: cannot open attribute '" << name << "' of " << where << ": "
                                << h5file_error_text();
  return a;
}

// Creates (replacing an existing one, as h5py's attrs[name] = value does) an attribute to write.
hid_t h5file_create_attr(hid_t obj, const std::string& name, hid_t type, hid_t space, const std::string& where) {
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  hid_t a = H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) h5file_write_failure("creating attribute '" + name + "' on " + where);
  return a;
}
}  // namespace

std::vector<std::string> H5Group::attr_names() const {
  if (object_->snap) return h5snap_value((*object_->snap)["an"]).get<std::vector<std::string>>();
  std::vector<std::string> names;
  hsize_t idx = 0;
  if (H5Aiterate2(object_->id, H5_INDEX_NAME, H5_ITER_INC, &idx, h5file_collect_attr, &names) < 0)
    throw make_error<DataLoss>("HDF5: cannot list the attributes of ", where(), ": ", h5file_error_text());
  return names;
}

void H5Group::set_attr_string(const std::string& name, const std::string& value, bool utf8) {
  H5fileId type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), utf8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
  H5fileId space(H5Screate(H5S_SCALAR));
  H5fileId attr(h5file_create_attr(object_->id, name, type.get(), space.get(), where()));
  const char* text = value.c_str();
  if (H5Awrite(attr.get(), type.get(), &text) < 0) h5file_write_failure("writing attribute '" + name + "' on " + where());
}

std::string H5Group::attr_string(const std::string& name) const {
  if (object_->snap) return h5snap_attr(*object_->snap, name, "s", where()).get<std::string>();
  std::string w = where() + " attribute '" + name + "'";
  H5fileId attr(h5file_open_attr(object_->id, name, where()));
  H5fileId ftype(H5Aget_type(attr.get()));
  EMBER_CHECK(ftype.ok() && H5Tget_class(ftype.get()) == H5T_STRING, DataLoss) << "HDF5: " << w << " is not a string";
  std::vector<std::string> v = h5file_read_strings(attr.get(), ftype.get(), w);
  EMBER_CHECK(v.size() == 1, DataLoss) << "HDF5: " << w << " holds " << v.size() << " strings, expected one";
  return v[0];
}

void H5Group::set_attr_strings(const std::string& name, const std::vector<std::string>& values, bool fixed_length) {
  std::vector<hsize_t> dims{values.size()};
  H5fileId space(H5Screate_simple(1, dims.data(), nullptr));
  if (values.empty()) {
    H5fileId attr(h5file_create_attr(object_->id, name, H5T_IEEE_F64LE, space.get(), where()));
    return;
  }
  H5fileId type(H5Tcopy(H5T_C_S1));
  H5Tset_cset(type.get(), H5T_CSET_ASCII);
  if (fixed_length) {
    size_t width = 1;
    for (const std::string& s : values) width = std::max(width, s.size());
    H5Tset_size(type.get(), width);
    H5Tset_strpad(type.get(), H5T_STR_NULLPAD);  // numpy's S<n>
    std::vector<char> buf(width * values.size(), '\0');
    for (size_t i = 0; i < values.size(); ++i) std::memcpy(buf.data() + i * width, values[i].data(), values[i].size());
    H5fileId attr(h5file_create_attr(object_->id, name, type.get(), space.get(), where()));
    if (H5Awrite(attr.get(), type.get(), buf.data()) < 0)
      h5file_write_failure("writing attribute '" + name + "' on " + where());
    return;
  }
  H5Tset_size(type.get(), H5T_VARIABLE);
  std::vector<const char*> ptrs;
  for (const std::string& s : values) ptrs.push_back(s.c_str());
  H5fileId attr(h5file_create_attr(object_->id, name, type.get(), space.get(), where()));
  if (H5Awrite(attr.get(), type.get(), ptrs.data()) < 0)
    h5file_write_failure("writing attribute '" + name + "' on " + where());
}

std::vector<std::string> H5Group::attr_strings(const std::string& name) const {
  if (object_->snap) return h5snap_attr(*object_->snap, name, "l", where()).get<std::vector<std::string>>();
  std::string w = where() + " attribute '" + name + "'";
  H5fileId attr(h5file_open_attr(object_->id, name, where()));
  H5fileId ftype(H5Aget_type(attr.get()));
  EMBER_CHECK(ftype.ok(), DataLoss) << "HDF5: cannot read the type of " << w << ": " << h5file_error_text();
  if (H5Tget_class(ftype.get()) == H5T_STRING) return h5file_read_strings(attr.get(), ftype.get(), w);
  H5fileId space(H5Aget_space(attr.get()));
  EMBER_CHECK(space.ok() && H5Sget_simple_extent_npoints(space.get()) == 0, DataLoss)
      << "HDF5: " << w << " is not a list of strings";
  return {};  // h5py's empty list: a zero-length float64 array
}

void H5Group::set_attr_int64(const std::string& name, int64_t value) {
  H5fileId space(H5Screate(H5S_SCALAR));
  H5fileId attr(h5file_create_attr(object_->id, name, H5T_STD_I64LE, space.get(), where()));
  if (H5Awrite(attr.get(), H5T_NATIVE_INT64, &value) < 0) h5file_write_failure("writing attribute '" + name + "'");
}

void H5Group::set_attr_double(const std::string& name, double value) {
  H5fileId space(H5Screate(H5S_SCALAR));
  H5fileId attr(h5file_create_attr(object_->id, name, H5T_IEEE_F64LE, space.get(), where()));
  if (H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value) < 0) h5file_write_failure("writing attribute '" + name + "'");
}

namespace {
template <class T>
T h5file_read_numeric_attr(hid_t obj, const std::string& name, hid_t mem, const std::string& where) {
  H5fileId attr(h5file_open_attr(obj, name, where));
  H5fileId ftype(H5Aget_type(attr.get()));
  H5fileId space(H5Aget_space(attr.get()));
  H5T_class_t c = ftype.ok() ? H5Tget_class(ftype.get()) : H5T_NO_CLASS;
  EMBER_CHECK((c == H5T_INTEGER || c == H5T_FLOAT) && space.ok() && H5Sget_simple_extent_npoints(space.get()) == 1,
              DataLoss)
      << "HDF5: attribute '" << name << "' of " << where << " is not a numeric scalar";
  T v{};
  EMBER_CHECK(H5Aread(attr.get(), mem, &v) >= 0, DataLoss)
      << "HDF5: cannot read attribute '" << name << "' of " << where << ": " << h5file_error_text();
  return v;
}
}  // namespace

int64_t H5Group::attr_int64(const std::string& name) const {
  if (object_->snap) return h5snap_attr(*object_->snap, name, "i", where()).get<int64_t>();
  return h5file_read_numeric_attr<int64_t>(object_->id, name, H5T_NATIVE_INT64, where());
}

double H5Group::attr_double(const std::string& name) const {
  if (object_->snap) return h5snap_attr(*object_->snap, name, "d", where()).get<double>();
  return h5file_read_numeric_attr<double>(object_->id, name, H5T_NATIVE_DOUBLE, where());
}

}  // namespace ember::io
