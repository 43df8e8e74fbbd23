//===- Winograd2x2.cpp - dlc's own F(3x3, 2x2) convolution ---------------------===//
//
// Winograd's minimal filtering for 2x2 windows: a 3x3 output tile is
// A^T [(G g G^T) . (B^T d B)] A for the 4x4 input tile d under it and the window g, 16
// products where the direct sum takes 36. The interpolation points are 0, 1, -1 and
// infinity, so the transforms are additions and halvings, and the result rounds about
// as the direct sum does (the tests allow 1e-5 of the tensor's scale):
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 -1 0 1], G = [1 0; 1/2 1/2; 1/2 -1/2; 0 1],
//   A^T = [1 1 1 0; 0 1 -1 0; 0 1 1 1].
//
// Over a block of 48 tiles the products of each of the 16 positions are one
// (tiles x C) by (C x O) matrix product, so a block is three passes over memory that
// stays in the core's cache: the input transform into V (16 x 48 x C), the products
// into M (16 x 48 x O) by a register-blocked kernel (6 tiles by 64 output channels on
// AVX-512, 6 by 16 on AVX2), and the output transform with bias and ReLU into y. Blocks
// are split over the threads. The data gradient of a 2x2 convolution is the forward
// convolution of dy, padded by 1 - padding, with the window turned half a turn and its
// channel axes swapped, so both run the same passes. The weight gradient (F(2x2, 3x3),
// below) sums the products of the blocks' tiles in the transformed domain.
//
// Against oneDNN 2.6's direct kernel in a stand-alone program (2-core AVX-512 EPYC,
// nChw16c, batch 32, the weights transformed on every call): the LeafNetwork's
// 32 -> 64 channels on 62x62 6.8-6.9 against 8.8-9.9 ms, 64 -> 128 on 29x29 5.5 against
// 7.3 ms; their data gradients 7.0-8.6 against 9.0 and 5.8-6.5 against 7.3-7.5 ms.
//
// The vector code is written once with the compiler's vector types and compiled three
// times: for AVX-512, for AVX2 with FMA, and for any x86-64 (or other) CPU.
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/CPU/Winograd2x2.h"

#include "CpuFeatures.h"
#include "ParallelFor.h"
#include "PreparedWeights.h"

#include <algorithm>

#include <vector>

