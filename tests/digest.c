/* digest.c - a hash of every output bit of every public operation, per ISA, on fixed data:
   a refactor that claims "behaviour unchanged" shows the same digests before and after. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layernorm.h"

/* Public API only, so the same source builds against any version from 1.3 on. */

static uint64_t g_rng = 0x9E3779B97F4A7C15u;

static uint64_t next_u64(void) /* splitmix64: fixed sequence on every platform */
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1), sums of four give a bell shape without libm. */
static float unit(void) { return (float)((double)(next_u64() >> 11) * 0x1p-52 - 1.0); }
static float bell(void) { return unit() + unit() + unit() + unit(); }

typedef struct digest {
    uint64_t h;
} digest;

static void feed_bytes(digest *d, const void *p, size_t bytes)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < bytes; i++)
        d->h = (d->h ^ c[i]) * 0x100000001B3u;
}

/* NaNs hash as one value: the contract says "NaN", and which payload or sign survives
   depends on operand order inside an instruction (the emulated AVX-512 build and the
   hardware differ there and nowhere else). */
static void feed(digest *d, const float *p, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        uint32_t u;
        memcpy(&u, &p[i], 4);
        if ((u & 0x7FFFFFFFu) > 0x7F800000u)
            u = 0x7FC00000u;
        feed_bytes(d, &u, 4);
    }
}

static void feed_bf16(digest *d, const uint16_t *p, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const uint16_t h = (p[i] & 0x7FFFu) > 0x7F80u ? 0x7FC0u : p[i];
        feed_bytes(d, &h, 2);
    }
}

/* Row kinds that exercise every path: plain, offset, tiny spread, constant, outliers,
   huge and tiny scale, NaN and Inf rows. */
static void fill_row(float *r, size_t n, int kind)
{
    static const float offsets[] = {0, 1e4f, 1e6f, 1.0f, 0, 0, 0, 0, 0, 0};
    static const float scales[] = {1, 1, 1, 1e-4f, 0, 1, 1e18f, 1e-18f, 1, 1};
    for (size_t i = 0; i < n; i++)
        r[i] = offsets[kind] + scales[kind] * bell();
    if (kind == 4)
        for (size_t i = 0; i < n; i++)
            r[i] = -3.5f;
    if (kind == 5)
        r[n / 2] = (next_u64() & 1) ? 1e3f : -1e3f;
    if (kind == 8)
        r[n - 1] = 0.0f / 0.0f;
    if (kind == 9)
        r[0] = 1.0f / 0.0f;
}
#define KINDS 10

static uint16_t to_bf16_trunc(float f) /* inputs only: any fixed bf16 values will do */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

enum { F_FWD, F_FWD_NOAFF, F_RMS_EX, F_ADD, B_BWD, B_RMS_ACC_EX, BF_FWD, BF_BWD, G_FWD, G_BWD,
       OPS };
static const char *const op_names[OPS] = {"fwd",    "fwd_noaffine", "rms_strided", "add_fwd",
                                          "bwd",    "rms_acc_bwd",  "bf16_fwd",    "bf16_bwd",
                                          "gelu_fwd", "gelu_bwd"};

