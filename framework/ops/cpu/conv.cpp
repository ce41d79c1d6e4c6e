// CPU 2-D convolution (NHWC input, HWIO filters) and its two gradients. Float32 runs on oneDNN. BFloat16 runs
// natively in oneDNN's bf16 primitives (float32 accumulation; AVX-512-BF16 or AMX kernels) where oneDNN has a JIT
// kernel for the shape on this CPU, and otherwise, like float16 (oneDNN 2.6 has no f16 convolution on CPUs), widens
// to float32 and takes the float32 path. Float64 has no oneDNN primitive and uses direct loops, which are also the
// reference the tests hold oneDNN to.
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "framework/core/parallel.h"
#include "framework/ops/cpu/bias_add.h"
#include "framework/ops/cpu/conv_reference.h"
#include "framework/ops/cpu/dnnl_context.h"
#include "framework/ops/cpu/elementwise_loops.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/cpu/post_ops.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/functors.h"

namespace ember {

namespace {

using cpu::ConvGeom;
using cpu::geom;

// ---------------------------------------------------------------------------------------------------------
// oneDNN (float32 and bfloat16).

using dnnl::memory;
using md = dnnl::memory::desc;

// The memory descriptions of one convolution: activations in NHWC, the user's HWIO filter by explicit strides.
struct ConvDescs {
  md src, dst, user_w, any_w;
  memory::dims strides, dilates, pad_l, pad_r;
};

ConvDescs descs(const ConvGeom& g, memory::data_type dt) {
  ConvDescs d;
  using tag = memory::format_tag;
  d.src = md({g.n, g.c, g.h, g.w}, dt, tag::nhwc);
  d.dst = md({g.n, g.o, g.oh, g.ow}, dt, tag::nhwc);
  memory::dims wd, ws;
  if (g.groups == 1) {
    wd = {g.o, g.c, g.kh, g.kw};
    ws = {1, g.o, g.kw * g.c * g.o, g.c * g.o};
  } else {
    // HWIO with O split as (group, o-in-group): output channel gr * og + k.
    wd = {g.groups, g.og(), g.ig(), g.kh, g.kw};
    ws = {g.og(), 1, g.o, g.kw * g.ig() * g.o, g.ig() * g.o};
  }
  d.user_w = md(wd, dt, ws);
  d.any_w = md(wd, dt, tag::any);
  d.strides = {g.sh, g.sw};
  d.dilates = {g.dh - 1, g.dw - 1};  // oneDNN counts the skipped pixels
  d.pad_l = {g.pt, g.pl};
  d.pad_r = {g.pb, g.pr};
  return d;
}

std::string cache_key(const char* kind, const ConvGeom& g) {
  std::string k = kind;
  for (int64_t v :
       {g.n, g.h, g.w, g.c, g.kh, g.kw, g.o, g.oh, g.ow, g.groups, g.sh, g.sw, g.dh, g.dw, g.pt, g.pb, g.pl, g.pr}) {
    k += ':';
    k += std::to_string(v);
  }
  return k;
}

// A user-managed scratchpad keeps cached primitives safe to run from any thread (the library's shared one
// is not).
dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// bias: the description of a bias added by the primitive, or none (a zero md). relu: a relu post-op on the output.
dnnl::convolution_forward::primitive_desc forward_pd(const ConvDescs& d, dnnl::prop_kind prop, const md& bias = {},
                                                     bool relu = false) {
  dnnl::convolution_forward::desc desc(prop, dnnl::algorithm::convolution_direct, d.src, d.any_w, bias, d.dst,
                                       d.strides, d.dilates, d.pad_l, d.pad_r);
  dnnl::primitive_attr attr = user_scratchpad();
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return dnnl::convolution_forward::primitive_desc(desc, attr, dnnl_ctx::engine());
}

// A primitive plus the reorder between the user's HWIO filter and the layout the primitive chose.
template <class PD, class Prim>
struct Cached {
  PD pd;
  Prim prim;
  bool needs_reorder;
  dnnl::reorder::primitive_desc reorder_pd;
  dnnl::reorder reorder;
};

dnnl::reorder::primitive_desc reorder_pd(const md& from, const md& to) {
  auto& eng = dnnl_ctx::engine();
  return dnnl::reorder::primitive_desc(eng, from, eng, to, user_scratchpad());
}

// Builds a cache entry; the reorder exists only when the primitive's filter layout differs from the user's.
template <class Entry, class PD, class Prim>
Entry make_entry(const PD& pd, const md& primitive_w, const md& user_w, bool user_to_primitive) {
  Entry e{pd, Prim(pd), primitive_w != user_w, {}, {}};
  if (e.needs_reorder) {
    e.reorder_pd = user_to_primitive ? reorder_pd(user_w, primitive_w) : reorder_pd(primitive_w, user_w);
    e.reorder = dnnl::reorder(e.reorder_pd);
  }
  return e;
}

// The cached entry of one convolution primitive, created by make() on first use. Float32 creation errors
// propagate. A bf16 entry stays empty (the caller widens to float32) where oneDNN cannot create it (no
// AVX-512), or it would not beat float32 here: no kernel for the shape that does (dnnl_ctx::fast_bf16_kernel),
// or too few input channels a group (dnnl_ctx::min_bf16_conv_channels).
template <class Entry, class Make>
Entry& conv_entry(const char* kind, const ConvGeom& g, memory::data_type dt, Make&& make) {
  const bool bf16 = dt == memory::data_type::bf16;
  std::string key = cache_key(kind, g);
  if (bf16) key += dnnl_ctx::bf16_enabled() ? ":bf16" : ":bf16_off";
  return dnnl_ctx::cached<Entry>(key, [&]() -> Entry {
    if (!bf16) return make();
    if (g.ig() < dnnl_ctx::min_bf16_conv_channels()) return Entry{};
    try {
      dnnl_ctx::check_bf16_enabled();
      Entry e = make();
      if (dnnl_ctx::fast_bf16_kernel(e.pd)) return e;
    } catch (const dnnl::error&) {
    }
    return Entry{};
  });
}

void run(dnnl::primitive& p, const dnnl::primitive_desc_base& pd, std::unordered_map<int, memory> args) {
  dnnl_ctx::ScratchMemory scratch = dnnl_ctx::scratch_memory(pd.scratchpad_desc());
  args.emplace(DNNL_ARG_SCRATCHPAD, scratch.memory);
  p.execute(dnnl_ctx::stream(), args);
  dnnl_ctx::stream().wait();
}

template <class Entry>
void run_reorder(Entry& e, memory& from, memory& to) {
  dnnl_ctx::ScratchMemory scratch = dnnl_ctx::scratch_memory(e.reorder_pd.scratchpad_desc());
  e.reorder.execute(dnnl_ctx::stream(), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratch.memory}});
  dnnl_ctx::stream().wait();
}

