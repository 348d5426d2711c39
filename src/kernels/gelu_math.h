/* gelu_math.h - GELU's inline exp and erfcx (tools/fit_gelu.py fits them) over a vocabulary. */
#ifndef LN_KERNELS_GELU_MATH_H
#define LN_KERNELS_GELU_MATH_H

/*
 * Included by gelu_body.h. Nothing here is called out of line: a vector takes ~40
 * instructions with no call, so several vectors per loop iteration stay in registers.
 * The constants are tools/fit_gelu.py's output, verbatim; its header states how they
 * were fitted and how the float evaluation was checked.
 */

/* exp(r) = 1 + r + r^2 U(r), |r| <= ln2/2: fit error 2^-28.3 relative, float evaluation
   within 0.70 ulp (the last fma's rounding plus the fit and earlier roundings, damped by
   |r|). */
#define LN_EXP_U0 0x1.fffffcp-2f
#define LN_EXP_U1 0x1.555492p-3f
#define LN_EXP_U2 0x1.5558f4p-5f
#define LN_EXP_U3 0x1.123a22p-7f
#define LN_EXP_U4 0x1.6a23cp-10f

/* erfcx(t) = exp(t^2) erfc(t) = Q(a) / (sqrt(pi/2) a Q(a) + P(a)) for a = sqrt(2) t in
   [0, 20] (a is |x|, exact): the continued-fraction shape c / (t + g), g = P / (sqrt(pi)
   Q), fit error 2^-29.9 relative (fitted in t, the k-th coefficient then scaled by
   2^(-k/2), so P(0) = Q(0) = 1 stay exact). Evaluated in float as below (1 + dt kept
   exactly, the remainder kept) R is within 1.48 ulp even when rounded once more
   (tools/fit_gelu.py; a plain Horner P, fma denominator and division would give 2.55,
   at a -> 0, where R is just below 1 and the roundings of P ~ 1 count double). */
#define LN_ERFCX_P1 0x1.48a7fap-1f
#define LN_ERFCX_P2 0x1.b6bfacp-3f
#define LN_ERFCX_P3 0x1.3f6d14p-5f
#define LN_ERFCX_P4 0x1.b278b2p-9f
#define LN_ERFCX_Q1 0x1.18eb06p+0f
#define LN_ERFCX_Q2 0x1.279d38p-1f
#define LN_ERFCX_Q3 0x1.687578p-3f
#define LN_ERFCX_Q4 0x1.fde0fap-6f
#define LN_ERFCX_Q5 0x1.5aa31ap-9f

/* The exp below returns exp(a) 2^64 (LN_EXP_SCALE): its 2^n factor is then always a
   normal float for a >= LN_EXP_MIN, and the callers apply 2^-64 once, to the product
   they return, so a result near FLT_MIN keeps its digits even where exp(a) alone would
   be subnormal (the backward near f' ~ 1e-38: x ~ -10.2 tanh form, x ~ -13.3 erf form). */
#define LN_EXP_SCALE 0x1p64f
#define LN_EXP_UNSCALE 0x1p-64f
/* Arguments are <= 0. Below -120 every result the callers form underflows to 0 (they
   multiply exp(a) by at most ~2^11); clamping there keeps n + 64 >= -110. */
#define LN_EXP_MIN (-120.0f)

/* exp(r) as hi + *lo for |r| <= ln2/2. The last Horner step v r + 1 is left unrounded:
   hi = fma(v, r, 1) and lo its exact rounding error (1 - hi is exact, hi being within a
   factor 2 of 1), so a caller can fold lo into its next fma and exp costs ~0.2 ulp
   instead of its last rounding. */
LN_INLINE V exp_poly(V r, V *lo)
{
    const V one = v_set1(1.0f);
    V u = v_fma(v_set1(LN_EXP_U4), r, v_set1(LN_EXP_U3));
    u = v_fma(u, r, v_set1(LN_EXP_U2));
    u = v_fma(u, r, v_set1(LN_EXP_U1));
    u = v_fma(u, r, v_set1(LN_EXP_U0));
    const V v = v_fma(u, r, one), ph = v_fma(v, r, one);
    *lo = v_fma(v, r, v_sub(one, ph));
    return ph;
}

#define LN_EXP_SHIFTER (0x1.8p23f + 191.0f)

/* exp(a) 2^64 for a <= 0 (NaN passes) as (hi + *lo) *scale, *scale = 2^(n+64) from the
   shifter's k = n + 191 + 1.5 2^23 (its low mantissa bits hold the biased exponent):
   n = rint(a / ln2), r = a - n ln2 in two fma (the first exact: n has <= 8 bits, ln2_hi
   24). The caller applies the scale once, to its final sum. */
LN_INLINE V exp_scaled(V a, V *lo, V *scale)
{
    const V shifter = v_set1(LN_EXP_SHIFTER);
    a = v_max(v_set1(LN_EXP_MIN), a);
    const V k = v_fma(a, v_set1(0x1.715476p+0f), shifter);
    const V n = v_sub(k, shifter);
    V r = v_fma(n, v_set1(-0x1.62e43p-1f), a);
    r = v_fma(n, v_set1(0x1.05c61p-29f), r); /* -(ln2 - ln2_hi) */
    *scale = v_shl23(k);
    return exp_poly(r, lo);
}

