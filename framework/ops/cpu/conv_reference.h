#pragma once
// Internal: the geometry of one CPU convolution (NHWC input, HWIO filters) and its direct loops, which run
// float64 and are the reference the tests hold oneDNN to. Each loop is written as a gather so parallel chunks
// write disjoint outputs.
#include <algorithm>
#include <cstdint>

#include "framework/core/parallel.h"
#include "framework/core/shape.h"
#include "framework/ops/attrs.h"

namespace ember::cpu {

struct ConvGeom {
  int64_t n, h, w, c;  // input
  int64_t kh, kw, o;   // filters (and output channels)
  int64_t oh, ow;      // output
  int64_t groups;
  int64_t sh, sw, dh, dw, pt, pb, pl, pr;
  int64_t ig() const { return c / groups; }
  int64_t og() const { return o / groups; }
};

inline ConvGeom geom(const Shape& in, const Shape& filt, const Shape& out, const Conv2DAttrs& a) {
  ConvGeom g;
  g.n = in[0], g.h = in[1], g.w = in[2], g.c = in[3];
  g.kh = filt[0], g.kw = filt[1], g.o = filt[3];
  g.oh = out[1], g.ow = out[2];
  g.groups = a.groups;
  g.sh = a.strides[0], g.sw = a.strides[1], g.dh = a.dilations[0], g.dw = a.dilations[1];
  g.pt = a.pads[0], g.pb = a.pads[1], g.pl = a.pads[2], g.pr = a.pads[3];
  return g;
}

template <class T>
inline void conv_forward_ref(const T* x, const T* w, T* y, const ConvGeom& g) {
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
inline void conv_backprop_input_ref(const T* w, const T* dy, T* dx, const ConvGeom& g) {
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
inline void conv_backprop_filter_ref(const T* x, const T* dy, T* dw, const ConvGeom& g) {
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

}  // namespace ember::cpu
