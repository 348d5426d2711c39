/* gelu_avx512.c - GELU forward/backward with AVX-512 on SLEEF's vector exp and erfc. */
#include <sleef.h>

#include "avx512_vocab.h"
#include "ln_internal.h"

static inline V v_exp(V x) { return Sleef_expf16_u10avx512f(x); }
static inline V v_erfc(V x) { return Sleef_erfcf16_u15avx512f(x); }

#include "kernels/gelu_body.h"

const ln_gelu_kernels ln_gelu_kernels_avx512 = {
    .isa = LN_ISA_AVX512,
    .forward = gelu_forward,
    .backward = gelu_backward,
};
