#pragma once
// data::Dataset: a tf.data-style input pipeline (sources, shuffle, batch, map, prefetch, ...) whose
// parallel stages run on std::threads owned by each iteration pass.
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "framework/core/tensor.h"

namespace ember::detail {
struct TunerMemory;  // framework/core/mode_tuner.h
}  // namespace ember::detail

namespace ember::data {

// One element of a dataset: its components (e.g. {image, label}), CPU tensors.
using Element = std::vector<Tensor>;

// Lets the pipeline choose: parallelism from the core count, prefetch depth from step times (TF: tf.data.AUTOTUNE).
inline constexpr int64_t AUTOTUNE = -1;
// The number of map workers AUTOTUNE stands for: the CPUs this process may run on (its affinity mask).
int64_t autotune_parallelism();
// cardinality() of an endless dataset (repeat() forever), and of one whose size cannot be known (filter,
// generators). TF's values.
inline constexpr int64_t INFINITE_CARDINALITY = -1;
inline constexpr int64_t UNKNOWN_CARDINALITY = -2;

// Options of Dataset::shuffle (TF: seed, reshuffle_each_iteration).
struct ShuffleOptions {
  // Fixes the order of the first pass (and, through the seed generator, of every later one). Without it
  // a seed is drawn once when shuffle() is called, from ember::random (deterministic after
  // random::set_seed, as TF's get_seed).
  std::optional<uint64_t> seed{};
  // A fresh order on each pass; false repeats the first pass's order.
  bool reshuffle_each_iteration = true;
};

// Options of Dataset::batch.
struct BatchOptions {
  bool drop_remainder = false;  // drop a last batch smaller than n
};

// Options of Dataset::padded_batch.
struct PaddedBatchOptions {
  // Per component, the shape to pad to; -1 dimensions (and components left out) pad to the batch's
  // longest. Empty: every dimension pads to the batch's longest (TF's padded_shapes=None).
  std::vector<Shape> padded_shapes{};
  // Per component, the padding value (converted to the component's dtype); missing ones are 0.
  std::vector<double> padding_values{};
  bool drop_remainder = false;
};

// Options of Dataset::map.
struct MapOptions {
  // 0: runs inline in the consumer's thread (TF: None). n >= 1: n worker threads that run ahead of the
  // consumer. AUTOTUNE: one worker per CPU this process may run on.
  int64_t num_parallel_calls = 0;
  // Output order equals input order; false hands results out as they finish (faster with uneven work).
  bool deterministic = true;
};

namespace detail {
class Node;
class IteratorImpl;
class Cancellation;
class ProductionTuner;
// The callable shapes map and filter accept, normalised to functions of a whole Element.
using MapFn = std::function<Element(const Element&)>;
using PredicateFn = std::function<bool(const Element&)>;
using GeneratorFn = std::function<std::optional<Element>()>;
using GeneratorFactory = std::function<GeneratorFn()>;

// Element from what a map function returned: an Element, or one Tensor (a one-component element).
template <class R>
Element to_element(R&& r) {
  if constexpr (std::is_convertible_v<R, Tensor> && !std::is_convertible_v<R, Element>)
    return Element{Tensor(std::forward<R>(r))};
  else
    return Element(std::forward<R>(r));
}

// Calls f with the element whole when f takes an Element, else with its components as arguments
// (TF unpacks tuple elements into the function's arguments): f(x), f(x, y) or f(x, y, z).
template <class F>
decltype(auto) apply_to(F& f, const Element& e, const char* what);
}  // namespace detail

class Dataset;

// One pass over a dataset: next() returns each element, then std::nullopt (and keeps returning it).
// Destroying it mid-pass stops and joins the pass's threads. Move-only.
class Iterator {
 public:
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();
  // The next element, or std::nullopt at the end. An error inside the pipeline is thrown here, at the
  // failing element's position, and the pass is finished afterwards.
  std::optional<Element> next();

