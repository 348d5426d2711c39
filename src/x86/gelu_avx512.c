/* gelu_avx512.c - GELU forward/backward with AVX-512 on SLEEF's vector exp and erfc. */
#include "avx512_vocab.h"
#include "ln_internal.h"

#include "kernels/gelu_body.h"

const ln_gelu_kernels ln_gelu_kernels_avx512 = {
    .isa = LN_ISA_AVX512,
    .forward = gelu_forward,
    .backward = gelu_backward,
};
