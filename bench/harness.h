// harness.h - the benchmark harness: problems per regime, cache flushing, and the registration helper.
#ifndef LN_BENCH_HARNESS_H
#define LN_BENCH_HARNESS_H

// A new benchmark is a few lines in a cases_*.cc registration function. Another kernel
// of an existing op: lnb::add_fwd("name", [](const lnb::Problem &p) { ...call... });
// it then runs for every cols, hot and cold, beside the others. A new op gets its own
// tables, roof and (optionally) check, e.g. RMSNorm:
//     lnb::add_fwd("api", [](const lnb::Problem &p) {
//         ln_forward_ex_f32(p.x, p.cols, p.gamma, p.beta, p.y, p.cols, p.mean, p.rstd,
//                           p.rows, p.cols, 1e-5f, LN_FLAG_RMS_NORM);
//     }, "rms_fwd");
//     lnb::add_stream("rms_fwd", false);
// Other traffic (fused residual add: 16 B/element; bf16) is lnb::add_case with its own
// operands and bytes_per_elem. Untimed setup (a primitive, a thread count) goes in a
// Make. Runs that need wall-clock time (several threads) must not use the thread CPU
// clock: see run_case.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace lnb {

// hot: x ~ 256 KiB reused (L2-resident); cold: x ~ 64 MiB, flushed before every timed
// call; row1: one row, hot (call latency); warm: x = 12 MiB reused, never flushed (the bf16
// issue's tensors: 4096 rows of 768 columns, past L2 and within a large L3).
enum class Regime { hot, cold, row1, warm };

// Operand bits: which buffers a case touches, so the cold regime flushes exactly those.
enum : unsigned {
    OP_X = 1u << 0, OP_Y = 1u << 1, OP_GAMMA = 1u << 2, OP_BETA = 1u << 3,
    OP_MEAN = 1u << 4, OP_RSTD = 1u << 5, OP_DY = 1u << 6, OP_DX = 1u << 7,
    OP_DGAMMA = 1u << 8, OP_DBETA = 1u << 9,
};
constexpr unsigned OPS_FWD = OP_X | OP_Y | OP_GAMMA | OP_BETA | OP_MEAN | OP_RSTD;
constexpr unsigned OPS_BWD = OP_DY | OP_X | OP_GAMMA | OP_MEAN | OP_RSTD | OP_DX | OP_DGAMMA | OP_DBETA;
constexpr unsigned OPS_GELU_BWD = OP_DY | OP_X | OP_DX; // dx = dy f'(x): what GELU backward moves

// One problem: rows x cols row-major, contiguous (ld == cols). Every buffer is valid
// whatever the case uses; for a backward case mean/rstd already hold x's statistics, and
// var the variance those give (1/rstd^2 - eps), for a competitor that takes it instead of
// rstd (oneDNN): its own buffer, so the cases timed beside it still read rstd.
struct Problem {
    size_t rows, cols;
    float *x, *y, *gamma, *beta, *mean, *rstd, *dy, *dx, *dgamma, *dbeta, *var;
};

using Call = std::function<void()>;
// Untimed setup for one run (e.g. a oneDNN primitive); returns the call to time.
using Make = std::function<Call(const Problem &)>;

struct Case {
    std::string op;       // report group: "fwd", "bwd" (later e.g. "rms_fwd", "fwd_res")
    std::string impl;     // line in the report: "api", a kernel name, "naive", "onednn", "stream"
    Make make;
    unsigned operands;    // flushed in the cold regime
    double bytes_per_elem; // the traffic convention: 8 forward, 12 backward
    bool needs_stats;     // fill mean/rstd from x before make() (backward inputs)
    std::vector<Regime> regimes;
    bool checked = true;  // outputs held to the op's check (a stream is no LayerNorm)
    bool wall_clock = false; // several threads: time the wall, not this thread's CPU
};

// Returns "" when a case's outputs after one call are right, else what is wrong.
using Check = std::function<std::string(const Problem &)>;

// Every case of `op` is checked once per cols (hot, untimed, after its first call); a
// failing one is reported as an error instead of a figure.
void set_check(const std::string &op, Check check);

// Registers a case for every cols of each of its regimes in the chosen sweep.
void add_case(const Case &c);

// The common shapes in one line each: a forward (8 B/element, LayerNorm's operands) or
// backward (12 B/element, statistics filled in) case over hot and cold.
using Simple = std::function<void(const Problem &)>;
void add_fwd(const std::string &impl, Simple f, const std::string &op = "fwd");
void add_bwd(const std::string &impl, Simple f, const std::string &op = "bwd");
void add_fwd(const std::string &impl, Make make, const std::string &op = "fwd");
void add_bwd(const std::string &impl, Make make, const std::string &op = "bwd");

// The roof of an op with forward's traffic (y = x) or backward's (dx = dy + x).
void add_stream(const std::string &op, bool backward);

// Recorded in the JSON context, where report.py reads it (e.g. "onednn" -> version).
void note(const std::string &key, const std::string &value);

// Turns the added cases into Google Benchmark runs for a sweep ("quick", "full", "smoke")
// and returns how many timed runs (repetitions) those the filter selects will make.
// explicit_reps: the --benchmark_repetitions the user passed (then kept), else 0.
size_t register_all(const std::string &sweep, int explicit_reps, const std::string &filter);

// Fills a buffer with uniform floats in [lo, hi) from a fixed seed.
void fill_uniform(float *p, size_t n, float lo, float hi, unsigned seed);

} // namespace lnb

// Registration entry points of the case files (cases_*.cc).
void ln_bench_cases_layernorm();
void ln_bench_cases_onednn();
void ln_bench_cases_strided_flags();
void ln_bench_cases_threads();
void ln_bench_cases_bf16_gelu(); // bf16 LayerNorm and GELU (1.3)

#endif // LN_BENCH_HARNESS_H