namespace dlc::cpu_kernels::winograd_2x2 {

namespace {

constexpr int64_t kPositions = 16; // a 4x4 transformed tile
constexpr int64_t kRows = 6;       // tiles per call of the product kernel
constexpr int64_t kTileBlock = 48; // most tiles per block, a multiple of kRows

/// Floats between one position's plane of a block's transformed tiles and the next's
/// (kTileBlock rows of `channels`), one cache line more than the plane: a tile's 16
/// values go to or come from 16 planes, and planes a multiple of 4 KB apart (48 x 64
/// channels is 12 KB) would all fall in one set of the L1 cache and alias each other.
constexpr int64_t planeFloats(int64_t channels) { return kTileBlock * channels + 16; }

/// One stride-1 2x2 convolution as the passes compute it: C channels of H x W in, O
/// channels of OH x OW out, output (oh, ow) summing inputs (oh - pad + {0, 1},
/// ow - pad + {0, 1}), zeros outside; both sides in a blocked layout of `lanes`.
struct Problem {
  int64_t N, C, H, W, O, OH, OW, pad, lanes;
  int64_t TH, TW, T; // 3x3 output tiles: per column, per row, in all
  int64_t tilesPerBlock, blocks;
};

Problem problemOf(int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t OH, int64_t OW,
                  int64_t pad, Layout layout) {
  const int64_t TH = (OH + 2) / 3, TW = (OW + 2) / 3, T = N * TH * TW;
  // Blocks of at most kTileBlock tiles, as many as a multiple of the threads, of equal
  // size: with 400 tiles (ResNet-like 28x28 outputs at batch 4), 9 blocks of 48 gave
  // one thread a fifth more work than the other.
  const int64_t team = team_size();
  const int64_t blocks = ((T + kTileBlock - 1) / kTileBlock + team - 1) / team * team;
  const int64_t tilesPerBlock =
      std::min(kTileBlock, ((T + blocks - 1) / blocks + kRows - 1) / kRows * kRows);
  return {N,
          C,
          H,
          W,
          O,
          OH,
          OW,
          pad,
          channel_block(layout),
          TH,
          TW,
          T,
          tilesPerBlock,
          (T + tilesPerBlock - 1) / tilesPerBlock};
}

template <int64_t Width> struct VectorOf {
  typedef float type __attribute__((vector_size(Width * sizeof(float))));
  typedef int32_t mask __attribute__((vector_size(Width * sizeof(float))));
  /// The same vector at any float's address, aliasing floats: one unaligned move.
  typedef float unaligned
      __attribute__((vector_size(Width * sizeof(float)), aligned(sizeof(float)), may_alias));
};

/// Loads and stores of the compiler's vector types. References rather than values: a
/// vector wider than the baseline ABI's registers would change the calling convention
/// between the target-specific callers.
template <int64_t Width>
__attribute__((always_inline)) inline void loadTo(typename VectorOf<Width>::type &v,
                                                  const float *p) {
  v = *reinterpret_cast<const typename VectorOf<Width>::unaligned *>(p);
}
template <int64_t Width>
__attribute__((always_inline)) inline void storeFrom(float *p,
                                                     const typename VectorOf<Width>::type &v) {
  *reinterpret_cast<typename VectorOf<Width>::unaligned *>(p) = v;
}

/// The tile `tile` (image, tile row, tile column) of `p`.
struct TilePlace {
  int64_t n, th, tw;
};
inline TilePlace placeOf(const Problem &p, int64_t tile) {
  return {tile / (p.TH * p.TW), tile / p.TW % p.TH, tile % p.TW};
}

/// B^T d B for tile `tile`, every channel block, into row `row` of V (16 x kTileBlock x C).
template <int64_t Lanes>
__attribute__((always_inline)) inline void transformInputTile(const Problem &p, const float *x,
                                                              int64_t tile, int64_t row, float *V) {
  using L = typename VectorOf<Lanes>::type;
  const TilePlace at = placeOf(p, tile);
  const int64_t ih0 = 3 * at.th - p.pad, iw0 = 3 * at.tw - p.pad;
  const bool inside = ih0 >= 0 && iw0 >= 0 && ih0 + 4 <= p.H && iw0 + 4 <= p.W;
  const int64_t blocks = p.C / Lanes;
  for (int64_t cb = 0; cb < blocks; ++cb) {
    const float *plane = x + (at.n * blocks + cb) * p.H * p.W * Lanes;
    // The rows of the tile two to the right: each tile reads 4 rows of every channel
    // block, more streams than the hardware prefetcher follows (nChw8c's 32 -> 64
    // channels on 62x62 ran at half oneDNN's speed without this).
    if (iw0 + 10 <= p.W && ih0 >= 0 && ih0 + 4 <= p.H)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t b = 0; b < 4 * Lanes * int64_t(sizeof(float)); b += 64)
          __builtin_prefetch(
              reinterpret_cast<const char *>(plane + ((ih0 + i) * p.W + iw0 + 6) * Lanes) + b);
    L d[4][4];
    if (inside) { // nearly every tile: no bounds to check
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j)
          loadTo<Lanes>(d[i][j], plane + ((ih0 + i) * p.W + iw0 + j) * Lanes);
    } else {
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          const int64_t ih = ih0 + i, iw = iw0 + j;
          d[i][j] = L{};
          if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W)
            loadTo<Lanes>(d[i][j], plane + (ih * p.W + iw) * Lanes);
        }
    }
    L r[4][4]; // B^T d
    for (int64_t j = 0; j < 4; ++j) {
      r[0][j] = d[0][j] - d[2][j];
      r[1][j] = d[1][j] + d[2][j];
      r[2][j] = d[2][j] - d[1][j];
      r[3][j] = d[3][j] - d[1][j];
    }
    for (int64_t i = 0; i < 4; ++i) {
      const L v[4] = {r[i][0] - r[i][2], r[i][1] + r[i][2], r[i][2] - r[i][1], r[i][3] - r[i][1]};
      for (int64_t j = 0; j < 4; ++j)
        storeFrom<Lanes>(V + (i * 4 + j) * planeFloats(p.C) + row * p.C + cb * Lanes, v[j]);
    }
  }
}