memory wrap(const md& d, const void* p) { return memory(d, dnnl_ctx::engine(), const_cast<void*>(p)); }

// Each runs one primitive on operands of type dt and returns true, or returns false, writing nothing, when
// there is no bf16 primitive for the shape. A forward convolution given a bias (of type dt) adds it to the
// float32 sum before the output's one rounding, and with relu takes the relu of the sum as it writes it
// (oneDNN's relu: NaN becomes 0, so see relu_post_op_exact).
using ForwardEntry = Cached<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>;
using BackwardDataEntry = Cached<dnnl::convolution_backward_data::primitive_desc, dnnl::convolution_backward_data>;

// `d` is descs(g, dt), which the caller also needs.
ForwardEntry& forward_entry(const ConvGeom& g, const ConvDescs& d, memory::data_type dt, bool bias, bool relu) {
  const md bias_md = bias ? md({g.o}, dt, memory::format_tag::x) : md();
  return conv_entry<ForwardEntry>(relu ? "conv_fwd_relu" : bias ? "conv_fwd_bias" : "conv_fwd", g, dt, [&] {
    auto pd = forward_pd(d, dnnl::prop_kind::forward_inference, bias_md, relu);
    return make_entry<ForwardEntry, decltype(pd), dnnl::convolution_forward>(pd, pd.weights_desc(), d.user_w, true);
  });
}

bool conv_forward_dnnl(const void* x, const void* w, void* y, const ConvGeom& g, memory::data_type dt,
                       const void* bias = nullptr, bool relu = false) {
  const ConvDescs d = descs(g, dt);
  ForwardEntry& e = forward_entry(g, d, dt, bias != nullptr, relu);
  if (!e.prim) return false;
  const md bias_md = bias ? md({g.o}, dt, memory::format_tag::x) : md();
  memory user_w = wrap(d.user_w, w), weights = user_w;
  dnnl_ctx::ScratchMemory reordered;
  if (e.needs_reorder) {
    reordered = dnnl_ctx::scratch_memory(e.pd.weights_desc());
    weights = reordered.memory;
    run_reorder(e, user_w, weights);
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, wrap(d.src, x)}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, wrap(d.dst, y)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, wrap(bias_md, bias));
  run(e.prim, e.pd, std::move(args));
  return true;
}

