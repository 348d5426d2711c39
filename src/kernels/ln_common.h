/* ln_common.h - what the ISA-independent kernel bodies share: the per-call Welford/Chan
   plan, masked loads and stores, the horizontal sum. */
#ifndef LN_KERNELS_COMMON_H
#define LN_KERNELS_COMMON_H

/*
 * Included by a kernel file after it defines (intrinsics live only there):
 *   V, VM             float vector of LN_W lanes, tail mask
 *   LN_W, LN_LOG2W    lanes and log2(lanes); LN_KBIG accumulators per row for long rows,
 *   LN_RFWD, LN_RBWD  rows interleaved for short rows (forward, backward)
 *   v_load v_loadm v_store v_storem v_set1 v_zero v_add v_sub v_mul
 *   v_subz(a,b,m) = a-b in the lanes of m, 0 elsewhere
 *   v_fma(a,b,c) = a*b+c   v_fnma(a,b,c) = c-a*b   v_fold(v, level): lane l+W/2^(level+1)
 *   moved to lane l   v_lane0(v)   v_tailmask(t): the first t lanes
 * Nothing in src/kernels/ depends on the ISA beyond those names, so every ISA shares one
 * proof of correctness; only the lane count and the vocabulary differ.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/elem.h"
#include "kernels/plan.h"

#ifndef LN_INLINE
#define LN_INLINE static inline __attribute__((always_inline))
#endif
#define LN_KMAX 8 /* most Welford accumulators per row */
#define LN_RMAX 4 /* most rows interleaved */
#define LN_KSMALL 2
/* Up to this many columns a row's fixed costs (merges, horizontal reduction, sqrt and
   divide) dominate: two accumulators per row, several rows interleaved instead. */
#define LN_SMALL_COLS (32 * LN_W)
/* The forward's bound: up to it, 4-row groups with LN_KSMALL accumulators beat single
   rows with LN_KBIG pipelined with the apply (a vocabulary may raise it; see there). */
#ifndef LN_FWD_SMALL_COLS
#define LN_FWD_SMALL_COLS LN_SMALL_COLS
#endif

/*
 * Everything about the reduction that depends only on cols: computed once per call (the
 * forward's kept from call to call, plan_get), so per row the merges are multiply-adds
 * with ready coefficients (kernels/plan.h).
 */
typedef struct __attribute__((aligned(64))) ln_plan {
    /* First, each an aligned vector (the rows' trees load them), none split by a line. */
    float tail_f1[LN_W], tail_f2[LN_W]; /* tail lanes into the merged vector */
    float lane_f1[LN_LOG2W][LN_W], lane_f2[LN_LOG2W][LN_W]; /* horizontal tree, t > 0 */
    size_t n, nv, nblk; /* columns, full vectors, full blocks of k vectors */
    unsigned k, rv, t;  /* accumulators, vectors after the blocks, tail lanes */
    VM tmask;
    float acc_f1[LN_KMAX], acc_f2[LN_KMAX]; /* tree over accumulators, merge order */
    float lane_u[LN_LOG2W]; /* the tree's f2 when t == 0 (f1 = 1/2) */
} ln_plan;

/* The plan's shape: all the backward reads (its sums need no merge coefficients). */
LN_INLINE void plan_shape(ln_plan *p, size_t n, unsigned k)
{
    p->n = n;
    p->nv = n / LN_W;
    p->k = k;
    /* k is a power of two (ln_plan_acc's tree): a shift, where a divide by the runtime k
       and the unused 1/n were ~8 % of a one-row call at 768 columns (perf, AVX-512). */
    p->nblk = p->nv >> __builtin_ctz(k);
    p->rv = (unsigned)(p->nv & (k - 1));
    p->t = (unsigned)(n % LN_W);
    p->tmask = v_tailmask(p->t);
}

