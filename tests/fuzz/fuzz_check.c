/* fuzz_check.c - the differential check: each kernel within the NUMERICS.md contract of the oracle. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "ln_internal.h"
#include "testutil.h"

#define U TU_EPS32

/* NUMERICS.md: tau = 4e-6 for n <= 16384, 1e-5 beyond (forward); backward 1e-5. */
static double tau(size_t n) { return n <= 16384 ? 4e-6 : 1e-5; }
#define TAU_BWD 1e-5
/* The relative bounds have no meaning where results underflow: a float in the subnormal
   range is resolved only to 2^-149 absolute, and each operation there may lose half of
   that, times the factors that follow (|dy| up to ~8 for N(0,1) draws, two or three
   operations). 64 spacings cover that; the fuzzer met 10 in a dgamma of 4e-41. */
#define SUBNORMAL_FLOOR (64 * 0x1p-149)

/*
 * How the contract applies to a row, judged on the input floats themselves:
 *   SPEC    finite, every |x_i - mean| < 1e19/sqrt(n) (include/layernorm.h's range), and
 *           var + eps >= 2^-100 or the row constant: values are held to the tolerances.
 *           The floor is ours (the header names only the upper limit): below it a float
 *           kernel's squared deviations underflow. Above it a term below FLT_MIN costs at
 *           most 2^-149 absolute against n var >= n 2^-100, i.e. 2^-49 relative.
 *   NONFIN  a NaN or Inf in the row: the contract says the row's y is NaN.
 *   UNSPEC  finite but outside the range: any values; only containment is checked.
 */
enum { SPEC, NONFIN, UNSPEC };

typedef struct rowinfo {
    int cls, constant;
    double maxabs; /* max |x_i|: scales the float mean's rounding (the offset-row floor) */
} rowinfo;

static rowinfo classify(const float *x, size_t n, float eps)
{
    rowinfo ri = {SPEC, 1, 0.0};
    long double m = 0, v = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            return (rowinfo){NONFIN, 0, 0.0};
        m += x[i];
        ri.constant &= x[i] == x[0];
        ri.maxabs = fmax(ri.maxabs, fabs((double)x[i]));
    }
    m /= (long double)n;
    for (size_t i = 0; i < n; i++) {
        v += ((long double)x[i] - m) * ((long double)x[i] - m);
        d = fmaxl(d, fabsl((long double)x[i] - m));
    }
    if (d >= 1e19L / sqrtl((long double)n) || (!ri.constant && v / n + eps < 0x1p-100L))
        ri.cls = UNSPEC;
    return ri;
}

static void die(const fc_case *c, const char *what, int isa, size_t r, size_t i, double got,
                double want, double tol)
{
    fprintf(stderr, "fuzz: %s mismatch, isa %s, rows %zu cols %zu ld %zu eps %g flags 0x%x, "
            "row %zu col %zu: got %.9g want %.9g tol %.3g\n", what, ln_isa_name(isa),
            c->s.rows, c->s.cols, c->s.ld, (double)c->s.eps, c->s.flags, r, i, got, want, tol);
    abort();
}

/* NaN-ness must agree; an infinite reference must be matched exactly; a finite one
   within tol. */
static void near(const fc_case *c, const char *what, int isa, size_t r, size_t i, float got,
                 float want, double tol)
{
    if (isnan(got) != isnan(want) || (isinf(want) && got != want) ||
        (isfinite(want) && !(fabs((double)got - want) <= tol)))
        die(c, what, isa, r, i, got, want, tol);
}

static void untouched(const fc_case *c, const char *what, int isa, const float *p, size_t n)
{
    if (!tu_sentinel_intact(p, n))
        die(c, what, isa, 0, 0, 0, 0, 0);
}

/* Padding between rows (ld > cols) is not the kernel's to write. */
static void padding_untouched(const fc_case *c, const char *what, int isa, const float *m)
{
    for (size_t r = 0; r + 1 < c->s.rows; r++)
        untouched(c, what, isa, m + r * c->s.ld + c->s.cols, c->s.ld - c->s.cols);
}

