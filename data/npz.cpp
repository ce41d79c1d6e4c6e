// NpzFile: libzip for the archive, io::parse_npy_header for each member's .npy header, and for object
// arrays a small pickle reader that knows the opcodes NumPy's pickles of integer lists use (protocols 2-5).
#include "data/npz.h"

#include <zip.h>

#include <charconv>
#include <cstring>
#include <map>
#include <memory>

#include "framework/io/npy.h"

namespace ember::datasets::detail {

struct NpzFile::Npy {
  io::NpyHeader header;
  std::string data;   // the bytes after the header
  std::string where;  // "archive:member.npy"
};

namespace {

// ---- pickle ----

struct PyObj;
using Obj = std::shared_ptr<PyObj>;
struct PyObj {
  enum class Kind { None, Bool, Int, Str, List, Tuple, Dict, Global, Reduce } kind = Kind::None;
  int64_t i = 0;
  std::string s;
  std::vector<Obj> items;  // List, Tuple; Reduce: {callable, args}
  Obj state;               // Reduce: what BUILD set
};

Obj make(PyObj::Kind k) {
  Obj o = std::make_shared<PyObj>();
  o->kind = k;
  return o;
}

class Unpickler {
 public:
  Unpickler(const std::string& bytes, std::string where) : b_(bytes), where_(std::move(where)) {}

  Obj load() {
    while (true) {
      const size_t at = pos_;
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;                  // PROTO
        case 0x95: take(8); break;                 // FRAME
        case '.': return pop(at);                  // STOP
        case 0x94: memo_[memo_.size()] = top(at); break;  // MEMOIZE
        case 'q': memo_[byte()] = top(at); break;  // BINPUT
        case 'r': memo_[le(4)] = top(at); break;   // LONG_BINPUT
        case 'p': memo_[text_int(at)] = top(at); break;  // PUT
        case 'h': push(get(byte(), at)); break;    // BINGET
        case 'j': push(get(le(4), at)); break;     // LONG_BINGET
        case 'g': push(get(text_int(at), at)); break;  // GET
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case 'N': push(make(PyObj::Kind::None)); break;
        case 0x88: case 0x89: {                    // NEWTRUE, NEWFALSE
          Obj o = make(PyObj::Kind::Bool);
          o->i = op == 0x88;
          push(o);
          break;
        }
        case 'K': push_int(byte()); break;         // BININT1
        case 'M': push_int(static_cast<int64_t>(le(2))); break;  // BININT2
        case 'J': push_int(static_cast<int32_t>(le(4))); break;  // BININT
        case 0x8a: {                               // LONG1
          const size_t n = byte();
          EMBER_CHECK(n <= 8, DataLoss) << where_ << ": pickle integer of " << n << " bytes at byte " << at;
          const std::string v = take(n);
          uint64_t u = 0;
          for (size_t k = 0; k < n; ++k) u |= uint64_t{static_cast<uint8_t>(v[k])} << (8 * k);
          if (n > 0 && n < 8 && (static_cast<uint8_t>(v[n - 1]) & 0x80)) u |= ~uint64_t{0} << (8 * n);
          push_int(static_cast<int64_t>(u));
          break;
        }
        case 'I': push_int(static_cast<int64_t>(text_int(at))); break;  // INT
        case 0x8c: case 'U': case 'C': push_str(take(byte())); break;  // SHORT_BINUNICODE/BINSTRING/BINBYTES
        case 'X': case 'T': case 'B': push_str(take(le(4))); break;    // BINUNICODE/BINSTRING/BINBYTES
        case 0x8d: case 0x8e: push_str(take(le(8))); break;            // BINUNICODE8, BINBYTES8
        case 'c': {                                // GLOBAL
          Obj g = make(PyObj::Kind::Global);
          g->s = line();
          g->s += "." + line();
          push(g);
          break;
        }
        case 0x93: {                               // STACK_GLOBAL
          Obj name = pop(at), module = pop(at);
          Obj g = make(PyObj::Kind::Global);
          g->s = module->s + "." + name->s;
          push(g);
          break;
        }
        case ')': push(make(PyObj::Kind::Tuple)); break;  // EMPTY_TUPLE
        case 0x85: case 0x86: case 0x87: {         // TUPLE1..3
          Obj t = make(PyObj::Kind::Tuple);
          t->items.resize(op - 0x84);
          for (size_t k = t->items.size(); k-- > 0;) t->items[k] = pop(at);
          push(t);
          break;
        }
        case 't': case 'l': {                      // TUPLE, LIST
          Obj t = make(op == 't' ? PyObj::Kind::Tuple : PyObj::Kind::List);
          t->items = pop_mark(at);
          push(t);
          break;
        }
        case ']': push(make(PyObj::Kind::List)); break;  // EMPTY_LIST
        case '}': push(make(PyObj::Kind::Dict)); break;  // EMPTY_DICT
        case 'a': {                                // APPEND
          Obj v = pop(at);
          list_at_top(at)->items.push_back(v);
          break;
        }
        case 'e': {                                // APPENDS
          std::vector<Obj> vs = pop_mark(at);
          Obj l = list_at_top(at);
          l->items.insert(l->items.end(), vs.begin(), vs.end());
          break;
        }
        case 's': pop(at); pop(at); break;         // SETITEM (dict contents are not needed)
        case 'u': pop_mark(at); break;             // SETITEMS
        case 'R': {                                // REDUCE
          Obj args = pop(at), fn = pop(at);
          Obj r = make(PyObj::Kind::Reduce);
          r->items = {fn, args};
          push(r);
          break;
        }
        case 'b': {                                // BUILD
          Obj state = pop(at);
          top(at)->state = state;
          break;
        }
        default:
          throw DataLoss(where_ + ": unsupported pickle opcode 0x" + hex(op) + " at byte " + std::to_string(at) +
                         " of the object array's pickle");
      }
    }
  }

