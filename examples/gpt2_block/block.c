/* block.c - one Pre-LN GPT-2 block: LayerNorms and GELU from liblayernorm, matmuls from a
   BLAS (cblas_sgemm), causal self-attention written out; forward and its backward. */
#include "block.h"

#include <cblas.h>
#include <layernorm.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-5f /* GPT-2's LayerNorm epsilon */

size_t block_param_sizes(block_shape s, size_t sz[NPARAMS])
{
    const size_t C = (size_t)s.C;
    const size_t n[NPARAMS] = {C, C, 3 * C * C, 3 * C, C * C,     C,
                               C, C, 4 * C * C, 4 * C, 4 * C * C, C};
    size_t total = 0;
    for (int i = 0; i < NPARAMS; i++)
        total += (sz[i] = n[i]);
    return total;
}

/* Where each tensor starts in a flat parameter (or gradient) array. */
static void offsets(block_shape s, size_t off[NPARAMS])
{
    size_t sz[NPARAMS], o = 0;
    block_param_sizes(s, sz);
    for (int i = 0; i < NPARAMS; i++) {
        off[i] = o;
        o += sz[i];
    }
}

int block_acts_alloc(block_shape s, block_acts *a)
{
    const size_t BT = (size_t)s.B * s.T, C = (size_t)s.C;
    float **p[] = {&a->ln1,  &a->mean1, &a->rstd1, &a->qkv,   &a->att, &a->atty,     &a->attproj,
                   &a->res2, &a->ln2,   &a->mean2, &a->rstd2, &a->fch, &a->fch_gelu, &a->fcproj};
    const size_t n[] = {BT * C, BT,         BT,         BT * 3 * C, (size_t)s.B * s.NH * s.T * s.T,
                        BT * C, BT * C,     BT * C,     BT * C,     BT,
                        BT,     BT * 4 * C, BT * 4 * C, BT * C};
    int ok = 1;
    for (size_t i = 0; i < sizeof n / sizeof *n; i++)
        ok &= (*p[i] = calloc(n[i], sizeof(float))) != NULL;
    if (!ok)
        block_acts_free(a);
    return ok ? 0 : -1;
}

void block_acts_free(block_acts *a)
{
    float *p[] = {a->ln1,  a->mean1, a->rstd1, a->qkv,   a->att, a->atty,     a->attproj,
                  a->res2, a->ln2,   a->mean2, a->rstd2, a->fch, a->fch_gelu, a->fcproj};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        free(p[i]);
    memset(a, 0, sizeof *a);
}

/* out (N x OC) = in (N x IC) W^T + b, W being OC x IC as in torch.nn.Linear. */
static void linear_forward(float *out, const float *in, const float *w, const float *b, int N,
                           int IC, int OC)
{
    for (int n = 0; n < N; n++)
        memcpy(out + (size_t)n * OC, b, (size_t)OC * sizeof *b);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, in, IC, w, IC, 1.0f, out,
                OC);
}

/* din = dout W, dW = dout^T in, db = column sums of dout. */
static void linear_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                            const float *w, int N, int IC, int OC)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, w, IC, 0.0f,
                din, IC);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, in, IC, 0.0f,
                dw, IC);
    memset(db, 0, (size_t)OC * sizeof *db);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++)
            db[o] += dout[(size_t)n * OC + o];
}

/* Per batch and head: P = softmax(Q K^T / sqrt(hs)) with future positions masked out,
   then Y = P V. Q, K and V are column slices of qkv (row stride 3C): no copies. */
static void attention_forward(block_shape s, float *atty, float *att, const float *qkv)
{
    const int T = s.T, C = s.C, hs = C / s.NH;
    for (int b = 0; b < s.B; b++)
        for (int h = 0; h < s.NH; h++) {
            const float *q = qkv + (size_t)b * T * 3 * C + h * hs, *k = q + C, *v = q + 2 * C;
            float *p = att + ((size_t)b * s.NH + h) * T * T;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f / sqrtf((float)hs),
                        q, 3 * C, k, 3 * C, 0.0f, p, T);
            for (int t = 0; t < T; t++) {
                float *row = p + (size_t)t * T, max = row[0], sum = 0;
                for (int u = 1; u <= t; u++)
                    max = fmaxf(max, row[u]);
                for (int u = 0; u <= t; u++)
                    sum += (row[u] = expf(row[u] - max));
                for (int u = 0; u < T; u++)
                    row[u] = u <= t ? row[u] / sum : 0.0f; /* causal: no look ahead */
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, p, T, v, 3 * C,
                        0.0f, atty + (size_t)b * T * C + h * hs, C);
        }
}

/* dP = dY V^T, dV = P^T dY, dS = P (dP - rowsum(P dP)) (softmax), dQ = dS K / sqrt(hs),
   dK = dS^T Q / sqrt(hs). ds: T*T scratch. Masked entries have P = 0, so dS = 0 there. */
