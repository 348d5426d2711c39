/* test_hostile.c - every hostile argument combination returns its documented status and writes nothing. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "layernorm.h"
#include "testutil.h"

/*
 * One arena holds every operand; a layout places each operand at a float offset in it.
 * Operands are SLOT floats apart unless the layout makes them overlap on purpose. The
 * valid shapes need at most 70 * 5 = 350 floats per matrix (70 rows: backward's blocked
 * path with its scratch); the overflowing shapes must be refused before any access.
 */
#define SLOT 512
#define NSLOT 10
#define ARENA (SLOT * NSLOT)

enum { F_X, F_GAMMA, F_BETA, F_Y, F_MEAN, F_RSTD, F_N };                 /* forward */
enum { B_DY, B_X, B_GAMMA, B_MEAN, B_RSTD, B_DX, B_DGAMMA, B_DBETA, B_N }; /* backward */

typedef struct layout {
    const char *name;
    int off[8]; /* float offset of each operand; -1: its own slot */
} layout;

#define OWN {-1, -1, -1, -1, -1, -1, -1, -1}
static const layout k_fwd_layouts[] = {
    {"disjoint", OWN},
    {"y == x (in place)", {0, -1, -1, 0, -1, -1}},
    {"y = x + 1", {0, -1, -1, 1, -1, -1}},
    {"y right after x (adjacent)", {0, -1, -1, -2, -1, -1}}, /* -2: see place() */
    {"mean inside x", {0, -1, -1, -1, 2, -1}},
    {"rstd == mean", {-1, -1, -1, -1, 6 * SLOT, 6 * SLOT}},
    {"mean inside y", {-1, -1, -1, 3 * SLOT, 3 * SLOT + 1, -1}},
    {"gamma inside y", {-1, 3 * SLOT + 2, -1, 3 * SLOT, -1, -1}},
    {"beta == gamma (inputs may overlap)", {-1, SLOT, SLOT, -1, -1, -1}},
    {"rstd inside beta", {-1, -1, 2 * SLOT, -1, -1, 2 * SLOT + 1}},
    {"y == x with mean inside both", {0, -1, -1, 0, 1, -1}},
};
static const layout k_bwd_layouts[] = {
    {"disjoint", OWN},
    {"dx == dy (in place)", {0, -1, -1, -1, -1, 0, -1, -1}},
    {"dx == x", {-1, SLOT, -1, -1, -1, SLOT, -1, -1}},
    {"dx = dy + 1", {0, -1, -1, -1, -1, 1, -1, -1}},
    {"dgamma == dbeta", {-1, -1, -1, -1, -1, -1, 6 * SLOT, 6 * SLOT}},
    {"dgamma inside gamma", {-1, -1, 2 * SLOT, -1, -1, -1, 2 * SLOT + 1, -1}},
    {"dbeta inside mean", {-1, -1, -1, 3 * SLOT, -1, -1, -1, 3 * SLOT + 1}},
    {"dx right after dy (adjacent)", {0, -1, -1, -1, -1, -2, -1, -1}},
    {"x == dy, rstd == mean (inputs may overlap)", {0, 0, -1, 3 * SLOT, 3 * SLOT, -1, -1, -1}},
    {"dgamma inside dx", {-1, -1, -1, -1, -1, 5 * SLOT, 5 * SLOT + 3, -1}},
};

static const size_t k_rows[] = {0, 1, 3, 70, SIZE_MAX / 4 + 1, (size_t)1 << 33, SIZE_MAX};
static const size_t k_cols[] = {0, 1, 5, SIZE_MAX / 4 + 1, (size_t)1 << 33, SIZE_MAX};
#define N_OF(a) (sizeof(a) / sizeof *(a))

static float g_arena[ARENA], g_before[ARENA];
/* Validation happens before dispatch: after the first ISA, only the successful calls
   (which reach a kernel) need repeating. */
static int g_ok_only;

/* Operand i at its layout offset; -2 puts it right after operand 0's matrix (whose
   size is capped: an overflowing shape is never accessed, but its address must exist). */
