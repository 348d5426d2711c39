// cases_threads.cc - 1 vs 2 threads through the public API, against a 2-thread stream.
#include <string>
#include <vector>

#include <omp.h>

#include "baselines.h"
#include "harness.h"

extern "C" {
#include "layernorm.h"
}

// Ops "fwd_mt" and "bwd_mt": impl "api" runs with 2 threads, "api_1t" with 1, and their
// "stream" roof is the same copy (dx = dy + x) split over 2 threads, so the report's
// "% stream" is the share of the 2-thread roof measured in the same run. Every case is
// timed on the wall clock: the second thread's time is not the caller's CPU time.

namespace
{

constexpr float kEps = 1e-5f;

// The count is set on every call (one relaxed store): cases run one after another, and
// every other case must find the default, 1, again.
lnb::Call forward_call(const lnb::Problem &p, int threads)
{
    return [p, threads] {
        ln_set_num_threads(threads);
        ln_forward_f32(p.x, p.gamma, p.beta, p.y, p.mean, p.rstd, p.rows, p.cols, kEps);
        ln_set_num_threads(1);
    };
}

lnb::Call backward_call(const lnb::Problem &p, int threads)
{
    return [p, threads] {
        ln_set_num_threads(threads);
        ln_backward_f32(p.dy, p.x, p.gamma, p.mean, p.rstd, p.dx, p.dgamma, p.dbeta, p.rows,
                        p.cols);
        ln_set_num_threads(1);
    };
}

// The stream loops of stream.c (nt: their non-temporal twins), each thread on its half.
lnb::Call stream_call(const lnb::Problem &p, bool backward, bool nt_stores)
{
    auto copy = ln_bench_stream_copy;
    auto add = ln_bench_stream_add;
#if LN_BENCH_HAVE_STREAM_NT
    if (nt_stores)
        copy = ln_bench_stream_copy_nt, add = ln_bench_stream_add_nt;
#endif
    (void)nt_stores;
    return [p, backward, copy, add] {
        const size_t n = p.rows * p.cols;
#pragma omp parallel num_threads(2)
        {
            const size_t i = static_cast<size_t>(omp_get_thread_num());
            const size_t nt = static_cast<size_t>(omp_get_num_threads());
            const size_t lo = n / nt * i, len = (i + 1 == nt ? n : lo + n / nt) - lo;
            if (backward)
                add(p.dy + lo, p.x + lo, p.dx + lo, len);
            else
                copy(p.x + lo, p.y + lo, len);
        }
    };
}

void add(const std::string &op, const std::string &impl, lnb::Make make, bool backward,
         bool checked, std::vector<lnb::Regime> regimes = {lnb::Regime::hot, lnb::Regime::cold})
{
    lnb::Case c{op,
                impl,
                std::move(make),
                backward ? lnb::OPS_BWD : lnb::OPS_FWD,
                backward ? 12.0 : 8.0,
                backward,
                std::move(regimes)};
    if (!checked) // a stream is no LayerNorm; its operands are the stream's own
        c.checked = false, c.needs_stats = false,
        c.operands = backward ? lnb::OP_DY | lnb::OP_X | lnb::OP_DX : lnb::OP_X | lnb::OP_Y;
    c.wall_clock = true;
    lnb::add_case(c);
}

} // namespace

void ln_bench_cases_threads()
{
    for (int threads : {2, 1}) {
        const std::string impl = threads == 2 ? "api" : "api_1t";
        // Warm as well: the f32 side of the bf16 issue's warm targets.
        const std::vector<lnb::Regime> all = {lnb::Regime::hot, lnb::Regime::cold,
                                              lnb::Regime::warm};
        add(
            "fwd_mt", impl, [threads](const lnb::Problem &p) { return forward_call(p, threads); },
            false, true, all);
        add(
            "bwd_mt", impl, [threads](const lnb::Problem &p) { return backward_call(p, threads); },
            true, true, all);
    }
    for (bool backward : {false, true}) {
        const std::string op = backward ? "bwd_mt" : "fwd_mt";
        add(
            op, "stream",
            [backward](const lnb::Problem &p) { return stream_call(p, backward, false); }, backward,
            false);
#if LN_BENCH_HAVE_STREAM_NT
        // Cold only, like the 1-thread harness's: the roof of a kernel storing non-temporally.
        add(op, "stream_nt",
            [backward](const lnb::Problem &p) { return stream_call(p, backward, true); }, backward,
            false, {lnb::Regime::cold});
#endif
    }
}