/// M[t][o0 ...] = sum over c of V[t][c] U[c][o0 ...] for `rows` tiles (a multiple of
/// kRows) and Cols vectors of Width output channels: kRows x Cols sums in registers,
/// each step one load of U per vector and one broadcast of V per tile.
template <int64_t Width, int64_t Cols>
__attribute__((always_inline)) inline void
products(const float *V, const float *U, float *M, int64_t C, int64_t O, int64_t o0, int64_t rows) {
  using G = typename VectorOf<Width>::type;
  for (int64_t t = 0; t < rows; t += kRows) {
    G sum[kRows][Cols] = {};
    for (int64_t c = 0; c < C; ++c) {
      G u[Cols];
      for (int64_t k = 0; k < Cols; ++k)
        loadTo<Width>(u[k], U + c * O + o0 + k * Width);
      for (int64_t r = 0; r < kRows; ++r) {
        const float v = V[(t + r) * C + c];
        for (int64_t k = 0; k < Cols; ++k)
          sum[r][k] += v * u[k];
      }
    }
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t k = 0; k < Cols; ++k)
        storeFrom<Width>(M + (t + r) * O + o0 + k * Width, sum[r][k]);
  }
}

/// A^T m A (+ bias, then the ReLU) for tile `tile`, from row `row` of M, into y.
template <int64_t Lanes>
__attribute__((always_inline)) inline void
transformOutputTile(const Problem &p, const float *M, int64_t tile, int64_t row, const float *bias,
                    bool relu, float *y) {
  using L = typename VectorOf<Lanes>::type;
  using Mask = typename VectorOf<Lanes>::mask;
  const TilePlace at = placeOf(p, tile);
  const int64_t blocks = p.O / Lanes;
  for (int64_t ob = 0; ob < blocks; ++ob) {
    L m[4][4];
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j)
        loadTo<Lanes>(m[i][j], M + (i * 4 + j) * planeFloats(p.O) + row * p.O + ob * Lanes);
    L a[3][4]; // A^T m
    for (int64_t j = 0; j < 4; ++j) {
      a[0][j] = m[0][j] + m[1][j] + m[2][j];
      a[1][j] = m[1][j] - m[2][j];
      a[2][j] = m[1][j] + m[2][j] + m[3][j];
    }
    L b = L{};
    if (bias)
      loadTo<Lanes>(b, bias + ob * Lanes);
    float *plane = y + (at.n * blocks + ob) * p.OH * p.OW * Lanes;
    for (int64_t i = 0; i < 3 && 3 * at.th + i < p.OH; ++i) {
      L out[3] = {a[i][0] + a[i][1] + a[i][2] + b, a[i][1] - a[i][2] + b,
                  a[i][1] + a[i][2] + a[i][3] + b};
      const int64_t oh = 3 * at.th + i;
      for (int64_t j = 0; j < 3 && 3 * at.tw + j < p.OW; ++j) {
        if (relu) // max(v, 0), a NaN to 0 as well: the comparison's mask clears it
          out[j] = (L)((Mask)out[j] & (out[j] > L{}));
        storeFrom<Lanes>(plane + (oh * p.OW + 3 * at.tw + j) * Lanes, out[j]);
      }
    }
  }
}