/* The whole plan, for the forward's merges (kept from call to call by plan_get). */
static void plan_init(ln_plan *p, size_t n, unsigned k)
{
    plan_shape(p, n, k);
    ln_plan_acc(p->nblk, p->rv, k, p->acc_f1, p->acc_f2);
    /* After that every lane has seen nv values. Without a tail the horizontal tree merges
       equal counts; with one, tail lane l adds one value and the lanes' counts differ, so
       each pair gets its coefficients. */
    ln_plan_lane_u(p->nv, LN_LOG2W, p->lane_u);
    if (!p->t)
        return;
    float tf1, tf2;
    chan_coef((double)p->nv, 1.0, &tf1, &tf2);
    for (unsigned l = 0; l < LN_W; l++) {
        p->tail_f1[l] = l < p->t ? tf1 : 0.0f;
        p->tail_f2[l] = l < p->t ? tf2 : 0.0f;
    }
    ln_plan_lanes(p->nv, p->t, LN_W, &p->lane_f1[0][0], &p->lane_f2[0][0], LN_W);
#ifdef LN_TREE4_POS
    /* The four-row tree (kernels/ln_forward.h) loads these packed as it packs the rows:
       level 0's coefficients repeat every W/2 lanes, later levels' every W/4. The lanes
       filled here were zeros, partners of lanes whose results the one-row tree discards,
       so its results do not change. */
    for (unsigned lv = 0; lv < LN_LOG2W; lv++) {
        const unsigned per = lv == 0 ? LN_W / 2 : LN_W / 4;
        for (unsigned l = per; l < LN_W; l++) {
            p->lane_f1[lv][l] = p->lane_f1[lv][l - per];
            p->lane_f2[lv][l] = p->lane_f2[lv][l - per];
        }
    }
#endif
}

/*
 * The plan of this thread's last forward through this kernel file, reused while cols and
 * k repeat, as they do layer after layer of a model: making it was ~5 % of a one-row call
 * at 768 columns and ~45 % at 1-100 columns (perf, AVX-512), mostly the lane tree's
 * coefficients after a tail. Per thread, so no call waits or races for it. The calls stay
 * reentrant (the header's promise): a signal handler may call in between any two
 * instructions of its thread's call, so the memo is copied out, never used in place, and
 * seq (odd while the memo is written, bumped by every write) tells a copy or a write that
 * a handler's call wrote the memo meanwhile, or that the call it interrupted is writing.
 * Only compiler ordering is needed: both calls run on one thread.
 */
typedef struct ln_plan_memo {
    ln_plan plan;
    volatile unsigned seq;
} ln_plan_memo;
static __thread ln_plan_memo ln_memo;

/* What a call reads of a plan: the struct's head (the tail's and the lane tree's
   coefficients) only when there is a tail (the tail merge and lane_coefs test p->t;
   plan_init leaves it unset otherwise), the rest always. */
LN_INLINE void plan_copy(ln_plan *to, const ln_plan *from)
{
    const size_t head = offsetof(ln_plan, n);
    memcpy((char *)to + head, (const char *)from + head, sizeof(ln_plan) - head);
    if (from->t)
        memcpy(to, from, head);
}

LN_INLINE void plan_get(ln_plan *p, size_t n, unsigned k)
{
    ln_plan_memo *m = &ln_memo;
    const unsigned seq = m->seq;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (!(seq & 1u) && m->plan.n == n && m->plan.k == k) {
        plan_copy(p, &m->plan);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (m->seq == seq)
            return;
    }
    plan_init(p, n, k);
    if ((seq & 1u) || m->seq != seq)
        return; /* a handler's call, or interrupted by one: the memo is not ours to write */
    m->seq = seq + 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    plan_copy(&m->plan, p);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    m->seq = seq + 2;
}

#ifdef LN_ELEM_F32
LN_INLINE V e_load(const float *p) { return v_load(p); }
LN_INLINE V e_loadm(const float *p, VM m) { return v_loadm(p, m); }
LN_INLINE void e_store(float *p, V v) { v_store(p, v); }
LN_INLINE void e_storem(float *p, VM m, V v) { v_storem(p, m, v); }
/* Float rows stream with the vocabulary's v_stream (args.nt). Another element type
   streams when its kernel file defines LN_E_STREAM and LN_EALIGN (the bytes one vector's
   packed results take, which a store of them is aligned to) and e_stream (one vector).
   A file that streams whole lines in pairs (LN_HAVE_E_STREAM2, e_stream2) needs e_stream
   only if its backward streams (no LN_BWD_NO_STREAM). */
