/* Stand-ins for cuBLAS (libcublas.so.12) and cuBLASLt (libcublasLt.so.12)
   for the stand-in driver, whose device pointers are host addresses: each
   GEMM is computed on the host, so a record's own check against the host
   catches a wrong layout. Built twice from this file (-DLT for cuBLASLt).
   Only the 8-bit GEMMs are emulated, and only in the layout their tensor
   paths need, like the constraint a real GPU puts on speed:
     - cublasGemmEx: int8 A/B (CUDA_R_8I), int32 C, CUBLAS_COMPUTE_32I,
       transa = T, transb = N; anything else is CUBLAS_STATUS_NOT_SUPPORTED.
     - cublasLtMatmul: e4m3 A/B (CUDA_R_8F_E4M3), bf16 C/D, transa = T,
       transb = N (otherwise the heuristic finds no algorithm). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OK 0
#define INVALID 7
#define NOT_SUPPORTED 15

#ifndef LT
int cublasCreate_v2(void **h) { *h = malloc(1); return OK; }
int cublasDestroy_v2(void *h) { free(h); return OK; }
int cublasSetStream_v2(void *h, void *s) { (void)h; (void)s; return OK; }
int cublasSetWorkspace_v2(void *h, void *w, size_t n) { (void)h; (void)w; (void)n; return OK; }
int cublasDgemm_v2(void) { return NOT_SUPPORTED; }

int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                 const void *A, int at, int lda, const void *B, int bt, int ldb,
                 const void *beta, void *C, int ct, int ldc, int compute, int algo) {
    (void)h; (void)algo;
    if (at != 3 || bt != 3 || ct != 10 || compute != 72) return NOT_SUPPORTED;
    if (ta != 1 || tb != 0) return NOT_SUPPORTED; /* IMMA: TN only */
    if (*(const int32_t *)alpha != 1 || *(const int32_t *)beta != 0) return INVALID;
    const int8_t *a = A, *b = B;
    int32_t *c = C;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            int32_t s = 0;
            for (int p = 0; p < k; p++) s += (int32_t)a[p + (size_t)i * lda] * b[p + (size_t)j * ldb];
            c[i + (size_t)j * ldc] = s;
        }
    return OK;
}
#else
struct desc { int compute, scale, ta, tb; };
struct layout { int type; uint64_t rows, cols; int64_t ld; };

int cublasLtCreate(void **h) { *h = malloc(1); return OK; }
int cublasLtDestroy(void *h) { free(h); return OK; }
int cublasLtMatmulDescCreate(struct desc **d, int compute, int scale) {
    *d = calloc(1, sizeof **d);
    (*d)->compute = compute;
    (*d)->scale = scale;
    return OK;
}
int cublasLtMatmulDescDestroy(struct desc *d) { free(d); return OK; }
int cublasLtMatmulDescSetAttribute(struct desc *d, int attr, const void *buf, size_t n) {
    if (attr == 3 && n == 4) d->ta = *(const int *)buf;
    else if (attr == 4 && n == 4) d->tb = *(const int *)buf;
    else if (attr == 25 && n == 1) {}
    else return INVALID;
    return OK;
}
int cublasLtMatrixLayoutCreate(struct layout **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
    *l = malloc(sizeof **l);
    **l = (struct layout){type, rows, cols, ld};
    return OK;
}
int cublasLtMatrixLayoutDestroy(struct layout *l) { free(l); return OK; }
int cublasLtMatmulPreferenceCreate(void **p) { *p = malloc(1); return OK; }
int cublasLtMatmulPreferenceDestroy(void *p) { free(p); return OK; }
int cublasLtMatmulPreferenceSetAttribute(void *p, int attr, const void *buf, size_t n) {
    (void)p; (void)buf;
    return attr == 1 && n == 8 ? OK : INVALID;
}

static int fp8_tn(const struct desc *d, const struct layout *a, const struct layout *b,
                  const struct layout *c, const struct layout *dd) {
    return d->compute == 68 && d->scale == 0 && d->ta == 1 && d->tb == 0 && a->type == 28 &&
           b->type == 28 && c->type == 14 && dd->type == 14;
}

int cublasLtMatmulAlgoGetHeuristic(void *h, struct desc *d, struct layout *a, struct layout *b,
                                   struct layout *c, struct layout *dd, void *pref, int want,
                                   unsigned char *results, int *found) {
    (void)h; (void)pref;
    memset(results, 0, 96 * (size_t)want);
    *found = fp8_tn(d, a, b, c, dd) ? 1 : 0;
    return OK;
}

static float e4m3(uint8_t v) {
    int e = (v >> 3) & 15, m = v & 7;
    float x = e ? ldexpf(1.0f + m / 8.0f, e - 7) : ldexpf((float)m, -9);
    return v & 0x80 ? -x : x;
}

static uint16_t bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

int cublasLtMatmul(void *h, struct desc *d, const float *alpha, const uint8_t *A, struct layout *a,
                   const uint8_t *B, struct layout *b, const float *beta, const void *C,
                   struct layout *c, uint16_t *D, struct layout *dd, const void *algo, void *ws,
                   size_t wss, void *stream) {
    (void)h; (void)C; (void)algo; (void)ws; (void)wss; (void)stream;
    if (!fp8_tn(d, a, b, c, dd) || *alpha != 1.0f || *beta != 0.0f) return NOT_SUPPORTED;
    /* D (m×n) = Aᵀ (A stored k×m) · B (k×n). */
    uint64_t m = a->cols, k = a->rows, n = b->cols;
    for (uint64_t j = 0; j < n; j++)
        for (uint64_t i = 0; i < m; i++) {
            float s = 0;
            for (uint64_t p = 0; p < k; p++) s += e4m3(A[p + i * a->ld]) * e4m3(B[p + j * b->ld]);
            D[i + j * dd->ld] = bf16(s);
        }
    return OK;
}
#endif
