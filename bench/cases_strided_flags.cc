// cases_strided_flags.cc - the 1.1 entry points against their streams: RMSNorm, the fused residual add, strided rows.
#include <cmath>
#include <string>
#include <vector>

#include "harness.h"

extern "C" {
#include "layernorm.h"
}

namespace {

constexpr float kEps = 1e-5f;

// The pre-LN block without fusion: s = x + residual in one pass (written out, as a
// framework's add kernel would), then LayerNorm reads s back. dy stands in for the
// residual and dx for s, so both variants touch buffers of the same sizes.
void add_then_forward(const lnb::Problem &p)
{
    const size_t n = p.rows * p.cols;
    for (size_t i = 0; i < n; i++)
        p.dx[i] = p.x[i] + p.dy[i];
    ln_forward_f32(p.dx, p.gamma, p.beta, p.y, p.mean, p.rstd, p.rows, p.cols, kEps);
}

// y must be LN(x + residual): the unfused path computes it with the plain API.
std::string check_add(const lnb::Problem &p)
{
    const size_t n = p.rows * p.cols;
    std::vector<float> s(n), y(n);
    for (size_t i = 0; i < n; i++)
        s[i] = p.x[i] + p.dy[i];
    ln_forward_f32(s.data(), p.gamma, p.beta, y.data(), nullptr, nullptr, p.rows, p.cols, kEps);
    for (size_t i = 0; i < n; i++)
        if (!(std::fabs(p.y[i] - y[i]) <= 1e-3f * std::fmax(1.0f, std::fabs(y[i]))))
            return "y[" + std::to_string(i) + "] differs from LN(x + residual)";
    return "";
}

const unsigned kOpsAdd = lnb::OP_X | lnb::OP_DY | lnb::OP_Y | lnb::OP_DX | lnb::OP_GAMMA |
                         lnb::OP_BETA | lnb::OP_MEAN | lnb::OP_RSTD;

lnb::Make simple(void (*f)(const lnb::Problem &))
{
    return [f](const lnb::Problem &p) -> lnb::Call { return [f, p] { f(p); }; };
}

} // namespace

// Registered by the full and ext sweeps only, which keeps the quick sweep within its budget.
void ln_bench_cases_strided_flags()
{
    lnb::add_fwd("api", [](const lnb::Problem &p) {
        ln_forward_ex_f32(p.x, p.cols, p.gamma, p.beta, p.y, p.cols, p.mean, p.rstd, p.rows,
                          p.cols, kEps, LN_FLAG_RMS_NORM);
    }, "rms_fwd");
    lnb::add_stream("rms_fwd", false);
    lnb::add_bwd("api", [](const lnb::Problem &p) {
        ln_backward_ex_f32(p.dy, p.cols, p.x, p.cols, p.gamma, nullptr, p.rstd, p.dx, p.cols,
                           p.dgamma, p.dbeta, p.rows, p.cols, LN_FLAG_RMS_NORM);
    }, "rms_bwd");
    lnb::add_stream("rms_bwd", true);
    // LN_FLAG_ACCUMULATE adds to dx, dgamma and dbeta (so also reads dx): counted at the
    // plain backward's 12 B/element, its GB/s compare with "bwd" as times do. Unchecked:
    // repeated calls accumulate, so dx afterwards is no single call's result.
    lnb::add_case({"acc_bwd", "api", simple([](const lnb::Problem &p) {
                       ln_backward_ex_f32(p.dy, p.cols, p.x, p.cols, p.gamma, p.mean, p.rstd,
                                          p.dx, p.cols, p.dgamma, p.dbeta, p.rows, p.cols,
                                          LN_FLAG_ACCUMULATE);
                   }), lnb::OPS_BWD, 12.0, true, {lnb::Regime::hot, lnb::Regime::cold}, false});

    // Fused residual add, 12 B/element (read x and residual, write y), against the same
    // work unfused and against the stream s = x + residual of the same traffic.
    lnb::set_check("add_fwd", check_add);
    lnb::add_case({"add_fwd", "fused", simple([](const lnb::Problem &p) {
                       ln_add_forward_f32(p.x, p.dy, p.gamma, p.beta, nullptr, p.y, p.mean,
                                          p.rstd, p.rows, p.cols, kEps, 0);
                   }), kOpsAdd, 12.0, false, {lnb::Regime::hot, lnb::Regime::cold}});
    lnb::add_case({"add_fwd", "fused_sum", simple([](const lnb::Problem &p) {
                       ln_add_forward_f32(p.x, p.dy, p.gamma, p.beta, p.dx, p.y, p.mean,
                                          p.rstd, p.rows, p.cols, kEps, 0);
                   }), kOpsAdd, 12.0, false, {lnb::Regime::hot, lnb::Regime::cold}});
    lnb::add_case({"add_fwd", "add_then_ln", simple(add_then_forward), kOpsAdd, 12.0, false,
                   {lnb::Regime::hot, lnb::Regime::cold}});
    lnb::add_stream("add_fwd", true);

    // Strided rows: every other row of the buffers as a view (ld = 2 cols), so half the
    // elements move; 4 B/element over the whole problem is the forward's 8 B over those
    // it touches, and the figure compares directly with the contiguous forward's.
    lnb::add_case({"fwd", "api_strided", simple([](const lnb::Problem &p) {
                       ln_forward_ex_f32(p.x, 2 * p.cols, p.gamma, p.beta, p.y, 2 * p.cols,
                                         p.mean, p.rstd, p.rows / 2, p.cols, kEps, 0);
                   }), lnb::OPS_FWD, 4.0, false, {lnb::Regime::hot, lnb::Regime::cold}, false});
}