#define LN_E_STREAM 1
#define LN_EALIGN LN_VALIGN
LN_INLINE void e_stream(float *p, V v) { v_stream(p, v); }
#ifdef LN_FWD_STREAM_LINES /* the vocabulary's vectors are half a line (avx2_vocab.h) */
LN_INLINE void e_stream2(float *p, V a, V b)
{
    v_stream(p, a);
    v_stream(p + LN_W, b);
}
#endif
#endif
#ifndef LN_HAVE_E_STORE2 /* two full vectors at p, p + LN_W: a kernel file may pack them */
LN_INLINE void e_store2(LN_ELEM *p, V a, V b)
{
    e_store(p, a);
    e_store(p + LN_W, b);
}
#endif

/* float operands (gamma, beta, partials), then row elements (LN_ELEM). */
LN_INLINE V load_t(const float *p, int tail, VM tm) { return tail ? v_loadm(p, tm) : v_load(p); }
LN_INLINE V eload_t(const LN_ELEM *p, int tail, VM tm) { return tail ? e_loadm(p, tm) : e_load(p); }
/* x - mean of a (possibly tail) vector: masked-off lanes hold 0, not 0 - mean, which times
   rstd overflows to -Inf for |mean| rstd > FLT_MAX and then 0 * Inf = NaN poisons the sums. */
LN_INLINE V centered_t(const LN_ELEM *p, V mean, int tail, VM tm)
{
    return tail ? v_subz(e_loadm(p, tm), mean, tm) : v_sub(e_load(p), mean);
}

/* Elements before the first `align`-aligned one of p (0: p is aligned), or LN_W when p
   cannot be aligned (not element-aligned): the head a row peels to align its vectors. */
static inline unsigned lanes_to_align(const void *p, size_t align, size_t elem)
{
    const uintptr_t mis = (uintptr_t)p % align;
    if (mis % elem)
        return LN_W;
    return mis ? (unsigned)((align - mis) / elem) : 0u;
}

static inline unsigned ln_head_lanes(const float *p) { return lanes_to_align(p, LN_VALIGN, sizeof *p); }

#ifdef LN_E_STREAM
/* The head a streamed row peels: below LN_W, since LN_EALIGN is at most one vector's
   elements. */
static inline unsigned e_head_lanes(const LN_ELEM *p) { return lanes_to_align(p, LN_EALIGN, sizeof *p); }
#endif
/* Defined, the forward streams whole lines in pairs: every element type with e_stream2. */
#if defined LN_HAVE_E_STREAM2 || (defined LN_FWD_STREAM_LINES && defined LN_ELEM_F32)
#define LN_LINE_PAIRS (64 / (2 * LN_EALIGN)) /* e_stream2 stores per 64-byte line */
#endif

#if defined LN_JOIN && defined LN_ELEM_F32
#define LN_JOIN_MIN_VECS 16 /* rows shorter than this many vectors never join (why: ln_backward.h) */

/* The end of a float row whose vectors were computed at the columns' alignment and stored
   joined (v_join(prev, cur, jx): lanes a on of one vector, lanes below a of the next) to
   an output a lanes off it: the `left` lanes from d on, prev's last and cur's (the row's
   tail vector, or zeros). */
LN_INLINE void join_store_end(float *d, unsigned left, V prev, V cur, VJ jx)
{
    const V last = v_join(prev, cur, jx);
    if (left < LN_W) {
        v_storem(d, v_tailmask(left), last);
    } else {
        v_store(d, last);
        if (left > LN_W)
            v_storem(d + LN_W, v_tailmask(left - LN_W), v_join(cur, v_zero(), jx));
    }
}
#endif

