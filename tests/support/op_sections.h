#pragma once
// The op table (framework/ops/op_list.def) cut into the sections its comments head, each named by its
// first op. A section runs up to the next section's first op and the last one to the end of the table,
// so every op belongs to exactly one section: an op added anywhere in the table is walked by the
// harnesses without editing them (a hand-written list of op ranges once left matmul_bias out).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "framework/ops/op.h"

namespace ember::testing {

struct OpSection {
  std::string name;
  OpId first;
};

// In table order; the first section starts at the table's first op.
inline const std::vector<OpSection>& op_sections() {
  static const std::vector<OpSection> sections = {
      {"elementwise unary", OpId::neg},     {"elementwise binary and ternary", OpId::add},
      {"reductions", OpId::reduce_sum},     {"linear algebra", OpId::matmul},
      {"shape and indexing", OpId::reshape}, {"creation", OpId::fill},
      {"neural network", OpId::softmax},    {"optimizer updates", OpId::apply_adam},
      {"custom ops", OpId::custom}};
  return sections;
}

// The ops of the section whose first op is `first`, in table order; empty for an op that heads no section.
inline std::vector<OpId> ops_of_section(OpId first) {
  const std::vector<OpSection>& s = op_sections();
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k].first != first) continue;
    const int end = k + 1 < s.size() ? static_cast<int>(s[k + 1].first) : kNumOps;
    std::vector<OpId> ops;
    for (int i = static_cast<int>(first); i < end; ++i) ops.push_back(static_cast<OpId>(i));
    return ops;
  }
  return {};
}

// The sections this test program has a test case for, recorded by EMBER_OP_SECTION_TEST_CASE at static
// initialisation, so a program can fail when a section has none.
inline std::set<OpId>& sections_with_a_test_case() {
  static std::set<OpId> s;
  return s;
}
inline bool record_section_test_case(OpId first) { return sections_with_a_test_case().insert(first).second; }

// The check each harness runs: the sections start at the table's first op, in order, cover every op once
// (matmul_bias, Dense's fused op, among them), and each has this program's test case.
inline void check_sections_cover_the_table() {
  const std::vector<OpSection>& sections = op_sections();
  REQUIRE_FALSE(sections.empty());
  CHECK(static_cast<int>(sections.front().first) == 0);
  for (size_t k = 1; k < sections.size(); ++k) CHECK(sections[k - 1].first < sections[k].first);
  size_t walked = 0;
  for (const OpSection& s : sections) {
    INFO("section " << s.name);
    CHECK(sections_with_a_test_case().count(s.first) == 1);
    walked += ops_of_section(s.first).size();
  }
  CHECK(walked == static_cast<size_t>(kNumOps));
  CHECK(sections_with_a_test_case().size() == sections.size());
  const std::vector<OpId> linalg = ops_of_section(OpId::matmul);
  CHECK(std::count(linalg.begin(), linalg.end(), OpId::matmul_bias) == 1);
}

}  // namespace ember::testing

#define EMBER_OP_SECTION_CAT2(a, b) a##b
#define EMBER_OP_SECTION_CAT(a, b) EMBER_OP_SECTION_CAT2(a, b)
// TEST_CASE(title, tags) whose body runs `body(first)`, recorded as covering the section headed by first.
#define EMBER_OP_SECTION_TEST_CASE(title, tags, first, body)                                     \
  [[maybe_unused]] static const bool EMBER_OP_SECTION_CAT(ember_section_recorded_, __LINE__) = \
      ::ember::testing::record_section_test_case(first);                                       \
  TEST_CASE(title, tags) { body(first); }
