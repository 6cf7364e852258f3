// LEKA rule L2: avx512 GEMM micro-kernel, C[1][8][1024] = A[8][512] * B[512][1024]
// strides (elements): A (0, 512, 1), B (0, 1024, 1), C (0, 1024, 1); B read in place
#include <immintrin.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {
constexpr long BATCH = 1, M = 8, N = 1024, K = 512;
constexpr long SAB = 0, SAM = 512, SAK = 1;
constexpr long SBB = 0, SBK = 1024, SBN = 1;
constexpr long SCB = 0, SCM = 1024;
constexpr int VL = 16, NV = 1, MR = 8, NB = NV * VL;

// rows x (nv vectors) tile over the whole K: the accumulators stay in registers
template <int R, int NVT>
inline void tile(const float* __restrict A, const float* __restrict B, long ldb, float* __restrict C) {
  __m512 acc[R][NVT];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NVT; ++v) acc[r][v] = _mm512_setzero_ps();
  for (long k = 0; k < K; ++k) {
    __m512 b[NVT];
    for (int v = 0; v < NVT; ++v) b[v] = _mm512_loadu_ps(B + k * ldb + v * VL);
    for (int r = 0; r < R; ++r) {
      __m512 a = _mm512_set1_ps(A[r * SAM + k * SAK]);
      for (int v = 0; v < NVT; ++v) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NVT; ++v) _mm512_storeu_ps(C + r * SCM + v * VL, acc[r][v]);
}

template <int NVT>
inline void rows(const float* A, const float* B, long ldb, float* C, long m0, long mr) {
  const float* a = A + m0 * SAM;
  float* c = C + m0 * SCM;
  switch (mr) {
    case 1: tile<1, NVT>(a, B, ldb, c); break;
    case 2: tile<2, NVT>(a, B, ldb, c); break;
    case 3: tile<3, NVT>(a, B, ldb, c); break;
    case 4: tile<4, NVT>(a, B, ldb, c); break;
    case 5: tile<5, NVT>(a, B, ldb, c); break;
    case 6: tile<6, NVT>(a, B, ldb, c); break;
    case 7: tile<7, NVT>(a, B, ldb, c); break;
    case 8: tile<8, NVT>(a, B, ldb, c); break;
    default: break;
  }
}

inline void scalar_cols(const float* A, const float* B, long ldb, float* C, long m0, long m1, long n0, long n1) {
  for (long m = m0; m < m1; ++m)
    for (long n = n0; n < n1; ++n) {
      float s = 0.f;
      for (long k = 0; k < K; ++k) s += A[m * SAM + k * SAK] * B[k * ldb + n];
      C[m * SCM + n] = s;
    }
}
}  // namespace

extern "C" int32_t leka_gemm_57a0a6746a(float* p0, float* p1, float* p2) {
  const float* A0 = p0;
  const float* B0 = p1;
  float* C0 = p2;
  const long sbb = SBB, ldb = SBK;
  const float* Bs = B0;
  constexpr long NBLK = N / NB, MBLK = (M + MR - 1) / MR;
  #pragma omp parallel for collapse(3) schedule(static)
  for (long b = 0; b < BATCH; ++b)
    for (long nb = 0; nb < NBLK; ++nb)
      for (long mb = 0; mb < MBLK; ++mb) {
        const long m0 = mb * MR, mr = (M - m0) < MR ? (M - m0) : MR;
        rows<NV>(A0 + b * SAB, Bs + b * sbb + nb * NB, ldb, C0 + b * SCB + nb * NB, m0, mr);
      }
  // column tail: one vector at a time, then scalars
  constexpr long N1 = NBLK * NB, NVEC = (N - N1) / VL, N2 = N1 + NVEC * VL;
  if (N1 < N) {
    #pragma omp parallel for collapse(2) schedule(static)
    for (long b = 0; b < BATCH; ++b)
      for (long mb = 0; mb < MBLK; ++mb) {
        const long m0 = mb * MR, mr = (M - m0) < MR ? (M - m0) : MR;
        for (long v = 0; v < NVEC; ++v)
          rows<1>(A0 + b * SAB, Bs + b * sbb + N1 + v * VL, ldb, C0 + b * SCB + N1 + v * VL, m0, mr);
        if (N2 < N) scalar_cols(A0 + b * SAB, Bs + b * sbb, ldb, C0 + b * SCB, m0, m0 + mr, N2, N);
      }
  }

  return 0;
}
