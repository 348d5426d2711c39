/* gelu_avx512.c - GELU forward/backward with AVX-512: inline exp and erfcx (kernels/gelu_math.h). */
#include "avx512_vocab.h"
#include "ln_internal.h"

/* rcp14's 14 bits are enough for erfcx's quotient, whose exact remainder it adds anyway:
   no Newton step there (gelu_math.h). */
#define LN_GELU_QUOT_BY_RCP 1

#include "kernels/gelu_body.h"

#include "kernels/entries.h"

LN_GELU_ENTRIES(avx512)
