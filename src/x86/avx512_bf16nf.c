/* avx512_bf16nf.c - avx512_bf16.c again, stores without NaN quieting (calls with finite float operands). */
#define LN_BF16_NANFREE 1
#include "avx512_bf16.c"
