// CPU 2-D convolution (NHWC input, HWIO filters) and its two gradients. Float32 runs on oneDNN; float16 and
// bfloat16 widen to float32 and take the same path (this CPU has no half arithmetic worth using); float64 has no
// oneDNN primitive and uses direct loops, which are also the reference the tests hold oneDNN to.
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "framework/core/parallel.h"
#include "framework/ops/cpu/dnnl_context.h"
#include "framework/ops/dispatch.h"

namespace ember {

namespace {

struct ConvGeom {
  int64_t n, h, w, c;  // input
  int64_t kh, kw, o;   // filters (and output channels)
  int64_t oh, ow;      // output
  int64_t groups;
  int64_t sh, sw, dh, dw, pt, pb, pl, pr;
  int64_t ig() const { return c / groups; }
  int64_t og() const { return o / groups; }
};

ConvGeom geom(const Shape& in, const Shape& filt, const Shape& out, const Conv2DAttrs& a) {
  ConvGeom g;
  g.n = in[0], g.h = in[1], g.w = in[2], g.c = in[3];
  g.kh = filt[0], g.kw = filt[1], g.o = filt[3];
  g.oh = out[1], g.ow = out[2];
  g.groups = a.groups;
  g.sh = a.strides[0], g.sw = a.strides[1], g.dh = a.dilations[0], g.dw = a.dilations[1];
  g.pt = a.pads[0], g.pb = a.pads[1], g.pl = a.pads[2], g.pr = a.pads[3];
  return g;
}

int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(work_per_item, 1));
}

// ---------------------------------------------------------------------------------------------------------
// Direct loops (float64). Each is written as a gather so parallel chunks write disjoint outputs.

template <class T>
void conv_forward_ref(const T* x, const T* w, T* y, const ConvGeom& g) {
  const int64_t ig = g.ig(), og = g.og();
  parallel_for(g.n * g.oh, grain_for(g.ow * g.o * g.kh * g.kw * ig), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t n = t / g.oh, oh = t % g.oh;
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        T* yp = y + ((n * g.oh + oh) * g.ow + ow) * g.o;
        std::fill(yp, yp + g.o, T(0));
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          int64_t ih = oh * g.sh - g.pt + kh * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            int64_t iw = ow * g.sw - g.pl + kw * g.dw;
            if (iw < 0 || iw >= g.w) continue;
            const T* xp = x + ((n * g.h + ih) * g.w + iw) * g.c;
            const T* wp = w + (kh * g.kw + kw) * ig * g.o;
            for (int64_t gr = 0; gr < g.groups; ++gr)
              for (int64_t i = 0; i < ig; ++i) {
                T xv = xp[gr * ig + i];
                const T* wr = wp + i * g.o + gr * og;
                T* yr = yp + gr * og;
                for (int64_t k = 0; k < og; ++k) yr[k] += xv * wr[k];
              }
          }
        }
      }
    }
  });
}

// The output position along one axis that input position i meets through filter tap k, or -1 if none.
inline int64_t tap_to_output(int64_t i, int64_t k, int64_t stride, int64_t dilation, int64_t pad, int64_t out) {
  int64_t num = i + pad - k * dilation;
  if (num < 0 || num % stride != 0) return -1;
  int64_t o = num / stride;
  return o < out ? o : -1;
}

template <class T>
void conv_backprop_input_ref(const T* w, const T* dy, T* dx, const ConvGeom& g) {
  const int64_t ig = g.ig(), og = g.og();
  parallel_for(g.n * g.h, grain_for(g.w * g.c * g.kh * g.kw * og), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t n = t / g.h, ih = t % g.h;
      for (int64_t iw = 0; iw < g.w; ++iw) {
        T* dxp = dx + ((n * g.h + ih) * g.w + iw) * g.c;
        std::fill(dxp, dxp + g.c, T(0));
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          int64_t oh = tap_to_output(ih, kh, g.sh, g.dh, g.pt, g.oh);
          if (oh < 0) continue;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            int64_t ow = tap_to_output(iw, kw, g.sw, g.dw, g.pl, g.ow);
            if (ow < 0) continue;
            const T* dyp = dy + ((n * g.oh + oh) * g.ow + ow) * g.o;
            const T* wp = w + (kh * g.kw + kw) * ig * g.o;
            for (int64_t gr = 0; gr < g.groups; ++gr)
              for (int64_t i = 0; i < ig; ++i) {
                const T* wr = wp + i * g.o + gr * og;
                const T* dyr = dyp + gr * og;
                T s = 0;
                for (int64_t k = 0; k < og; ++k) s += dyr[k] * wr[k];
                dxp[gr * ig + i] += s;
              }
          }
        }
      }
    }
  });
}