/// What each thread's blocks work in: V and M of one block.
struct Scratch {
  std::vector<float> V, M;
};

/// Block `block` of kTileBlock tiles: input transform, products, output transform.
/// Output channels go Cols vectors of Width at a time, then one vector at a time.
template <int64_t Lanes, int64_t Width, int64_t Cols>
__attribute__((always_inline)) inline void runBlock(const Problem &p, const float *x,
                                                    const float *U, const float *bias, bool relu,
                                                    float *y, int64_t block) {
  thread_local Scratch scratch;
  scratch.V.resize(size_t(kPositions * planeFloats(p.C)));
  scratch.M.resize(size_t(kPositions * planeFloats(p.O)));
  float *V = scratch.V.data(), *M = scratch.M.data();
  const int64_t first = block * p.tilesPerBlock, count = std::min(p.tilesPerBlock, p.T - first);
  const int64_t rows = (count + kRows - 1) / kRows * kRows;
  for (int64_t t = 0; t < count; ++t)
    transformInputTile<Lanes>(p, x, first + t, t, V);
  for (int64_t position = 0; position < kPositions; ++position) // rows past the last tile
    std::fill(V + position * planeFloats(p.C) + count * p.C, V + position * planeFloats(p.C) + rows * p.C,
              0.0f);
  for (int64_t position = 0; position < kPositions; ++position) {
    const float *Vx = V + position * planeFloats(p.C), *Ux = U + position * p.C * p.O;
    float *Mx = M + position * planeFloats(p.O);
    int64_t o = 0;
    for (; o + Cols * Width <= p.O; o += Cols * Width)
      products<Width, Cols>(Vx, Ux, Mx, p.C, p.O, o, rows);
    for (; o < p.O; o += Width)
      products<Width, 1>(Vx, Ux, Mx, p.C, p.O, o, rows);
  }
  for (int64_t t = 0; t < count; ++t)
    transformOutputTile<Lanes>(p, M, first + t, t, bias, relu, y);
}

using BlockFunction = void (*)(const Problem &, const float *, const float *, const float *, bool,
                               float *, int64_t);

#if DLC_X86_KERNELS
__attribute__((target("avx512f"))) void blockAvx512(const Problem &p, const float *x,
                                                    const float *U, const float *bias, bool relu,
                                                    float *y, int64_t block) {
  runBlock<16, 16, 4>(p, x, U, bias, relu, y, block);
}

template <int64_t Lanes>
__attribute__((target("avx2,fma"))) void blockAvx2(const Problem &p, const float *x, const float *U,
                                                   const float *bias, bool relu, float *y,
                                                   int64_t block) {
  runBlock<Lanes, 8, 2>(p, x, U, bias, relu, y, block);
}
#endif

template <int64_t Lanes>
void blockPortable(const Problem &p, const float *x, const float *U, const float *bias, bool relu,
                   float *y, int64_t block) {
  runBlock<Lanes, 8, 2>(p, x, U, bias, relu, y, block);
}

/// The block code for this CPU: AVX-512 on nChw16c, AVX2 with FMA, else portable.
BlockFunction blockFunction(int64_t lanes) {
#if DLC_X86_KERNELS
  if (lanes == 16 && cpu_has(CpuFeature::avx512f))
    return blockAvx512;
  if (cpu_has(CpuFeature::avx2) && cpu_has(CpuFeature::fma))
    return lanes == 16 ? blockAvx2<16> : blockAvx2<8>;
#endif
  return lanes == 16 ? blockPortable<16> : blockPortable<8>;
}

