// cases_bf16_gelu.cc - bf16 LayerNorm beside f32 (same elements, half the bytes) and GELU.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "harness.h"

extern "C" {
#include "ln_internal.h"
#include "layernorm.h"
}

namespace
{

constexpr float kEps = 1e-5f;
// The buffers the bf16 cases touch (see to_bf16's note), flushed in the cold regime.
constexpr unsigned kFwdOps =
    lnb::OP_DX | lnb::OP_Y | lnb::OP_GAMMA | lnb::OP_BETA | lnb::OP_MEAN | lnb::OP_RSTD;
constexpr unsigned kBwdOps = lnb::OP_Y | lnb::OP_DX | lnb::OP_GAMMA | lnb::OP_MEAN |
                             lnb::OP_RSTD | lnb::OP_DGAMMA | lnb::OP_DBETA;

// The arena's float operands are shared by every case, so bf16 copies go into buffers
// the bf16 case does not otherwise use (converted untimed, flushed like any operand):
// forward reads bf16 x from dx's buffer and writes bf16 y into y's; backward reads bf16 x
// from the first half of y's buffer and dy from the second (n floats hold 2n bf16), and
// writes dx into dx's. So neither reads what its f32 twin writes (y, dx): the harness
// times the two call by call (partners_of).
uint16_t *to_bf16(const float *src, void *dst_buf, size_t n)
{
    auto *h = static_cast<uint16_t *>(dst_buf);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        std::memcpy(&u, &src[i], sizeof u);
        h[i] = static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    }
    return h;
}

// The backward's dy: the second half of y's buffer, after x.
const uint16_t *bf16_dy(const lnb::Problem &p)
{
    const size_t n = p.rows * p.cols;
    return to_bf16(p.dy, reinterpret_cast<uint16_t *>(p.y) + n, n);
}

lnb::Make bf16_forward(const ln_kernels *k)
{
    return [k](const lnb::Problem &p) -> lnb::Call {
        ln_bf16_fwd_args a{};
        a.x = to_bf16(p.x, p.dx, p.rows * p.cols), a.ldx = p.cols, a.gamma = p.gamma;
        a.beta = p.beta, a.y = reinterpret_cast<uint16_t *>(p.y), a.ldy = p.cols;
        a.mean = p.mean, a.rstd = p.rstd, a.cols = p.cols, a.eps = kEps;
        return [k, a, rows = p.rows] { ln_bf16_forward_run(k, &a, rows); };
    };
}

lnb::Make bf16_backward(const ln_kernels *k)
{
    return [k](const lnb::Problem &p) -> lnb::Call {
        const size_t n = p.rows * p.cols;
        ln_bf16_bwd_args a{};
        a.x = to_bf16(p.x, p.y, n), a.ldx = p.cols;
        a.dy = bf16_dy(p), a.lddy = p.cols;
        a.gamma = p.gamma, a.mean = p.mean, a.rstd = p.rstd;
        a.dx = reinterpret_cast<uint16_t *>(p.dx), a.lddx = p.cols, a.cols = p.cols;
        return [k, a, p] { ln_bf16_backward_run(k, &a, p.rows, p.dgamma, p.dbeta); };
    };
}

// Through the public API with `threads` threads (set per call, back to the default 1 after
// it, as the f32 *_mt cases do): the runner's row split and block fold included.
lnb::Make bf16_forward_api(int threads)
{
    return [threads](const lnb::Problem &p) -> lnb::Call {
        const uint16_t *x = to_bf16(p.x, p.dx, p.rows * p.cols);
        auto *y = reinterpret_cast<uint16_t *>(p.y);
        return [p, x, y, threads] {
            ln_set_num_threads(threads);
            ln_forward_bf16(x, p.gamma, p.beta, y, p.mean, p.rstd, p.rows, p.cols, kEps);
            ln_set_num_threads(1);
        };
    };
}

lnb::Make bf16_backward_api(int threads)
{
    return [threads](const lnb::Problem &p) -> lnb::Call {
        const size_t n = p.rows * p.cols;
        const uint16_t *x = to_bf16(p.x, p.y, n), *dy = bf16_dy(p);
        uint16_t *dx = reinterpret_cast<uint16_t *>(p.dx);
        return [p, x, dy, dx, threads] {
            ln_set_num_threads(threads);
            ln_backward_bf16(dy, x, p.gamma, p.mean, p.rstd, dx, p.dgamma, p.dbeta, p.rows,
                             p.cols);
            ln_set_num_threads(1);
        };
    };
}