 private:
  static std::string hex(uint8_t v) {
    const char* d = "0123456789abcdef";
    return {d[v >> 4], d[v & 15]};
  }
  [[noreturn]] void corrupt(size_t at, const std::string& what) const {
    throw DataLoss(where_ + ": corrupt pickle at byte " + std::to_string(at) + " of the object array: " + what);
  }
  uint8_t byte() {
    if (pos_ >= b_.size()) corrupt(pos_, "it ends before STOP");
    return static_cast<uint8_t>(b_[pos_++]);
  }
  std::string take(size_t n) {
    if (n > b_.size() - pos_) corrupt(pos_, "it ends inside a value of " + std::to_string(n) + " bytes");
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t le(size_t n) {
    const std::string s = take(n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= uint64_t{static_cast<uint8_t>(s[k])} << (8 * k);
    return v;
  }
  std::string line() {
    const size_t end = b_.find('\n', pos_);
    if (end == std::string::npos) corrupt(pos_, "a text field lacks its newline");
    std::string s = b_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  // A protocol-0 decimal field (PUT, GET, INT); INT's "-" signs are not produced by NumPy's pickles.
  uint64_t text_int(size_t at) {
    const std::string s = line();
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) corrupt(at, "bad decimal field \"" + s + "\"");
    return v;
  }
  void push(Obj o) { stack_.push_back(std::move(o)); }
  void push_int(int64_t v) {
    Obj o = make(PyObj::Kind::Int);
    o->i = v;
    push(o);
  }
  void push_str(std::string s) {
    Obj o = make(PyObj::Kind::Str);
    o->s = std::move(s);
    push(o);
  }
  Obj top(size_t at) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) corrupt(at, "the stack is empty");
    return stack_.back();
  }
  Obj pop(size_t at) {
    Obj o = top(at);
    stack_.pop_back();
    return o;
  }
  Obj list_at_top(size_t at) {
    Obj l = top(at);
    if (l->kind != PyObj::Kind::List) corrupt(at, "APPEND to something that is not a list");
    return l;
  }
  std::vector<Obj> pop_mark(size_t at) {
    if (marks_.empty()) corrupt(at, "no MARK");
    std::vector<Obj> out(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return out;
  }
  Obj get(uint64_t k, size_t at) {
    auto it = memo_.find(k);
    if (it == memo_.end()) corrupt(at, "memo key " + std::to_string(k) + " unset");
    return it->second;
  }

  const std::string& b_;
  std::string where_;
  size_t pos_ = 0;
  std::vector<Obj> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Obj> memo_;
};

}  // namespace

NpzFile::NpzFile(std::string path) : path_(std::move(path)) {
  int err = 0;
  zip_ = zip_open(path_.c_str(), ZIP_RDONLY, &err);
  if (!zip_) {
    zip_error_t e;
    zip_error_init_with_code(&e, err);
    const std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    EMBER_CHECK(err != ZIP_ER_NOENT && err != ZIP_ER_OPEN, NotFound) << "cannot open " << path_ << ": " << why;
    throw DataLoss(path_ + ": not a NumPy .npz (zip) archive: " + why);
  }
}

NpzFile::~NpzFile() { zip_discard(static_cast<zip_t*>(zip_)); }

NpzFile::Npy NpzFile::read(const std::string& name) const {
  zip_t* z = static_cast<zip_t*>(zip_);
  const std::string member = name + ".npy";
  Npy npy;
  npy.where = path_ + ":" + member;
  zip_stat_t st;
  EMBER_CHECK(zip_stat(z, member.c_str(), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE), DataLoss)
      << path_ << " lacks " << member;
  std::string bytes(static_cast<size_t>(st.size), '\0');
  zip_file_t* f = zip_fopen(z, member.c_str(), 0);
  EMBER_CHECK(f != nullptr, DataLoss) << npy.where << ": cannot read: " << zip_strerror(z);
  const zip_int64_t got = zip_fread(f, bytes.data(), bytes.size());
  const std::string why = got < 0 ? zip_file_strerror(f) : "";
  zip_fclose(f);
  EMBER_CHECK(got == static_cast<zip_int64_t>(bytes.size()), DataLoss)
      << npy.where << ": read " << got << " of " << bytes.size() << " bytes " << why;
  npy.header = io::parse_npy_header(bytes, npy.where);
  npy.data = bytes.substr(npy.header.data_offset);
  return npy;
}

Tensor NpzFile::int_array(const std::string& name) const {
  const Npy npy = read(name);
  const std::string& d = npy.header.descr;
  const bool ok = d.size() == 3 && (d[0] == '<' || d[0] == '|') && (d[1] == 'i' || d[1] == 'u') &&
                  (d[2] == '1' || d[2] == '2' || d[2] == '4' || d[2] == '8') && !(d[1] == 'u' && d[2] == '8');
  const bool fortran = npy.header.fortran_order;
  EMBER_CHECK(ok && !fortran, DataLoss) << npy.where << ": expected a little-endian integer array in C order, got "
                                        << "dtype '" << d << "'" << (fortran ? " in Fortran order" : "");
  const size_t width = static_cast<size_t>(d[2] - '0');
  const int64_t n = npy.header.shape.num_elements();
  EMBER_CHECK(npy.data.size() == static_cast<size_t>(n) * width, DataLoss)
      << npy.where << ": holds " << npy.data.size() << " data bytes, but shape and dtype need " << n * width;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (size_t k = 0; k < v.size(); ++k) {
    uint64_t u = 0;
    for (size_t b = 0; b < width; ++b) u |= uint64_t{static_cast<uint8_t>(npy.data[k * width + b])} << (8 * b);
    if (d[1] == 'i' && width < 8 && (u >> (8 * width - 1)) & 1) u |= ~uint64_t{0} << (8 * width);  // sign-extend
    v[k] = static_cast<int64_t>(u);
  }
  return Tensor::from_vector<int64_t>(v, npy.header.shape, Device::cpu());
}

std::vector<std::vector<int64_t>> NpzFile::int_lists(const std::string& name) const {
  const Npy npy = read(name);
  const io::NpyHeader& h = npy.header;
  EMBER_CHECK(h.descr == "|O" && h.shape.rank() == 1, DataLoss)
      << npy.where << ": expected a 1-D object array (ragged sequences), got dtype '" << h.descr << "' with "
      << h.shape.rank() << " dimensions";
  const Obj arr = Unpickler(npy.data, npy.where).load();
  // numpy's ndarray.__reduce__: BUILD's state is (version, shape, dtype, is_fortran, the elements).
  const bool ok = arr->kind == PyObj::Kind::Reduce && arr->state && arr->state->kind == PyObj::Kind::Tuple &&
                  arr->state->items.size() == 5 && arr->state->items[4]->kind == PyObj::Kind::List;
  EMBER_CHECK(ok, DataLoss) << npy.where << ": the pickle does not hold a NumPy object array";
  std::vector<std::vector<int64_t>> out;
  for (const Obj& seq : arr->state->items[4]->items) {
    EMBER_CHECK(seq->kind == PyObj::Kind::List, DataLoss)
        << npy.where << ": element " << out.size() << " is not a list of integers";
    std::vector<int64_t>& o = out.emplace_back();
    for (const Obj& v : seq->items) {
      EMBER_CHECK(v->kind == PyObj::Kind::Int, DataLoss)
          << npy.where << ": element " << out.size() - 1 << " holds something other than an integer";
      o.push_back(v->i);
    }
  }
  EMBER_CHECK(static_cast<int64_t>(out.size()) == h.shape[0], DataLoss)
      << npy.where << ": the header promises " << h.shape[0] << " elements, the pickle holds " << out.size();
  return out;
}

}  // namespace ember::datasets::detail
