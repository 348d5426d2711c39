// cases_layernorm.cc - our side of the race: every runnable kernel forced, the public API, the baselines.
#include <string>

#include "baselines.h"
#include "harness.h"

extern "C" {
#include "ln_internal.h"
}

namespace {

constexpr float kEps = 1e-5f;

ln_fwd_args fwd_args(const lnb::Problem &p)
{
    return ln_fwd_args{p.x, p.cols, p.gamma, p.beta, p.y, p.cols, p.mean, p.rstd, p.cols, kEps};
}

ln_bwd_args bwd_args(const lnb::Problem &p)
{
    return ln_bwd_args{p.dy, p.cols, p.x, p.cols, p.gamma, p.mean, p.rstd, p.dx, p.cols, p.cols};
}

// A kernel table reached directly: what the dispatcher would run, minus validation.
void add_kernel(const ln_kernels *k)
{
    lnb::add_fwd(k->name, [k](const lnb::Problem &p) {
        const ln_fwd_args a = fwd_args(p);
        k->forward(&a, 0, p.rows);
    });
    lnb::add_bwd(k->name, [k](const lnb::Problem &p) {
        const ln_bwd_args a = bwd_args(p);
        ln_backward_run(k, &a, p.rows, p.dgamma, p.dbeta);
    });
}

} // namespace

void ln_bench_cases_layernorm()
{
    std::string kernels;
    for (int isa = 0; isa < 32; isa++) { // every id the header may ever define
        if (const ln_kernels *k = ln_kernels_get(isa)) {
            add_kernel(k);
            kernels += (kernels.empty() ? "" : ",") + std::string(k->name);
        }
    }
    lnb::note("ln_kernels", kernels);
    lnb::note("ln_dispatched", ln_isa_name(ln_get_isa()));
    lnb::note("ln_version", ln_version_string());

    auto api_fwd = [](const lnb::Problem &p) {
        ln_forward_f32(p.x, p.gamma, p.beta, p.y, p.mean, p.rstd, p.rows, p.cols, kEps);
    };
    lnb::add_fwd("api", api_fwd);
    lnb::add_bwd("api", [](const lnb::Problem &p) {
        ln_backward_f32(p.dy, p.x, p.gamma, p.mean, p.rstd, p.dx, p.dgamma, p.dbeta, p.rows,
                        p.cols);
    });
    // One-row latency: what a token-by-token inference step pays per LayerNorm.
    lnb::add_case({"fwd", "api", [api_fwd](const lnb::Problem &p) -> lnb::Call {
                       return [api_fwd, p] { api_fwd(p); };
                   },
                   lnb::OPS_FWD, 8.0, false, {lnb::Regime::row1}});

    lnb::add_fwd("naive", [](const lnb::Problem &p) {
        ln_bench_naive_forward(p.x, p.gamma, p.beta, p.y, p.mean, p.rstd, p.rows, p.cols, kEps);
    });
    lnb::add_bwd("naive", [](const lnb::Problem &p) {
        ln_bench_naive_backward(p.dy, p.x, p.gamma, p.mean, p.rstd, p.dx, p.dgamma, p.dbeta,
                                p.rows, p.cols);
    });

    // The roof: same bytes, same regime, only the operands the stream itself moves.
    lnb::add_case({"fwd", "stream", [](const lnb::Problem &p) -> lnb::Call {
                       return [p] { ln_bench_stream_copy(p.x, p.y, p.rows * p.cols); };
                   },
                   lnb::OP_X | lnb::OP_Y, 8.0, false, {lnb::Regime::hot, lnb::Regime::cold}});
    lnb::add_case({"bwd", "stream", [](const lnb::Problem &p) -> lnb::Call {
                       return [p] { ln_bench_stream_add(p.dy, p.x, p.dx, p.rows * p.cols); };
                   },
                   lnb::OP_DY | lnb::OP_X | lnb::OP_DX, 12.0, false,
                   {lnb::Regime::hot, lnb::Regime::cold}});
}
