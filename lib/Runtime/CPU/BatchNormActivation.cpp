//===- BatchNormActivation.cpp - training batch norm with the ReLU after it ----===//
//
// Every CPU training batch norm, eager or compiled, runs here (so that a region rounds
// as the ops it replaces); a compiled step's batch norm followed by a ReLU or ReLU6
// (dlc-fuse-norm-activation's batch_norm_activation regions) runs as one kernel each
// way, in any layout:
// - forward: the batch mean and biased variance in one pass over x (sums of x - K and
//   (x - K)^2 for K one of the channel's values, so that they do not cancel), then
//   y = act(gamma (x - mean) / sqrt(var + eps) + beta [+ r]) in the pass that
//   normalizes, so the activation and a residual r (ResNet's shortcut) cost no pass of
//   their own;
// - backward: the activation's gradient read from its output z (a ReLU passes where
//   z > 0, a ReLU6 where 0 < z < 6: where its input was inside the same range), folded
//   into both passes of the batch norm's gradient, so neither the masked gradient nor
//   the activation's input is ever stored; or, where something else reads the masked
//   gradient too (a residual's shortcut), written by the first pass and read by the
//   second instead of dz and z.
// oneDNN 2.6 folds the ReLU alone (not the ReLU6), and its backward then needs a
// workspace the forward writes; here the output the step keeps anyway is the mask.
//
// Work goes in (channel group, image) pieces: a group is one channel block (its
// channels are the vector lanes) or, in the plain layout, one channel (its pixels are
// the lanes, summed across at the end). Each piece's partial sums are added in a fixed
// order, so results do not depend on the threads. The vector code is written once with
// the compiler's vector types and compiled for AVX-512, AVX2 with FMA and any CPU.
//
//===----------------------------------------------------------------------===//
#include "CpuFeatures.h"
#include "ParallelFor.h"

#include "dlc/Runtime/CPU/NNKernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dlc::cpu_kernels::direct {

