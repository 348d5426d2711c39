/* gelu_avx2.c - GELU forward/backward with AVX2+FMA on SLEEF's vector exp and erfc. */
#include "avx2_vocab.h"
#include "ln_internal.h"

#include "kernels/gelu_body.h"

#include "kernels/entries.h"

LN_GELU_ENTRIES(avx2)
