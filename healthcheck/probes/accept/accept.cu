// Kernels of `sitscheck accept` for the CUDA driver API (no toolkit, no PyTorch at run time).
//
// accept.ptx beside this file is generated from it and is what sitscheck loads:
//     nvcc -ptx -arch=compute_80 -O3 -o accept.ptx accept.cu
// (tools/build-kernels.sh). compute_80 PTX runs on Ampere, Hopper and later: the driver
// compiles it for the GPU at load time. Every kernel takes only 64-bit parameters.
//
//  fill_bf16    seeded inputs: element i is a function of (seed, i) alone, so every GPU and every
//               run makes the same matrices.
//  gemm_bf16_tn C[M,N] = A[M,K] . B[N,K]^T, bf16 in, fp32 accumulation on the tensor cores
//               (mma.sync m16n8k16), bf16 out. Each output element is one thread's fixed sequence
//               of mma steps over K: no split-K, no atomics, so its bits depend on the inputs alone.
//  gemm_ref_f64 one tile of the same product in fp64 (the reference the tile is compared with).
//  digest_u16   an order-independent digest of a buffer: the wrapping sum of mix64(i, v_i).
//  mt_fill / mt_check  the memory test's patterns over 64-bit words.
#include <cuda_bf16.h>
#include <stdint.h>

#define BM 128
#define BN 128
#define BK 32
#define LDS (BK + 8)  // shared-memory row: 40 elements = 80 bytes, so ldmatrix rows hit distinct banks
#define STAGES 3
#define THREADS 256
#define GROUP_M 8

__device__ __forceinline__ uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ uint64_t grid_start() {
  return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ uint64_t grid_step() { return (uint64_t)gridDim.x * blockDim.x; }

extern "C" __global__ void fill_bf16(uint64_t out, uint64_t n, uint64_t seed) {
  __nv_bfloat16* p = (__nv_bfloat16*)out;
  for (uint64_t i = grid_start(); i < n; i += grid_step()) {
    uint64_t r = mix64(seed ^ mix64(i));
    float f = (float)(r >> 40) * (1.0f / 8388608.0f) - 1.0f;  // 24 bits -> [-1, 1)
    p[i] = __float2bfloat16_rn(f);
  }
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t* r, const void* smem) {
  uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

__device__ __forceinline__ void mma_bf16(float* c, const uint32_t* a, const uint32_t* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// M, N multiples of 128, K a multiple of 32; dynamic shared memory STAGES*(BM+BN)*LDS*2 bytes.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
    gemm_bf16_tn(uint64_t a_, uint64_t b_, uint64_t c_, uint64_t M, uint64_t N, uint64_t K) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __nv_bfloat16* sA = (__nv_bfloat16*)smem_raw;
  __nv_bfloat16* sB = sA + STAGES * BM * LDS;
  const __nv_bfloat16* A = (const __nv_bfloat16*)a_;
  const __nv_bfloat16* B = (const __nv_bfloat16*)b_;
  __nv_bfloat16* C = (__nv_bfloat16*)c_;

  // Tiles in groups of GROUP_M tile rows, so blocks running together share panels in L2.
  const int tiles_m = (int)(M / BM), tiles_n = (int)(N / BN);
  const int per_group = GROUP_M * tiles_n;
  const int group = blockIdx.x / per_group;
  const int first_m = group * GROUP_M;
  const int rows_in_group = min(tiles_m - first_m, GROUP_M);
  const int bm = first_m + (blockIdx.x % per_group) % rows_in_group;
  const int bn = (blockIdx.x % per_group) / rows_in_group;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp >> 2;  // 2 warps down: 64 rows each
  const int wn = warp & 3;   // 4 warps across: 32 columns each
  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int k = 0; k < 4; ++k) acc[i][j][k] = 0.0f;

  const __nv_bfloat16* gA = A + (size_t)bm * BM * K;
  const __nv_bfloat16* gB = B + (size_t)bn * BN * K;
  const int KT = (int)(K / BK);

  auto load_stage = [&](int stage, int kt) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      int chunk = tid + i * THREADS;  // 512 chunks of 16 bytes per operand tile
      int row = chunk >> 2, col = (chunk & 3) * 8;
      cp_async16(sA + stage * BM * LDS + row * LDS + col, gA + (size_t)row * K + kt * BK + col);
      cp_async16(sB + stage * BN * LDS + row * LDS + col, gB + (size_t)row * K + kt * BK + col);
    }
  };

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_stage(s, s);
    asm volatile("cp.async.commit_group;\n" ::);
  }

  for (int kt = 0; kt < KT; ++kt) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
    __syncthreads();
    int next = kt + STAGES - 1;
    if (next < KT) load_stage(next % STAGES, next);
    asm volatile("cp.async.commit_group;\n" ::);
    const __nv_bfloat16* a = sA + (kt % STAGES) * BM * LDS;
    const __nv_bfloat16* b = sB + (kt % STAGES) * BN * LDS;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t af[4][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        int row = wm * 64 + mi * 16 + (lane & 15);
        int col = kk + (lane >> 4) * 8;
        ldmatrix_x4(af[mi], a + row * LDS + col);
      }