static void one_shape(digest *d, size_t rows, size_t n)
{
    const size_t ld = n + 3, big = rows * ld;
    float *x = malloc(big * 4), *dy = malloc(big * 4), *res = malloc(big * 4);
    float *y = calloc(big, 4), *dx = calloc(big, 4), *sum = calloc(big, 4);
    float *g = malloc(n * 4), *b = malloc(n * 4), *dg = calloc(n, 4), *db = calloc(n, 4);
    float *mean = calloc(rows, 4), *rstd = calloc(rows, 4);
    uint16_t *hx = malloc(big * 2), *hdy = malloc(big * 2), *hy = calloc(big, 2),
             *hdx = calloc(big, 2);
    for (size_t r = 0; r < rows; r++)
        fill_row(x + r * ld, ld, (int)(r % KINDS));
    for (size_t i = 0; i < big; i++) {
        dy[i] = bell();
        res[i] = bell();
        hx[i] = to_bf16_trunc(x[i]);
        hdy[i] = to_bf16_trunc(dy[i]);
    }
    for (size_t j = 0; j < n; j++) {
        g[j] = 1.0f + 0.25f * bell();
        b[j] = 0.5f * bell();
    }
    int st[OPS];
    /* Contiguous operations read x as rows*n floats (the first rows*n of the strided x). */
    st[F_FWD] = ln_forward_f32(x, g, b, y, mean, rstd, rows, n, 1e-5f);
    feed(&d[F_FWD], y, rows * n), feed(&d[F_FWD], mean, rows),
        feed(&d[F_FWD], rstd, rows);
    st[B_BWD] = ln_backward_f32(dy, x, g, mean, rstd, dx, dg, db, rows, n);
    feed(&d[B_BWD], dx, rows * n), feed(&d[B_BWD], dg, n), feed(&d[B_BWD], db, n);
    st[F_FWD_NOAFF] = ln_forward_f32(x, NULL, NULL, y, NULL, rstd, rows, n, 1e-6f);
    feed(&d[F_FWD_NOAFF], y, rows * n), feed(&d[F_FWD_NOAFF], rstd, rows);
    st[F_RMS_EX] = ln_forward_ex_f32(x, ld, g, NULL, y, ld, mean, rstd, rows, n, 1e-5f,
                                     LN_FLAG_RMS_NORM);
    feed(&d[F_RMS_EX], y, big), feed(&d[F_RMS_EX], rstd, rows);
    st[B_RMS_ACC_EX] = ln_backward_ex_f32(dy, ld, x, ld, g, NULL, rstd, dx, ld, dg, db, rows, n,
                                          LN_FLAG_RMS_NORM | LN_FLAG_ACCUMULATE);
    feed(&d[B_RMS_ACC_EX], dx, big), feed(&d[B_RMS_ACC_EX], dg, n),
        feed(&d[B_RMS_ACC_EX], db, n);
    st[F_ADD] = ln_add_forward_f32(x, res, g, b, sum, y, mean, rstd, rows, n, 1e-5f, 0);
    feed(&d[F_ADD], sum, rows * n), feed(&d[F_ADD], y, rows * n),
        feed(&d[F_ADD], mean, rows), feed(&d[F_ADD], rstd, rows);
    st[BF_FWD] = ln_forward_bf16(hx, g, b, hy, mean, rstd, rows, n, 1e-5f);
    feed_bf16(&d[BF_FWD], hy, rows * n), feed(&d[BF_FWD], mean, rows),
        feed(&d[BF_FWD], rstd, rows);
    st[BF_BWD] = ln_backward_bf16(hdy, hx, g, mean, rstd, hdx, dg, db, rows, n);
    feed_bf16(&d[BF_BWD], hdx, rows * n), feed(&d[BF_BWD], dg, n), feed(&d[BF_BWD], db, n);
    /* GELU over every value above: the row kinds cover the float range. */
    st[G_FWD] = ln_gelu_forward_f32(x, y, big, LN_GELU_TANH) |
                ln_gelu_forward_f32(x, sum, big, LN_GELU_ERF);
    feed(&d[G_FWD], y, big), feed(&d[G_FWD], sum, big);
    st[G_BWD] = ln_gelu_backward_f32(dy, x, dx, big, LN_GELU_TANH) |
                ln_gelu_backward_f32(dy, x, sum, big, LN_GELU_ERF);
    feed(&d[G_BWD], dx, big), feed(&d[G_BWD], sum, big);
    for (int o = 0; o < OPS; o++)
        feed_bytes(&d[o], &st[o], sizeof st[o]);
    free(x), free(dy), free(res), free(y), free(dx), free(sum), free(g), free(b), free(dg);
    free(db), free(mean), free(rstd), free(hx), free(hdy), free(hy), free(hdx);
}

int main(int argc, char **argv)
{
    /* argv: ISA name (capped with ln_set_max_isa), thread count. */
    const char *want = argc > 1 ? argv[1] : "scalar";
    int isa = -1;
    for (int i = 0; i <= LN_ISA_SVE; i++)
        if (strcmp(ln_isa_name(i), want) == 0)
            isa = i;
    if (isa < 0 || !ln_isa_available(isa) || ln_set_max_isa(isa) != LN_OK) {
        printf("%s unavailable\n", want);
        return 77;
    }
    ln_set_num_threads(argc > 2 ? atoi(argv[2]) : 1);
    digest d[OPS];
    for (int o = 0; o < OPS; o++)
        d[o].h = 0xCBF29CE484222325u;
    static const size_t big_cols[] = {127, 128, 129, 255, 256, 511, 768, 1000, 1024, 1600, 1601,
                                      4096, 4099, 12288};
    for (size_t n = 1; n <= 80; n++)
        one_shape(d, KINDS + 3, n);
    for (size_t i = 0; i < sizeof big_cols / sizeof *big_cols; i++)
        one_shape(d, KINDS + 3, big_cols[i]);
    one_shape(d, 150, 33); /* more than two 64-row blocks: the fold */
    one_shape(d, 150, 768);
    for (int o = 0; o < OPS; o++)
        printf("%-7s %-13s %016llx\n", ln_isa_name(ln_get_isa()), op_names[o],
               (unsigned long long)d[o].h);
    return 0;
}