template <class T>
void conv_backprop_filter_ref(const T* x, const T* dy, T* dw, const ConvGeom& g) {
  const int64_t ig = g.ig(), og = g.og();
  // One task per filter row dw[kh, kw, i, :].
  parallel_for(g.kh * g.kw * ig, grain_for(g.n * g.oh * g.ow * g.o), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t kh = t / (g.kw * ig), kw = (t / ig) % g.kw, i = t % ig;
      T* dwr = dw + t * g.o;
      std::fill(dwr, dwr + g.o, T(0));
      for (int64_t n = 0; n < g.n; ++n)
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          int64_t ih = oh * g.sh - g.pt + kh * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            int64_t iw = ow * g.sw - g.pl + kw * g.dw;
            if (iw < 0 || iw >= g.w) continue;
            const T* xp = x + ((n * g.h + ih) * g.w + iw) * g.c;
            const T* dyp = dy + ((n * g.oh + oh) * g.ow + ow) * g.o;
            for (int64_t gr = 0; gr < g.groups; ++gr) {
              T xv = xp[gr * ig + i];
              for (int64_t k = 0; k < og; ++k) dwr[gr * og + k] += xv * dyp[gr * og + k];
            }
          }
        }
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// oneDNN (float32).

using dnnl::memory;
using md = dnnl::memory::desc;

// The memory descriptions of one convolution: activations in NHWC, the user's HWIO filter by explicit strides.
struct ConvDescs {
  md src, dst, user_w, any_w;
  memory::dims strides, dilates, pad_l, pad_r;
};

ConvDescs descs(const ConvGeom& g) {
  ConvDescs d;
  using tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  d.src = md({g.n, g.c, g.h, g.w}, f32, tag::nhwc);
  d.dst = md({g.n, g.o, g.oh, g.ow}, f32, tag::nhwc);
  memory::dims wd, ws;
  if (g.groups == 1) {
    wd = {g.o, g.c, g.kh, g.kw};
    ws = {1, g.o, g.kw * g.c * g.o, g.c * g.o};
  } else {
    // HWIO with O split as (group, o-in-group): output channel gr * og + k.
    wd = {g.groups, g.og(), g.ig(), g.kh, g.kw};
    ws = {g.og(), 1, g.o, g.kw * g.ig() * g.o, g.ig() * g.o};
  }
  d.user_w = md(wd, f32, ws);
  d.any_w = md(wd, f32, tag::any);
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

dnnl::convolution_forward::primitive_desc forward_pd(const ConvDescs& d, dnnl::prop_kind prop) {
  dnnl::convolution_forward::desc desc(prop, dnnl::algorithm::convolution_direct, d.src, d.any_w, d.dst, d.strides,
                                       d.dilates, d.pad_l, d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, user_scratchpad(), dnnl_ctx::engine());
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

void run(dnnl::primitive& p, const dnnl::primitive_desc_base& pd, std::unordered_map<int, memory> args) {
  memory scratch(pd.scratchpad_desc(), dnnl_ctx::engine());
  args.emplace(DNNL_ARG_SCRATCHPAD, scratch);
  p.execute(dnnl_ctx::stream(), args);
}

template <class Entry>
void run_reorder(Entry& e, memory& from, memory& to) {
  memory scratch(e.reorder_pd.scratchpad_desc(), dnnl_ctx::engine());
  e.reorder.execute(dnnl_ctx::stream(), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratch}});
}

memory wrap(const md& d, const void* p) { return memory(d, dnnl_ctx::engine(), const_cast<void*>(p)); }

void conv_forward_dnnl(const float* x, const float* w, float* y, const ConvGeom& g) {
  using Entry = Cached<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>;
  ConvDescs d = descs(g);
  Entry& e = dnnl_ctx::cached<Entry>(cache_key("conv_fwd", g), [&] {
    auto pd = forward_pd(d, dnnl::prop_kind::forward_inference);
    return make_entry<Entry, decltype(pd), dnnl::convolution_forward>(pd, pd.weights_desc(), d.user_w, true);
  });
  memory user_w = wrap(d.user_w, w), weights = user_w;
  if (e.needs_reorder) {
    weights = memory(e.pd.weights_desc(), dnnl_ctx::engine());
    run_reorder(e, user_w, weights);
  }
  run(e.prim, e.pd, {{DNNL_ARG_SRC, wrap(d.src, x)}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, wrap(d.dst, y)}});
  dnnl_ctx::stream().wait();
}

void conv_backprop_input_dnnl(const float* w, const float* dy, float* dx, const ConvGeom& g) {
  using Entry = Cached<dnnl::convolution_backward_data::primitive_desc, dnnl::convolution_backward_data>;
  ConvDescs d = descs(g);
  Entry& e = dnnl_ctx::cached<Entry>(cache_key("conv_bwd_data", g), [&] {
    auto hint = forward_pd(d, dnnl::prop_kind::forward_training);
    dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, d.src, d.any_w, d.dst, d.strides,
                                               d.dilates, d.pad_l, d.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), dnnl_ctx::engine(), hint);
    return make_entry<Entry, decltype(pd), dnnl::convolution_backward_data>(pd, pd.weights_desc(), d.user_w, true);
  });
  memory user_w = wrap(d.user_w, w), weights = user_w;
  if (e.needs_reorder) {
    weights = memory(e.pd.weights_desc(), dnnl_ctx::engine());
    run_reorder(e, user_w, weights);
  }
  run(e.prim, e.pd,
      {{DNNL_ARG_DIFF_DST, wrap(d.dst, dy)}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DIFF_SRC, wrap(d.src, dx)}});
  dnnl_ctx::stream().wait();
}

