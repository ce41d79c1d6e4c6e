// imdb::load_data: locate imdb.npz, read its four arrays, then Keras's steps in its order: shuffle, start
// character and index offset, maxlen filter, vocabulary cut.
#include "data/imdb.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "data/npz.h"
#include "data/numpy_random.h"

namespace ember::datasets::imdb {

namespace {

namespace fs = std::filesystem;
using Sequences = std::vector<std::vector<int64_t>>;

constexpr const char* kWho = "imdb.load_data";

std::string locate(const std::optional<std::string>& path) {
  std::error_code ec;
  std::vector<fs::path> candidates;
  const char* env = std::getenv("EMBER_DATA_DIR");
  if (path) {
    candidates.push_back(fs::is_directory(*path, ec) ? fs::path(*path) / "imdb.npz" : fs::path(*path));
  } else if (env && *env) {
    candidates.push_back(fs::path(env) / "imdb" / "imdb.npz");
    candidates.push_back(fs::path(env) / "imdb.npz");
  }
  std::string tried;
  for (const fs::path& p : candidates) {
    if (fs::is_regular_file(p, ec)) return p.string();
    tried += "\n  " + p.string() + " (no such file)";
  }
  if (!path && (!env || !*env)) tried += "\n  $EMBER_DATA_DIR (not set)";
  throw NotFound(std::string(kWho) + ": imdb.npz not found. Tried:" + tried +
                 "\nNothing is downloaded: put imdb.npz (https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
                 "imdb.npz) into $EMBER_DATA_DIR/imdb, or pass its path");
}

struct Raw {
  Sequences x;
  std::vector<int64_t> y;
};

Raw read_split(const datasets::detail::NpzFile& npz, const std::string& path, const std::string& split) {
  Raw r{npz.int_lists("x_" + split), npz.int_array("y_" + split).to_vector<int64_t>()};
  EMBER_CHECK(r.x.size() == r.y.size(), DataLoss)
      << kWho << ": " << path << " holds " << r.x.size() << " x_" << split << " sequences but " << r.y.size()
      << " y_" << split << " labels";
  return r;
}

// indices = arange(n); rng.shuffle(indices); x = x[indices], as Keras reorders each split.
void shuffle(Raw& r, data::detail::NumpyRandomState& rng) {
  std::vector<size_t> idx(r.x.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  rng.shuffle(idx);
  Raw out;
  for (size_t i : idx) {
    out.x.push_back(std::move(r.x[i]));
    out.y.push_back(r.y[i]);
  }
  r = std::move(out);
}

void prepare(Raw& r, const Options& o) {
  for (std::vector<int64_t>& seq : r.x) {
    for (int64_t& w : seq) w += o.index_from;
    if (o.start_char) seq.insert(seq.begin(), *o.start_char);
  }
  if (o.maxlen) {  // Keras keeps len(x) < maxlen
    Raw kept;
    for (size_t i = 0; i < r.x.size(); ++i)
      if (static_cast<int64_t>(r.x[i].size()) < *o.maxlen) {
        kept.x.push_back(std::move(r.x[i]));
        kept.y.push_back(r.y[i]);
      }
    r = std::move(kept);
  }
}

Split to_split(Raw r) {
  const int64_t n = static_cast<int64_t>(r.y.size());
  return {std::move(r.x), Tensor::from_vector<int64_t>(r.y, Shape{n}, Device::cpu())};
}

}  // namespace

TrainTest load_data(Options options) {
  const std::string path = locate(options.path);
  const datasets::detail::NpzFile npz(path);
  Raw train = read_split(npz, path, "train"), test = read_split(npz, path, "test");
  data::detail::NumpyRandomState rng(options.seed);  // one generator, train first
  shuffle(train, rng);
  shuffle(test, rng);
  prepare(train, options);
  prepare(test, options);
  EMBER_CHECK(!options.maxlen || (!train.x.empty() && !test.x.empty()), InvalidArgument)
      << kWho << ": after filtering for sequences shorter than maxlen=" << *options.maxlen
      << ", no sequence was kept. Increase maxlen.";
  // Without num_words, Keras takes the largest index present as the bound, so that word itself falls out.
  int64_t num_words = options.num_words.value_or(0);
  if (num_words == 0)
    for (const Raw* r : {&train, &test})
      for (const std::vector<int64_t>& seq : r->x)
        for (int64_t w : seq) num_words = std::max(num_words, w);
  for (Raw* r : {&train, &test})
    for (std::vector<int64_t>& seq : r->x) {
      std::vector<int64_t> out;
      out.reserve(seq.size());
      for (int64_t w : seq) {
        if (options.skip_top <= w && w < num_words) out.push_back(w);
        else if (options.oov_char) out.push_back(*options.oov_char);
      }
      seq = std::move(out);
    }
  return {to_split(std::move(train)), to_split(std::move(test))};
}

}  // namespace ember::datasets::imdb