// `d` is descs(g, dt), which the caller also needs.
BackwardDataEntry& backward_data_entry(const ConvGeom& g, const ConvDescs& d, memory::data_type dt) {
  return conv_entry<BackwardDataEntry>("conv_bwd_data", g, dt, [&] {
    auto hint = forward_pd(d, dnnl::prop_kind::forward_training);
    dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, d.src, d.any_w, d.dst, d.strides,
                                               d.dilates, d.pad_l, d.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), dnnl_ctx::engine(), hint);
    return make_entry<BackwardDataEntry, decltype(pd), dnnl::convolution_backward_data>(pd, pd.weights_desc(),
                                                                                        d.user_w, true);
  });
}

bool conv_backprop_input_dnnl(const void* w, const void* dy, void* dx, const ConvGeom& g, memory::data_type dt) {
  const ConvDescs d = descs(g, dt);
  BackwardDataEntry& e = backward_data_entry(g, d, dt);
  if (!e.prim) return false;
  memory user_w = wrap(d.user_w, w), weights = user_w;
  dnnl_ctx::ScratchMemory reordered;
  if (e.needs_reorder) {
    reordered = dnnl_ctx::scratch_memory(e.pd.weights_desc());
    weights = reordered.memory;
    run_reorder(e, user_w, weights);
  }
  run(e.prim, e.pd,
      {{DNNL_ARG_DIFF_DST, wrap(d.dst, dy)}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DIFF_SRC, wrap(d.src, dx)}});
  return true;
}

bool conv_backprop_filter_dnnl(const void* x, const void* dy, void* dw, const ConvGeom& g, memory::data_type dt) {
  using Entry = Cached<dnnl::convolution_backward_weights::primitive_desc, dnnl::convolution_backward_weights>;
  ConvDescs d = descs(g, dt);
  Entry& e = conv_entry<Entry>("conv_bwd_weights", g, dt, [&] {
    auto hint = forward_pd(d, dnnl::prop_kind::forward_training);
    dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, d.src, d.any_w, d.dst, d.strides,
                                                  d.dilates, d.pad_l, d.pad_r);
    dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), dnnl_ctx::engine(), hint);
    return make_entry<Entry, decltype(pd), dnnl::convolution_backward_weights>(pd, pd.diff_weights_desc(), d.user_w,
                                                                               false);
  });
  if (!e.prim) return false;
  memory user_w = wrap(d.user_w, dw), diff_w = user_w;
  dnnl_ctx::ScratchMemory reordered;
  if (e.needs_reorder) {
    reordered = dnnl_ctx::scratch_memory(e.pd.diff_weights_desc());
    diff_w = reordered.memory;
  }
  run(e.prim, e.pd,
      {{DNNL_ARG_SRC, wrap(d.src, x)}, {DNNL_ARG_DIFF_DST, wrap(d.dst, dy)}, {DNNL_ARG_DIFF_WEIGHTS, diff_w}});
  if (e.needs_reorder) run_reorder(e, diff_w, user_w);
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// Kernels.

// A float32 copy of a half-precision tensor, widened with vector instructions (a tensor, so the allocator's
// statistics count it).
template <class T>
Tensor widened(const Tensor& t) {
  Tensor t32 = Tensor::empty(t.shape(), DType::Float32, Device::cpu());
  cpu::widen(t.data<T>(), t32.data<float>(), t.num_elements());
  return t32;
}

// Runs fn(a, b, out) on float32 copies of half-precision operands and rounds its result once into out.
template <class T, class F>
void via_float(const Tensor& a, const Tensor& b, Tensor& out, F&& fn) {
  Tensor a32 = widened<T>(a), b32 = widened<T>(b);
  Tensor out32 = Tensor::empty(out.shape(), DType::Float32, Device::cpu());
  fn(a32.data<float>(), b32.data<float>(), out32.data<float>());
  cpu::narrow(out32.data<float>(), out.data<T>(), out.num_elements());
}