/// U (16 x C x O) = G k G^T for every pair of `p`'s input channel c and output channel o,
/// k the 2x2 window w[o][c] (forward) or, for the data gradient (p's channels are w's
/// swapped), w[c][o] turned half a turn. Input channels outside: U's rows in order.
void transformWeights(const Problem &p, const float *w, bool dataGradient, float *U) {
  // 64 -> 128 channels: 8192 windows, a tenth of the convolution's time at batch 4 on
  // one thread.
  parallel_for_if(p.C * p.O >= 4096, p.C, [&](int64_t c) {
    for (int64_t o = 0; o < p.O; ++o) {
      float k[2][2];
      if (!dataGradient) {
        const float *window = w + (o * p.C + c) * 4;
        k[0][0] = window[0], k[0][1] = window[1], k[1][0] = window[2], k[1][1] = window[3];
      } else {
        const float *window = w + (c * p.O + o) * 4;
        k[0][0] = window[3], k[0][1] = window[2], k[1][0] = window[1], k[1][1] = window[0];
      }
      float r[4][2]; // G k
      for (int64_t j = 0; j < 2; ++j) {
        r[0][j] = k[0][j];
        r[1][j] = 0.5f * (k[0][j] + k[1][j]);
        r[2][j] = 0.5f * (k[0][j] - k[1][j]);
        r[3][j] = k[1][j];
      }
      for (int64_t i = 0; i < 4; ++i) {
        const float u[4] = {r[i][0], 0.5f * (r[i][0] + r[i][1]), 0.5f * (r[i][0] - r[i][1]),
                            r[i][1]};
        for (int64_t j = 0; j < 4; ++j)
          U[((i * 4 + j) * p.C + c) * p.O + o] = u[j];
      }
    }
  });
}

/// The three passes over every block of `p`'s tiles, blocks split over the threads.
void run(const Problem &p, const float *x, const float *U, const float *bias, bool relu, float *y) {
  const BlockFunction block = blockFunction(p.lanes);
  parallel_for_if(p.blocks > 1, p.blocks, [&](int64_t b) { block(p, x, U, bias, relu, y, b); });
}

// The weight gradient. dw's 2x2 window correlates each 4x4 input tile d with the 3x3
// tile g of dy over it: F(2x2, 3x3) with the same points, so the same B^T, and
//   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], A^T = [1 1 1 0; 0 1 -1 1]
// (A^T's last entry +1 because B^T's last row is d3 - d1). The sum over tiles is linear,
// so it runs in the transformed domain: S[position] (C x O) += V^T D for each block,
// and A^T S A turns S into dw once at the end. Each part of the blocks keeps its own S.

/// G g G^T of tile `tile` of dy (O channels of OH x OW, zeros past its edges), every
/// channel block, into row `row` of D (16 x kTileBlock x O); the tile's sums into db.
template <int64_t Lanes>
__attribute__((always_inline)) inline void transformGradientTile(const Problem &p, const float *dy,
                                                                 int64_t tile, int64_t row,
                                                                 float *D, float *db) {
  using L = typename VectorOf<Lanes>::type;
  const TilePlace at = placeOf(p, tile);
  const int64_t oh0 = 3 * at.th, ow0 = 3 * at.tw;
  const int64_t rowsIn = std::min<int64_t>(3, p.OH - oh0),
                colsIn = std::min<int64_t>(3, p.OW - ow0);
  const int64_t blocks = p.O / Lanes;
  for (int64_t ob = 0; ob < blocks; ++ob) {
    const float *plane = dy + (at.n * blocks + ob) * p.OH * p.OW * Lanes;
    // The rows of the tile two to the right, as transformInputTile's.
    if (ow0 + 9 <= p.OW && rowsIn == 3)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t b = 0; b < 3 * Lanes * int64_t(sizeof(float)); b += 64)
          __builtin_prefetch(
              reinterpret_cast<const char *>(plane + ((oh0 + i) * p.OW + ow0 + 6) * Lanes) + b);
    L g[3][3];
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        g[i][j] = L{};
        if (i < rowsIn && j < colsIn)
          loadTo<Lanes>(g[i][j], plane + ((oh0 + i) * p.OW + ow0 + j) * Lanes);
      }
    L r[4][3]; // G g
    for (int64_t j = 0; j < 3; ++j) {
      const L half = 0.5f * (g[0][j] + g[2][j]), middle = 0.5f * g[1][j];
      r[0][j] = g[0][j];
      r[1][j] = half + middle;
      r[2][j] = half - middle;
      r[3][j] = g[2][j];
    }
    if (db) {
      L sum = L{};
      for (int64_t i = 0; i < 3; ++i)
        sum += g[i][0] + g[i][1] + g[i][2];
      L total;
      loadTo<Lanes>(total, db + ob * Lanes);
      storeFrom<Lanes>(db + ob * Lanes, total + sum);
    }
    for (int64_t i = 0; i < 4; ++i) {
      const L half = 0.5f * (r[i][0] + r[i][2]), middle = 0.5f * r[i][1];
      const L u[4] = {r[i][0], half + middle, half - middle, r[i][2]};
      for (int64_t j = 0; j < 4; ++j)
        storeFrom<Lanes>(D + (i * 4 + j) * planeFloats(p.O) + row * p.O + ob * Lanes, u[j]);
    }
  }
}