namespace {

template <int64_t Width> struct VectorOf {
  typedef float type __attribute__((vector_size(Width * sizeof(float))));
  typedef int32_t mask __attribute__((vector_size(Width * sizeof(float))));
  typedef float unaligned
      __attribute__((vector_size(Width * sizeof(float)), aligned(sizeof(float)), may_alias));
  typedef double wide __attribute__((vector_size(Width * sizeof(double))));
};

/// Where one (channel group, image) piece's values are: `count` runs of `Width`-wide
/// vectors (blocked: a pixel's channel block; plain: `Width` pixels of one channel, the
/// last run partial), each a vector of channel sums (blocked) or of pixel sums (plain).
struct Layout_ {
  int64_t groups; // channel blocks, or channels
  int64_t lanes;  // channels per group: the block, or 1
  int64_t stride; // floats from one image's group to the next image's
  int64_t span;   // floats of one group in one image
};

Layout_ layoutOf(const BatchNormGeometry &g) {
  const int64_t block = channel_block(g.layout);
  if (block > 1)
    return {g.C / block, block, g.C * g.S, g.S * block};
  return {g.C, 1, g.C * g.S, g.S};
}

/// The activation's gradient of dz (in place) from its output z at [i]; z is read (and
/// may be null) only with an activation. (By width: a vector type passed as a template
/// argument loses its alignment attribute, so the unaligned type is named here.)
template <int64_t Width>
__attribute__((always_inline)) inline void mask(typename VectorOf<Width>::type &dz,
                                                const float *z, int64_t i, NormActivation act) {
  using V = typename VectorOf<Width>::type;
  using M = typename VectorOf<Width>::mask;
  using U = typename VectorOf<Width>::unaligned;
  if (act == NormActivation::none)
    return;
  const V zv = *reinterpret_cast<const U *>(z + i); // a copy: V is aligned, z + i not
  M keep = zv > V{};
  if (act == NormActivation::relu6)
    keep &= zv < V{} + 6.0f;
  dz = (V)((M)dz & keep);
}

/// The same, one value.
inline float passedOne(float dz, const float *z, int64_t i, NormActivation act) {
  if (act == NormActivation::none)
    return dz;
  return z[i] > 0.0f && (act == NormActivation::relu || z[i] < 6.0f) ? dz : 0.0f;
}
inline float activateOne(float y, NormActivation act) {
  if (act == NormActivation::none)
    return y;
  const float r = y > 0.0f ? y : 0.0f;
  return act == NormActivation::relu6 && !(r < 6.0f) ? 6.0f : r;
}

/// The activation of y, in place.
template <typename V, typename M>
__attribute__((always_inline)) inline void activate(V &y, NormActivation act) {
  if (act == NormActivation::none)
    return;
  // max(y, 0), a NaN to 0 as the ReLU kernels do; ReLU6 then min(., 6)
  y = (V)((M)y & (y > V{}));
  if (act == NormActivation::relu6) {
    const V six = V{} + 6.0f;
    const M below = y < six;
    y = (V)(((M)y & below) | ((M)six & ~below));
  }
}

/// Sums over one piece: of x - K and (x - K)^2 (Pass 0, K in `mean`: a value of each
/// channel), or of dy and of dy (x - mean) (Pass 2, dy the activation's gradient of dz
/// at z, also written to `store` where that is not null). Blocked pieces give one vector per sum; plain ones one float (lane 0 of `out`).
/// Float sums over runs of kRun vectors, added in double, so that a large image rounds
/// as a small one.
constexpr int64_t kRun = 64;
template <int64_t Width, int Pass>
__attribute__((always_inline)) inline void
pieceSums(const Layout_ &l, const float *x, const float *dz, const float *z, NormActivation act,
          const float *mean, float *out0, float *out1, float *store) {
  using V = typename VectorOf<Width>::type;
  using U = typename VectorOf<Width>::unaligned;
  using D = typename VectorOf<Width>::wide;
  D first = {}, second = {};
  const int64_t whole = l.span / Width * Width;
  const V mu = l.lanes > 1 ? V(*reinterpret_cast<const U *>(mean)) : V{} + mean[0];
  for (int64_t run = 0; run < whole; run += kRun * Width) {
    V s = {}, t = {};
    for (int64_t i = run, end = std::min(whole, run + kRun * Width); i < end; i += Width) {
      const V a = *reinterpret_cast<const U *>(x + i);
      if (Pass == 0) {
        const V d = a - mu;
        s += d;
        t += d * d;
      } else {
        V d = *reinterpret_cast<const U *>(dz + i);
        mask<Width>(d, z, i, act);
        if (store)
          *reinterpret_cast<U *>(store + i) = d;
        s += d;
        t += d * (a - mu);
      }
    }
    first += __builtin_convertvector(s, D);
    second += __builtin_convertvector(t, D);
  }
  if (l.lanes > 1) { // blocked: Width is the block, whole == span
    *reinterpret_cast<U *>(out0) = __builtin_convertvector(first, V);
    *reinterpret_cast<U *>(out1) = __builtin_convertvector(second, V);
    return;
  }
  double one = 0, two = 0;
  for (int64_t k = 0; k < Width; ++k)
    one += first[k], two += second[k];
  for (int64_t i = whole; i < l.span; ++i) { // the plain layout's last pixels
    if (Pass == 0) {
      const double d = double(x[i]) - double(mean[0]);
      one += d;
      two += d * d;
    } else {
      const float g = passedOne(dz[i], z, i, act);
      if (store)
        store[i] = g;
      one += g;
      two += double(g) * (double(x[i]) - double(mean[0]));
    }
  }
  out0[0] = float(one);
  out1[0] = float(two);
}

/// The per-channel values of a piece as a vector: the block's (blocked), or the one
/// channel's in every lane (plain). By reference: see loadTo in Winograd2x2.cpp.
template <int64_t Width>
__attribute__((always_inline)) inline void channelValues(const Layout_ &l, const float *p,
                                                         typename VectorOf<Width>::type &v) {
  using V = typename VectorOf<Width>::type;
  using U = typename VectorOf<Width>::unaligned;
  v = l.lanes > 1 ? V(*reinterpret_cast<const U *>(p)) : V{} + p[0];
}

/// y = act((x - mean) scale + shift [+ r]) over one piece (Pass 3: shift is beta, the
/// residual r in `dz` where there is one), or
/// dx = scale (dy - shift) - (x - mean) b over one piece (Pass 4, dy from dz at z).
template <int64_t Width, int Pass>
__attribute__((always_inline)) inline void
pieceMap(const Layout_ &l, const float *x, const float *dz, const float *z, NormActivation act,
         const float *scale, const float *shift, const float *mean, const float *b, float *out) {
  using V = typename VectorOf<Width>::type;
  using M = typename VectorOf<Width>::mask;
  using U = typename VectorOf<Width>::unaligned;
  V sc, sh, mu, bb = {};
  channelValues<Width>(l, scale, sc);
  channelValues<Width>(l, shift, sh);
  channelValues<Width>(l, mean, mu);
  if (Pass == 4)
    channelValues<Width>(l, b, bb);
  const int64_t whole = l.span / Width * Width;
  const bool residual = Pass == 3 && dz;
  for (int64_t i = 0; i < whole; i += Width) {
    const V a = *reinterpret_cast<const U *>(x + i);
    V r;
    if (Pass == 3) {
      r = (a - mu) * sc + sh;
      if (residual)
        r += *reinterpret_cast<const U *>(dz + i);
      activate<V, M>(r, act);
    } else {
      V dy = *reinterpret_cast<const U *>(dz + i);
      mask<Width>(dy, z, i, act);
      r = sc * (dy - sh) - (a - mu) * bb;
    }
    *reinterpret_cast<U *>(out + i) = r;
  }
  for (int64_t i = whole; i < l.span; ++i) // plain: the last pixels
    out[i] = Pass == 3
                 ? activateOne((x[i] - mean[0]) * scale[0] + shift[0] + (residual ? dz[i] : 0.0f),
                               act)
                 : scale[0] * (passedOne(dz[i], z, i, act) - shift[0]) - (x[i] - mean[0]) * b[0];
}

/// The per-CPU entry points: one piece (group, image) of one pass.
struct Piece {
  const Layout_ *l;
  const float *x, *dz, *z;
  NormActivation act;
  const float *mean, *scale, *shift, *b;
  float *out0, *out1;
  float *store; ///< Pass 2: where the masked gradient goes, or null
};

template <int64_t Width, int Pass>
__attribute__((always_inline)) inline void runPiece(const Piece &p) {
  if (Pass <= 2)
    pieceSums<Width, Pass>(*p.l, p.x, p.dz, p.z, p.act, p.mean, p.out0, p.out1, p.store);
  else
    pieceMap<Width, Pass>(*p.l, p.x, p.dz, p.z, p.act, p.scale, p.shift, p.mean, p.b, p.out0);
}

using PieceFunction = void (*)(const Piece &);

#if DLC_X86_KERNELS
template <int64_t Width, int Pass>
__attribute__((target("avx512f"))) void pieceAvx512(const Piece &p) {
  runPiece<Width, Pass>(p);
}
template <int64_t Width, int Pass>
__attribute__((target("avx2,fma"))) void pieceAvx2(const Piece &p) {
  runPiece<Width, Pass>(p);
}
#endif
template <int64_t Width, int Pass> void piecePortable(const Piece &p) { runPiece<Width, Pass>(p); }

/// The piece code of `Pass` for this CPU and layout: the block's width for blocked
/// layouts, the widest vector for plain ones.
template <int Pass> PieceFunction pieceFor(int64_t lanes) {
#if DLC_X86_KERNELS
  const bool avx512 = cpu_has(CpuFeature::avx512f),
             avx2 = cpu_has(CpuFeature::avx2) && cpu_has(CpuFeature::fma);
  if (lanes == 16)
    return avx512 ? pieceAvx512<16, Pass> : avx2 ? pieceAvx2<16, Pass> : piecePortable<16, Pass>;
  if (lanes == 8)
    return avx512 || avx2 ? pieceAvx2<8, Pass> : piecePortable<8, Pass>;
  return avx512 ? pieceAvx512<16, Pass> : avx2 ? pieceAvx2<8, Pass> : piecePortable<8, Pass>;
#else
  return lanes == 16 ? piecePortable<16, Pass> : piecePortable<8, Pass>;
#endif
}

/// Runs `Pass` over every (group, image) piece; `sums` (Pass <= 2) gets each piece's
/// two sets of `lanes` sums at [group][image].
template <int Pass>
void runPass(const BatchNormGeometry &g, const Layout_ &l, const float *x, const float *dz,
             const float *z, NormActivation act, const float *mean, const float *scale,
             const float *shift, const float *b, float *sums, float *out) {
  const PieceFunction piece = pieceFor<Pass>(l.lanes);
  const int64_t pieces = l.groups * g.N, set = pieces * l.lanes;
  parallel_for_if(pieces > 1 && g.N * g.C * g.S >= (int64_t(1) << 14), pieces, [&](int64_t i) {
    const int64_t group = i / g.N, n = i % g.N;
    const int64_t at = n * l.stride + group * l.span, c = group * l.lanes;
    Piece p{&l,
            x + at,
            dz ? dz + at : nullptr,
            z ? z + at : nullptr,
            act,
            mean ? mean + c : nullptr,
            scale ? scale + c : nullptr,
            shift ? shift + c : nullptr,
            b ? b + c : nullptr,
            Pass <= 2 ? sums + i * l.lanes : out + at,
            Pass <= 2 ? sums + set + i * l.lanes : nullptr,
            Pass == 2 && out ? out + at : nullptr};
    piece(p);
  });
}

/// Per channel, the pieces' sums over the images, in order.
void sumImages(const BatchNormGeometry &g, const Layout_ &l, const float *sums,
               std::vector<double> &total) {
  total.assign(size_t(g.C), 0.0);
  for (int64_t group = 0; group < l.groups; ++group)
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t lane = 0; lane < l.lanes; ++lane)
        total[size_t(group * l.lanes + lane)] += sums[(group * g.N + n) * l.lanes + lane];
}

} // namespace

