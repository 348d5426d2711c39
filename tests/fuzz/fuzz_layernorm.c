/* fuzz_layernorm.c - libFuzzer differential target: every kernel against the scalar oracle, rows against guard pages. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ln_internal.h"
#include "fuzz_check.h"
#include "testutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- input decoding: a short header, then per-row recipes; missing bytes read as 0 --- */

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static unsigned u8(rd *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}
static unsigned u16(rd *r) { return u8(r) | u8(r) << 8; }
static uint32_t u32(rd *r) { return u16(r) | (uint32_t)u16(r) << 16; }
static float raw_f32(rd *r)
{
    const uint32_t b = u32(r);
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

#define MAX_ELEMS 16384 /* rows * cols: keeps an execution around a millisecond */

static const float k_eps[] = {1e-5f, 0.0f, 1e-6f, 1e-12f, 1e-45f, 1.0f, 1e10f, 3e38f};

static shape read_shape(rd *r)
{
    shape s;
    const unsigned rb = u8(r), cb = u16(r);
    /* Mostly a few rows; the high bit crosses backward's 64-row block boundary. */
    s.rows = rb & 0x80 ? 60 + (rb & 15) : 1 + (rb & 7);
    s.cols = 1 + (cb & 0x8000 ? (cb & 0x3FFF) : cb % (s.rows > 8 ? 24 : 80));
    if (s.rows * s.cols > MAX_ELEMS)
        s.rows = MAX_ELEMS / s.cols;
    s.ld = s.cols + (u8(r) & 7);
    const unsigned eb = u8(r);
    s.eps = k_eps[eb & 7];
    if (eb & 8) { /* any eps the API accepts */
        const float e = fabsf(raw_f32(r));
        s.eps = isfinite(e) ? e : s.eps;
    }
    s.flags = u8(r);
    s.cap = u8(r) % (LN_ISA_SVE + 1);
    s.split = u8(r);
    return s;
}

/* Row recipes: the values where kernels go wrong (offsets, constants, specials, extremes). */
enum { R_NORMAL, R_OFFSET, R_CONST, R_RAW, R_SPECIAL, R_TINY, R_HUGE, R_BURN, R_ALT, R_KINDS };

static const double k_mu_sigma[] = {0, 1e2, 1e3, 1e4, -1e4, 1e6};
static const double k_sigma[] = {1, 1e-3, 1e3, 1e-20, 1e20, 1e-30};
static const float k_const[] = {0.0f, -0.0f, 1.0f, -3.5f, 1e-45f, -1e-40f, FLT_MIN, 40000.0f,
                                1e20f, -1e30f, FLT_MAX, -FLT_MAX, 123456.789f, 1e-20f, 7.0f, 2e19f};
static const float k_special[] = {NAN, INFINITY, -INFINITY, -NAN};

static void fill_row(rd *r, tu_rng *g, float *x, size_t n)
{
    const unsigned kind = u8(r) % R_KINDS, p = u8(r);
    const double sigma = k_sigma[p % 6];
    switch (kind) {
    case R_NORMAL: tu_fill_normal(g, x, n, 0.0, sigma); break;
    case R_OFFSET: tu_fill_normal(g, x, n, k_mu_sigma[p % 6] * sigma, sigma); break;
    case R_CONST:
        for (size_t i = 0; i < n; i++)
            x[i] = k_const[p & 15];
        break;
    case R_RAW: /* the input's own bits, repeated: every float the fuzzer can think of */
        for (size_t i = 0; i < n; i++)
            x[i] = i < 16 ? raw_f32(r) : x[i % 16];
        break;
    case R_SPECIAL:
        tu_fill_normal(g, x, n, 0.0, 1.0);
        x[(p * 7u) % n] = k_special[p & 3];
        break;
    case R_TINY: tu_fill_normal(g, x, n, 0.0, (p & 1 ? 1e-42 : 1e-38)); break;
    case R_HUGE: tu_fill_normal(g, x, n, (p & 1 ? 3e38 : 0.0), 1e37); break;
    case R_BURN: /* burn #5607: mean 100, step 1e-3 */
        for (size_t i = 0; i < n; i++)
            x[i] = (float)(100.0 + 1e-3 * ((double)i - (double)(n - 1) / 2));
        break;
    default:
        for (size_t i = 0; i < n; i++)
            x[i] = (float)((i & 1 ? -1.0 : 1.0) * pow(10.0, (double)(p % 40)));
        break;
    }
    for (size_t i = 0; i < n; i++) /* clamp what pow/normal pushed past float */
        if (isinf(x[i]) && kind != R_SPECIAL && kind != R_RAW)
            x[i] = copysignf(FLT_MAX, x[i]);
}

/* gamma, beta: bounded (|.| ~ 1e4 at most) so y stays finite, plus an occasional NaN. */
static void fill_param(rd *r, tu_rng *g, float *v, size_t n, double mu)
{
    const unsigned p = u8(r);
    tu_fill_normal(g, v, n, p & 1 ? 0.0 : mu, (p & 2) ? 1e4 : 0.5);
    if (p & 4)
        v[(p >> 3) % n] = NAN;
}

/* ---- buffers: each one flush against a guard page ---- */

typedef struct bufs {
    tu_guard g[24];
    int n;
} bufs;

static float *buf(bufs *b, size_t n, int before)
{
    float *p = tu_guard_alloc(&b->g[b->n++], n, !before);
    if (!p)
        abort();
    tu_sentinel_fill(p, n);
    return p;
}

static void free_bufs(bufs *b)
{
    for (int i = 0; i < b->n; i++)
        tu_guard_free(&b->g[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rd r = {data, size};
    const shape s = read_shape(&r);
    const size_t n = s.cols, rows = s.rows, span = (rows - 1) * s.ld + n;
    const int before = (s.flags & GUARD_BEFORE) != 0;
    tu_rng g = {u32(&r)};
    bufs b = {.n = 0};
    float *x = buf(&b, span, before), *dy = buf(&b, span, before);
    float *gamma = buf(&b, n, before), *beta = buf(&b, n, before);
    for (size_t i = 0; i < rows; i++) {
        fill_row(&r, &g, x + i * s.ld, n);
        tu_fill_normal(&g, dy + i * s.ld, n, 0.0, 1.0);
    }
    if (u8(&r) & 1)
        dy[(rows * 31u) % span / s.ld * s.ld] = NAN;
    fill_param(&r, &g, gamma, n, 1.0);
    fill_param(&r, &g, beta, n, 0.0);
    fc_case c = {.s = s, .x = x, .dy = dy,
                 .gamma = s.flags & NO_GAMMA ? NULL : gamma,
                 .beta = s.flags & NO_BETA ? NULL : beta};
    c.y_ref = buf(&b, span, before);
    c.mean_ref = buf(&b, rows, before);
    c.rstd_ref = buf(&b, rows, before);
    c.dx_ref = buf(&b, span, before);
    c.dg_ref = buf(&b, n, before);
    c.db_ref = buf(&b, n, before);
    c.y = buf(&b, span, before);
    c.mean = buf(&b, rows, before);
    c.rstd = buf(&b, rows, before);
    c.dx = buf(&b, span, before);
    c.dg = buf(&b, n, before);
    c.db = buf(&b, n, before);
    c.y2 = buf(&b, span, before);
    c.dx2 = buf(&b, span, before);
    c.dg2 = buf(&b, n, before);
    c.db2 = buf(&b, n, before);
    fc_run(&c);
    free_bufs(&b);
    return 0;
}