#pragma unroll
      for (int ni = 0; ni < 4; ni += 2) {
        int row = wn * 32 + ni * 8 + (lane & 7) + ((lane >> 4) << 3);
        int col = kk + ((lane >> 3) & 1) * 8;
        uint32_t r[4];
        ldmatrix_x4(r, b + row * LDS + col);
        bf[ni][0] = r[0];
        bf[ni][1] = r[1];
        bf[ni + 1][0] = r[2];
        bf[ni + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) mma_bf16(acc[mi][ni], af[mi], bf[ni]);
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::);

#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      size_t row = (size_t)bm * BM + wm * 64 + mi * 16 + (lane >> 2);
      size_t col = (size_t)bn * BN + wn * 32 + ni * 8 + (lane & 3) * 2;
      *(__nv_bfloat162*)(C + row * N + col) = __floats2bfloat162_rn(acc[mi][ni][0], acc[mi][ni][1]);
      *(__nv_bfloat162*)(C + (row + 8) * N + col) =
          __floats2bfloat162_rn(acc[mi][ni][2], acc[mi][ni][3]);
    }
}

// out[t] (fp64, rows x cols tile at (row0, col0)) = sum_k A[row0+i, k] * B[col0+j, k].
extern "C" __global__ void gemm_ref_f64(uint64_t a_, uint64_t b_, uint64_t out_, uint64_t K,
                                        uint64_t row0, uint64_t col0, uint64_t rows,
                                        uint64_t cols) {
  const __nv_bfloat16* A = (const __nv_bfloat16*)a_;
  const __nv_bfloat16* B = (const __nv_bfloat16*)b_;
  double* out = (double*)out_;
  for (uint64_t t = grid_start(); t < rows * cols; t += grid_step()) {
    uint64_t i = t / cols, j = t % cols;
    const __nv_bfloat16* a = A + (row0 + i) * K;
    const __nv_bfloat16* b = B + (col0 + j) * K;
    double sum = 0.0;
    for (uint64_t k = 0; k < K; ++k)
      sum = fma((double)__bfloat162float(a[k]), (double)__bfloat162float(b[k]), sum);
    out[t] = sum;
  }
}

extern "C" __global__ void digest_u16(uint64_t buf, uint64_t n, uint64_t out) {
  const uint16_t* p = (const uint16_t*)buf;
  uint64_t sum = 0;
  for (uint64_t i = grid_start(); i < n; i += grid_step()) sum += mix64((i << 16) | p[i]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if ((threadIdx.x & 31) == 0) atomicAdd((unsigned long long*)out, (unsigned long long)sum);
}

// The memory test. A word's expected value is pattern(mode, i) ^ flip:
//   mode 0: its own address (address in address); mode 1: `param` (a constant: walking ones,
//   moving inversions); mode 2: mix64(param ^ i) (a seeded random pattern).
__device__ __forceinline__ uint64_t pattern(uint64_t base, uint64_t i, uint64_t mode,
                                            uint64_t param) {
  if (mode == 0) return base + i * 8;
  if (mode == 1) return param;
  return mix64(param ^ i);
}

extern "C" __global__ void mt_fill(uint64_t buf, uint64_t nwords, uint64_t mode, uint64_t param,
                                   uint64_t flip) {
  uint64_t* w = (uint64_t*)buf;
  for (uint64_t i = grid_start(); i < nwords; i += grid_step())
    w[i] = pattern(buf, i, mode, param) ^ flip;
}

// errs: [0] bad words, [1] claimed, [2] word index, [3] expected, [4] read. With `invert`, each
// word is written back inverted once read (the moving-inversions step).
extern "C" __global__ void mt_check(uint64_t buf, uint64_t nwords, uint64_t mode, uint64_t param,
                                    uint64_t flip, uint64_t errs_, uint64_t invert) {
  volatile uint64_t* w = (volatile uint64_t*)buf;
  unsigned long long* errs = (unsigned long long*)errs_;
  for (uint64_t i = grid_start(); i < nwords; i += grid_step()) {
    uint64_t expected = pattern(buf, i, mode, param) ^ flip;
    uint64_t got = w[i];
    if (got != expected) {
      atomicAdd(&errs[0], 1ull);
      if (atomicCAS(&errs[1], 0ull, 1ull) == 0ull) {
        errs[2] = i;
        errs[3] = expected;
        errs[4] = got;
      }
    }
    if (invert) w[i] = ~expected;
  }
}