// A float32 or half-precision convolution op: float32 and, where oneDNN has a kernel, bfloat16 run `dnnl` on the
// tensors as they are; otherwise half types run it in float32 through via_float. dnnl(a, b, out, dt) returns false
// when it has no primitive for dt.
template <class T, class F>
void run_dnnl(const Tensor& a, const Tensor& b, Tensor& out, F&& dnnl) {
  using dt = memory::data_type;
  if constexpr (std::is_same_v<T, float>) {
    dnnl(a.raw_data(), b.raw_data(), out.raw_data(), dt::f32);
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    if constexpr (std::is_same_v<T, bfloat16>) {
      if (dnnl(a.raw_data(), b.raw_data(), out.raw_data(), dt::bf16)) return;
    }
    via_float<T>(a, b, out, [&](const float* pa, const float* pb, float* po) { dnnl(pa, pb, po, dt::f32); });
  }
  // (Float64 takes the direct loops; the dispatch macro still instantiates this for it.)
}

// Half-type convolutions whose output images each depend on one input image (the forward and the input gradient)
// widen and narrow a chunk of images at a time: the chunk's float32 input and output stay in the core's L2 cache
// between the widening, oneDNN and the narrowing, where the whole batch's float32 copies (11 MiB of output for the
// example CNN's first convolution at batch 128) would make each of those passes one through memory. A chunk runs
// on the float32 kernel oneDNN picks for the whole batch (impl_of gives the kernel's name for a geometry), which
// sums each output in the same order: the whole batch's bits. Images per chunk: each image's float32 input and
// output in kChunkBytes per intra-op thread (each thread's share in its own core's L2, and half the pool's wake-ups
// of one thread's chunks at two), or the whole batch where the kernel would differ. Cached per geometry and
// thread count.
constexpr int64_t kChunkBytes = int64_t{1} << 20;

template <class ImplOf>
int64_t images_per_chunk(const char* kind, const ConvGeom& g, ImplOf&& impl_of) {
  const int threads = intra_op_threads();
  return dnnl_ctx::cached<int64_t>(cache_key(kind, g) + ":" + std::to_string(threads), [&]() -> int64_t {
    const int64_t per_image = 4 * (g.h * g.w * g.c + g.oh * g.ow * g.o);
    const int64_t n = std::max<int64_t>(1, kChunkBytes * threads / std::max<int64_t>(per_image, 1));
    if (n >= g.n) return g.n;
    const std::string whole = impl_of(g);
    for (int64_t images : {n, g.n % n}) {
      if (images == 0) continue;
      ConvGeom c = g;
      c.n = images;
      if (impl_of(c) != whole) return g.n;
    }
    return n;
  });
}

// The name of the kernel oneDNN runs for an entry, empty when it has none.
template <class Entry>
std::string impl_name(const Entry& e) {
  return e.prim ? std::string(e.pd.impl_info_str()) : std::string();
}

// Runs run(c, in32, out32) on float32 copies of `chunk` images of `in` at a time (c: g with that many images; in_image
// and out_image elements an image), narrowing each chunk's output into `out`; where run returns true (a relu it did
// not take), the narrowed chunk is relu'd in place.
template <class T, class Run>
void by_image_chunks(const T* in, int64_t in_image, T* out, int64_t out_image, const ConvGeom& g, int64_t chunk,
                     Run&& run) {
  const Device host = Device::cpu();
  Tensor in32 = Tensor::empty({chunk * in_image}, DType::Float32, host);
  Tensor out32 = Tensor::empty({chunk * out_image}, DType::Float32, host);
  for (int64_t i0 = 0; i0 < g.n; i0 += chunk) {
    ConvGeom c = g;
    c.n = std::min(chunk, g.n - i0);
    cpu::widen(in + i0 * in_image, in32.data<float>(), c.n * in_image);
    const bool relu_left = run(c, in32.data<float>(), out32.data<float>());
    T* o = out + i0 * out_image;
    cpu::narrow(out32.data<float>(), o, c.n * out_image);
    if (relu_left) cpu::relu_in_place<T>(o, c.n * out_image);
  }
}

// oneDNN reports failures as dnnl::error; callers expect an ember::Error naming the op.
template <class F>
void guarded(const char* op, F&& f) {
  try {
    f();
  } catch (const dnnl::error& e) {
    throw make_error<Internal>(op, ": oneDNN failed: ", e.what());
  }
}

// Empty operands leave nothing to compute: the output is empty or, for an empty reduction, zeros.
bool trivial(const Tensor& a, const Tensor& b, Tensor& out) {
  if (out.num_elements() == 0) return true;
  if (a.num_elements() == 0 || b.num_elements() == 0) {
    std::memset(out.raw_data(), 0, out.nbytes());
    return true;
  }
  return false;
}

