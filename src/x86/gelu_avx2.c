/* gelu_avx2.c - GELU forward/backward with AVX2+FMA: inline exp and erfcx (kernels/gelu_math.h). */
#include "avx2_vocab.h"
#include "ln_internal.h"

#include "kernels/gelu_body.h"

#include "kernels/entries.h"

LN_GELU_ENTRIES(avx2)