/* exp(A v) 2^64 (A = 2C, gelu.h) for v = vh + vl <= 0 (NaN passes), the tanh form's
   e = exp(-|w|) without forming w = A v: n = rint(A vh / ln2), then the reduction runs
   in v's units, M = ln2 / A = Mh + Ml with Mh of 14 bits. u = vh - n Mh is exact (n Mh
   has <= 22 bits; u, |u| <= M/2 + tiny, is a multiple of ulp(vh) below 2^-2: 24 bits at
   most), so r = A (u + vl - n Ml) ~ Ah u + (Ah vl - n A Ml) takes one rounding, the last
   fma's; the small sum's terms are ~2^-24 of r or less. The term Al u (A's low part,
   2^-24.4, times |u| <= 0.22) is left out: <= 2^-26.6 in r, so <= 0.16 ulp of e, the
   price of one multiply on the busiest pipes. vh is clamped at
   LN_EXP_MIN / A as exp_scaled clamps a. exp's low part is dropped: e's one rounding is
   what hi + lo would round to anyway, and no lower-order term remains to fold it into.
   The factor 2^(n+64): a multiply by the float whose bits are k's shifted (k's low bits
   the biased exponent n + 191), or with iadd (set only where the vocabulary has
   LN_GELU_EXP_IADD: gelu_body.h's LN_GELU_IADD) an
   integer add of n + 64 to the polynomial's exponent field (the low bits then hold
   n + 64, in two's complement when negative): the same bits, p 2^(n+64) being normal (p
   within [0.7, 1.42], n + 64 >= -109 for vh >= LN_EXPV_VMIN); the add runs beside the
   multiply-add pipes, which bound the loops (kernels/gelu_body.h says where it is used).
   Constants: tools/fit_gelu.py. */
#define LN_EXPV_A_LN2 0x1.26aec2p+1f /* A / ln2 */
#define LN_EXPV_MH 0x1.bcc8p-2f      /* ln2 / A to 14 bits */
#define LN_EXPV_AML 0x1.dc1p-17f     /* A (ln2 / A - Mh) = ln2 - A Mh */
#define LN_EXPV_VMIN (-75.0f)        /* > LN_EXP_MIN / A = -75.199 */
#define LN_EXPV_SHIFTER_IADD (0x1.8p23f + 64.0f)
LN_INLINE V exp_av(V vh, V vl, int iadd)
{
    V lo;
    const V shifter = v_set1(iadd ? LN_EXPV_SHIFTER_IADD : LN_EXP_SHIFTER);
    const V ah = vset(LN_GELU_HI(LN_GELU_2C));
    vh = v_max(v_set1(LN_EXPV_VMIN), vh);
    const V k = v_fma(vh, v_set1(LN_EXPV_A_LN2), shifter);
    const V n = v_sub(k, shifter);
    const V u = v_fnma(n, v_set1(LN_EXPV_MH), vh);
    const V c = v_fnma(n, v_set1(LN_EXPV_AML), v_mul(ah, vl));
    const V p = exp_poly(v_fma(ah, u, c), &lo);
#ifdef LN_GELU_EXP_IADD
    if (iadd)
        return v_iadd(p, v_shl23(k));
#endif
    return v_mul(p, v_shl23(k));
}

/* erfcx(a / sqrt 2) (a >= 0) as r + *rlo, given sqrt(pi/2) a as tp + tpl (its rounding
   stays out of the denominator, which it dominates for large a). The denominator's
   exact 1 is kept apart: P - 1 by Horner (its roundings scale with a, not with P ~ 1,
   which used to count double near a = 0 where R is just below 1), dt = tp Q + P - 1
   rounded once (dt / (1 + dt) of 2^-24 relative), and den + dl = 1 + dt exactly (den - 1
   is exact for den >= 1, and dt - (den - 1) is the exact error whichever of 1 and dt is
   larger). *rlo = (q - r den - r dl) / den is the quotient's remainder over an
   approximate 1/den (8+ bits suffice for a 2^-24 correction): R carries neither the
   sum's nor the division's rounding, which near x ~ -0.75 the backward's cancellation
   would amplify. */
LN_INLINE V erfcx(V a, V tp, V tpl, V *rlo)
{
    V p = v_fma(v_set1(LN_ERFCX_P4), a, v_set1(LN_ERFCX_P3));
    V q = v_fma(v_set1(LN_ERFCX_Q5), a, v_set1(LN_ERFCX_Q4));
    p = v_fma(p, a, v_set1(LN_ERFCX_P2));
    q = v_fma(q, a, v_set1(LN_ERFCX_Q3));
    p = v_fma(p, a, v_set1(LN_ERFCX_P1));
    q = v_fma(q, a, v_set1(LN_ERFCX_Q2));
    p = v_mul(p, a);
    q = v_fma(q, a, v_set1(LN_ERFCX_Q1));
    q = v_fma(q, a, v_set1(1.0f));
    const V one = v_set1(1.0f), dt = v_fma(tp, q, v_fma(tpl, q, p));
    const V den = v_add(one, dt), dl = v_sub(dt, v_sub(den, one));
    const V rc = v_rcp_approx(den);
#ifdef LN_RCP_APPROX_14
    /* rc within 2^-14 (AVX-512 rcp14): r = q rc is that close, the remainder's fnma is
       then exact to 2^-38 and *rlo, off by 2^-14 of itself, leaves 2^-28 of R. */
    const V r = v_mul(q, rc);
#else
    const V r = v_quot(q, den);
#endif
    *rlo = v_mul(v_fnma(r, dl, v_fnma(r, den, q)), rc);
    return r;
}

#endif /* LN_KERNELS_GELU_MATH_H */