void batch_norm_forward_training(const BatchNormGeometry &g, const float *x, const float *gamma,
                                 const float *beta, double epsilon, NormActivation activation,
                                 float *y, float *mean, float *var, const float *residual) {
  const Layout_ l = layoutOf(g);
  const double count = double(g.N * g.S);
  std::vector<float> sums(size_t(2 * g.N * g.C)), scale(size_t(g.C)), shift(size_t(g.C));
  std::vector<double> total, squares;
  // K: each channel's first value (image 0, pixel 0), as far from the others as a
  // typical value is from the mean.
  for (int64_t c = 0; c < g.C; ++c)
    shift[size_t(c)] = x[c / l.lanes * l.span + c % l.lanes];
  runPass<0>(g, l, x, nullptr, nullptr, activation, shift.data(), nullptr, nullptr, nullptr,
             sums.data(), nullptr);
  sumImages(g, l, sums.data(), total);
  sumImages(g, l, sums.data() + g.N * g.C, squares);
  for (int64_t c = 0; c < g.C; ++c) {
    const double offset = total[size_t(c)] / count; // mean - K
    // biased, as the contract says
    const double sigma2 = std::max(0.0, squares[size_t(c)] / count - offset * offset);
    const double invStd = 1.0 / std::sqrt(sigma2 + epsilon);
    mean[c] = float(double(shift[size_t(c)]) + offset);
    var[c] = float(sigma2);
    scale[size_t(c)] = float(double(gamma[c]) * invStd);
  }
  runPass<3>(g, l, x, residual, nullptr, activation, mean, scale.data(), beta, nullptr, nullptr,
             y);
}