static void check_forward(const fc_case *c, int isa, const rowinfo *ri, const float *y,
                          const float *mean, const float *rstd)
{
    const size_t n = c->s.cols, ld = c->s.ld;
    for (size_t r = 0; r < c->s.rows; r++) {
        if (ri[r].cls == UNSPEC)
            continue;
        const double m = c->mean_ref[r], rs = c->rstd_ref[r], M = ri[r].maxabs;
        if (ri[r].cls == NONFIN) {
            /* NUMERICS.md pins only y (NaN). The statistics of a row holding an Inf are
               not finite either, but whether they are NaN or Inf depends on where the Inf
               sits in the kernel's summation order (scalar: x = [1, Inf] gives mean Inf;
               lanes merged by Chan's formula give NaN), so only non-finiteness is held. */
            if (mean && isfinite(mean[r]))
                die(c, "mean of a NaN/Inf row", isa, r, 0, mean[r], c->mean_ref[r], 0);
            if (rstd && isfinite(rstd[r]))
                die(c, "rstd of a NaN/Inf row", isa, r, 0, rstd[r], c->rstd_ref[r], 0);
        } else if (mean) /* the offset-row floor 16u(1 + M rstd), in units of x: 16u(1/rstd + M) */
            near(c, "mean", isa, r, 0, mean[r], c->mean_ref[r], 16 * U * (1 / rs + M));
        /* rstd's relative error reaches y as that fraction of gamma xhat: the y bound's
           two terms, per unit of |xhat| (tau, and the offset floor 16u(1 + M rstd)). */
        if (rstd && ri[r].cls == SPEC)
            near(c, "rstd", isa, r, 0, rstd[r], c->rstd_ref[r], (tau(n) + 16 * U * (1 + M * rs)) * rs);
        const float *xr = c->x + r * ld;
        for (size_t i = 0; i < n; i++) {
            const float want = c->y_ref[r * ld + i], got = y[r * ld + i];
            if (ri[r].cls == NONFIN) {
                if (!isnan(got))
                    die(c, "y of a NaN/Inf row", isa, r, i, got, want, 0);
                continue;
            }
            const double gm = c->gamma ? c->gamma[i] : 1.0, bt = c->beta ? c->beta[i] : 0.0;
            const double xhat = ((double)xr[i] - m) * rs;
            /* The contract's two bounds added, since a fuzzed row can be both a generic
               row (tau at the size of the terms) and an offset one (the mean's rounding
               through gamma). A constant row with eps > 0 gives y == beta exactly. */
            double tol = tau(n) * (1 + fabs(gm * xhat) + fabs(bt)) + 16 * U * fabs(gm) * (1 + M * rs);
            if (ri[r].constant && c->s.eps > 0)
                tol = 0;
            near(c, "y", isa, r, i, got, want, tol);
        }
    }
}

/* Backward uses the same saved float mean/rstd in every kernel, so there is no input
   rounding floor: x - mean is exact or rounds once. dx = rstd (g - mean g - xhat mean(g
   xhat)) is held to 1e-5 of its terms' size (as forward's tau is) or of the row's
   largest dx, whichever is larger; dgamma/dbeta to 1e-5 of sum |dy xhat|, sum |dy|
   (64-row float blocks err by <= 64u = 3.8e-6 of that, folded in double). */