static float *place(const layout *l, int i, size_t mat)
{
    const int off = l->off[i];
    if (off == -2)
        return g_arena + (l->off[0] < 0 ? 0 : l->off[0]) + (mat < SLOT ? mat : SLOT);
    return g_arena + (off < 0 ? i * SLOT : off);
}

/* A byte size of `n` floats, or 0 when it overflows size_t. */
static size_t bytes_of(size_t a, size_t b)
{
    if (a == 0 || b == 0 || a > SIZE_MAX / sizeof(float) / b)
        return 0;
    return a * b * sizeof(float);
}

typedef struct span {
    const float *p;
    size_t bytes;
    int out;
} span;

/* The header's rule: an output may not overlap an input or another output; the one
   exception is the in-place pair (y == x, dx == dy) at the same address. Inputs may
   overlap each other: nothing writes them. */
static int aliases(const span *s, int n, int in_place_out, int in_place_in)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j || !s[i].out || !s[i].p || !s[j].p)
                continue;
            if (i == in_place_out && j == in_place_in && s[i].p == s[j].p)
                continue;
            const char *a = (const char *)s[i].p, *b = (const char *)s[j].p;
            if (a < b + s[j].bytes && b < a + s[i].bytes)
                return 1;
        }
    return 0;
}

static int is_null(unsigned mask, int i) { return (mask >> i) & 1u; }

/* The documented forward status, checks in the header's order. */
static int expect_forward(float *const *p, size_t rows, size_t cols, float eps)
{
    if (rows == 0)
        return LN_OK;
    if (!p[F_X] || !p[F_Y])
        return LN_ERR_NULL;
    const size_t mat = bytes_of(rows, cols), vec = bytes_of(1, cols), st = bytes_of(1, rows);
    if (!mat || !vec || !st)
        return LN_ERR_SHAPE;
    if (isnan(eps) || isinf(eps) || eps < 0)
        return LN_ERR_EPS;
    const span s[F_N] = {{p[F_X], mat, 0}, {p[F_GAMMA], vec, 0}, {p[F_BETA], vec, 0},
                         {p[F_Y], mat, 1}, {p[F_MEAN], st, 1},   {p[F_RSTD], st, 1}};
    return aliases(s, F_N, F_Y, F_X) ? LN_ERR_ALIAS : LN_OK;
}

static int expect_backward(float *const *p, size_t rows, size_t cols)
{
    if (rows == 0)
        return LN_OK;
    if (!p[B_DY] || !p[B_X] || !p[B_MEAN] || !p[B_RSTD])
        return LN_ERR_NULL;
    const size_t mat = bytes_of(rows, cols), vec = bytes_of(1, cols), st = bytes_of(1, rows);
    if (!mat || !vec || !st)
        return LN_ERR_SHAPE;
    const span s[B_N] = {{p[B_DY], mat, 0},   {p[B_X], mat, 0},     {p[B_GAMMA], vec, 0},
                         {p[B_MEAN], st, 0},  {p[B_RSTD], st, 0},   {p[B_DX], mat, 1},
                         {p[B_DGAMMA], vec, 1}, {p[B_DBETA], vec, 1}};
    return aliases(s, B_N, B_DX, B_DY) ? LN_ERR_ALIAS : LN_OK;
}

static size_t small(size_t n) { return n <= SLOT ? n : SLOT + 1; }

/* Operand kinds: a rows x cols matrix, a cols vector, a rows vector (statistics). */
enum { MAT, VEC, ST };

static size_t len_of(int kind, size_t rows, size_t cols)
{
    const size_t n = kind == MAT ? (rows && cols ? small(rows) * small(cols) : 0)
                                 : small(kind == VEC ? cols : rows);
    return n < SLOT ? n : SLOT;
}

/* One entry point's table: its operands (inputs first, the last three are outputs), its
   documented status, and the call itself. */
typedef struct table {
    const char *name;
    const layout *layouts;
    size_t nlayouts;
    int nops;
    const int *kind;
    int (*expect)(float *const *p, size_t rows, size_t cols, float eps);
    int (*call)(float *const *p, size_t rows, size_t cols, float eps);
    const float *eps;
    size_t neps;
} table;

