/* gelu_avx512.c - GELU forward/backward with AVX-512: inline exp and erfcx (kernels/gelu_math.h). */
#include "avx512_vocab.h"
#include "ln_internal.h"

#include "kernels/gelu_body.h"

#include "kernels/entries.h"

LN_GELU_ENTRIES(avx512)
