/* bf16.h - scalar bf16 <-> float conversions: the definition every kernel's rounding matches. */
#ifndef LN_BF16_H
#define LN_BF16_H

#include <stdint.h>
#include <string.h>

/* Exact: a bf16 is the upper half of the float with the same value. */
static inline float ln_bf16_to_f32(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest, ties to even, on the bits: adding 0x7FFF plus the kept lsb carries
   into the kept half exactly when the dropped half is above half, or equal with an odd
   lsb; a carry out of the largest finite value gives Inf, as IEEE rounding does. NaN
   would carry into the exponent, so it is kept apart and made quiet (bit 6 of the
   half is the quiet bit), its sign and high payload kept. */
static inline uint16_t ln_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

#endif
