/* dispatch.c - the ISA records, and which one is active: resolved once, capped on demand. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "ln_internal.h"

/* The dispatcher must run on any CPU of its architecture: a safety net against flags. */
#if defined(__AVX__) || defined(__ARM_FEATURE_SVE)
#error "dispatch.c must be compiled for the baseline ISA only"
#endif

/* bf16 and GELU entry points of one kernel group, spelled once per group. */
#define BF16_GELU(bf16, gelu)                                                             \
    .bf16_forward = ln_bf16_forward_##bf16, .bf16_backward = ln_bf16_backward_##bf16,       \
    .gelu_forward = ln_gelu_forward_##gelu, .gelu_backward = ln_gelu_backward_##gelu

/* The records. An ISA whose bf16/GELU group this build lacks keeps the scalar ones, so
   every field is always set. */
static const ln_kernels k_scalar = {
    .isa = LN_ISA_SCALAR, .name = "scalar",
    .forward = ln_forward_scalar, .backward = ln_backward_scalar,
    BF16_GELU(scalar, scalar), .plain = &k_scalar,
};

#if LN_HAVE_AVX2
static const ln_kernels k_avx2 = {
    .isa = LN_ISA_AVX2, .name = "avx2",
    .forward = ln_forward_avx2, .backward = ln_backward_avx2,
#if LN_HAVE_BF16_GELU_AVX2
    BF16_GELU(avx2, avx2),
#else
    BF16_GELU(scalar, scalar),
#endif
    .plain = &k_avx2,
};
#endif

#if LN_HAVE_AVX512
/* An emulated build (tests/emu, for CPUs without AVX-512) compiles every AVX-512 file,
   f32, bf16 in both roundings and GELU, over plain-C stand-ins: its records are these. */
#define AVX512_BF16_GELU LN_HAVE_BF16_GELU_AVX512
static const ln_kernels k_avx512 = {
    .isa = LN_ISA_AVX512, .name = "avx512",
    .forward = ln_forward_avx512, .backward = ln_backward_avx512,
#if AVX512_BF16_GELU
    BF16_GELU(avx512, avx512),
#else
    BF16_GELU(scalar, scalar),
#endif
    .plain = &k_avx512,
};
#if AVX512_BF16_GELU
static const ln_kernels k_avx512bf16 = {
    .isa = LN_ISA_AVX512, .name = "avx512",
    .forward = ln_forward_avx512, .backward = ln_backward_avx512,
    BF16_GELU(avx512bf16, avx512), .plain = &k_avx512,
};
#endif
#endif

#if LN_HAVE_NEON
static const ln_kernels k_neon = {
    .isa = LN_ISA_NEON, .name = "neon",
    .forward = ln_forward_neon, .backward = ln_backward_neon,
#if LN_HAVE_BF16_GELU_NEON
    BF16_GELU(neon, neon),
#else
    BF16_GELU(scalar, scalar),
#endif
    .plain = &k_neon,
};
#if LN_HAVE_BF16_GELU_NEON
static const ln_kernels k_neonbf16 = {
    .isa = LN_ISA_NEON, .name = "neon",
    .forward = ln_forward_neon, .backward = ln_backward_neon,
    BF16_GELU(neonbf16, neon), .plain = &k_neon,
};
#endif
#endif

#if LN_HAVE_SVE
static const ln_kernels k_sve = {
    .isa = LN_ISA_SVE, .name = "sve",
    .forward = ln_forward_sve, .backward = ln_backward_sve,
#if LN_HAVE_BF16_GELU_SVE
    BF16_GELU(sve, sve),
#else
    BF16_GELU(scalar, scalar),
#endif
    .plain = &k_sve,
};
#if LN_HAVE_BF16_GELU_SVE
static const ln_kernels k_svebf16 = {
    .isa = LN_ISA_SVE, .name = "sve",
    .forward = ln_forward_sve, .backward = ln_backward_sve,
    BF16_GELU(svebf16, sve), .plain = &k_sve,
};
#endif
#endif

/* Per ISA id, the record this CPU runs best (the BF16 conversion when present); filled
   once under g_once, NULL where the build or the CPU lacks the ISA. */
static const ln_kernels *g_records[LN_ISA_SVE + 1];

