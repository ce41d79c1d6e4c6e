#pragma once
// OpId and the static facts of each op, generated from op_list.def.
#include <cstdint>
#include <iosfwd>

namespace ember {

enum class OpId : uint16_t {
#define EMBER_OP(name, arity, grad) name,
#include "framework/ops/op_list.def"
#undef EMBER_OP
};

inline constexpr int kNumOps = 0
#define EMBER_OP(name, arity, grad) +1
#include "framework/ops/op_list.def"
#undef EMBER_OP
    ;

// One row of op_list.def.
struct OpInfo {
  const char* name;
  int arity;  // tensor inputs: -1 variadic, 0 creation ops
  bool differentiable;
};

const OpInfo& op_info(OpId op);
inline const char* op_name(OpId op) { return op_info(op).name; }
std::ostream& operator<<(std::ostream& os, OpId op);

}  // namespace ember