/// S[c][o0 ...] += sum over `rows` tiles t of V[t][c] D[t][o0 ...] for CRows input
/// channels from c0 and Cols vectors of Width output channels: CRows x Cols sums in
/// registers, each tile one load of D per vector and one broadcast of V per channel.
template <int64_t Width, int64_t Cols, int64_t CRows>
__attribute__((always_inline)) inline void gradientProducts(const float *V, const float *D,
                                                            float *S, int64_t C, int64_t O,
                                                            int64_t c0, int64_t o0, int64_t rows) {
  using G = typename VectorOf<Width>::type;
  G sum[CRows][Cols];
  for (int64_t r = 0; r < CRows; ++r)
    for (int64_t k = 0; k < Cols; ++k)
      loadTo<Width>(sum[r][k], S + (c0 + r) * O + o0 + k * Width);
  for (int64_t t = 0; t < rows; ++t) {
    G d[Cols];
    for (int64_t k = 0; k < Cols; ++k)
      loadTo<Width>(d[k], D + t * O + o0 + k * Width);
    for (int64_t r = 0; r < CRows; ++r) {
      const float v = V[t * C + c0 + r];
      for (int64_t k = 0; k < Cols; ++k)
        sum[r][k] += v * d[k];
    }
  }
  for (int64_t r = 0; r < CRows; ++r)
    for (int64_t k = 0; k < Cols; ++k)
      storeFrom<Width>(S + (c0 + r) * O + o0 + k * Width, sum[r][k]);
}

/// gradientProducts over every input channel for Cols vectors from o0: kRows channels at
/// a time, then two (C is a multiple of 8).
template <int64_t Width, int64_t Cols>
__attribute__((always_inline)) inline void gradientColumns(const float *V, const float *D, float *S,
                                                           int64_t C, int64_t O, int64_t o0,
                                                           int64_t rows) {
  int64_t c = 0;
  for (; c + kRows <= C; c += kRows)
    gradientProducts<Width, Cols, kRows>(V, D, S, C, O, c, o0, rows);
  for (; c < C; c += 2)
    gradientProducts<Width, Cols, 2>(V, D, S, C, O, c, o0, rows);
}

/// The products of one position's `rows` tiles into S (C x O): output channels Cols
/// vectors at a time, then one.
template <int64_t Width, int64_t Cols>
__attribute__((always_inline)) inline void
gradientPosition(const float *V, const float *D, float *S, int64_t C, int64_t O, int64_t rows) {
  int64_t o = 0;
  for (; o + Cols * Width <= O; o += Cols * Width)
    gradientColumns<Width, Cols>(V, D, S, C, O, o, rows);
  for (; o < O; o += Width)
    gradientColumns<Width, 1>(V, D, S, C, O, o, rows);
}

