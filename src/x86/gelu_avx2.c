/* gelu_avx2.c - GELU forward/backward with AVX2+FMA on SLEEF's vector exp and erfc. */
#include "avx2_vocab.h"
#include "ln_internal.h"

#include "kernels/gelu_body.h"

const ln_gelu_kernels ln_gelu_kernels_avx2 = {
    .isa = LN_ISA_AVX2,
    .forward = gelu_forward,
    .backward = gelu_backward,
};
