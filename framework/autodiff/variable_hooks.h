#pragma once
// Who hears of variables as they are created (internal): framework/distribute's scopes collect the variables
// created in them, to mirror them across workers. Kept out of variable.h, which most of Ember includes.
#include "framework/autodiff/variable.h"

namespace ember::detail {

// Called with each variable created on this thread while set (null: nobody listens).
using VariableCreatedFn = void (*)(const Variable& variable);
extern thread_local VariableCreatedFn t_variable_created;

}  // namespace ember::detail