/* Lanes 0 .. a - 1 of v to p[0 .. a): the head a row peels before its first LN_EALIGN-
   aligned vector (0 < a < LN_W, p + a aligned). Where that alignment is a whole line
   (AVX-512 floats) the store starts at that line's start, masked below p: stored from p,
   its masked-off lanes reached into the next line, which the row then streams, and cold
   calls with such heads ran 1.20-1.58x slower at 256-768 columns (Zen 4, AVX-512, 64 MiB,
   output 16 bytes off, alternating builds; 1.08x at 777 and 1601). LN_HEAD_BY_LANES: a
   vocabulary whose masked stores cost more than a few scalar ones (AVX2). */
LN_INLINE void e_store_head(LN_ELEM *p, unsigned a, V v)
{
#if defined LN_JOIN && defined LN_ELEM_F32
    _Static_assert(LN_VALIGN == 64 && LN_W * sizeof(float) == 64, "line-wide vectors");
    float *line = (float *)((uintptr_t)(p + a) - LN_VALIGN);
    v_storem(line, v_headmask(LN_W - a), v_join(v_zero(), v, v_join_idx(a)));
#elif defined LN_HEAD_BY_LANES && defined LN_ELEM_F32
    float t[LN_W];
    v_store(t, v);
    for (unsigned k = 0; k < a; k++)
        p[k] = t[k];
#else
    e_storem(p, v_tailmask(a), v);
#endif
}

LN_INLINE void store_t(float *p, V v, int tail, VM tm)
{
    if (tail)
        v_storem(p, tm, v);
    else
        v_store(p, v);
}

/* The call's operands come from memory (args.nt, set by the runner when they reach
   ln_nt_bytes), any element type. */
#define LN_COLD(a) ((a)->nt)
/* Its hints as prefetchnta (LN_NT_PF_NTA: AMD, see dispatch.c), else prefetcht1. */
#define LN_PF_NTA(a) (((a)->nt & LN_NT_PF_NTA) != 0)

/*
 * Cold rows (LN_COLD): the forward's statistics pass
 * streams a row from memory, but its apply pass reads the row back from L1, and the
 * hardware prefetchers, which follow misses, let the memory idle meanwhile. So the apply
 * asks for the same span of a row `ahead` rows on into L2 (ln_prefetch: NULL asks for
 * nothing; `nta`: LN_PF_NTA), where a later statistics pass finds it.
 * ln_prefetch_rows: at least LN_PF_AHEAD bytes (and whole groups) ahead, so that short rows' hints precede their
 * reads by a memory latency; rows up to LN_PF_ROW_BYTES only, since above it the
 * prefetchers already run ahead of the long statistics pass and the hints cost (Zen 4,
 * cold forward: 1.36-1.56x at 128-2048 columns; 0.87x at 8192 and 0.74x at 16384 when
 * every row prefetched its successor; 1 KiB or 12 KiB ahead instead of 4 measured 0.93-1.04x
 * and 0.66-0.80x). The backward's pass B, which reads its group back from L1 too, asks
 * for x, dy and (unless it streams, or float ACCUMULATE reads it) dx of the group `ahead`
 * rows on, up to the call's last row (args.pf_rows: its kernel calls are 64-row blocks,
 * shorter than the hints' reach).
 * Zen 5, AVX-512, cold, one process alternating with the build without them: plain
 * (streamed dx) 1.03-1.45x at 64-8192 columns, most at 512-1601; ACCUMULATE 0.97-1.59x;
 * bf16 1.07-1.66x. Issued from pass A, beside its demand misses, the same hints ran
 * 0.66-1.06x of that, below 0.9x at 11 of 21 points. (On Zen 4 an earlier form, without
 * dx, had measured 0.73-0.95x.) The backward hints rows of every length (max_bytes
 * SIZE_MAX): its pass B does more per element than the forward's apply, so with the
 * row above LN_PF_ROW_BYTES unhinted the memory idled through it (Zen 4, cold, 64 MiB
 * operands, alternating builds: plain f32 1.09-1.25x at 4096-65536 columns on AVX-512,
 * 1.31-1.39x on AVX2; bf16 1.07-1.13x at 8192-16384; ACCUMULATE 1.00-1.04x; unchanged
 * at 256-2048, and 2 or 4 groups ahead instead of 1 measured no better).
 */