/* The record of `isa` for a CPU with extensions `ext`, or NULL if not compiled in. */
static const ln_kernels *record_for(int isa, unsigned ext)
{
    (void)ext;
    switch (isa) {
    case LN_ISA_SCALAR: return &k_scalar;
#if LN_HAVE_AVX2
    case LN_ISA_AVX2: return &k_avx2;
#endif
#if LN_HAVE_AVX512
    case LN_ISA_AVX512:
#if AVX512_BF16_GELU
        if (ext & LN_CPUX_AVX512_BF16)
            return &k_avx512bf16;
#endif
        return &k_avx512;
#endif
#if LN_HAVE_NEON
    case LN_ISA_NEON:
#if LN_HAVE_BF16_GELU_NEON
        if (ext & LN_CPUX_NEON_BF16)
            return &k_neonbf16;
#endif
        return &k_neon;
#endif
#if LN_HAVE_SVE
    case LN_ISA_SVE:
#if LN_HAVE_BF16_GELU_SVE
        if (ext & LN_CPUX_SVE_BF16)
            return &k_svebf16;
#endif
        return &k_sve;
#endif
    default: return NULL;
    }
}

static const char *const k_names[] = {"scalar", "avx2", "avx512", "neon", "sve"};
#define K_NISA ((int)(sizeof k_names / sizeof k_names[0]))

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_env_cap = -1;          /* LN_MAX_ISA, -1 when unset or ignored */
static _Atomic(const ln_kernels *) g_active;
static size_t g_nt_bytes = SIZE_MAX; /* ln_nt_bytes, set by init_once */
static unsigned g_nt_mode = LN_NT_COLD; /* ln_nt_mode, set by init_once */

/* Capping compares ISAs of one architecture only: scalar < avx2 < avx512, scalar < neon
   < sve. Rank 0 is scalar; the family says which architecture an ISA belongs to. */
static int isa_rank(int isa) { return isa == LN_ISA_AVX512 || isa == LN_ISA_SVE ? 2 : isa != LN_ISA_SCALAR; }
static int isa_family(int isa) { return isa == LN_ISA_NEON || isa == LN_ISA_SVE ? 2 : isa != LN_ISA_SCALAR; }

static int ascii_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char ca = (*a >= 'A' && *a <= 'Z') ? (char)(*a - 'A' + 'a') : *a;
        if (ca != *b)
            return 0;
    }
    return *a == *b;
}

#if defined(__x86_64__) || defined(__i386__)
#define HOST_FAMILY 1
#elif defined(__aarch64__)
#define HOST_FAMILY 2
#else
#define HOST_FAMILY 0
#endif

/* The best record the CPU runs whose rank does not exceed the cap's (cap < 0: none). */
static const ln_kernels *best_under(int cap)
{
    const ln_kernels *best = &k_scalar;
    for (int isa = 0; isa < K_NISA; isa++) {
        const ln_kernels *t = g_records[isa];
        if (!t || (cap >= 0 && isa_rank(isa) > isa_rank(cap)))
            continue;
        if (isa_rank(isa) > isa_rank(best->isa))
            best = t;
    }
    return best;
}

/* LN_NT_BYTES: decimal bytes with an optional K, M or G suffix (powers of 2); anything
   else is ignored, as an unknown LN_MAX_ISA is. */
static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return 0;
    unsigned long long v = strtoull(s, &end, 10);
    const unsigned sh = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if ((sh && end[1] != '\0') || (!sh && *end != '\0') || v > (SIZE_MAX >> sh))
        return 0;
    *out = (size_t)(v << sh);
    return 1;
}

static void init_once(void)
{
    /* cpuid can trap to the hypervisor: the CPU is read here, once, and nowhere else. */
    unsigned cpu = ln_cpu_isa_mask() | (1u << LN_ISA_SCALAR);
    if (LN_EMULATED_AVX512) /* its intrinsics are plain C: it runs on any x86-64 CPU */
        cpu |= 1u << LN_ISA_AVX512;
    /* The emulation has the BF16 conversion too, so both roundings run in its CI. */
    const unsigned ext = LN_EMULATED_AVX512 ? LN_CPUX_AVX512_BF16 : ln_cpu_ext_mask();
    for (int isa = 0; isa < K_NISA; isa++)
        g_records[isa] = (cpu >> isa) & 1u ? record_for(isa, ext) : NULL;
    const char *env = getenv("LN_MAX_ISA");
    if (env)
        for (int isa = 0; isa < K_NISA; isa++)
            if (ascii_ieq(env, k_names[isa]) &&
                (isa == LN_ISA_SCALAR || isa_family(isa) == HOST_FAMILY))
                g_env_cap = isa;
    const char *nt = getenv("LN_NT_BYTES");
    if (!nt || !parse_bytes(nt, &g_nt_bytes))
        g_nt_bytes = ln_nt_default_bytes();
    unsigned hints = ln_cpu_nt_hints();
#ifdef LN_FORCE_PF_NTA
    hints = (hints & ~LN_NT_PF_NTA) | (LN_FORCE_PF_NTA ? LN_NT_PF_NTA : 0u);
#endif
    g_nt_mode = LN_NT_COLD | hints;
    const ln_kernels *expected = NULL;
    atomic_compare_exchange_strong(&g_active, &expected, best_under(g_env_cap));
}