void conv_backprop_filter_dnnl(const float* x, const float* dy, float* dw, const ConvGeom& g) {
  using Entry = Cached<dnnl::convolution_backward_weights::primitive_desc, dnnl::convolution_backward_weights>;
  ConvDescs d = descs(g);
  Entry& e = dnnl_ctx::cached<Entry>(cache_key("conv_bwd_weights", g), [&] {
    auto hint = forward_pd(d, dnnl::prop_kind::forward_training);
    dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, d.src, d.any_w, d.dst, d.strides,
                                                  d.dilates, d.pad_l, d.pad_r);
    dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), dnnl_ctx::engine(), hint);
    return make_entry<Entry, decltype(pd), dnnl::convolution_backward_weights>(pd, pd.diff_weights_desc(), d.user_w,
                                                                               false);
  });
  memory user_w = wrap(d.user_w, dw), diff_w = user_w;
  if (e.needs_reorder) diff_w = memory(e.pd.diff_weights_desc(), dnnl_ctx::engine());
  run(e.prim, e.pd,
      {{DNNL_ARG_SRC, wrap(d.src, x)}, {DNNL_ARG_DIFF_DST, wrap(d.dst, dy)}, {DNNL_ARG_DIFF_WEIGHTS, diff_w}});
  if (e.needs_reorder) run_reorder(e, diff_w, user_w);
  dnnl_ctx::stream().wait();
}

// ---------------------------------------------------------------------------------------------------------
// Kernels.

// A float32 copy of a half-precision tensor (or a view of a float32 one).
struct AsFloat {
  std::vector<float> buf;
  const float* p = nullptr;
};

template <class T>
AsFloat as_float(const Tensor& t) {
  AsFloat a;
  const T* src = static_cast<const T*>(t.raw_data());
  if constexpr (std::is_same_v<T, float>) {
    a.p = src;
  } else {
    a.buf.resize(static_cast<size_t>(t.num_elements()));
    float* dst = a.buf.data();
    parallel_for(t.num_elements(), kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = static_cast<float>(src[i]);
    });
    a.p = dst;
  }
  return a;
}

// Runs a float32 routine for a float32 / float16 / bfloat16 output, widening and narrowing around it.
template <class T, class F>
void via_float(const Tensor& a, const Tensor& b, Tensor& out, F&& fn) {
  AsFloat fa = as_float<T>(a), fb = as_float<T>(b);
  T* dst = static_cast<T*>(out.raw_data());
  if constexpr (std::is_same_v<T, float>) {
    fn(fa.p, fb.p, dst);
  } else {
    std::vector<float> tmp(static_cast<size_t>(out.num_elements()));
    fn(fa.p, fb.p, tmp.data());
    const float* src = tmp.data();
    parallel_for(out.num_elements(), kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = static_cast<T>(src[i]);
    });
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
      conv_forward_ref<double>(x.data<double>(), w.data<double>(), y.data<double>(), g);
    } else {
      guarded("conv2d", [&] {
        via_float<scalar_t>(x, w, y, [&](const float* a, const float* b, float* o) { conv_forward_dnnl(a, b, o, g); });
      });
    }
  });
}

void conv2d_backprop_input_cpu(const KernelContext& ctx) {
  const Tensor& w = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  if (trivial(w, dy, dx)) return;
  ConvGeom g = geom(dx.shape(), w.shape(), dy.shape(), std::get<Conv2DAttrs>(ctx.attrs));
  EMBER_DISPATCH_FLOAT(w.dtype(), "conv2d_backprop_input", {
    if constexpr (std::is_same_v<scalar_t, double>) {
      conv_backprop_input_ref<double>(w.data<double>(), dy.data<double>(), dx.data<double>(), g);
    } else {
      guarded("conv2d_backprop_input", [&] {
        via_float<scalar_t>(w, dy, dx,
                            [&](const float* a, const float* b, float* o) { conv_backprop_input_dnnl(a, b, o, g); });
      });
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
      conv_backprop_filter_ref<double>(x.data<double>(), dy.data<double>(), dw.data<double>(), g);
    } else {
      guarded("conv2d_backprop_filter", [&] {
        via_float<scalar_t>(x, dy, dw,
                            [&](const float* a, const float* b, float* o) { conv_backprop_filter_dnnl(a, b, o, g); });
      });
    }
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(conv2d, CPU, conv2d_cpu, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16);
EMBER_REGISTER_KERNEL(conv2d_backprop_input, CPU, conv2d_backprop_input_cpu, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);
EMBER_REGISTER_KERNEL(conv2d_backprop_filter, CPU, conv2d_backprop_filter_cpu, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);

}  // namespace ember
