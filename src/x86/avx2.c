/* avx2.c - LayerNorm forward and backward kernels for AVX2 + FMA (8 float lanes). */
#include "ln_internal.h"

#include "avx2_vocab.h"

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"

#include "kernels/entries.h"

LN_F32_ENTRIES(avx2, forward_kernel, backward_kernel)
