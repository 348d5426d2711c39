/* gelu_neon.c - GELU forward/backward with AArch64 Advanced SIMD on SLEEF's vector exp and erfc. */
#include <sleef.h>

#include "arm/neon_vocab.h"
#include "ln_internal.h"

static inline V v_exp(V x) { return Sleef_expf4_u10advsimd(x); }
static inline V v_erfc(V x) { return Sleef_erfcf4_u15advsimd(x); }

#include "kernels/gelu_body.h"

const ln_gelu_kernels ln_gelu_kernels_neon = {
    .isa = LN_ISA_NEON,
    .forward = gelu_forward,
    .backward = gelu_backward,
};
