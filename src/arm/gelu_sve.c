/* gelu_sve.c - GELU forward/backward with SVE (any vector length): inline exp and erfcx. */
#include <arm_sve.h>

#include "ln_internal.h"

/*
 * The GELU body needs no array or struct of vectors, so SVE's sizeless type can run it
 * too: the lane count is read at run time, full vectors go through all-true predicates
 * and the tail through one svwhilelt predicate (inactive lanes neither read nor written).
 */
typedef svfloat32_t V;
typedef svbool_t VM;
#define LN_W ((size_t)svcntw())
#define PT svptrue_b32()

static inline V v_load(const float *p) { return svld1_f32(PT, p); }
static inline V v_loadm(const float *p, VM m) { return svld1_f32(m, p); }
static inline void v_store(float *p, V v) { svst1_f32(PT, p, v); }
static inline void v_storem(float *p, VM m, V v) { svst1_f32(m, p, v); }
static inline VM v_tailmask(unsigned t) { return svwhilelt_b32_u32(0, t); }
static inline V v_set1(float f) { return svdup_n_f32(f); }
static inline V v_add(V a, V b) { return svadd_f32_x(PT, a, b); }
static inline V v_sub(V a, V b) { return svsub_f32_x(PT, a, b); }
static inline V v_mul(V a, V b) { return svmul_f32_x(PT, a, b); }
static inline V v_fma(V a, V b, V c) { return svmla_f32_x(PT, c, a, b); }
static inline V v_fnma(V a, V b, V c) { return svmls_f32_x(PT, c, a, b); }
static inline V v_fms(V a, V b, V c) { return svnmls_f32_x(PT, c, a, b); }
/* FMAX/FMIN return NaN for a NaN in either operand, which passes it on. */
static inline V v_max(V a, V b) { return svmax_f32_x(PT, a, b); }
static inline V v_min(V a, V b) { return svmin_f32_x(PT, a, b); }
static inline svuint32_t u(V a) { return svreinterpret_u32_f32(a); }
static inline V v_or(V a, V b) { return svreinterpret_f32_u32(svorr_u32_x(PT, u(a), u(b))); }
static inline V v_xor(V a, V b) { return svreinterpret_f32_u32(sveor_u32_x(PT, u(a), u(b))); }
static inline V v_andnot(V a, V b) { return svreinterpret_f32_u32(svbic_u32_x(PT, u(b), u(a))); }
static inline V v_select_ge0(V h, V a, V b) { return svsel_f32(svcmpge_n_f32(PT, h, 0.0f), a, b); }
#define LN_GELU_NV 2 /* up to 2048-bit vectors: two chains already cover the latencies */
#define LN_GELU_SIZELESS 1
static inline V v_abs(V a) { return svabs_f32_x(PT, a); }
static inline V v_shl23(V k) { return svreinterpret_f32_u32(svlsl_n_u32_x(PT, u(k), 23)); }
static inline V v_quot(V a, V b) { return svdiv_f32_x(PT, a, b); }
static inline V v_rcp_approx(V b) { return svrecpe_f32(b); } /* FRECPE: 8 bits */

#include "kernels/gelu_body.h"

#include "kernels/entries.h"

LN_GELU_ENTRIES(sve)
