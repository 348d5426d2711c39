/* avx512.c - LayerNorm forward and backward kernels for AVX-512 F/BW/VL/DQ (16 lanes). */
#include "ln_internal.h"

#include "avx512_vocab.h"

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"

#include "kernels/entries.h"

LN_F32_ENTRIES(avx512, forward_kernel, backward_kernel)