/// Block `block` of the weight gradient: both transforms, then the products into this
/// part's sums S (16 x C x O) and db (O, or nullptr).
template <int64_t Lanes, int64_t Width, int64_t Cols>
__attribute__((always_inline)) inline void gradientBlock(const Problem &p, const float *x,
                                                         const float *dy, float *S, float *db,
                                                         int64_t block) {
  thread_local Scratch scratch;
  scratch.V.resize(size_t(kPositions * planeFloats(p.C)));
  scratch.M.resize(size_t(kPositions * planeFloats(p.O)));
  float *V = scratch.V.data(), *D = scratch.M.data();
  const int64_t first = block * p.tilesPerBlock, count = std::min(p.tilesPerBlock, p.T - first);
  for (int64_t t = 0; t < count; ++t) {
    transformInputTile<Lanes>(p, x, first + t, t, V);
    transformGradientTile<Lanes>(p, dy, first + t, t, D, db);
  }
  for (int64_t position = 0; position < kPositions; ++position)
    gradientPosition<Width, Cols>(V + position * planeFloats(p.C), D + position * planeFloats(p.O),
                                  S + position * p.C * p.O, p.C, p.O, count);
}

using GradientBlockFunction = void (*)(const Problem &, const float *, const float *, float *,
                                       float *, int64_t);

#if DLC_X86_KERNELS
__attribute__((target("avx512f"))) void gradientBlockAvx512(const Problem &p, const float *x,
                                                            const float *dy, float *S, float *db,
                                                            int64_t block) {
  gradientBlock<16, 16, 4>(p, x, dy, S, db, block);
}

template <int64_t Lanes>
__attribute__((target("avx2,fma"))) void gradientBlockAvx2(const Problem &p, const float *x,
                                                           const float *dy, float *S, float *db,
                                                           int64_t block) {
  gradientBlock<Lanes, 8, 2>(p, x, dy, S, db, block);
}
#endif

template <int64_t Lanes>
void gradientBlockPortable(const Problem &p, const float *x, const float *dy, float *S, float *db,
                           int64_t block) {
  gradientBlock<Lanes, 8, 2>(p, x, dy, S, db, block);
}

/// The weight-gradient block code for this CPU, chosen as blockFunction's.
GradientBlockFunction gradientBlockFunction(int64_t lanes) {
#if DLC_X86_KERNELS
  if (lanes == 16 && cpu_has(CpuFeature::avx512f))
    return gradientBlockAvx512;
  if (cpu_has(CpuFeature::avx2) && cpu_has(CpuFeature::fma))
    return lanes == 16 ? gradientBlockAvx2<16> : gradientBlockAvx2<8>;
#endif
  return lanes == 16 ? gradientBlockPortable<16> : gradientBlockPortable<8>;
}

/// dw[o][c] = A^T (the parts' S summed at (c, o)) A, and db the parts' sums.
void transformGradientSums(const Problem &p, const float *S, const float *dbParts, int64_t parts,
                           float *dw, float *db) {
  const int64_t partSize = kPositions * p.C * p.O;
  parallel_for_if(p.C * p.O >= 4096, p.C, [&](int64_t c) {
    for (int64_t o = 0; o < p.O; ++o) {
      float m[4][4] = {};
      for (int64_t part = 0; part < parts; ++part)
        for (int64_t i = 0; i < 4; ++i)
          for (int64_t j = 0; j < 4; ++j)
            m[i][j] += S[part * partSize + ((i * 4 + j) * p.C + c) * p.O + o];
      float a[2][4]; // A^T m
      for (int64_t j = 0; j < 4; ++j) {
        a[0][j] = m[0][j] + m[1][j] + m[2][j];
        a[1][j] = m[1][j] - m[2][j] + m[3][j];
      }
      float *window = dw + (o * p.C + c) * 4;
      for (int64_t i = 0; i < 2; ++i) {
        window[2 * i] = a[i][0] + a[i][1] + a[i][2];
        window[2 * i + 1] = a[i][1] - a[i][2] + a[i][3];
      }
    }
  });
  if (db)
    for (int64_t o = 0; o < p.O; ++o) {
      float sum = 0;
      for (int64_t part = 0; part < parts; ++part)
        sum += dbParts[part * p.O + o];
      db[o] = sum;
    }
}