void batch_norm_backward(const BatchNormGeometry &g, const float *dz, const float *z,
                         NormActivation activation, const float *x, const float *gamma,
                         const float *mean, const float *var, double epsilon, float *dx,
                         float *dgamma, float *dbeta, float *masked) {
  const Layout_ l = layoutOf(g);
  const double count = double(g.N * g.S);
  std::vector<float> sums(size_t(2 * g.N * g.C)), scale(size_t(g.C)), a(size_t(g.C)),
      b(size_t(g.C));
  std::vector<double> sumDy, sumDyDev;
  runPass<2>(g, l, x, dz, z, activation, mean, nullptr, nullptr, nullptr, sums.data(),
             activation == NormActivation::none ? nullptr : masked);
  sumImages(g, l, sums.data(), sumDy);
  sumImages(g, l, sums.data() + g.N * g.C, sumDyDev);
  // dx = gamma invStd (dy - sum(dy)/M) - (x - mean) gamma invStd^3 sum(dy (x - mean))/M
  for (int64_t c = 0; c < g.C; ++c) {
    const double invStd = 1.0 / std::sqrt(double(var[c]) + epsilon);
    const double gi = double(gamma[c]) * invStd;
    scale[size_t(c)] = float(gi);
    a[size_t(c)] = float(sumDy[size_t(c)] / count);
    b[size_t(c)] = float(gi * invStd * invStd * sumDyDev[size_t(c)] / count);
    dgamma[c] = float(sumDyDev[size_t(c)] * invStd);
    dbeta[c] = float(sumDy[size_t(c)]);
  }
  if (masked && activation != NormActivation::none) // the masked gradient, read back
    runPass<4>(g, l, x, masked, nullptr, NormActivation::none, mean, scale.data(), a.data(),
               b.data(), nullptr, dx);
  else
    runPass<4>(g, l, x, dz, z, activation, mean, scale.data(), a.data(), b.data(), nullptr, dx);
}

} // namespace dlc::cpu_kernels::direct
