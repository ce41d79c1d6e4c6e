// The HDF5 C API behind H5File/H5Group. HDF5's own error printing is switched off; each failure is
// turned into an ember::Error carrying HDF5's error-stack text.
#include "framework/io/hdf5_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "framework/io/hdf5_internal.h"

namespace ember::io {

using namespace h5detail;

namespace {

// IEEE half as h5py builds it (numpy "<f2"): a 2-byte float with numpy's field layout.
hid_t h5file_half_type() {
  hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(t, 15, 10, 5, 0, 10);
  H5Tset_size(t, 2);
  H5Tset_ebias(t, 15);
  return t;
}
// numpy bool as h5py stores it: an int8 enum {FALSE: 0, TRUE: 1}.
hid_t h5file_bool_type() {
  hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
  int8_t f = 0, tr = 1;
  H5Tenum_insert(t, "FALSE", &f);
  H5Tenum_insert(t, "TRUE", &tr);
  return t;
}

// The HDF5 type a tensor dtype is stored as (a new id the caller closes).
hid_t h5file_type_of(DType d) {
  switch (d) {
    case DType::Float32: return H5Tcopy(H5T_IEEE_F32LE);
    case DType::Float64: return H5Tcopy(H5T_IEEE_F64LE);
    case DType::Float16: return h5file_half_type();
    case DType::BFloat16: return H5Tcreate(H5T_OPAQUE, 2);  // h5py's type for ml_dtypes.bfloat16
    case DType::Int32: return H5Tcopy(H5T_STD_I32LE);
    case DType::Int64: return H5Tcopy(H5T_STD_I64LE);
    case DType::UInt8: return H5Tcopy(H5T_STD_U8LE);
    case DType::Bool: return h5file_bool_type();
    case DType::String: break;  // write_dataset refuses string tensors first
  }
  return H5I_INVALID_HID;
}

// Splits "a/b/c" into its non-empty components.
std::vector<std::string> h5file_split(const std::string& p) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    if (end > start) parts.push_back(p.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// How `name` resolves under loc: missing, a hard link, or a soft/external link (which Keras refuses).
enum class H5FileLink { Missing, Hard, Other };
H5FileLink h5file_link(hid_t loc, const std::string& name) {
  std::string prefix;
  for (const std::string& part : h5file_split(name)) {
    prefix += (prefix.empty() ? "" : "/") + part;
    htri_t e = H5Lexists(loc, prefix.c_str(), H5P_DEFAULT);
    if (e <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return H5FileLink::Missing;
    }
    H5L_info_t info;
    if (H5Lget_info(loc, prefix.c_str(), &info, H5P_DEFAULT) < 0) {
      H5Eclear2(H5E_DEFAULT);
      return H5FileLink::Missing;
    }
    if (info.type != H5L_TYPE_HARD) return H5FileLink::Other;
  }
  return H5FileLink::Hard;
}

}  // namespace

// --- H5File ---

H5File::H5File(std::shared_ptr<detail::H5FileState> state) : state_(std::move(state)) {}

bool H5File::is_hdf5(const std::string& path) {
  h5file_init();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  htri_t r = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

H5File H5File::create(const std::string& path) {
  h5file_init();
  auto state = std::make_shared<detail::H5FileState>();
  state->path = path;
  state->writable = true;
  state->id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (state->id < 0) h5file_write_failure("creating '" + path + "'");
  return H5File(state);
}

H5Group H5File::root() const {
  if (state_ && state_->snapshot)
    return H5Group(state_, std::make_shared<detail::H5Object>(&(*state_->snapshot)["root"]), "/");
  EMBER_CHECK(state_ && state_->id >= 0, FailedPrecondition) << "HDF5: the file is closed";
  hid_t g = H5Gopen2(state_->id, "/", H5P_DEFAULT);
  EMBER_CHECK(g >= 0, DataLoss) << "HDF5: cannot open the root group of '" << state_->path
                                << "': " << h5file_error_text();
  return H5Group(state_, std::make_shared<detail::H5Object>(g), "/");
}

const std::string& H5File::path() const { return state_->path; }
void H5File::set_display_path(const std::string& shown) { state_->path = shown; }

void H5File::close() {
  if (!state_ || state_->id < 0) return;
  hid_t id = state_->id;
  state_->id = H5I_INVALID_HID;
  if (state_->writable && H5Fflush(id, H5F_SCOPE_GLOBAL) < 0) {
    std::string what = "writing '" + state_->path + "'";
    H5Fclose(id);
    h5file_write_failure(what);
  }
  if (H5Fclose(id) < 0) {
    if (state_->writable) h5file_write_failure("closing '" + state_->path + "'");
    throw make_error<DataLoss>("HDF5: closing '", state_->path, "' failed: ", h5file_error_text());
  }
}

// --- H5Group ---

H5Group::H5Group(std::shared_ptr<detail::H5FileState> file, std::shared_ptr<detail::H5Object> object,
                 std::string path)
    : file_(std::move(file)), object_(std::move(object)), path_(std::move(path)) {}

const std::string& H5Group::file_path() const { return file_->path; }

std::string H5Group::child_path(const std::string& name) const {
  if (name.empty()) return path_;
  return path_ == "/" ? "/" + name : path_ + "/" + name;
}

std::string H5Group::where(const std::string& child) const {
  return "'" + file_->path + "': '" + child_path(child) + "'";
}

namespace {
// How `name` resolves in a snapshot group (see h5snap_resolve).
char h5file_snap_kind(const nlohmann::json& node, const std::string& name) {
  const nlohmann::json* parent = nullptr;
  std::string leaf;
  return h5snap_resolve(node, name, parent, leaf);
}
}  // namespace

bool H5Group::has(const std::string& name) const {
  if (object_->snap) return std::string("gdh").find(h5file_snap_kind(*object_->snap, name)) != std::string::npos;
  return h5file_link(object_->id, name) == H5FileLink::Hard;
}

namespace {
// The kind of object a hard link names (H5I_BADID when it cannot be opened).
H5I_type_t h5file_kind(hid_t loc, const std::string& name) {
  H5fileId obj(H5Oopen(loc, name.c_str(), H5P_DEFAULT));
  if (!obj.ok()) {
    H5Eclear2(H5E_DEFAULT);
    return H5I_BADID;
  }
  return H5Iget_type(obj.get());
}

// Opens `name` as a `kind` object, or throws NotFound/DataLoss naming it.
hid_t h5file_open_as(hid_t loc, const std::string& name, H5I_type_t kind, const std::string& where) {
  const char* what = kind == H5I_GROUP ? "group" : "dataset";
  H5FileLink link = h5file_link(loc, name);
  EMBER_CHECK(link != H5FileLink::Missing, NotFound) << "HDF5: no " << what << " " << where;
  EMBER_CHECK(link == H5FileLink::Hard, DataLoss)
      << "HDF5: " << where << " is a soft or external link, which is not allowed in a weights file";
  hid_t id = H5Oopen(loc, name.c_str(), H5P_DEFAULT);
  EMBER_CHECK(id >= 0, DataLoss) << "HDF5: cannot open " << where << " (corrupt file?): " << h5file_error_text();
  if (H5Iget_type(id) != kind) {
    H5Oclose(id);
    throw make_error<DataLoss>("HDF5: ", where, " is not a ", what);
  }
  return id;
}
}  // namespace

bool H5Group::has_group(const std::string& name) const {
  if (object_->snap) return h5file_snap_kind(*object_->snap, name) == 'g';
  return has(name) && h5file_kind(object_->id, name) == H5I_GROUP;
}

bool H5Group::has_dataset(const std::string& name) const {
  if (object_->snap) return h5file_snap_kind(*object_->snap, name) == 'd';
  return has(name) && h5file_kind(object_->id, name) == H5I_DATASET;
}

H5Group H5Group::group(const std::string& name) const {
  if (object_->snap) {
    const nlohmann::json* parent = nullptr;
    std::string leaf;
    const char kind = h5snap_resolve(*object_->snap, name, parent, leaf);
    EMBER_CHECK(kind != 'm', NotFound) << "HDF5: no group " << where(name);
    EMBER_CHECK(kind != 's', DataLoss) << "HDF5: " << where(name)
                                       << " is a soft or external link, which is not allowed in a weights file";
    EMBER_CHECK(kind == 'g', DataLoss) << "HDF5: " << where(name) << " is not a group";
    const nlohmann::json& node = (*parent)["g"][leaf];
    if (node.contains("e")) throw DataLoss(node["e"].get<std::string>());
    return H5Group(file_, std::make_shared<detail::H5Object>(&node), child_path(name));
  }
  hid_t id = h5file_open_as(object_->id, name, H5I_GROUP, where(name));
  return H5Group(file_, std::make_shared<detail::H5Object>(id), child_path(name));
}

H5Group H5Group::create_group(const std::string& name) {
  H5fileId lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  hid_t id = H5Gcreate2(object_->id, name.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0) h5file_write_failure("creating group " + where(name));
  return H5Group(file_, std::make_shared<detail::H5Object>(id), child_path(name));
}

namespace {
herr_t h5file_collect_name(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> H5Group::children(H5Order order) const {
  if (object_->snap)
    return h5snap_value((*object_->snap)[order == H5Order::Name ? "cn" : "cc"]).get<std::vector<std::string>>();
  H5_index_t index = H5_INDEX_NAME;
  if (order == H5Order::Creation) {
    H5fileId gcpl(H5Gget_create_plist(object_->id));
    unsigned flags = 0;
    if (gcpl.ok() && H5Pget_link_creation_order(gcpl.get(), &flags) >= 0 && (flags & H5P_CRT_ORDER_INDEXED))
      index = H5_INDEX_CRT_ORDER;
    H5Eclear2(H5E_DEFAULT);
  }
  std::vector<std::string> names;
  hsize_t idx = 0;
  if (H5Literate(object_->id, index, H5_ITER_INC, &idx, h5file_collect_name, &names) < 0)
    throw make_error<DataLoss>("HDF5: cannot list the members of ", where(), ": ", h5file_error_text());
  return names;
}

// --- datasets ---

void H5Group::write_dataset(const std::string& name, const Tensor& value) {
  EMBER_CHECK(value.dtype() != DType::String, Unimplemented)
      << "HDF5: cannot save " << where(name) << ": it is a string tensor of shape " << value.shape()
      << ", and checkpoints hold numeric and bool tensors only";
  Tensor t = value.device().is_cpu() ? value : value.to(Device::cpu());
  std::vector<hsize_t> dims(t.shape().begin(), t.shape().end());
  H5fileId space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  H5fileId type(h5file_type_of(t.dtype()));
  H5fileId lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  // No modification times in the dataset headers, as h5py writes them: the same weights give the same bytes.
  H5fileId dcpl(H5Pcreate(H5P_DATASET_CREATE));
  if (dcpl.ok()) H5Pset_obj_track_times(dcpl.get(), 0);
  if (!space.ok() || !type.ok() || !lcpl.ok() || !dcpl.ok()) h5file_write_failure("preparing dataset " + where(name));
  H5fileId ds(H5Dcreate2(object_->id, name.c_str(), type.get(), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT));
  if (!ds.ok()) h5file_write_failure("creating dataset " + where(name));
  if (t.num_elements() > 0 && H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()) < 0)
    h5file_write_failure("writing dataset " + where(name));
  if (t.dtype() == DType::BFloat16) {
    // Keras 3's H5IOStore marks bfloat16 data with a string attribute, since HDF5 has no such type.
    H5fileId stype(H5Tcopy(H5T_C_S1));
    H5Tset_size(stype.get(), H5T_VARIABLE);
    H5Tset_cset(stype.get(), H5T_CSET_UTF8);
    H5fileId sspace(H5Screate(H5S_SCALAR));
    H5fileId attr(H5Acreate2(ds.get(), "dtype", stype.get(), sspace.get(), H5P_DEFAULT, H5P_DEFAULT));
    const char* text = "bfloat16";
    if (!attr.ok() || H5Awrite(attr.get(), stype.get(), &text) < 0)
      h5file_write_failure("writing the dtype attribute of " + where(name));
  }
}

namespace {
// The dataset's "dtype" string attribute ("" when absent).
std::string h5file_dtype_attr(hid_t ds, const std::string& where) {
  if (H5Aexists(ds, "dtype") <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return {};
  }
  H5fileId attr(H5Aopen(ds, "dtype", H5P_DEFAULT));
  H5fileId ftype(attr.ok() ? H5Aget_type(attr.get()) : H5I_INVALID_HID);
  if (!ftype.ok() || H5Tget_class(ftype.get()) != H5T_STRING) return {};
  std::vector<std::string> v = h5file_read_strings(attr.get(), ftype.get(), where + " attribute 'dtype'");
  return v.size() == 1 ? v[0] : std::string();
}

// The dtype a stored HDF5 type reads as, and the memory type to read it with (new id).
DType h5file_dtype_of(hid_t ftype, const std::string& dtype_attr, hid_t& mem, const std::string& where) {
  size_t size = H5Tget_size(ftype);
  switch (H5Tget_class(ftype)) {
    case H5T_FLOAT:
      if (size == 4) return mem = H5Tcopy(H5T_NATIVE_FLOAT), DType::Float32;
      if (size == 8) return mem = H5Tcopy(H5T_NATIVE_DOUBLE), DType::Float64;
      if (size == 2) return mem = h5file_half_type(), DType::Float16;
      break;
    case H5T_INTEGER: {
      bool is_signed = H5Tget_sign(ftype) == H5T_SGN_2;
      if (dtype_attr == "bfloat16" && size == 2) return mem = H5Tcopy(ftype), DType::BFloat16;
      if (size == 1 && !is_signed) return mem = H5Tcopy(H5T_NATIVE_UINT8), DType::UInt8;
      if (size < 4 || (size == 4 && is_signed)) return mem = H5Tcopy(H5T_NATIVE_INT32), DType::Int32;
      if (size <= 8) return mem = H5Tcopy(H5T_NATIVE_INT64), DType::Int64;
      break;
    }
    case H5T_ENUM:
      if (size == 1 && H5Tget_nmembers(ftype) == 2) return mem = H5Tcopy(ftype), DType::Bool;  // h5py's bool
      break;
    case H5T_OPAQUE:
      if (size == 2 && dtype_attr == "bfloat16") return mem = H5Tcopy(ftype), DType::BFloat16;
      break;
    default:
      break;
  }
  throw make_error<DataLoss>("HDF5: dataset ", where, " has an unsupported type (class ",
                             static_cast<int>(H5Tget_class(ftype)), ", ", size,
                             " bytes); expected float16/32/64, an integer, bool or Keras's bfloat16");
}
}  // namespace

namespace {
// A dataset's record in a snapshot group (NotFound/DataLoss as the HDF5 path raises them).
const nlohmann::json& h5file_snap_dataset(const nlohmann::json& node, const std::string& name, const std::string& w) {
  const nlohmann::json* parent = nullptr;
  std::string leaf;
  const char kind = h5snap_resolve(node, name, parent, leaf);
  EMBER_CHECK(kind != 'm', NotFound) << "HDF5: no dataset " << w;
  EMBER_CHECK(kind != 's', DataLoss) << "HDF5: " << w << " is a soft or external link, which is not allowed in a weights file";
  EMBER_CHECK(kind == 'd', DataLoss) << "HDF5: " << w << " is not a dataset";
  return (*parent)["ds"][leaf];
}
}  // namespace

Shape H5Group::dataset_shape(const std::string& name) const {
  std::string w = where(name);
  if (object_->snap) return Shape(h5snap_value(h5file_snap_dataset(*object_->snap, name, w)["sh"]).get<std::vector<int64_t>>());
  H5fileId ds(h5file_open_as(object_->id, name, H5I_DATASET, w));
  H5fileId space(H5Dget_space(ds.get()));
  int rank = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  EMBER_CHECK(rank >= 0 && rank <= 32, DataLoss) << "HDF5: cannot read the shape of dataset " << w << ": "
                                                 << h5file_error_text();
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  std::vector<int64_t> out;
  double elements = 1;
  for (hsize_t d : dims) {
    elements *= static_cast<double>(d);
    EMBER_CHECK(elements < double(int64_t(1) << 50), DataLoss)
        << "HDF5: dataset " << w << " declares an impossible size (dimension " << d << ")";
    out.push_back(static_cast<int64_t>(d));
  }
  return Shape(out);
}

Tensor H5Group::read_dataset(const std::string& name) const {
  std::string w = where(name);
  if (object_->snap) {
    const nlohmann::json& t = h5snap_value(h5file_snap_dataset(*object_->snap, name, w)["t"]);
    Tensor out = Tensor::empty(Shape(t["shape"].get<std::vector<int64_t>>()), static_cast<DType>(t["dtype"].get<int>()),
                               Device::cpu());
    const uint64_t off = t["off"].get<uint64_t>(), n = t["n"].get<uint64_t>();
    EMBER_CHECK(n == out.nbytes() && off + n <= file_->raw->size(), Internal)
        << "HDF5: the record of dataset " << w << " does not match its bytes";
    if (n) std::memcpy(out.raw_data(), file_->raw->data() + off, n);
    return default_device().is_cpu() ? out : out.to(default_device());
  }
  Shape shape = dataset_shape(name);
  H5fileId ds(h5file_open_as(object_->id, name, H5I_DATASET, w));
  // Keras refuses external and virtual datasets, and shape "bombs" that declare far more data than the
  // file stores (a huge allocation from a tiny file).
  H5fileId dcpl(H5Dget_create_plist(ds.get()));
  EMBER_CHECK(dcpl.ok() && H5Pget_layout(dcpl.get()) != H5D_VIRTUAL && H5Pget_external_count(dcpl.get()) == 0,
              DataLoss)
      << "HDF5: dataset " << w << " is virtual or external, which is not allowed in a weights file";
  H5fileId ftype(H5Dget_type(ds.get()));
  EMBER_CHECK(ftype.ok(), DataLoss) << "HDF5: cannot read the type of dataset " << w << ": " << h5file_error_text();
  hid_t mem_id = H5I_INVALID_HID;
  DType dtype = h5file_dtype_of(ftype.get(), h5file_dtype_attr(ds.get(), w), mem_id, w);
  H5fileId mem(mem_id);
  const double declared = static_cast<double>(shape.num_elements()) * static_cast<double>(dtype_size(dtype));
  const double stored = static_cast<double>(H5Dget_storage_size(ds.get()));
  EMBER_CHECK(declared <= double(1ull << 32) || declared <= 1000.0 * stored, DataLoss)
      << "HDF5: dataset " << w << " declares " << declared << " bytes but stores only " << stored
      << "; refusing to load it";
  Tensor out = Tensor::empty(shape, dtype, Device::cpu());
  if (out.num_elements() > 0 && H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.raw_data()) < 0)
    throw make_error<DataLoss>("HDF5: cannot read dataset ", w, " (corrupt file?): ", h5file_error_text());
  if (dtype == DType::Bool) {
    auto* p = static_cast<uint8_t*>(out.raw_data());
    for (int64_t i = 0; i < out.num_elements(); ++i) p[i] = p[i] != 0;
  }
  return default_device().is_cpu() ? out : out.to(default_device());
}

}  // namespace ember::io
