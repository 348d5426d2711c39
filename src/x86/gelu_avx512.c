/* gelu_avx512.c - GELU forward/backward with AVX-512 on SLEEF's vector exp and erfc. */
#include "avx512_vocab.h"
#include "ln_internal.h"

#include "kernels/gelu_body.h"

#include "kernels/entries.h"

LN_GELU_ENTRIES(avx512)