 private:
  friend class Dataset;
  Iterator(std::shared_ptr<const detail::Node> node, std::unique_ptr<detail::IteratorImpl> impl,
           std::shared_ptr<detail::Cancellation> cancel, std::shared_ptr<detail::ProductionTuner> tuner);
  void finish() noexcept;
  std::shared_ptr<const detail::Node> node_;  // keeps the definition alive if the Dataset goes first
  std::unique_ptr<detail::IteratorImpl> impl_;
  std::shared_ptr<detail::Cancellation> cancel_;
  std::shared_ptr<detail::ProductionTuner> tuner_;
};

// The range-for iterator: holds the current element of one pass (an input iterator).
class ElementIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Element;
  using difference_type = std::ptrdiff_t;
  using pointer = const Element*;
  using reference = const Element&;

  explicit ElementIterator(Iterator it) : it_(std::move(it)) { ++*this; }
  const Element& operator*() const { return *current_; }
  const Element* operator->() const { return &*current_; }
  ElementIterator& operator++() {
    current_ = it_.next();
    return *this;
  }
  void operator++(int) { ++*this; }
  bool operator==(std::default_sentinel_t) const { return !current_.has_value(); }

 private:
  Iterator it_;
  std::optional<Element> current_;
};

// An immutable input pipeline; copies share its definition, and each method returns a new Dataset
// (TF: tf.data.Dataset). Iterating it (range-for or make_iterator) starts a fresh pass each time.
class Dataset {
 public:
  // Elements are the rows of t along axis 0 (views, no copy; GPU tensors are copied to the CPU first).
  static Dataset from_tensor_slices(const Tensor& t);
  // Elements are tuples of the rows of each tensor; all first dimensions must agree: {train.x, train.y}.
  static Dataset from_tensor_slices(const std::vector<Tensor>& ts);
  // Elements from a generator: `f` is either a factory, called once per pass, returning the callable
  // that yields the pass's elements (restartable, like TF's generator function), or that callable itself
  // (returning std::optional<Element>, or std::optional<Tensor>): then every pass shares its state, so a
  // second pass continues where the first stopped. Cardinality unknown.
  template <class F>
  static Dataset from_generator(F f);
  // int64 scalars start, start + step, ... before stop (TF: Dataset.range).
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  static Dataset range(int64_t stop) { return range(0, stop); }
  // Elements side by side: the components of each dataset's element, concatenated; ends with the shortest.
  static Dataset zip(const std::vector<Dataset>& datasets);

  // This dataset's elements, then other's.
  Dataset concatenate(const Dataset& other) const;
  // tf.data's buffered shuffle: fill a buffer of buffer_size, hand out a uniformly drawn slot and refill
  // it with the next input. buffer_size >= the dataset's size gives a uniform permutation.
  Dataset shuffle(int64_t buffer_size, ShuffleOptions options = {}) const;
  // Stacks n consecutive elements component-wise along a new axis 0; the last batch may be smaller.
  Dataset batch(int64_t n, BatchOptions options = {}) const;
  // Splits each element's components along axis 0 into separate elements (the inverse of batch).
  Dataset unbatch() const;
  // Like batch, but pads components of differing shapes (same rank) up to a common shape first.
  Dataset padded_batch(int64_t n, PaddedBatchOptions options = {}) const;
  // Applies fn to each element. fn takes a const Element& (or the components as separate const Tensor&
  // arguments) and returns an Element or a Tensor. With num_parallel_calls it runs on worker threads.
  template <class F>
  Dataset map(F fn, MapOptions options = {}) const;
  // Keeps the elements for which pred (same argument forms as map) returns true. Cardinality unknown.
  template <class F>
  Dataset filter(F pred) const;
  // count passes over this dataset; -1 repeats forever.
  Dataset repeat(int64_t count = -1) const;
  // The first n elements; -1 takes all.
  Dataset take(int64_t n) const;
  // All but the first n elements; -1 skips all.
  Dataset skip(int64_t n) const;
  // Every num_shards-th element, starting at element `index` (TF: Dataset.shard): element i is kept when
  // i % num_shards == index. Each of num_shards workers reading shard(num_shards, its index) sees its own
  // disjoint part. Put it before shuffle and batch, as TF advises.
  Dataset shard(int64_t num_shards, int64_t index) const;
  // Keeps the elements of the first complete pass in memory; later passes read them from there (a pass
  // left early caches nothing). Put random transformations after it.
  Dataset cache() const;
  // Runs this dataset on a background thread, n elements ahead of the consumer; AUTOTUNE adapts n.
  Dataset prefetch(int64_t n) const;