const ln_kernels *ln_active(void)
{
    const ln_kernels *k = atomic_load_explicit(&g_active, memory_order_acquire);
    if (k)
        return k;
    pthread_once(&g_once, init_once);
    return atomic_load_explicit(&g_active, memory_order_acquire);
}

/* init_once has run once g_active is set: it is set last there (after g_nt_bytes and
   g_nt_mode), and elsewhere only after a pthread_once (ln_set_max_isa). So every call
   pays one acquire load, where pthread_once was a call into libc. */
static void ln_settled(void) { (void)ln_active(); }

/* The LLC is capped at 32 MiB: hypervisors often report the whole socket's L3 (508 MiB on
   this project's EPYC machines) where one core reaches only its complex's 32 MiB, which
   it shares with the complex's other cores. A third of it: calls whose operands pass
   that stop staying cached from one call to the next. Measured on Zen 4 (32 MiB L3, a
   2-core VM), repeated calls at 768 columns, ordinary against streamed stores: forward
   44 / 40 GB/s at 3 MiB of y (working set 6 MiB), 36 / 42 at 6 MiB, 10 / 43 at 8 MiB;
   backward 33 / 24 at 3 MiB of dx (9 MiB moved), 24 / 37 at 4 MiB, 19 / 37 at 6 MiB.
   The former rule, outputs against the whole 32 MiB, left calls of 4-16 MiB per operand
   (GPT-2 activations of a few thousand tokens) at a quarter of the streamed speed. */
size_t ln_nt_default_bytes(void)
{
    const size_t llc = ln_cpu_llc_bytes(), cap = (size_t)32 << 20;
    return (llc && llc < cap ? llc : cap) / 3;
}

size_t ln_nt_bytes(void)
{
    ln_settled();
    return g_nt_bytes;
}

/*
 * The cold kernels' prefetch hints (kernels/ln_common.h) ask for rows a few KiB ahead
 * into L2. On AMD Zen the L3 is a victim cache of L2: every line a hint brings in is
 * written into L3 when L2 evicts it, though a cold call never reads it again.
 * prefetchnta still fills L2 there but skips that write. Zen 5 (family 0x1a), 64 MiB
 * operands, calls alternating between the builds, time with nta / with prefetcht1 at
 * 64-16384 columns: backward 0.90-1.06x on AVX-512 (below 0.92x at 64, 1601, 4096),
 * 0.89-1.03x on AVX2; ACCUMULATE 0.86-0.91x and 0.90-1.01x; forward 0.88-1.00x and
 * 0.97-1.01x. Intel's prefetchnta fills L1 and not L2, where rows more than a few KiB ahead
 * would be evicted before their pass reads them, so Intel keeps prefetcht1 (unmeasured:
 * no Intel host here since; LN_FORCE_PF_NTA builds the other choice for an A/B).
 */
unsigned ln_nt_mode(void)
{
    ln_settled();
    return g_nt_mode;
}

const ln_kernels *ln_kernels_get(int isa)
{
    pthread_once(&g_once, init_once);
    return isa >= 0 && isa < K_NISA ? g_records[isa] : NULL;
}

LN_API int ln_isa_available(int isa) { return ln_kernels_get(isa) != NULL; }

LN_API const char *ln_isa_name(int isa)
{
    return isa >= 0 && isa < K_NISA ? k_names[isa] : "unknown";
}

LN_API int ln_get_isa(void) { return ln_active()->isa; }

LN_API int ln_set_max_isa(int isa)
{
    if (!ln_kernels_get(isa))
        return LN_ERR_ISA;
    atomic_store_explicit(&g_active, best_under(isa), memory_order_release);
    return LN_OK;
}
