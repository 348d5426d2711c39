/* dispatch.c - ISA choice: which kernel table is active, resolved once, capped on demand. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ln_internal.h"

/* The dispatcher must run on any CPU of its architecture: a safety net against flags. */
#if defined(__AVX__) || defined(__ARM_FEATURE_SVE)
#error "dispatch.c must be compiled for the baseline ISA only"
#endif

static const ln_kernels *const k_tables[] = {
    &ln_kernels_scalar,
#if LN_HAVE_AVX2
    &ln_kernels_avx2,
#endif
#if LN_HAVE_AVX512
    &ln_kernels_avx512,
#endif
#if LN_HAVE_NEON
    &ln_kernels_neon,
#endif
#if LN_HAVE_SVE
    &ln_kernels_sve,
#endif
};
#define K_NTABLES (sizeof k_tables / sizeof k_tables[0])

static const char *const k_names[] = {"scalar", "avx2", "avx512", "neon", "sve"};
#define K_NISA ((int)(sizeof k_names / sizeof k_names[0]))

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static unsigned g_cpu_mask;         /* written once under g_once */
static int g_env_cap = -1;          /* LN_MAX_ISA, -1 when unset or ignored */
static _Atomic(const ln_kernels *) g_active;

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

static const ln_kernels *table_of(int isa)
{
    for (size_t i = 0; i < K_NTABLES; i++)
        if (k_tables[i]->isa == isa)
            return k_tables[i];
    return NULL;
}

#if defined(__x86_64__) || defined(__i386__)
#define HOST_FAMILY 1
#elif defined(__aarch64__)
#define HOST_FAMILY 2
#else
#define HOST_FAMILY 0
#endif

/* The best table the CPU runs whose rank does not exceed the cap's (cap < 0: none). */
static const ln_kernels *best_under(int cap)
{
    const ln_kernels *best = &ln_kernels_scalar;
    for (size_t i = 0; i < K_NTABLES; i++) {
        const ln_kernels *t = k_tables[i];
        if (!(g_cpu_mask & (1u << t->isa)))
            continue;
        if (cap >= 0 && isa_rank(t->isa) > isa_rank(cap))
            continue;
        if (isa_rank(t->isa) > isa_rank(best->isa))
            best = t;
    }
    return best;
}

static void init_once(void)
{
    g_cpu_mask = ln_cpu_isa_mask() | (1u << LN_ISA_SCALAR);
    const char *env = getenv("LN_MAX_ISA");
    if (env)
        for (int isa = 0; isa < K_NISA; isa++)
            if (ascii_ieq(env, k_names[isa]) &&
                (isa == LN_ISA_SCALAR || isa_family(isa) == HOST_FAMILY))
                g_env_cap = isa;
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

const ln_kernels *ln_kernels_get(int isa)
{
    pthread_once(&g_once, init_once);
    if (isa < 0 || isa >= K_NISA || !(g_cpu_mask & (1u << isa)))
        return NULL;
    return table_of(isa);
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