// The record's name, and "bf16" after it where it converts with the ISA's BF16 instructions.
std::string bf16_impl(const ln_kernels *k)
{
    return std::string(k->name) + (k->plain != k ? "bf16" : "");
}

// GPT-2's GELU as a plain loop over libm's tanhf: what the library is measured against.
void gelu_libm(const lnb::Problem &p)
{
    const size_t n = p.rows * p.cols;
    for (size_t i = 0; i < n; i++) {
        const float x = p.x[i];
        p.y[i] = 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
}

void gelu_erf_libm(const lnb::Problem &p)
{
    const size_t n = p.rows * p.cols;
    for (size_t i = 0; i < n; i++)
        p.y[i] = 0.5f * p.x[i] * std::erfc(-p.x[i] * 0.70710678f);
}

} // namespace

void ln_bench_cases_bf16_gelu()
{
    // bf16 forward: 4 B/element (2 read, 2 written), backward 6 B; their elements per
    // second against the "fwd"/"bwd" ops' f32 figures are the bf16 speedup (the goal for
    // forward: >= 1.7x cold).
    for (int isa = LN_ISA_SCALAR; isa <= LN_ISA_SVE; isa++)
        if (const ln_kernels *k = ln_kernels_get(isa))
            lnb::add_case({"bf16_fwd",
                           bf16_impl(k),
                           bf16_forward(k),
                           kFwdOps,
                           4.0,
                           false,
                           {lnb::Regime::hot, lnb::Regime::cold},
                           false});
    for (int isa = LN_ISA_SCALAR; isa <= LN_ISA_SVE; isa++)
        if (const ln_kernels *k = ln_kernels_get(isa))
            lnb::add_case({"bf16_bwd",
                           bf16_impl(k),
                           bf16_backward(k),
                           kBwdOps,
                           6.0,
                           true,
                           {lnb::Regime::hot, lnb::Regime::cold},
                           false});
    // The public API at 1 and 2 threads ("api_1t", "api"), on the wall clock like the f32
    // fwd_mt/bwd_mt ops: the 2-thread speedup of bf16 calls, and (warm too) the bf16 issue's
    // targets against those ops.
    const std::vector<lnb::Regime> regimes = {lnb::Regime::hot, lnb::Regime::cold,
                                              lnb::Regime::warm};
    for (int threads : {2, 1}) {
        const std::string impl = threads == 2 ? "api" : "api_1t";
        lnb::Case f{"bf16_fwd_mt", impl, bf16_forward_api(threads), kFwdOps, 4.0, false,
                    regimes, false};
        lnb::Case b{"bf16_bwd_mt", impl, bf16_backward_api(threads), kBwdOps, 6.0, true,
                    regimes, false};
        f.wall_clock = b.wall_clock = true;
        lnb::add_case(f);
        lnb::add_case(b);
    }
    // GELU: elementwise, y = f(x), the traffic of a copy (8 B/element): the stream is its
    // roof; the libm loops are the scalar baseline. Backward, dx = dy f'(x), moves 12
    // B/element like the 3-stream add (its roof). cases_onednn.cc adds oneDNN's eltwise.
    for (int kind = LN_GELU_TANH; kind <= LN_GELU_ERF; kind++) {
        const std::string op = kind == LN_GELU_TANH ? "gelu_tanh" : "gelu_erf";
        lnb::add_fwd(
            "api",
            [kind](const lnb::Problem &p) { ln_gelu_forward_f32(p.x, p.y, p.rows * p.cols, kind); },
            op);
        lnb::add_fwd("libm", kind == LN_GELU_TANH ? gelu_libm : gelu_erf_libm, op);
        lnb::add_stream(op, false);
        const lnb::Simple bwd = [kind](const lnb::Problem &p) {
            ln_gelu_backward_f32(p.dy, p.x, p.dx, p.rows * p.cols, kind);
        };
        lnb::add_case({op + "_bwd", "api", [bwd](const lnb::Problem &p) -> lnb::Call {
                           return [bwd, p] { bwd(p); };
                       },
                       lnb::OPS_GELU_BWD, 12.0, false, {lnb::Regime::hot, lnb::Regime::cold}});
        lnb::add_stream(op + "_bwd", true);
    }
}