void conv2d_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& w = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  if (trivial(x, w, y)) return;
  ConvGeom g = geom(x.shape(), w.shape(), y.shape(), std::get<Conv2DAttrs>(ctx.attrs));
  EMBER_DISPATCH_FLOAT(x.dtype(), "conv2d", {
    if constexpr (std::is_same_v<scalar_t, double>) {
      cpu::conv_forward_ref<double>(x.data<double>(), w.data<double>(), y.data<double>(), g);
    } else {
      guarded("conv2d", [&] {
        run_dnnl<scalar_t>(x, w, y, [&](const void* a, const void* b, void* o, memory::data_type dt) {
          return conv_forward_dnnl(a, b, o, g, dt);
        });
      });
    }
  });
}

// The convolution, its bias and (with relu) its relu in one oneDNN primitive, which adds the bias to the float32
// sum before the output's one rounding, as TF's fused convolution on oneDNN does: float32, and bfloat16 where
// oneDNN has a native kernel that pays, as they are; otherwise the half types on float32 copies, narrowed once. (So
// a half type is not conv2d then add, which round twice.) The relu runs in the primitive where relu_post_op_exact
// says it may, asked of the operands the primitive reads (the float32 copies' values are the half operands', and a
// float loop over them vectorises where float16's is scalar); returns whether it did.
template <class T>
bool conv_bias_dnnl(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, const ConvGeom& g, bool relu) {
  using dt = memory::data_type;
  const int64_t terms = g.kh * g.kw * g.ig();
  if constexpr (std::is_same_v<T, float>) {
    const bool fused = relu && cpu::relu_post_op_exact<float>(x, w, b, terms);
    conv_forward_dnnl(x.raw_data(), w.raw_data(), y.raw_data(), g, dt::f32, b.raw_data(), fused);
    return fused;
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {  // (float64: direct loops)
    if constexpr (std::is_same_v<T, bfloat16>) {
      if (dnnl_ctx::bf16_primitives_usable()) {
        const bool fused = relu && cpu::relu_post_op_exact<T>(x, w, b, terms);
        if (conv_forward_dnnl(x.raw_data(), w.raw_data(), y.raw_data(), g, dt::bf16, b.raw_data(), fused))
          return fused;
      }
    }
    // Chunks of images on float32 copies; each chunk takes the relu inside the primitive where relu_post_op_exact
    // allows for its operands, or after its narrowing (the same bits either way).
    Tensor w32 = widened<T>(w), b32 = widened<T>(b);
    const uint32_t w_max = relu ? cpu::max_abs_bits(w32.data<float>(), w32.num_elements()) : 0;
    const uint32_t b_max = relu ? cpu::max_abs_bits(b32.data<float>(), b32.num_elements()) : 0;
    const int64_t chunk = images_per_chunk(relu ? "conv_fwd_chunk_relu" : "conv_fwd_chunk", g, [&](const ConvGeom& c) {
      // Both of the primitives a chunk may run.
      const ConvDescs d = descs(c, dt::f32);
      return impl_name(forward_entry(c, d, dt::f32, true, false)) + "|" +
             (relu ? impl_name(forward_entry(c, d, dt::f32, true, true)) : std::string());
    });
    by_image_chunks(x.data<T>(), g.h * g.w * g.c, y.data<T>(), g.oh * g.ow * g.o, g, chunk,
                    [&](const ConvGeom& c, const float* x32, float* y32) {
                      const uint32_t x_max = relu ? cpu::max_abs_bits(x32, c.n * g.h * g.w * g.c) : 0;
                      const bool fused = relu && cpu::relu_post_op_exact_bits(x_max, w_max, b_max, terms);
                      conv_forward_dnnl(x32, w32.raw_data(), y32, c, dt::f32, b32.raw_data(), fused);
                      return relu && !fused;
                    });
    return relu;
  }
  return false;
}

// Float and the half types add the bias inside oneDNN's convolution (conv_bias_dnnl), and the relu where it may;
// float64 convolves, then adds the bias and the activation in one pass over the output. A relu oneDNN did not take,
// and tanh or sigmoid, are a pass of their own over the output, in place.
void conv2d_bias_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& w = ctx.inputs[1];
  const Tensor& b = ctx.inputs[2];
  Tensor& y = ctx.outputs[0];
  const int64_t channels = y.shape()[3], rows = channels == 0 ? 0 : y.num_elements() / channels;
  const auto& attrs = std::get<Conv2DAttrs>(ctx.attrs);
  ConvGeom g = geom(x.shape(), w.shape(), y.shape(), attrs);
  const bool relu = attrs.activation == FusedActivation::Relu;
  bool activation_left = false;  // an activation neither oneDNN nor the bias pass took
  EMBER_DISPATCH_FLOAT(x.dtype(), "conv2d_bias", {
    if (trivial(x, w, y)) {
      cpu::add_bias_rows<scalar_t>(y.data<scalar_t>(), b.data<scalar_t>(), rows, channels, attrs.activation);
    } else if constexpr (std::is_same_v<scalar_t, double>) {
      cpu::conv_forward_ref<double>(x.data<double>(), w.data<double>(), y.data<double>(), g);
      cpu::add_bias_rows<double>(y.data<double>(), b.data<double>(), rows, channels, attrs.activation);
    } else {
      guarded("conv2d_bias", [&] {
        const bool fused = conv_bias_dnnl<scalar_t>(x, w, b, y, g, relu);
        activation_left = attrs.activation != FusedActivation::None && !fused;
      });
    }
    if (activation_left) cpu::activation_in_place<scalar_t>(y.data<scalar_t>(), y.num_elements(), attrs.activation);
  });
}

