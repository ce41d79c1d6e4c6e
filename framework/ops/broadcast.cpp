#include "framework/ops/broadcast.h"

#include <algorithm>

#include "framework/core/error.h"

namespace ember {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  if (a == b) return a;
  int64_t r = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.rank() ? 1 : a[i - (r - a.rank())];
    int64_t db = i < r - b.rank() ? 1 : b[i - (r - b.rank())];
    EMBER_CHECK(da == db || da == 1 || db == 1, InvalidArgument)
        << op << ": shapes " << a << " and " << b << " are not broadcastable (dimension " << i << ": " << da
        << " vs " << db << ")";
    out[static_cast<size_t>(i)] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(static_cast<size_t>(out.rank()), 0);
  std::vector<int64_t> in_strides = in.strides();
  int64_t off = out.rank() - in.rank();
  for (int64_t i = 0; i < in.rank(); ++i)
    s[static_cast<size_t>(i + off)] = in[i] == 1 ? 0 : in_strides[static_cast<size_t>(i)];
  return s;
}

}  // namespace ember