#define LN_PF_AHEAD 4096
/* Rows of up to 8 KiB are hinted; float rows up to 16 KiB where the CPU asks for it
   (LN_NT_PF_LONG: Zen 5), up to 32 KiB on Zen 3 (LN_NT_PF_LONG32; cpu_features_x86.c).
   Cold forward (prefetchnta), 64 MiB operands, calls alternating between the builds,
   time 16 KiB / 8 KiB:
   - Zen 5: float 3072 columns 0.63-0.69x (AVX-512, two runs) and 0.69x (AVX2), 4096
     0.74-0.85x (AVX-512, three runs; AVX2 0.84x); 2048, 6144 and 8192 0.998-1.001x.
   - Zen 4: 1.14-1.20x at 3072 and 1.33x at 4096 (AVX-512, two runs), 1.11-1.13x and
     1.24-1.27x (AVX2; one run of four at 3072 gave 0.90x, quartiles 0.86-0.99x); 2048
     and 8192 0.99-1.01x.
   - Zen 3 (AVX2): 0.75x at 2560 columns, 0.87-0.88x at 3072 and 0.88-0.89x at 4096 (two
     runs); 2048 and 8192 1.00x. Then 32 KiB / 16 KiB: 0.92x at 8192, 12288 and 16384
     1.00x; hinting every row 0.99-1.01x at 8192-16384.
   The bf16 rows a 16 KiB bound would newly hint (8192 columns) ran 1.11-1.13x slower on
   Zen 5, AVX-512, in three runs (0.83x on AVX2), 6144 1.04x. Intel (prefetcht1) and Arm
   are unmeasured with the 16 KiB bound. */
#ifdef LN_ELEM_F32
#define LN_PF_ROW_BYTES(a)                                                                    \
    (((a)->nt & LN_NT_PF_LONG32) ? (size_t)32768                                              \
     : ((a)->nt & LN_NT_PF_LONG) ? (size_t)16384                                              \
                                 : (size_t)8192)
#else
#define LN_PF_ROW_BYTES(a) ((size_t)8192)
#endif
static inline size_t ln_prefetch_rows(size_t n, unsigned R, size_t max_bytes)
{
    const size_t bytes = n * sizeof(LN_ELEM);
    if (bytes > max_bytes)
        return 0;
    const size_t rows = (LN_PF_AHEAD + bytes - 1) / bytes;
    return (rows + R - 1) / R * R; /* whole groups of R rows on */
}

LN_INLINE void ln_prefetch(const LN_ELEM *pf, size_t i, unsigned nvec, int nta)
{
    if (pf)
        for (size_t o = 0; o < nvec * LN_W * sizeof(LN_ELEM); o += 64) {
            if (nta)
                __builtin_prefetch((const char *)(pf + i) + o, 0, 0);
            else
                __builtin_prefetch((const char *)(pf + i) + o, 0, 2);
        }
}

/* The same for a span pass B of a cold backward will write without streaming it (bf16
   rows on AVX2 and Arm, ACCUMULATE, which reads dx first, or a group whose rows do not
   share their alignment): pass A asks for those lines, with intent to
   write, while it reads x and dy, so pass B's reads or write-allocations find them near
   (paired, cold, Zen 4: ACCUMULATE 1.19x at 256 columns, 1.02-1.04x at 768-2048; bf16
   1.08-1.12x at 2048-4096, 0.99x at 256-768). */
LN_INLINE void ln_prefetchw(const LN_ELEM *p, size_t i, unsigned nvec)
{
    for (size_t o = 0; o < nvec * LN_W * sizeof(LN_ELEM); o += 64)
        __builtin_prefetch((const char *)(p + i) + o, 1, 3);
}

