// data::text_line_dataset (TF's TextLineDataset) and string elements through the pipeline: shuffle, batch,
// unbatch, padded_batch, map (tokenising lines), filter, cache, take/skip, zip, prefetch.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <algorithm>
#include <sstream>

#include "data/text_line_dataset.h"
#include "tests/data/data_testing.h"

using namespace ember;
using Catch::Contains;
using data::Dataset;
using data::Element;
using data::text_line_dataset;
using ember::testing::message_of;
using ember::testing::TempDir;
using ember::testing::write_plain;

namespace {

using Strings = std::vector<std::string>;

// Every element of one pass: component 0, a scalar string.
Strings lines(const Dataset& ds) {
  Strings out;
  for (const Element& e : ds) {
    REQUIRE(e.size() == 1);
    REQUIRE(e[0].dtype() == DType::String);
    REQUIRE(e[0].rank() == 0);
    out.push_back(e[0].item<std::string>());
  }
  return out;
}

// `bytes` compressed by zlib into a file: a gzip member (window bits 15 + 16) or a zlib stream (15).
void write_compressed(const std::string& path, const std::string& bytes, bool gzip) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, gzip ? MAX_WBITS + 16 : MAX_WBITS, 8,
                       Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, bytes.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  write_plain(path, out);
}

// "word word ..." -> int32 [n] of each word's length: a stand-in tokeniser run in Dataset.map.
Tensor word_lengths(const Tensor& line) {
  std::istringstream in(line.item<std::string>());
  std::vector<int32_t> ids;
  for (std::string w; in >> w;) ids.push_back(static_cast<int32_t>(w.size()));
  return Tensor::from_vector<int32_t>(ids);
}

}  // namespace

TEST_CASE("text_line_dataset: one string per line, line breaks as TF's reader treats them", "[data][text]") {
  TempDir dir("text_lines");
  write_plain(dir.file("unix.txt"), "first line\n\nthird\n");
  write_plain(dir.file("dos.txt"), "crlf one\r\ncr\rinside\r\n\r\nlast without newline");
  write_plain(dir.file("empty.txt"), "");
  write_plain(dir.file("tail.txt"), "x\n\r");  // only a "\r" after the last "\n": no line

  CHECK(lines(text_line_dataset({dir.file("unix.txt")})) == Strings{"first line", "", "third"});
  CHECK(lines(text_line_dataset({dir.file("dos.txt")})) ==
        Strings{"crlf one", "crinside", "", "last without newline"});
  CHECK(lines(text_line_dataset({dir.file("empty.txt")})).empty());
  CHECK(lines(text_line_dataset({dir.file("tail.txt")})) == Strings{"x"});
  CHECK(lines(text_line_dataset({})).empty());

  // Several files in order; a buffer smaller than a line splits lines across refills.
  const Dataset both = text_line_dataset({dir.file("unix.txt"), dir.file("empty.txt"), dir.file("dos.txt")},
                                         {.buffer_size = 3});
  CHECK(lines(both) == Strings{"first line", "", "third", "crlf one", "crinside", "", "last without newline"});
  CHECK(lines(both) == lines(both));  // each pass reads the files again
  CHECK(both.cardinality() == data::UNKNOWN_CARDINALITY);
}

TEST_CASE("text_line_dataset: num_parallel_reads interleaves files one line at a time", "[data][text]") {
  TempDir dir("text_interleave");
  write_plain(dir.file("a"), "a0\na1\na2\n");
  write_plain(dir.file("b"), "b0\n");
  write_plain(dir.file("c"), "c0\nc1\n");
  write_plain(dir.file("d"), "d0\nd1\nd2\nd3\n");
  const Strings files = {dir.file("a"), dir.file("b"), dir.file("c"), dir.file("d")};
  // TF: tf.data.TextLineDataset(files, num_parallel_reads=2) (interleave, cycle_length 2, block_length 1). A file
  // that ends passes the turn on; the next file opens in its slot when the cycle comes back to it (a2 before c0).
  CHECK(lines(text_line_dataset(files, {.num_parallel_reads = 2})) ==
        Strings{"a0", "b0", "a1", "a2", "c0", "c1", "d0", "d1", "d2", "d3"});
  CHECK(lines(text_line_dataset(files, {.num_parallel_reads = 4})) ==
        Strings{"a0", "b0", "c0", "d0", "a1", "c1", "d1", "a2", "d2", "d3"});
  CHECK(lines(text_line_dataset(files, {.num_parallel_reads = 1})) == lines(text_line_dataset(files)));
  CHECK(lines(text_line_dataset(files, {.num_parallel_reads = data::AUTOTUNE})).size() == 10);
}