/// The shape conditions every direction shares.
bool fits(const Conv2DGeometry &g) {
  const bool blocked = g.inputLayout == Layout::nChw16c || g.inputLayout == Layout::nChw8c;
  return g.KH == 2 && g.KW == 2 && g.strideH == 1 && g.strideW == 1 && g.dilationH == 1 &&
         g.dilationW == 1 && g.groups == 1 && g.padH == g.padW && (g.padH == 0 || g.padH == 1) &&
         g.OH == g.H + 2 * g.padH - 1 && g.OW == g.W + 2 * g.padW - 1 && blocked &&
         g.outputLayout == g.inputLayout && g.C % channel_block(g.inputLayout) == 0 &&
         g.O % channel_block(g.inputLayout) == 0;
}

} // namespace

bool applies(const Conv2DGeometry &g, ConvEpilogue epilogue) {
  return fits(g) && !epilogue.silu && epilogue.cap == 0;
}

void forward(const Conv2DGeometry &g, const float *x, const float *w, const float *b, float *y,
             ConvEpilogue epilogue, const WeightsMemo &memo) {
  const Problem p = problemOf(g.N, g.C, g.H, g.W, g.O, g.OH, g.OW, g.padH, g.inputLayout);
  const float *U = preparedWeights(memo, w, size_t(kPositions * p.C * p.O),
                                   [&](float *out) { transformWeights(p, w, false, out); });
  run(p, x, U, b, epilogue.relu, y);
}

bool appliesToBackwardData(const Conv2DGeometry &g) { return fits(g); }

void backward_data(const Conv2DGeometry &g, const float *dy, const float *w, float *dx) {
  const Problem p = problemOf(g.N, g.O, g.OH, g.OW, g.C, g.H, g.W, 1 - g.padH, g.inputLayout);
  const float *U = preparedWeights(WeightsMemo(), w, size_t(kPositions * p.C * p.O),
                                   [&](float *out) { transformWeights(p, w, true, out); });
  run(p, dy, U, nullptr, false, dx);
}

bool appliesToBackwardFilter(const Conv2DGeometry &g) { return fits(g); }

void backward_filter(const Conv2DGeometry &g, const float *dy, const float *x, float *dw,
                     float *db) {
  const Problem p = problemOf(g.N, g.C, g.H, g.W, g.O, g.OH, g.OW, g.padH, g.inputLayout);
  // The blocks in as many contiguous parts as threads, each summing into its own S.
  // (Splitting the 16 positions between two threads instead, each transforming every
  // tile, ran dlc-bench-conv2x2 1.2-1.4x faster at batch 4 but the compiled LeafNetwork
  // step up to 8 % slower whenever this VM ran slowly, the next region included.)
  const int64_t parts = std::min(team_size(), p.blocks);
  const int64_t partSize = kPositions * p.C * p.O;
  thread_local std::vector<float> sums, biasSums;
  sums.assign(size_t(parts * partSize), 0.0f);
  biasSums.assign(size_t(parts * p.O), 0.0f);
  // The workers see their own thread_local vectors: they get the caller's by pointer.
  float *S = sums.data(), *biasS = biasSums.data();
  const GradientBlockFunction block = gradientBlockFunction(p.lanes);
  parallel_for_if(parts > 1, parts, [&](int64_t part) {
    for (int64_t b = p.blocks * part / parts; b < p.blocks * (part + 1) / parts; ++b)
      block(p, x, dy, S + part * partSize, db ? biasS + part * p.O : nullptr, b);
  });
  transformGradientSums(p, S, biasS, parts, dw, db);
}

} // namespace dlc::cpu_kernels::winograd_2x2