LN_INLINE void estore_t(LN_ELEM *p, V v, int tail, VM tm)
{
    if (tail)
        e_storem(p, tm, v);
    else
        e_store(p, v);
}

/* Sum of the lanes in a fixed tree order. */
LN_INLINE float hsum(V v)
{
#pragma GCC unroll 4
    for (unsigned lv = 0; lv < LN_LOG2W; lv++)
        v = v_add(v, v_fold(v, lv));
    return v_lane0(v);
}

#ifdef LN_TREE4_POS
/* Four rows' results from a vector packed by v_cat / v_quad: row r's is lane
   LN_TREE4_POS(r). */
LN_INLINE void lanes4(V v, float *out)
{
    float buf[LN_W];
    v_store(buf, v);
    for (unsigned r = 0; r < 4; r++)
        out[r] = buf[LN_TREE4_POS(r)];
}
#endif

#ifdef LN_TREE4_POS
/* Four lanes of float, double and their compare masks: GCC's generic vectors (one register
   on x86 and two on Arm), for values that come one per row of a four-row group. A
   vocabulary may give single instructions for the conversions (GCC 12 lowers
   __builtin_convertvector's widening into halves through the stack) and for the mask. */
typedef float ln_f4 __attribute__((vector_size(4 * sizeof(float))));
typedef double ln_d4 __attribute__((vector_size(4 * sizeof(double))));
typedef int32_t ln_i4 __attribute__((vector_size(4 * sizeof(int32_t))));
typedef int64_t ln_l4 __attribute__((vector_size(4 * sizeof(int64_t))));
#ifndef LN_F4_TO_D4
#define LN_F4_TO_D4(f) __builtin_convertvector((f), ln_d4)
#define LN_D4_TO_F4(d) __builtin_convertvector((d), ln_f4)
#endif
#ifndef LN_D4_SQRT /* correctly rounded, lane by lane */
#define LN_D4_SQRT(v) ((ln_d4){sqrt((v)[0]), sqrt((v)[1]), sqrt((v)[2]), sqrt((v)[3])})
#endif
#ifndef LN_I4_BAD /* bit i set where lane i of a compare mask is false */
#define LN_I4_BAD(m)                                                                        \
    ((unsigned)((m)[0] ? 0 : 1) | ((m)[1] ? 0u : 2u) | ((m)[2] ? 0u : 4u) | ((m)[3] ? 0u : 8u))
#endif

/* The four rows' results of a vector packed by v_cat / v_quad as four lanes. */
LN_INLINE ln_f4 lanes4_f4(V v)
{
#ifdef LN_TREE4_F4
    return LN_TREE4_F4(v);
#else
    float out[4];
    lanes4(v, out);
    return (ln_f4){out[0], out[1], out[2], out[3]};
#endif
}

/* hsum of four vectors, packed as the forward's lane tree packs them (two vectors'
   halves, then four quarters, v_cat / v_quad): every lane meets the partner hsum's fold
   gives it, in the same order, so the sums are bit for bit hsum's, in 2 + 1 + (log2 W -
   2) additions instead of 4 log2 W. Row r's sum is in lane LN_TREE4_POS(r). */
LN_INLINE V hsum4(const V *v)
{
    const V a = v_add(v_cat_lo(v[0], v[1]), v_cat_hi(v[0], v[1]));
    const V b = v_add(v_cat_lo(v[2], v[3]), v_cat_hi(v[2], v[3]));
    V s = v_add(v_quad_lo(a, b), v_quad_hi(a, b));
#pragma GCC unroll 4
    for (unsigned lv = 2; lv < LN_LOG2W; lv++)
        s = v_add(s, v_fold(s, lv));
    return s;
}
#endif

/* hsum of R vectors into out[0..R-1]; four at once through hsum4. */
LN_INLINE void hsum_rows(const V *v, unsigned R, float *out)
{
#ifdef LN_TREE4_POS
    if (R == 4) {
        lanes4(hsum4(v), out);
        return;
    }
#endif
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++)
        out[r] = hsum(v[r]);
}

#endif /* LN_KERNELS_COMMON_H */
