#include "framework/ops/op.h"

#include <ostream>

namespace ember {

namespace {
constexpr OpInfo kOps[] = {
#define EMBER_OP(name, arity, grad) {#name, arity, grad == 1},
#define Diff 1
#define NoDiff 0
#include "framework/ops/op_list.def"
#undef Diff
#undef NoDiff
#undef EMBER_OP
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == kNumOps);
}  // namespace

const OpInfo& op_info(OpId op) { return kOps[static_cast<int>(op)]; }

std::ostream& operator<<(std::ostream& os, OpId op) { return os << op_name(op); }

}  // namespace ember