static void check_backward(const fc_case *c, int isa, const rowinfo *ri, const float *dx,
                           const float *dg, const float *db)
{
    const size_t n = c->s.cols, ld = c->s.ld;
    int all_spec = 1;
    for (size_t r = 0; r < c->s.rows; r++) {
        all_spec &= ri[r].cls != UNSPEC;
        if (ri[r].cls == UNSPEC || !dx)
            continue;
        const double m = c->mean_ref[r], rs = c->rstd_ref[r];
        double ag = 0, agx = 0, top = 0;
        for (size_t i = 0; i < n; i++) {
            const double gi = (double)c->dy[r * ld + i] * (c->gamma ? c->gamma[i] : 1.0);
            ag += fabs(gi);
            agx += fabs(gi * ((double)c->x[r * ld + i] - m) * rs);
            top = fmax(top, fabs((double)c->dx_ref[r * ld + i]));
        }
        ag /= (double)n, agx /= (double)n;
        for (size_t i = 0; i < n; i++) {
            const double gi = (double)c->dy[r * ld + i] * (c->gamma ? c->gamma[i] : 1.0);
            const double xhat = ((double)c->x[r * ld + i] - m) * rs;
            const double tol =
                TAU_BWD * (rs * (fabs(gi) + ag + fabs(xhat) * agx) + top) + SUBNORMAL_FLOOR;
            near(c, "dx", isa, r, i, dx[r * ld + i], c->dx_ref[r * ld + i], tol);
        }
    }
    if (!all_spec)
        return;
    /* The kernels center on the saved float mean corrected by delta = sum(x - m)/n (the
       row's own rounding of the mean), summed in float: each of the >= 8 lane sums (K
       accumulators x W lanes, K*W >= 8 on every ISA) adds n/8 terms, then a tree of <= 8
       levels, so delta errs by <= (n/8 + 8) u mean|x - m| and every xhat of the row by that
       times rstd, absolutely, even where xhat itself is tiny. */
    double *dxh = calloc(c->s.rows, sizeof *dxh);
    for (size_t r = 0; dxh && r < c->s.rows; r++) {
        double a = 0;
        for (size_t i = 0; i < n; i++)
            a += fabs((double)c->x[r * ld + i] - c->mean_ref[r]);
        dxh[r] = ((double)n / 8 + 8) * U * a / (double)n * c->rstd_ref[r];
    }
    for (size_t i = 0; i < n; i++) {
        double sgx = 0, sg = 0;
        for (size_t r = 0; r < c->s.rows; r++) {
            const double d = c->dy[r * ld + i];
            sgx += fabs(d * ((double)c->x[r * ld + i] - c->mean_ref[r]) * c->rstd_ref[r]);
            sgx += dxh ? fabs(d) * dxh[r] / TAU_BWD : 0;
            sg += fabs(d);
        }
        if (dg)
            near(c, "dgamma", isa, 0, i, dg[i], c->dg_ref[i], TAU_BWD * sgx + SUBNORMAL_FLOOR);
        if (db)
            near(c, "dbeta", isa, 0, i, db[i], c->db_ref[i], TAU_BWD * sg + SUBNORMAL_FLOOR);
    }
    free(dxh);
}

static ln_fwd_args fwd_args(const fc_case *c, const float *x, float *y, float *mean, float *rstd)
{
    const ln_fwd_args a = {.x = x, .ldx = c->s.ld, .gamma = c->gamma, .beta = c->beta, .y = y,
                           .ldy = c->s.ld, .mean = mean, .rstd = rstd, .cols = c->s.cols,
                           .eps = c->s.eps};
    return a;
}

static ln_bwd_args bwd_args(const fc_case *c, const float *dy, float *dx)
{
    const ln_bwd_args a = {.dy = dy, .lddy = c->s.ld, .x = c->x, .ldx = c->s.ld,
                           .gamma = c->gamma, .mean = c->mean_ref, .rstd = c->rstd_ref,
                           .dx = dx, .lddx = c->s.ld, .cols = c->s.cols};
    return a;
}

static size_t span(const fc_case *c) { return (c->s.rows - 1) * c->s.ld + c->s.cols; }

