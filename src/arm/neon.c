/* neon.c - LayerNorm forward and backward kernels for AArch64 Advanced SIMD (4 float lanes). */
#include "ln_internal.h"

#include "arm/neon_vocab.h"

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"

#include "kernels/entries.h"

LN_F32_ENTRIES(neon, forward_kernel, backward_kernel)
