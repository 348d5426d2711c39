// cases_layernorm.cc - our side of the race: every runnable kernel forced, the public API, the baselines.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "baselines.h"
#include "harness.h"

extern "C" {
#include "ln_internal.h"
}

namespace {

constexpr float kEps = 1e-5f;

// Member by member: fields added to the contract later (flags, residual, ...) stay zero.
ln_fwd_args fwd_args(const lnb::Problem &p)
{
    ln_fwd_args a{};
    a.x = p.x, a.ldx = p.cols, a.gamma = p.gamma, a.beta = p.beta, a.y = p.y, a.ldy = p.cols;
    a.mean = p.mean, a.rstd = p.rstd, a.cols = p.cols, a.eps = kEps;
    return a;
}

ln_bwd_args bwd_args(const lnb::Problem &p)
{
    ln_bwd_args a{};
    a.dy = p.dy, a.lddy = p.cols, a.x = p.x, a.ldx = p.cols, a.gamma = p.gamma;
    a.mean = p.mean, a.rstd = p.rstd, a.dx = p.dx, a.lddx = p.cols, a.cols = p.cols;
    return a;
}

// A kernel table through the runner: what the dispatcher would run, minus validation
// (the runner sets the cold calls' args.nt, which the kernel called directly never sees).
void add_kernel(const ln_kernels *k)
{
    lnb::add_fwd(k->name, [k](const lnb::Problem &p) {
        const ln_fwd_args a = fwd_args(p);
        ln_forward_run(k, &a, p.rows);
    });
    lnb::add_bwd(k->name, [k](const lnb::Problem &p) {
        const ln_bwd_args a = bwd_args(p);
        ln_backward_run(k, &a, p.rows, p.dgamma, p.dbeta);
    });
}

// The checks are a net for a competitor computing something else (wrong flags, variance
// taken for rstd, a pass missing), not an accuracy test (tests/ owns that): every output
// must match the scalar oracle within 1e-3 relative to max(1, |reference|), where any
// float kernel is ~1e-6 off and a wrong formula is off by O(1).
std::string compare(const char *what, const float *got, const std::vector<float> &ref)
{
    for (size_t i = 0; i < ref.size(); i++) {
        const double r = ref[i], d = std::fabs(static_cast<double>(got[i]) - r);
        if (!(d <= 1e-3 * std::max(1.0, std::fabs(r))))
            return std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(got[i]) +
                   ", the scalar oracle says " + std::to_string(r);
    }
    return "";
}

// x's statistics and y from the scalar kernel, into fresh buffers.
void oracle_forward(const lnb::Problem &p, std::vector<float> &y, std::vector<float> &mean,
                    std::vector<float> &rstd)
{
    y.resize(p.rows * p.cols), mean.resize(p.rows), rstd.resize(p.rows);
    lnb::Problem q = p;
    q.y = y.data(), q.mean = mean.data(), q.rstd = rstd.data();
    const ln_fwd_args a = fwd_args(q);
    ln_kernels_get(LN_ISA_SCALAR)->forward(&a, 0, p.rows);
}

std::string check_forward(const lnb::Problem &p)
{
    std::vector<float> y, mean, rstd;
    oracle_forward(p, y, mean, rstd);
    return compare("y", p.y, y); // not mean/rstd: oneDNN stores the variance there
}

std::string check_backward(const lnb::Problem &p)
{
    std::vector<float> y, mean, rstd, dx(p.rows * p.cols), dgamma(p.cols), dbeta(p.cols);
    oracle_forward(p, y, mean, rstd);
    lnb::Problem q = p;
    q.mean = mean.data(), q.rstd = rstd.data(), q.dx = dx.data();
    const ln_bwd_args a = bwd_args(q);
    ln_backward_run(ln_kernels_get(LN_ISA_SCALAR), &a, p.rows, dgamma.data(), dbeta.data());
    std::string err = compare("dx", p.dx, dx);
    err = err.empty() ? compare("dgamma", p.dgamma, dgamma) : err;
    return err.empty() ? compare("dbeta", p.dbeta, dbeta) : err;
}

} // namespace

void ln_bench_cases_layernorm()
{
    lnb::set_check("fwd", check_forward);
    lnb::set_check("bwd", check_backward);

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

    lnb::add_stream("fwd", false);
    lnb::add_stream("bwd", true);
}
