#pragma once
// GradientTape (TF: tf.GradientTape): records the ops run on watched tensors while it lives, then
// computes gradients by running each op's backward formula, itself made of eager ops (so nested
// tapes give higher-order gradients).
#include <concepts>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "framework/autodiff/variable.h"
#include "framework/core/tensor.h"

namespace ember {

struct TapeOptions {
  bool persistent = false;               // allow several gradient() calls
  bool watch_accessed_variables = true;  // watch trainable variables read while recording
};

// What gradient() returns for a source the targets do not depend on.
enum class UnconnectedGradients { None, Zero };

struct GradientOptions {
  std::vector<Tensor> output_gradients{};  // one per target (default: ones)
  UnconnectedGradients unconnected_gradients = UnconnectedGradients::None;
  // Called once per source, during the backward pass, with its index and gradient (what gradient() returns for
  // it) as soon as that gradient is final: when the backward of the last op to read the source has run (sources
  // nothing reads at the end). A strategy starts all-reducing gradients with it while the rest of the backward
  // runs (PyTorch DDP's gradient hooks).
  std::function<void(size_t source, const Tensor& gradient)> on_gradient_ready{};
  // Called after each op's backward (a strategy moves its running all-reduces on).
  std::function<void()> on_backward_op{};
};

class GradientTape {
 public:
  explicit GradientTape(TapeOptions options = {});
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  // Records operations on t from now on.
  void watch(const Tensor& t);
  void watch(const Variable& v);
  // d(sum of targets)/d(source) for each source; an unconnected source gives an undefined Tensor (or
  // zeros with UnconnectedGradients::Zero). A non-persistent tape allows one call (FailedPrecondition after).
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources, GradientOptions options = {});
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets, const std::vector<Tensor>& sources,
                               GradientOptions options = {});
  // The same for variables, e.g. tape.gradient(loss, model.trainable_weights()). A template so that a braced
  // list ({w}, {x, w}) still picks the overload above rather than being ambiguous with this one.
  template <class Sources>
    requires std::same_as<std::remove_cvref_t<Sources>, std::vector<Variable>>
  std::vector<Tensor> gradient(const Tensor& target, const Sources& sources, GradientOptions options = {}) {
    return gradient(target, variable_values(sources), std::move(options));
  }
  // One source, one gradient (TF: tape.gradient(y, x) returns a tensor when x is a single tensor or variable).
  template <class Source>
    requires std::same_as<std::remove_cvref_t<Source>, Tensor> || std::same_as<std::remove_cvref_t<Source>, Variable>
  Tensor gradient(const Tensor& target, const Source& source, GradientOptions options = {}) {
    if constexpr (std::is_same_v<std::remove_cvref_t<Source>, Variable>)
      return gradient(target, std::vector<Tensor>{source.value()}, std::move(options))[0];
    else
      return gradient(target, std::vector<Tensor>{source}, std::move(options))[0];
  }

  // Pauses this tape's recording while the returned object lives (TF: tape.stop_recording()).
  class Pause {
   public:
    explicit Pause(GradientTape& tape);
    ~Pause();
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    GradientTape& tape_;
  };
  [[nodiscard]] Pause stop_recording() { return Pause(*this); }

  struct Impl;

 private:
  // The variables' current values: the tensors a tape watched when they were read.
  static std::vector<Tensor> variable_values(const std::vector<Variable>& variables);
  std::unique_ptr<Impl> impl_;
};

// Pauses every tape on this thread while it lives (used by Variable::assign and custom_gradient).
class NoRecordScope {
 public:
  NoRecordScope();
  ~NoRecordScope();
  NoRecordScope(const NoRecordScope&) = delete;
  NoRecordScope& operator=(const NoRecordScope&) = delete;
};

// True while a tape on this thread runs backward formulas (check_numerics reports it).
bool in_backward_pass();

// Whether some tape on this thread would record an op reading `inputs` now: a backward formula asks it to
// skip work that only a higher-order gradient needs.
bool any_tape_records(std::span<const Tensor> inputs);
// Whether some tape on this thread records now (a traced function's replay then runs op by op, for it).
bool any_tape_recording();

// A user op with its own gradient (TF: tf.custom_gradient): forward runs unrecorded; backward maps
// the output's gradient to one gradient per input.
Tensor custom_gradient(const std::vector<Tensor>& inputs,
                       const std::function<Tensor(const std::vector<Tensor>&)>& forward,
                       const std::function<std::vector<Tensor>(const Tensor& dy)>& backward);
Tensor custom_gradient(const Tensor& x, const std::function<Tensor(const Tensor&)>& forward,
                       const std::function<Tensor(const Tensor& dy)>& backward);

namespace detail {
// A node's backward: one gradient per output in, one per input out.
using CustomBackward = std::function<std::vector<Tensor>(const std::vector<Tensor>& dys)>;
// Records one node with its own backward on every recording tape that watches one of `inputs` (custom_gradient
// with several outputs; a graph's control-flow node). `outputs` are tensors of the node's own.
void record_custom(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, CustomBackward backward);

// Pauses the tapes on this thread now while it lives; tapes made after it record as usual (a traced branch's
// own tape).
class PauseTapes {
 public:
  PauseTapes();
  ~PauseTapes();
  PauseTapes(const PauseTapes&) = delete;
  PauseTapes& operator=(const PauseTapes&) = delete;

 private:
  std::vector<void*> paused_;
};

// Called by Variable::read_value: watched by every recording tape that watches accessed variables.
void on_variable_read(const Tensor& value);
}  // namespace detail

namespace ops {
// x, cut off from every tape: no gradient flows through it (TF: tf.stop_gradient).
Tensor stop_gradient(const Tensor& x);
}  // namespace ops

}  // namespace ember
