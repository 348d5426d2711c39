/* gelu.h - GELU constants and clamps every kernel shares (the math is in NUMERICS terms). */
#ifndef LN_GELU_H
#define LN_GELU_H

/* tanh form: f(x) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3), since
   0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)). Kernels evaluate the sigmoid with e =
   exp(-2|u|) <= 1, which never overflows: sigmoid(2u) = 1/(1+e) for u >= 0 and e/(1+e)
   for u < 0, so neither side cancels (1 + tanh(u) loses every digit for x < -4). */
#define LN_GELU_2C 1.5957691216057308 /* 2 sqrt(2/pi) */
#define LN_GELU_K 0.044715
/* erf form: f(x) = 0.5 x erfc(-x / sqrt(2)), exact for both signs (1 + erf cancels for
   x < 0, erfc does not); f'(x) = 0.5 erfc(-x/sqrt 2) + x exp(-x^2/2) / sqrt(2 pi). */
#define LN_GELU_RSQRT2 0.70710678118654752
#define LN_GELU_RSQRT2PI 0.39894228040143268

/* The special functions' arguments are formed in float-float (hi + lo): for x < 0 GELU
   falls like exp(-x^2/2), so the rounding of a plain float argument (relative 2^-24,
   absolute |w| 2^-24 with |w| up to 600) would cost |w| ulps in the result; with lo,
   exp(-|hi + lo|) = exp(-|hi|) (1 -+ lo) and erfc(hi + lo) = erfc(hi) - lo erfc'(hi) to
   first order, the neglected terms ~lo^2. The constants are split the same way. */
#define LN_GELU_HI(c) ((float)(c))
#define LN_GELU_LO(c) ((float)((c) - (double)(float)(c)))
#define LN_GELU_2CK (LN_GELU_2C * LN_GELU_K)
#define LN_GELU_2RSQRTPI 1.1283791670955126 /* 2 / sqrt(pi): -erfc'(z) exp(z^2) */
#define LN_GELU_SQRTPI_2 1.2533141373155003 /* sqrt(pi / 2): sqrt(pi) t for t = |x| / sqrt 2 */

/* Beyond |x| = 20 the float results are settled: f(x) = -0 below (|f| < 1e-80 in both
   forms), f'(x) = 0 below and 1 above. Clamping there keeps Inf * 0 out of the formulas
   (f(-Inf) would be NaN); the forward clamps only below, since f(+Inf) = +Inf. Kernels
   clamp as max(-20, x), the operand order that lets a NaN through. */
#define LN_GELU_CLAMP 20.0f

#endif