/* The arena before a call: sentinel everywhere, data in every input (statistics > 0:
   they stand for a saved rstd). */
static void make_template(const table *t, float *const *p, size_t rows, size_t cols, tu_rng *rng)
{
    tu_sentinel_fill(g_arena, ARENA);
    for (int i = 0; i < t->nops - 3; i++) {
        const size_t n = len_of(t->kind[i], rows, cols);
        if (t->kind[i] == ST)
            for (size_t k = 0; k < n; k++)
                p[i][k] = 0.5f + (float)k;
        else
            tu_fill_normal(rng, p[i], n, 0.0, 1.0);
    }
    memcpy(g_before, g_arena, sizeof g_arena);
}

/* Nothing written: every operand's region (NULL or not) is as it was. */
static int regions_intact(const table *t, float *const *at, size_t rows, size_t cols)
{
    for (int i = 0; i < t->nops; i++) {
        const ptrdiff_t o = at[i] - g_arena;
        if (memcmp(g_arena + o, g_before + o, len_of(t->kind[i], rows, cols) * sizeof(float)))
            return 0;
    }
    return 1;
}

/* After success: every element of every given output is written (no sentinel left) and
   nothing else in the arena changed: with the outputs put back as they were, the arena
   must equal the template (two bulk operations; valgrind runs this 10^4 times). */
static int only_outputs_written(const table *t, float *const *p, size_t rows, size_t cols)
{
    static float undo[ARENA];
    memcpy(undo, g_arena, sizeof undo);
    for (int o = t->nops - 3; o < t->nops; o++) {
        if (!p[o])
            continue;
        const size_t n = len_of(t->kind[o], rows, cols);
        for (size_t k = 0; k < n; k++)
            if (tu_sentinel_intact(p[o] + k, 1))
                return 0;
        const ptrdiff_t off = p[o] - g_arena;
        memcpy(undo + off, g_before + off, n * sizeof(float));
    }
    return memcmp(undo, g_before, sizeof undo) == 0;
}

/* Every layout x shape x NULL pattern x eps: the documented status, and nothing written
   on error (and nothing but the outputs on success). */
static void run_table(const table *t, uint64_t seed)
{
    tu_rng rng = {seed};
    unsigned long cases = 0, fails = 0;
    for (size_t l = 0; l < t->nlayouts; l++)
        for (size_t r = 0; r < N_OF(k_rows); r++)
            for (size_t c = 0; c < N_OF(k_cols); c++) {
                const size_t rows = k_rows[r], cols = k_cols[c];
                float *at[8], *p[8];
                for (int i = 0; i < t->nops; i++)
                    at[i] = place(&t->layouts[l], i, len_of(MAT, rows, cols));
                make_template(t, at, rows, cols, &rng);
                for (unsigned nulls = 0; nulls < (1u << t->nops); nulls++)
                    for (size_t e = 0; e < t->neps; e++) {
                        for (int i = 0; i < t->nops; i++)
                            p[i] = is_null(nulls, i) ? NULL : at[i];
                        const int want = t->expect(p, rows, cols, t->eps[e]);
                        if (want == LN_OK && rows * cols > SLOT)
                            continue; /* valid, but larger than the arena (1 x 2^33) */
                        if (g_ok_only && (want != LN_OK || rows == 0))
                            continue;
                        const int got = t->call(p, rows, cols, t->eps[e]);
                        const int wrote = got == LN_OK && rows > 0;
                        const int ok = got == want && (wrote ? only_outputs_written(t, p, rows, cols)
                                                              : regions_intact(t, at, rows, cols));
                        if (wrote)
                            memcpy(g_arena, g_before, sizeof g_arena);
                        cases++;
                        if (!ok && fails++ < 10)
                            printf("# %s, %s, nulls 0x%x, rows %zu, cols %zu, eps %g: status %d, "
                                   "want %d%s\n", t->name, t->layouts[l].name, nulls, rows, cols,
                                   (double)t->eps[e], got, want, got == want ? " (wrote)" : "");
                    }
            }
    printf("# %s: %lu cases under %s, %lu failed\n", t->name, cases, ln_isa_name(ln_get_isa()),
           fails);
    assert_int_equal(fails, 0);
}

