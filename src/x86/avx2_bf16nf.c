/* avx2_bf16nf.c - avx2_bf16.c again, stores without NaN quieting (calls with finite float operands). */
#define LN_BF16_NANFREE 1
#include "avx2_bf16.c"