// The input gradient: float32, and bfloat16 where oneDNN has a native kernel that pays, as they are; otherwise the
// half types on float32 copies, a chunk of images at a time (by_image_chunks).
template <class T>
void backprop_input(const Tensor& w, const Tensor& dy, Tensor& dx, const ConvGeom& g) {
  using dt = memory::data_type;
  if constexpr (std::is_same_v<T, float>) {
    conv_backprop_input_dnnl(w.raw_data(), dy.raw_data(), dx.raw_data(), g, dt::f32);
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {  // (float64: direct loops)
    if constexpr (std::is_same_v<T, bfloat16>) {
      if (conv_backprop_input_dnnl(w.raw_data(), dy.raw_data(), dx.raw_data(), g, dt::bf16)) return;
    }
    Tensor w32 = widened<T>(w);
    const int64_t chunk = images_per_chunk("conv_bwd_data_chunk", g, [&](const ConvGeom& c) {
      return impl_name(backward_data_entry(c, descs(c, dt::f32), dt::f32));
    });
    by_image_chunks(dy.data<T>(), g.oh * g.ow * g.o, dx.data<T>(), g.h * g.w * g.c, g, chunk,
                    [&](const ConvGeom& c, const float* dy32, float* dx32) {
                      conv_backprop_input_dnnl(w32.raw_data(), dy32, dx32, c, dt::f32);
                      return false;
                    });
  }
}

void conv2d_backprop_input_cpu(const KernelContext& ctx) {
  const Tensor& w = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  if (trivial(w, dy, dx)) return;
  ConvGeom g = geom(dx.shape(), w.shape(), dy.shape(), std::get<Conv2DAttrs>(ctx.attrs));
  EMBER_DISPATCH_FLOAT(w.dtype(), "conv2d_backprop_input", {
    if constexpr (std::is_same_v<scalar_t, double>) {
      cpu::conv_backprop_input_ref<double>(w.data<double>(), dy.data<double>(), dx.data<double>(), g);
    } else {
      guarded("conv2d_backprop_input", [&] { backprop_input<scalar_t>(w, dy, dx, g); });
    }
  });
}

void conv2d_backprop_filter_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dw = ctx.outputs[0];
  if (trivial(x, dy, dw)) return;
  ConvGeom g = geom(x.shape(), dw.shape(), dy.shape(), std::get<Conv2DAttrs>(ctx.attrs));
  EMBER_DISPATCH_FLOAT(x.dtype(), "conv2d_backprop_filter", {
    if constexpr (std::is_same_v<scalar_t, double>) {
      cpu::conv_backprop_filter_ref<double>(x.data<double>(), dy.data<double>(), dw.data<double>(), g);
    } else {
      guarded("conv2d_backprop_filter", [&] {
        run_dnnl<scalar_t>(x, dy, dw, [&](const void* a, const void* b, void* o, memory::data_type dt) {
          return conv_backprop_filter_dnnl(a, b, o, g, dt);
        });
      });
    }
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(conv2d, CPU, conv2d_cpu, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16);
EMBER_REGISTER_KERNEL(conv2d_bias, CPU, conv2d_bias_cpu, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(conv2d_backprop_input, CPU, conv2d_backprop_input_cpu, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);
EMBER_REGISTER_KERNEL(conv2d_backprop_filter, CPU, conv2d_backprop_filter_cpu, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);

}  // namespace ember