/* One kernel, forward (split in two calls, optionally in place) and backward. */
static void run_kernel(fc_case *c, const ln_kernels *k, const rowinfo *ri)
{
    const size_t sp = span(c), rows = c->s.rows, split = c->s.split % (rows + 1);
    const int in_place = (c->s.flags & IN_PLACE) != 0, stats = !(c->s.flags & NO_STATS);
    tu_sentinel_fill(c->y, sp);
    tu_sentinel_fill(c->mean, rows);
    tu_sentinel_fill(c->rstd, rows);
    if (in_place)
        memcpy(c->y, c->x, sp * sizeof *c->y); /* padding too: x's is sentinel as well */
    ln_fwd_args a = fwd_args(c, in_place ? c->y : c->x, c->y, stats ? c->mean : NULL,
                             stats ? c->rstd : NULL);
    k->forward(&a, 0, split);
    k->forward(&a, split, rows);
    padding_untouched(c, "y padding", k->isa, c->y);
    if (!stats) {
        untouched(c, "mean (NULL)", k->isa, c->mean, rows);
        untouched(c, "rstd (NULL)", k->isa, c->rstd, rows);
    }
    check_forward(c, k->isa, ri, c->y, stats ? c->mean : NULL, stats ? c->rstd : NULL);

    float *dx = c->s.flags & NO_DX ? NULL : c->dx;
    float *dg = c->s.flags & NO_DGAMMA ? NULL : c->dg, *db = c->s.flags & NO_DBETA ? NULL : c->db;
    tu_sentinel_fill(c->dx, sp);
    tu_sentinel_fill(c->dg, c->s.cols);
    tu_sentinel_fill(c->db, c->s.cols);
    const int bwd_in_place = in_place && dx;
    if (bwd_in_place)
        memcpy(dx, c->dy, sp * sizeof *dx);
    const ln_bwd_args b = bwd_args(c, bwd_in_place ? dx : c->dy, dx);
    if (ln_backward_run(k, &b, rows, dg, db) != LN_OK)
        die(c, "backward status", k->isa, 0, 0, 0, 0, 0);
    if (dx)
        padding_untouched(c, "dx padding", k->isa, dx);
    else
        untouched(c, "dx (NULL)", k->isa, c->dx, sp);
    if (!dg)
        untouched(c, "dgamma (NULL)", k->isa, c->dg, c->s.cols);
    if (!db)
        untouched(c, "dbeta (NULL)", k->isa, c->db, c->s.cols);
    check_backward(c, k->isa, ri, dx, dg, db);
}

/* The public API under the input's cap gives the dispatched kernel's bits exactly (it
   has no stride: only when ld == cols). Runs right after that kernel, whose outputs
   are still in c->y, c->dx, ... */
static void run_public(fc_case *c)
{
    const size_t sp = span(c), n = c->s.cols, rows = c->s.rows;
    if (ln_forward_f32(c->x, c->gamma, c->beta, c->y2, NULL, NULL, rows, n, c->s.eps) != LN_OK)
        die(c, "public forward status", ln_get_isa(), 0, 0, 0, 0, 0);
    float *dx = c->s.flags & NO_DX ? NULL : c->dx2;
    float *dg = c->s.flags & NO_DGAMMA ? NULL : c->dg2, *db = c->s.flags & NO_DBETA ? NULL : c->db2;
    if (ln_backward_f32(c->dy, c->x, c->gamma, c->mean_ref, c->rstd_ref, dx, dg, db, rows, n) != LN_OK)
        die(c, "public backward status", ln_get_isa(), 0, 0, 0, 0, 0);
    /* The kernel's run may have been in place and split: neither may change a bit. */
    if (memcmp(c->y2, c->y, sp * sizeof *c->y))
        die(c, "public forward bits", ln_get_isa(), 0, 0, 0, 0, 0);
    if ((dx && memcmp(dx, c->dx, sp * sizeof *dx)) || (dg && memcmp(dg, c->dg, n * sizeof *dg)) ||
        (db && memcmp(db, c->db, n * sizeof *db)))
        die(c, "public backward bits", ln_get_isa(), 0, 0, 0, 0, 0);
}

void fc_run(fc_case *c)
{
    const size_t rows = c->s.rows, n = c->s.cols;
    rowinfo ri[128];
    for (size_t r = 0; r < rows; r++)
        ri[r] = classify(c->x + r * c->s.ld, n, c->s.eps);
    const ln_kernels *oracle = ln_kernels_get(LN_ISA_SCALAR);
    ln_fwd_args a = fwd_args(c, c->x, c->y_ref, c->mean_ref, c->rstd_ref);
    oracle->forward(&a, 0, rows);
    const ln_bwd_args b = bwd_args(c, c->dy, c->dx_ref);
    if (ln_backward_run(oracle, &b, rows, c->dg_ref, c->db_ref) != LN_OK)
        abort();
    const int public = c->s.ld == n && ln_set_max_isa((int)c->s.cap) == LN_OK;
    for (int isa = 0; isa <= LN_ISA_SVE; isa++) {
        const ln_kernels *k = ln_kernels_get(isa);
        if (!k)
            continue;
        run_kernel(c, k, ri);
        if (public && isa == ln_get_isa())
            run_public(c);
    }
}