TEST_CASE("text_line_dataset: GZIP and ZLIB files", "[data][text]") {
  TempDir dir("text_gzip");
  std::string text;
  Strings expected;
  for (int i = 0; i < 3000; ++i) {  // larger than the buffer: several inflate rounds
    expected.push_back("line " + std::to_string(i) + (i % 7 ? " with some words" : ""));
    text += expected.back() + (i % 2 ? "\r\n" : "\n");
  }
  write_compressed(dir.file("lines.gz"), text, true);
  write_compressed(dir.file("lines.zz"), text, false);
  CHECK(lines(text_line_dataset({dir.file("lines.gz")}, {.compression_type = "GZIP", .buffer_size = 1000})) == expected);
  CHECK(lines(text_line_dataset({dir.file("lines.zz")}, {.compression_type = "ZLIB"})) == expected);

  // Two gzip members in one file (cat a.gz b.gz) read as one text.
  write_compressed(dir.file("one.gz"), "1\n2", true);
  write_compressed(dir.file("two.gz"), "\n3\n", true);
  write_plain(dir.file("both.gz"), ember::testing::read_plain(dir.file("one.gz")) +
                                       ember::testing::read_plain(dir.file("two.gz")));
  CHECK(lines(text_line_dataset({dir.file("both.gz")}, {.compression_type = "GZIP"})) == Strings{"1", "2", "3"});

  // Plain text read as GZIP, and a truncated gzip file: DataLoss naming the file.
  write_plain(dir.file("plain.txt"), "not compressed\n");
  CHECK_THAT(message_of<DataLoss>([&] { lines(text_line_dataset({dir.file("plain.txt")}, {.compression_type = "GZIP"})); }),
             Contains("plain.txt") && Contains("GZIP"));
  const std::string gz = ember::testing::read_plain(dir.file("lines.gz"));
  write_plain(dir.file("cut.gz"), gz.substr(0, gz.size() / 2));
  CHECK_THAT(message_of<DataLoss>([&] { lines(text_line_dataset({dir.file("cut.gz")}, {.compression_type = "GZIP"})); }),
             Contains("cut.gz") && Contains("truncated"));
}

TEST_CASE("text_line_dataset: errors", "[data][text]") {
  TempDir dir("text_errors");
  write_plain(dir.file("ok.txt"), "a\n");
  const std::string missing = dir.file("missing.txt");
  // As in TF, a missing file fails when a pass reaches it, after the files before it.
  auto it = text_line_dataset({dir.file("ok.txt"), missing}).make_iterator();
  CHECK(it.next()->at(0).item<std::string>() == "a");
  CHECK_THAT(message_of<NotFound>([&] { it.next(); }), Contains("text_line_dataset") && Contains(missing));
  CHECK_THAT(message_of<InvalidArgument>([&] { text_line_dataset({missing}, {.compression_type = "BZIP2"}); }),
             Contains("compression_type") && Contains("BZIP2"));
  CHECK_THROWS_AS(text_line_dataset({missing}, {.buffer_size = -1}), InvalidArgument);
  CHECK_THROWS_AS(text_line_dataset({missing}, {.num_parallel_reads = -5}), InvalidArgument);
}

