/* api.c - the public entry points: validate, then one indirect call into the active kernels. */
#include "ln_internal.h"

LN_API int ln_forward_ex_f32(const float *x, size_t ldx, const float *gamma, const float *beta,
                             float *y, size_t ldy, float *mean, float *rstd, size_t rows,
                             size_t cols, float eps, unsigned flags)
{
    if (rows == 0)
        return LN_OK;
    const ln_fwd_args a = {.x = x, .ldx = ldx, .gamma = gamma, .beta = beta, .y = y, .ldy = ldy,
                           .mean = mean, .rstd = rstd, .cols = cols, .eps = eps, .flags = flags};
    const int st = ln_check_forward(&a, rows, LN_FLAG_RMS_NORM);
    if (st != LN_OK)
        return st;
    ln_active()->forward(&a, 0, rows);
    return LN_OK;
}

LN_API int ln_forward_f32(const float *x, const float *gamma, const float *beta, float *y,
                          float *mean, float *rstd, size_t rows, size_t cols, float eps)
{
    return ln_forward_ex_f32(x, cols, gamma, beta, y, cols, mean, rstd, rows, cols, eps, 0);
}

LN_API int ln_add_forward_f32(const float *x, const float *residual, const float *gamma,
                              const float *beta, float *sum, float *y, float *mean, float *rstd,
                              size_t rows, size_t cols, float eps, unsigned flags)
{
    if (rows == 0)
        return LN_OK;
    if (!residual)
        return LN_ERR_NULL;
    const ln_fwd_args a = {.x = x, .ldx = cols, .gamma = gamma, .beta = beta, .y = y, .ldy = cols,
                           .mean = mean, .rstd = rstd, .cols = cols, .eps = eps, .flags = flags,
                           .residual = residual, .sum = sum};
    const int st = ln_check_forward(&a, rows, LN_FLAG_RMS_NORM);
    if (st != LN_OK)
        return st;
    ln_active()->forward(&a, 0, rows);
    return LN_OK;
}

LN_API int ln_backward_ex_f32(const float *dy, size_t lddy, const float *x, size_t ldx,
                              const float *gamma, const float *mean, const float *rstd, float *dx,
                              size_t lddx, float *dgamma, float *dbeta, size_t rows, size_t cols,
                              unsigned flags)
{
    if (rows == 0)
        return LN_OK;
    const ln_bwd_args a = {.dy = dy, .lddy = lddy, .x = x, .ldx = ldx, .gamma = gamma, .mean = mean,
                           .rstd = rstd, .dx = dx, .lddx = lddx, .cols = cols, .flags = flags};
    const int st =
        ln_check_backward(&a, dgamma, dbeta, rows, LN_FLAG_RMS_NORM | LN_FLAG_ACCUMULATE);
    if (st != LN_OK)
        return st;
    return ln_backward_run(ln_active(), &a, rows, dgamma, dbeta);
}

LN_API int ln_backward_f32(const float *dy, const float *x, const float *gamma, const float *mean,
                           const float *rstd, float *dx, float *dgamma, float *dbeta, size_t rows,
                           size_t cols)
{
    return ln_backward_ex_f32(dy, cols, x, cols, gamma, mean, rstd, dx, cols, dgamma, dbeta, rows,
                              cols, 0);
}

LN_API const char *ln_status_string(int status)
{
    switch (status) {
    case LN_OK: return "success";
    case LN_ERR_NULL: return "a required pointer is NULL";
    case LN_ERR_SHAPE:
        return "invalid shape: cols is 0, a row stride is below cols, or a size overflows";
    case LN_ERR_EPS: return "eps must be finite and >= 0";
    case LN_ERR_ALIAS: return "operands overlap in a way that is not allowed";
    case LN_ERR_ISA: return "unknown ISA, or not available on this CPU or build";
    case LN_ERR_NOMEM: return "out of memory";
    case LN_ERR_FLAGS: return "unknown flag bits for this function";
    default: return "unknown status";
    }
}

LN_API unsigned ln_version(void)
{
    return LN_VERSION_MAJOR * 10000u + LN_VERSION_MINOR * 100u + LN_VERSION_PATCH;
}

LN_API const char *ln_version_string(void) { return LN_VERSION_STRING; }
