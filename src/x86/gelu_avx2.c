/* gelu_avx2.c - GELU forward/backward with AVX2+FMA on SLEEF's vector exp and erfc. */
#include <sleef.h>

#include "avx2_vocab.h"
#include "ln_internal.h"

static inline V v_exp(V x) { return Sleef_expf8_u10avx2(x); }
static inline V v_erfc(V x) { return Sleef_erfcf8_u15avx2(x); }

#include "kernels/gelu_body.h"

const ln_gelu_kernels ln_gelu_kernels_avx2 = {
    .isa = LN_ISA_AVX2,
    .forward = gelu_forward,
    .backward = gelu_backward,
};
