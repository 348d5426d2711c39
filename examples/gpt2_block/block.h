/* block.h - one Pre-LN GPT-2 transformer block on liblayernorm and a BLAS: forward, backward. */
#ifndef GPT2_BLOCK_H
#define GPT2_BLOCK_H

#include <stddef.h>

/* The parameters, in this order, in one flat array (and their gradients in another), with
   PyTorch's layouts: a Linear's weight is out_features x in_features. */
enum {
    LN1_W,
    LN1_B,
    QKV_W,
    QKV_B,
    PROJ_W,
    PROJ_B,
    LN2_W,
    LN2_B,
    FC_W,
    FC_B,
    FCPROJ_W,
    FCPROJ_B,
    NPARAMS
};

typedef struct {
    int B, T, C, NH; /* batch, sequence length, channels, attention heads */
} block_shape;

/* What forward keeps for backward. */
typedef struct {
    float *ln1, *mean1, *rstd1; /* LayerNorm 1 of the input x, and its statistics */
    float *qkv;                 /* B*T x 3C: queries, keys, values */
    float *att;                 /* B*NH x T x T: attention probabilities (causal) */
    float *atty, *attproj;      /* attention output per head, and after the projection */
    float *res2;                /* x + attproj: the residual stream after attention */
    float *ln2, *mean2, *rstd2; /* LayerNorm 2 of res2 */
    float *fch, *fch_gelu;      /* B*T x 4C: MLP hidden layer before and after GELU */
    float *fcproj;              /* MLP output */
} block_acts;

/* Element counts of each parameter tensor; returns their sum. */
size_t block_param_sizes(block_shape s, size_t sizes[NPARAMS]);

/* Allocates (zeroed) every activation; returns 0 on success, -1 if out of memory. */
int block_acts_alloc(block_shape s, block_acts *a);
void block_acts_free(block_acts *a);

/* out = x + attn(ln1(x)) + mlp(ln2(x + attn(ln1(x)))), each B*T x C. Returns LN_OK or
   the first failing liblayernorm status. */
int block_forward(block_shape s, const float *params, const float *x, block_acts *a, float *out);

/* Given dout (d loss / d out), writes dparams (same layout as params) and dx. */
int block_backward(block_shape s, const float *params, const float *x, const block_acts *a,
                   const float *dout, float *dparams, float *dx);

#endif