static int call_forward(float *const *p, size_t rows, size_t cols, float eps)
{
    return ln_forward_f32(p[F_X], p[F_GAMMA], p[F_BETA], p[F_Y], p[F_MEAN], p[F_RSTD], rows,
                          cols, eps);
}

static int call_backward(float *const *p, size_t rows, size_t cols, float eps)
{
    (void)eps;
    return ln_backward_f32(p[B_DY], p[B_X], p[B_GAMMA], p[B_MEAN], p[B_RSTD], p[B_DX],
                           p[B_DGAMMA], p[B_DBETA], rows, cols);
}

static int expect_backward_eps(float *const *p, size_t rows, size_t cols, float eps)
{
    (void)eps;
    return expect_backward(p, rows, cols);
}

static void forward_table(void **state)
{
    (void)state;
    static const int kind[F_N] = {MAT, VEC, VEC, MAT, ST, ST};
    static const float eps[] = {1e-5f, 0.0f,  -0.0f,    1e-45f,   FLT_MAX,
                                -1e-5f, -FLT_MAX, NAN, INFINITY, -INFINITY};
    const table t = {"forward", k_fwd_layouts, N_OF(k_fwd_layouts), F_N, kind,
                     expect_forward, call_forward, eps, N_OF(eps)};
    run_table(&t, 1);
}

static void backward_table(void **state)
{
    (void)state;
    static const int kind[B_N] = {MAT, MAT, VEC, ST, ST, MAT, VEC, VEC};
    static const float no_eps[] = {0.0f};
    const table t = {"backward", k_bwd_layouts, N_OF(k_bwd_layouts), B_N, kind,
                     expect_backward_eps, call_backward, no_eps, 1};
    run_table(&t, 2);
}

/* Invalid ISA ids are refused and change nothing; names and strings stay defined. */
static void isa_ids(void **state)
{
    (void)state;
    static const int bad[] = {-1, 5, 6, 64, 99, INT_MIN, INT_MAX, -2147483647};
    const int before = ln_get_isa();
    for (size_t i = 0; i < N_OF(bad); i++) {
        assert_int_equal(ln_set_max_isa(bad[i]), LN_ERR_ISA);
        assert_int_equal(ln_isa_available(bad[i]), 0);
        assert_string_equal(ln_isa_name(bad[i]), "unknown");
        assert_int_equal(ln_get_isa(), before);
    }
    /* Valid ids this CPU or build lacks are refused the same way. */
    for (int isa = LN_ISA_SCALAR; isa <= LN_ISA_SVE; isa++)
        if (!ln_isa_available(isa)) {
            assert_int_equal(ln_set_max_isa(isa), LN_ERR_ISA);
            assert_int_equal(ln_get_isa(), before);
        }
    static const int bad_status[] = {-1, LN_ERR_KIND + 1, 100, INT_MIN, INT_MAX};
    for (size_t i = 0; i < N_OF(bad_status); i++)
        assert_string_equal(ln_status_string(bad_status[i]), "unknown status");
}

/* The whole table once per kernel: validation must not depend on the ISA, and the
   successful calls must touch only their outputs in every kernel. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forward_table),
        cmocka_unit_test(backward_table),
        cmocka_unit_test(isa_ids),
    };
    int failed = 0;
    for (int isa = LN_ISA_SCALAR; isa <= LN_ISA_SVE; isa++) {
        if (!ln_isa_available(isa))
            continue;
        if (ln_set_max_isa(isa) != LN_OK)
            return 1;
        printf("# --- ISA %s%s\n", ln_isa_name(isa), g_ok_only ? " (successful calls only)" : "");
        failed += cmocka_run_group_tests(tests, NULL, NULL);
        g_ok_only = 1;
    }
    return failed;
}
