// csv::load: one pass over the file's lines with std::from_chars.
#include "data/csv.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

namespace ember::datasets::csv {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// The field without surrounding blanks and one pair of double quotes; `col` moves to where it now starts.
std::string_view trim(std::string_view f, size_t& col) {
  while (!f.empty() && is_blank(f.front())) f.remove_prefix(1), ++col;
  while (!f.empty() && is_blank(f.back())) f.remove_suffix(1);
  if (f.size() >= 2 && f.front() == '"' && f.back() == '"') {
    f = f.substr(1, f.size() - 2);
    ++col;
  }
  return f;
}

// Splits one line on the delimiter: (field, 1-based column where it starts).
std::vector<std::pair<std::string_view, size_t>> split(std::string_view line, char delimiter) {
  std::vector<std::pair<std::string_view, size_t>> out;
  size_t start = 0;
  while (true) {
    const size_t end = line.find(delimiter, start);
    out.emplace_back(line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start),
                     start + 1);
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

}  // namespace

Tensor load(const std::string& path, Options options) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), NotFound) << "csv::load: cannot open " << path;
  std::ostringstream whole;
  whole << in.rdbuf();
  const std::string text = whole.str();

  std::vector<float> values;
  int64_t columns = -1, rows = 0;
  bool header_pending = options.header;
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const auto fields = split(line, options.delimiter);
    const int64_t n = static_cast<int64_t>(fields.size());
    EMBER_CHECK(columns < 0 || n == columns, InvalidArgument)
        << "csv::load: " << path << ":" << line_no << ": " << n << " fields, expected " << columns
        << " like the first row";
    columns = n;
    if (header_pending) {
      header_pending = false;
      continue;
    }
    for (int64_t c = 0; c < n; ++c) {
      size_t col = fields[static_cast<size_t>(c)].second;
      std::string_view f = trim(fields[static_cast<size_t>(c)].first, col);
      if (!f.empty() && f.front() == '+') f.remove_prefix(1);  // from_chars takes no explicit plus
      float v = 0;
      const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
      EMBER_CHECK(!f.empty() && ec == std::errc() && end == f.data() + f.size(), InvalidArgument)
          << "csv::load: " << path << ":" << line_no << ":" << col << ": field " << c + 1 << " '"
          << fields[static_cast<size_t>(c)].first << "' is not a number";
      values.push_back(v);
    }
    ++rows;
  }
  return Tensor::from_vector<float>(values, Shape{rows, std::max<int64_t>(columns, 0)}, Device::cpu());
}

}  // namespace ember::datasets::csv