static void attention_backward(block_shape s, float *dqkv, float *ds, const float *datty,
                               const float *att, const float *qkv)
{
    const int T = s.T, C = s.C, hs = C / s.NH;
    const float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < s.B; b++)
        for (int h = 0; h < s.NH; h++) {
            const size_t off = (size_t)b * T * 3 * C + h * hs;
            const float *q = qkv + off, *k = q + C, *v = q + 2 * C;
            float *dq = dqkv + off, *dk = dq + C, *dv = dq + 2 * C;
            const float *p = att + ((size_t)b * s.NH + h) * T * T;
            const float *dy = datty + (size_t)b * T * C + h * hs;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dy, C, v, 3 * C,
                        0.0f, ds, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, p, T, dy, C, 0.0f,
                        dv, 3 * C);
            for (int t = 0; t < T; t++) {
                float dot = 0;
                for (int u = 0; u < T; u++)
                    dot += p[t * T + u] * ds[t * T + u];
                for (int u = 0; u < T; u++)
                    ds[t * T + u] = p[t * T + u] * (ds[t * T + u] - dot);
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, ds, T, k, 3 * C,
                        0.0f, dq, 3 * C);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, ds, T, q, 3 * C,
                        0.0f, dk, 3 * C);
        }
}

int block_forward(block_shape s, const float *params, const float *x, block_acts *a, float *out)
{
    const int BT = s.B * s.T, C = s.C;
    size_t off[NPARAMS];
    const float *w[NPARAMS];
    offsets(s, off);
    for (int i = 0; i < NPARAMS; i++)
        w[i] = params + off[i];
    int st = ln_forward_f32(x, w[LN1_W], w[LN1_B], a->ln1, a->mean1, a->rstd1, BT, C, EPS);
    if (st != LN_OK)
        return st;
    linear_forward(a->qkv, a->ln1, w[QKV_W], w[QKV_B], BT, C, 3 * C);
    attention_forward(s, a->atty, a->att, a->qkv);
    linear_forward(a->attproj, a->atty, w[PROJ_W], w[PROJ_B], BT, C, C);
    /* The residual add fused into LayerNorm 2: res2 = attproj + x, ln2 = LN(res2). */
    st = ln_add_forward_f32(a->attproj, x, w[LN2_W], w[LN2_B], a->res2, a->ln2, a->mean2, a->rstd2,
                            BT, C, EPS, 0);
    if (st != LN_OK)
        return st;
    linear_forward(a->fch, a->ln2, w[FC_W], w[FC_B], BT, C, 4 * C);
    st = ln_gelu_forward_f32(a->fch, a->fch_gelu, (size_t)BT * 4 * C, LN_GELU_TANH);
    if (st != LN_OK)
        return st;
    linear_forward(a->fcproj, a->fch_gelu, w[FCPROJ_W], w[FCPROJ_B], BT, 4 * C, C);
    for (size_t i = 0; i < (size_t)BT * C; i++)
        out[i] = a->res2[i] + a->fcproj[i];
    return LN_OK;
}

int block_backward(block_shape s, const float *params, const float *x, const block_acts *a,
                   const float *dout, float *dparams, float *dx)
{
    const int BT = s.B * s.T, C = s.C;
    const size_t n = (size_t)BT * C;
    size_t off[NPARAMS];
    const float *w[NPARAMS];
    float *g[NPARAMS];
    offsets(s, off);
    for (int i = 0; i < NPARAMS; i++)
        w[i] = params + off[i], g[i] = dparams + off[i];
    /* Scratch: the MLP hidden gradient (4n), dqkv (3n), dres2, dln, datty (n each), T*T. */
    float *dfch = malloc((10 * n + (size_t)s.T * s.T) * sizeof(float));
    if (!dfch)
        return LN_ERR_NOMEM;
    float *dqkv = dfch + 4 * n, *dres2 = dqkv + 3 * n, *dln = dres2 + n, *datty = dln + n,
          *ds = datty + n;
    int st;

    /* out = res2 + fcproj: both get dout. */
    linear_backward(dfch, g[FCPROJ_W], g[FCPROJ_B], dout, a->fch_gelu, w[FCPROJ_W], BT, 4 * C, C);
    if ((st = ln_gelu_backward_f32(dfch, a->fch, dfch, 4 * n, LN_GELU_TANH)) != LN_OK)
        goto done; /* in place: dx == dy is allowed */
    linear_backward(dln, g[FC_W], g[FC_B], dfch, a->ln2, w[FC_W], BT, C, 4 * C);
    if ((st = ln_backward_f32(dln, a->res2, w[LN2_W], a->mean2, a->rstd2, dres2, g[LN2_W], g[LN2_B],
                              BT, C)) != LN_OK)
        goto done;
    for (size_t i = 0; i < n; i++)
        dres2[i] += dout[i]; /* the residual path */
    /* res2 = x + attproj: both get dres2. */
    linear_backward(datty, g[PROJ_W], g[PROJ_B], dres2, a->atty, w[PROJ_W], BT, C, C);
    attention_backward(s, dqkv, ds, datty, a->att, a->qkv);
    linear_backward(dln, g[QKV_W], g[QKV_B], dqkv, a->ln1, w[QKV_W], BT, C, 3 * C);
    if ((st = ln_backward_f32(dln, x, w[LN1_W], a->mean1, a->rstd1, dx, g[LN1_W], g[LN1_B], BT,
                              C)) != LN_OK)
        goto done;
    for (size_t i = 0; i < n; i++)
        dx[i] += dres2[i];
done:
    free(dfch);
    return st;
}