  // The number of elements when known, else INFINITE_CARDINALITY or UNKNOWN_CARDINALITY (TF's rules).
  int64_t cardinality() const;
  // Where the dataset's seed generators stand between passes: how many passes each shuffle has begun
  // (graph order). A copy of the same pipeline given this state with set_state shuffles its next passes
  // exactly as this one will: BackupAndRestore saves it so a resumed fit sees the same epochs. Sources'
  // own state (a generator's) and a cache's contents are not part of it.
  std::vector<uint64_t> get_state() const;
  // InvalidArgument when `state` has another length than get_state() (not the same pipeline).
  void set_state(const std::vector<uint64_t>& state) const;
  // A fresh pass with an explicit next().
  Iterator make_iterator() const;
  // A fresh pass for range-for: for (const data::Element& e : ds).
  ElementIterator begin() const { return ElementIterator(make_iterator()); }
  std::default_sentinel_t end() const { return {}; }

 private:
  explicit Dataset(std::shared_ptr<const detail::Node> node);
  static Dataset from_generator_factory(detail::GeneratorFactory factory);
  static Dataset from_generator_shared(detail::GeneratorFn next);
  Dataset map_impl(detail::MapFn fn, MapOptions options) const;
  Dataset filter_impl(detail::PredicateFn pred) const;

  std::shared_ptr<const detail::Node> node_;
  std::shared_ptr<ember::detail::TunerMemory> tuning_;  // what AUTOTUNE learnt in this dataset's passes (copies share it)
};

// ---- templates ----

template <class F>
decltype(auto) detail::apply_to(F& f, const Element& e, const char* what) {
  if constexpr (std::is_invocable_v<F&, const Element&>) {
    return f(e);
  } else {
    auto need = [&](size_t n) {
      EMBER_CHECK(e.size() == n, InvalidArgument)
          << what << ": the function takes " << n << " tensor argument(s) but the element has " << e.size()
          << " component(s)";
    };
    if constexpr (std::is_invocable_v<F&, const Tensor&>) {
      need(1);
      return f(e[0]);
    } else if constexpr (std::is_invocable_v<F&, const Tensor&, const Tensor&>) {
      need(2);
      return f(e[0], e[1]);
    } else {
      static_assert(std::is_invocable_v<F&, const Tensor&, const Tensor&, const Tensor&>,
                    "the function must take a const Element& or one to three const Tensor& arguments");
      need(3);
      return f(e[0], e[1], e[2]);
    }
  }
}

template <class F>
Dataset Dataset::map(F fn, MapOptions options) const {
  return map_impl([fn = std::move(fn)](const Element& e) mutable {
    return detail::to_element(detail::apply_to(fn, e, "Dataset.map"));
  }, options);
}

template <class F>
Dataset Dataset::filter(F pred) const {
  return filter_impl([pred = std::move(pred)](const Element& e) mutable {
    return static_cast<bool>(detail::apply_to(pred, e, "Dataset.filter"));
  });
}

template <class F>
Dataset Dataset::from_generator(F f) {
  using R = std::invoke_result_t<F&>;
  if constexpr (std::is_convertible_v<R, std::optional<Element>>) {
    return from_generator_shared(detail::GeneratorFn(std::move(f)));
  } else if constexpr (std::is_convertible_v<R, std::optional<Tensor>>) {
    return from_generator_shared([f = std::move(f)]() mutable -> std::optional<Element> {
      std::optional<Tensor> t = f();
      if (!t) return std::nullopt;
      return Element{std::move(*t)};
    });
  } else {
    static_assert(std::is_invocable_v<R&>, "from_generator takes a generator (returning std::optional<Element>) "
                                           "or a factory returning one");
    return from_generator_factory([f = std::move(f)]() mutable -> detail::GeneratorFn {
      auto gen = f();
      using G = decltype(gen);
      if constexpr (std::is_convertible_v<std::invoke_result_t<G&>, std::optional<Element>>) {
        return detail::GeneratorFn(std::move(gen));
      } else {
        return [gen = std::move(gen)]() mutable -> std::optional<Element> {
          std::optional<Tensor> t = gen();
          if (!t) return std::nullopt;
          return Element{std::move(*t)};
        };
      }
    });
  }
}

}  // namespace ember::data