TEST_CASE("data: string elements through shuffle, batch, map, cache, take and skip", "[data][text][string]") {
  TempDir dir("text_pipeline");
  Strings all;
  std::string text;
  for (int i = 0; i < 20; ++i) {
    all.push_back("w" + std::to_string(i) + std::string(static_cast<size_t>(i % 4), 'x') + " to be");
    text += all.back() + "\n";
  }
  write_plain(dir.file("corpus.txt"), text);
  const Dataset ds = text_line_dataset({dir.file("corpus.txt")});

  SECTION("shuffle with a seed: a fixed permutation of the lines") {
    const Dataset shuffled = ds.shuffle(100, {.seed = 7, .reshuffle_each_iteration = false});
    const Strings a = lines(shuffled);
    CHECK(a == lines(shuffled));
    CHECK(a != all);
    Strings sorted = a, expected = all;
    std::sort(sorted.begin(), sorted.end());
    std::sort(expected.begin(), expected.end());
    CHECK(sorted == expected);
  }
  SECTION("batch stacks lines into [n] string tensors; unbatch splits them back") {
    std::vector<Tensor> batches;
    for (const Element& e : ds.batch(8)) batches.push_back(e[0]);
    REQUIRE(batches.size() == 3);
    CHECK(batches[0].dtype() == DType::String);
    CHECK(batches[0].shape() == Shape{8});
    CHECK(batches[2].shape() == Shape{4});
    CHECK(batches[1].to_vector<std::string>() == Strings(all.begin() + 8, all.begin() + 16));
    CHECK(lines(ds.batch(8).unbatch()) == all);
    CHECK(lines(Dataset::from_tensor_slices(Tensor::from_vector<std::string>(all)).batch(6).unbatch()) == all);
  }
  SECTION("padded_batch pads strings with empty strings, and refuses a padding value for them") {
    // Line i ("wi", i % 4 x's, " to be") keeps its first 1 + i % 4 words: 1, 2 and 3 of them.
    const Dataset words = ds.take(3).map([](const Tensor& line) {
      std::istringstream in(line.item<std::string>());
      Strings w;
      for (std::string s; in >> s;) w.push_back(s);
      w.resize(1 + static_cast<size_t>(std::count(w[0].begin(), w[0].end(), 'x')));
      return Tensor::from_vector<std::string>(w);
    });
    auto it = words.padded_batch(3).make_iterator();
    const Tensor b = it.next()->at(0);
    CHECK(b.shape() == Shape{3, 3});
    CHECK(b.to_vector<std::string>() == Strings{"w0", "", "", "w1x", "to", "", "w2xx", "to", "be"});
    CHECK_THAT(message_of<InvalidArgument>([&] { words.padded_batch(3, {.padding_values = {1.0}}).make_iterator().next(); }),
               Contains("padded_batch") && Contains("string"));
  }
  SECTION("map tokenises each line into an int32 tensor; filter and cache see strings") {
    const Dataset tokens = ds.filter([](const Tensor& line) { return line.item<std::string>().size() > 8; })
                               .map(word_lengths, {.num_parallel_calls = 2})
                               .cache();
    std::vector<std::vector<int32_t>> first, second;
    for (const Element& e : tokens) first.push_back(e[0].to_vector<int32_t>());
    for (const Element& e : tokens) second.push_back(e[0].to_vector<int32_t>());
    CHECK(first == second);
    CHECK(first.size() == static_cast<size_t>(std::count_if(all.begin(), all.end(), [](const std::string& l) {
            return l.size() > 8;
          })));
    REQUIRE(!first.empty());
    CHECK(first[0] == std::vector<int32_t>{3, 2, 2});  // "w1x to be"
    CHECK(first.back() == std::vector<int32_t>{6, 2, 2});  // "w19xxx to be"
    CHECK(lines(ds.cache().skip(18)) == Strings{all[18], all[19]});
  }
  SECTION("take, skip, repeat, zip, shard and prefetch") {
    CHECK(lines(ds.skip(5).take(2)) == Strings{all[5], all[6]});
    CHECK(lines(ds.take(2).repeat(2)) == Strings{all[0], all[1], all[0], all[1]});
    CHECK(lines(ds.shard(10, 3)) == Strings{all[3], all[13]});
    CHECK(lines(ds.prefetch(data::AUTOTUNE)) == all);
    int i = 0;
    for (const Element& e : Dataset::zip({ds, Dataset::range(100)})) {
      CHECK(e[0].item<std::string>() == all[static_cast<size_t>(i)]);
      CHECK(e[1].item<int64_t>() == i++);
    }
    CHECK(i == 20);
  }
}
