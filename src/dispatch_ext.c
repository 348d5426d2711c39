/* dispatch_ext.c - per-feature kernel tables (bf16, GELU) looked up by the active ISA id. */
#include <pthread.h>

#include "ln_internal.h"

#if defined(__AVX__) || defined(__ARM_FEATURE_SVE)
#error "dispatch_ext.c must be compiled for the baseline ISA only"
#endif

/* An emulated AVX-512 build (tests/emu) reports AVX-512 usable on any x86-64 CPU, but only
   its f32 kernel runs on the emulated intrinsics: the bf16 and GELU kernels are still
   compiled with -mavx512f and would fault (SIGILL) on a CPU without AVX-512. Until they
   are emulated too, that build dispatches the scalar bf16 and GELU tables for the
   AVX-512 id, never a kernel that is not emulated. */
#if LN_HAVE_EXT_AVX512 && !LN_EMULATED_AVX512
#define REAL_EXT_AVX512 1
#else
#define REAL_EXT_AVX512 0
#endif

/* Indexed by ISA id; NULL where this build has no kernel for the ISA. */
static const ln_bf16_kernels *const k_bf16[] = {
    [LN_ISA_SCALAR] = &ln_bf16_kernels_scalar,
#if LN_HAVE_EXT_AVX2
    [LN_ISA_AVX2] = &ln_bf16_kernels_avx2,
#endif
#if REAL_EXT_AVX512
    [LN_ISA_AVX512] = &ln_bf16_kernels_avx512,
#elif LN_EMULATED_AVX512
    [LN_ISA_AVX512] = &ln_bf16_kernels_scalar,
#endif
#if LN_HAVE_EXT_NEON
    [LN_ISA_NEON] = &ln_bf16_kernels_neon,
#endif
#if LN_HAVE_EXT_SVE
    [LN_ISA_SVE] = &ln_bf16_kernels_sve,
#endif
    [LN_ISA_SVE + 1] = NULL,
};

static const ln_gelu_kernels *const k_gelu[] = {
    [LN_ISA_SCALAR] = &ln_gelu_kernels_scalar,
#if LN_HAVE_EXT_AVX2
    [LN_ISA_AVX2] = &ln_gelu_kernels_avx2,
#endif
#if REAL_EXT_AVX512
    [LN_ISA_AVX512] = &ln_gelu_kernels_avx512,
#elif LN_EMULATED_AVX512
    [LN_ISA_AVX512] = &ln_gelu_kernels_scalar,
#endif
#if LN_HAVE_EXT_NEON
    [LN_ISA_NEON] = &ln_gelu_kernels_neon,
#endif
#if LN_HAVE_EXT_SVE
    [LN_ISA_SVE] = &ln_gelu_kernels_sve,
#endif
    [LN_ISA_SVE + 1] = NULL,
};

/* cpuid can trap to the hypervisor: read the CPU once, not per call. */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static unsigned g_isa_mask, g_ext_mask;

static void init_once(void)
{
    g_isa_mask = ln_cpu_isa_mask() | (1u << LN_ISA_SCALAR);
    g_ext_mask = ln_cpu_ext_mask();
}

static int runnable(int isa)
{
    if (isa < 0 || isa > LN_ISA_SVE)
        return 0;
    pthread_once(&g_once, init_once);
    return (g_isa_mask >> isa) & 1u;
}

const ln_bf16_kernels *ln_bf16_for(int isa)
{
    if (!runnable(isa))
        return NULL;
#if REAL_EXT_AVX512
    if (isa == LN_ISA_AVX512 && (g_ext_mask & LN_CPUX_AVX512_BF16))
        return &ln_bf16_kernels_avx512bf16;
#endif
#if LN_HAVE_EXT_NEON
    if (isa == LN_ISA_NEON && (g_ext_mask & LN_CPUX_NEON_BF16))
        return &ln_bf16_kernels_neonbf16;
#endif
#if LN_HAVE_EXT_SVE
    if (isa == LN_ISA_SVE && (g_ext_mask & LN_CPUX_SVE_BF16))
        return &ln_bf16_kernels_svebf16;
#endif
    return k_bf16[isa];
}

const ln_gelu_kernels *ln_gelu_for(int isa) { return runnable(isa) ? k_gelu[isa] : NULL; }
