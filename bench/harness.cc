// harness.cc - runs each case in its regime: buffers, statistics, cache flushing, timing, counters.
#include "harness.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <regex>
#include <memory>
#include <set>
#include <stdexcept>

#include <benchmark/benchmark.h>

#include "baselines.h"
#include "progress.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace lnb {
namespace {

constexpr size_t kHotBytes = 256 * 1024;        // x of the hot regime: fits L2 with y
constexpr size_t kColdBytes = 64 * 1024 * 1024; // x of the cold regime: twice any L3 here
constexpr size_t kWarmBytes = 12 * 1024 * 1024; // x of the warm regime: 4096 x 768 floats
constexpr size_t kMaxCols = 16384;
constexpr float kEps = 1e-5f;

size_t regime_bytes(Regime rg)
{
    return rg == Regime::cold ? kColdBytes : rg == Regime::warm ? kWarmBytes : kHotBytes;
}

size_t rows_for(Regime rg, size_t cols)
{
    if (rg == Regime::row1)
        return 1;
    return std::max<size_t>(1, regime_bytes(rg) / (sizeof(float) * cols));
}

const char *regime_name(Regime rg)
{
    return rg == Regime::hot ? "hot" : rg == Regime::cold ? "cold" : rg == Regime::warm ? "warm" : "row1";
}

// Buffer `k` starts 64 * 17 * k bytes past a page boundary: cache-line aligned, but no two
// operands share their address bits 6..11, so streams never 4K-alias each other (a
// store to dx[i] would otherwise look like it feeds a later load of x[i]). Never freed:
// the arenas live as long as the process.
float *alloc_floats(size_t n, unsigned k)
{
    const size_t skew = 64 * 17 * k % 4096, bytes = n * sizeof(float) + skew;
    void *p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!p) {
        std::fprintf(stderr, "ln_bench: cannot allocate %zu bytes\n", bytes);
        std::exit(1);
    }
    std::memset(p, 0, bytes); // fault the pages in now, not inside a timed call
    return reinterpret_cast<float *>(static_cast<char *>(p) + skew);
}

// The buffers of one regime, sized for its largest problem and shared by every case:
// hot cases keep finding them in L2, cold ones pay the same page mapping.
struct Arena {
    size_t elems, max_rows;
    float *x, *y, *gamma, *beta, *mean, *rstd, *dy, *dx, *dgamma, *dbeta, *var;

    explicit Arena(size_t bytes)
        : elems(bytes / sizeof(float)), max_rows(bytes / (sizeof(float) * 64))
    {
        x = alloc_floats(elems, 0);
        y = alloc_floats(elems, 1);
        dy = alloc_floats(elems, 2);
        dx = alloc_floats(elems, 3);
        gamma = alloc_floats(kMaxCols, 4);
        beta = alloc_floats(kMaxCols, 5);
        dgamma = alloc_floats(kMaxCols, 6);
        dbeta = alloc_floats(kMaxCols, 7);
        mean = alloc_floats(max_rows, 8);
        rstd = alloc_floats(max_rows, 9);
        var = alloc_floats(max_rows, 10);
        fill_uniform(x, elems, -2.0f, 2.5f, 1);
        fill_uniform(dy, elems, -1.0f, 1.0f, 2);
        fill_uniform(gamma, kMaxCols, 0.5f, 1.5f, 3);
        fill_uniform(beta, kMaxCols, -0.5f, 0.5f, 4);
    }
    Problem problem(size_t rows, size_t cols) const
    {
        return Problem{rows, cols, x, y, gamma, beta, mean, rstd, dy, dx, dgamma, dbeta, var};
    }
};

Arena &arena(Regime rg)
{
    // cold's 256 MiB (warm's 48) only when a case of that regime runs
    static std::unique_ptr<Arena> hot, cold, warm;
    std::unique_ptr<Arena> &a = rg == Regime::cold ? cold : rg == Regime::warm ? warm : hot;
    if (!a)
        a.reset(new Arena(regime_bytes(rg)));
    return *a;
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("clflushopt"))) void flush_lines_opt(const char *p, const char *end)
{
    for (; p < end; p += 64)
        _mm_clflushopt(const_cast<char *>(p)); // the intrinsic takes void *, yet only evicts
}
void flush_lines_old(const char *p, const char *end)
{
    for (; p < end; p += 64)
        _mm_clflush(p);
}
bool has_clflushopt()
{
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23));
}
#endif

// Writes back and evicts [p, p + bytes) from every cache level.
void flush(const void *ptr, size_t bytes)
{
    const char *p = reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(ptr) & ~uintptr_t{63});
    const char *end = static_cast<const char *>(ptr) + bytes;
#if defined(__x86_64__) || defined(__i386__)
    static const bool opt = has_clflushopt();
    if (opt)
        flush_lines_opt(p, end);
    else
        flush_lines_old(p, end);
#elif defined(__aarch64__)
    for (; p < end; p += 64)
        __asm__ volatile("dc civac, %0" ::"r"(p) : "memory");
#else
    (void)p;
    (void)end; // no flush here: the cold regime then measures a warm L3 (said in context)
#endif
}

void fence()
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_mfence(); // clflushopt is weakly ordered: the flushes must be done before the clock starts
#elif defined(__aarch64__)
    __asm__ volatile("dsb sy" ::: "memory");
#endif
}

void flush_operands(const Problem &p, unsigned ops)
{
    const size_t big = p.rows * p.cols * sizeof(float), vec = p.cols * sizeof(float);
    const size_t stat = p.rows * sizeof(float);
    const struct { unsigned bit; const float *ptr; size_t bytes; } all[] = {
        {OP_X, p.x, big}, {OP_Y, p.y, big}, {OP_DY, p.dy, big}, {OP_DX, p.dx, big},
        {OP_GAMMA, p.gamma, vec}, {OP_BETA, p.beta, vec}, {OP_DGAMMA, p.dgamma, vec},
        {OP_DBETA, p.dbeta, vec}, {OP_MEAN, p.mean, stat}, {OP_RSTD, p.rstd, stat},
        {OP_RSTD, p.var, stat},
    };
    for (const auto &o : all)
        if (ops & o.bit)
            flush(o.ptr, o.bytes);
    fence();
}

// Every regime is timed on this thread's CPU clock (Google Benchmark's default for hot):
// the machines are shared, and time spent descheduled is not the kernel's. Memory stalls
// do count. A multi-threaded case sets Case::wall_clock and is timed on the wall.
double thread_seconds()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_seconds()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<Case> &cases()
{
    static std::vector<Case> v;
    return v;
}

std::map<std::string, Check> &checks()
{
    static std::map<std::string, Check> m;
    return m;
}

// "" when the case computed what its op's check expects (checked once per name).
std::string check_once(const Case &c, const Problem &p)
{
    static std::set<std::string> done;
    const auto it = checks().find(c.op);
    if (!c.checked || it == checks().end() ||
        !done.insert(c.op + "/" + c.impl + "/" + std::to_string(p.cols)).second)
        return "";
    return it->second(p);
}

std::string bench_name(const Case &c, Regime rg, size_t cols)
{
    return c.op + "/" + regime_name(rg) + "/" + c.impl + "/" + std::to_string(cols);
}

const Case *find_case(const std::string &op, const std::string &impl)
{
    for (const Case &c : cases())
        if (c.op == op && c.impl == impl)
            return &c;
    return nullptr;
}

// The cases a case is timed against, alternating with it: the divisors of the speed
// targets (bench/targets.py). Each repetition then gives its own ratio, of calls
// milliseconds apart (cold: call by call; hot and warm: in batches, pair_batches). The
// host's memory bandwidth drifts by up to +-40 % within minutes (README), so the ratio of
// two medians measured minutes apart said less: cold shares of the stream roof above
// 150 % came out of it, and on a shared Zen 3 host RMSNorm's hot backward 0.88x the plain
// one at 4096 cols, where the two alternating measured 1.00-1.04x. The competitors (oneDNN,
// naive) only hot and warm, where the targets divide by them. Partners share the
// problem's buffers, so none may change another's inputs (ACCUMULATE's dx stays finite
// whoever wrote it last): bf16 against f32 pairs because cases_bf16_gelu.cc lays out the
// bf16 copies apart, and oneDNN's backward reads var, not rstd.
std::vector<const Case *> partners_of(const Case &c, Regime rg)
{
    std::vector<const Case *> out;
    const auto add = [&out, rg](const std::string &op, const std::string &impl) {
        const Case *q = find_case(op, impl);
        if (q && std::find(q->regimes.begin(), q->regimes.end(), rg) != q->regimes.end())
            out.push_back(q);
    };
    if (c.impl == "api") {
        add(c.op, "stream");  // the share of the roof
        add(c.op, "api_1t");  // 2 threads against one (the *_mt ops)
        if (c.op == "acc_bwd" || c.op == "rms_bwd")
            add("bwd", "api"); // against the plain backward
        if (rg != Regime::cold) {
            add(c.op, "onednn"); // the hot targets' competitors (bench/targets.py)
            add(c.op, "naive");
        }
    }
    if ((c.op == "bf16_fwd_mt" || c.op == "bf16_bwd_mt") && c.impl == "api_1t")
        add(c.op.substr(5), "api_1t"); // bf16 against f32, one thread
    return out;
}

// A partner's call, its problem (the case's own, or for the tail targets another cols)
// and the thread or wall time it took over the run.
struct Paired {
    const Case *c;
    Problem p;
    Call call;
    double seconds;
};

// The tail targets (bench/targets.py) compare the per-element time of 1601 cols with
// 1600's: the API's forward and backward at 1601 pair with themselves at 1600 (hot and
// cold), over that cols' own rows. Their counter names the cols: vs:fwd/api@1600.
constexpr size_t kTailCols = 1601, kTailBase = 1600;
bool tail_paired(const Case &c, Regime rg, size_t cols)
{
    return c.impl == "api" && (c.op == "fwd" || c.op == "bwd") && cols == kTailCols &&
           (rg == Regime::hot || rg == Regime::cold);
}

// This case's elements per second over the partner's, over this repetition's calls.
void set_ratio(benchmark::State &st, const Problem &own_p, double own, const Paired &q)
{
    const std::string at = q.p.cols == own_p.cols ? "" : "@" + std::to_string(q.p.cols);
    const double elems = static_cast<double>(own_p.rows * own_p.cols) /
                         static_cast<double>(q.p.rows * q.p.cols);
    st.counters["vs:" + q.c->op + "/" + q.c->impl + at] = q.seconds / own * elems;
}

double (*clock_of(const Case &c))()
{
    return c.wall_clock ? wall_seconds : thread_seconds;
}

// The hot and warm regimes' paired ratios, before the timed loop (untimed by the library):
// the case and each partner in alternating batches of about a millisecond of the case's
// calls, ABBA (so a drift across the measurement cancels to first order), each side on
// its own clock as in the cold regime. A batch, not a call, per clock reading: the
// thread clock is a system call, a few % of a hot call of a few microseconds.
constexpr int kPairRounds = 8;
void pair_batches(benchmark::State &st, const Case &c, const Problem &p, const Call &call,
                  std::vector<Paired> &pairs)
{
    double (*const clock)() = clock_of(c);
    const double t0 = wall_seconds();
    call();
    const double one = std::max(wall_seconds() - t0, 1e-7);
    const int batch = std::max(1, static_cast<int>(1e-3 / one));
    const auto timed = [batch](double (*clk)(), const Call &f) {
        const double a = clk();
        for (int i = 0; i < batch; i++)
            f();
        return clk() - a;
    };
    for (Paired &q : pairs) {
        double own = 0.0;
        for (int round = 0; round < kPairRounds; round++) {
            if (round % 2 == 0) {
                own += timed(clock, call);
                q.seconds += timed(clock_of(*q.c), q.call);
            } else {
                q.seconds += timed(clock_of(*q.c), q.call);
                own += timed(clock, call);
            }
        }
        set_ratio(st, p, own, q);
    }
}

void run_case(benchmark::State &st, const Case &c, Regime rg, size_t cols)
{
    const std::string name = bench_name(c, rg, cols);
    progress_call(name, st.max_iterations);
    const size_t rows = rows_for(rg, cols);
    const Problem p = arena(rg).problem(rows, cols);
    const std::vector<const Case *> partners = partners_of(c, rg);
    const bool stats = c.needs_stats || std::any_of(partners.begin(), partners.end(),
                                                    [](const Case *q) { return q->needs_stats; });
    const Problem tail_p = arena(rg).problem(rows_for(rg, kTailBase), kTailBase);
    const bool tail = tail_paired(c, rg, cols);
    // Backward's inputs: x's own statistics, computed untimed. The tail partner's rows
    // first, then this case's over them where they overlap (the buffers are shared):
    // statistics of nearby rows for the partner, finite all the same, which is all its
    // time depends on.
    for (const Problem *s : {tail && c.needs_stats ? &tail_p : nullptr, stats ? &p : nullptr}) {
        if (!s)
            continue;
        ln_bench_naive_forward(s->x, s->gamma, s->beta, s->y, s->mean, s->rstd, s->rows,
                               s->cols, kEps);
        for (size_t r = 0; r < s->rows; r++)
            s->var[r] = 1.0f / (s->rstd[r] * s->rstd[r]) - kEps;
    }
    Call call;
    std::vector<Paired> pairs;
    try { // a competitor's setup may throw (oneDNN: dnnl::error): an error, not a crash
        call = c.make(p);
        for (const Case *q : partners)
            pairs.push_back({q, p, q->make(p), 0.0});
        if (tail)
            pairs.push_back({&c, tail_p, c.make(tail_p), 0.0});
    } catch (const std::exception &e) {
        st.SkipWithError(e.what());
        progress_called(name, st.max_iterations, true);
        return;
    }
    if (rg == Regime::cold) {
        double own = 0.0;
        for (auto _ : st) {
            flush_operands(p, c.operands);
            double (*const clock)() = clock_of(c);
            const double t0 = clock();
            call();
            const double dt = clock() - t0;
            st.SetIterationTime(dt);
            own += dt;
            for (Paired &q : pairs) {
                flush_operands(q.p, q.c->operands);
                double (*const qclock)() = clock_of(*q.c);
                const double q0 = qclock();
                q.call();
                q.seconds += qclock() - q0;
            }
        }
        for (const Paired &q : pairs)
            set_ratio(st, p, own, q);
        progress_called(name, st.max_iterations, true); // a fixed count: no calibration
    } else {
        call(); // warm: the previous run may have been a cold one
        const std::string err = check_once(c, p);
        if (!err.empty()) {
            st.SkipWithError(err.c_str());
            progress_called(name, st.max_iterations, true);
            return;
        }
        if (!pairs.empty())
            pair_batches(st, c, p, call, pairs);
        for (auto _ : st) {
            call();
            benchmark::ClobberMemory();
        }
        progress_called(name, st.max_iterations, false);
    }
    const double elems = static_cast<double>(rows * cols);
    st.SetBytesProcessed(static_cast<int64_t>(static_cast<double>(st.iterations()) * elems *
                                              c.bytes_per_elem));
    // Rate, inverted: seconds per 1e-9 * elems, i.e. nanoseconds per element.
    st.counters["ns_per_elem"] = benchmark::Counter(
        elems * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    st.counters["rows"] = static_cast<double>(rows);
    st.counters["cols"] = static_cast<double>(cols);
}

double stat_min(const std::vector<double> &v) { return *std::min_element(v.begin(), v.end()); }
double stat_max(const std::vector<double> &v) { return *std::max_element(v.begin(), v.end()); }

struct Sweep {
    std::vector<size_t> hot_cols, cold_cols, row1_cols, warm_cols;
    int hot_reps, cold_reps;
    double hot_min_time;
    int cold_iters; // timed calls per repetition; each costs a flush of every operand
};

const std::vector<size_t> kAllCols = {64,   128,  256,  512,  768,   1024,  1280,
                                      1600, 1601, 2048, 4096, 8192, 12288, 16384};
// The bf16 issue's widths (its warm target's tensors), the only cases with a warm regime.
const std::vector<size_t> kWarmCols = {768, 4096};

Sweep sweep_named(const std::string &name)
{
    if (name == "smoke") // CI: every case once, each regime, a full row and a tail
        return {{64, 1601}, {1601}, {768}, {768}, 1, 1, 0.001, 1};
    if (name == "full")
        return {kAllCols, kAllCols, {768, 1600, 4096}, kWarmCols, 9, 7, 0.05, 3};
    if (name == "ext") // the 1.1 entry points beside the plain API, at GPT-2 widths
        return {{768, 1600, 4096, 12288}, {768, 1600, 4096, 12288}, {}, {}, 7, 7, 0.01, 1};
    // quick: every cols hot; cold only where the regime changes character (small rows,
    // GPT-2 sizes, a tail, the largest), one call per repetition (each costs a 64 MiB
    // setup and flush) but still the 7 repetitions PERFORMANCE.md asks for.
    return {kAllCols, {64, 768, 1601, 4096, 16384}, {768, 1600, 4096}, kWarmCols, 7, 7, 0.01, 1};
}

} // namespace

void fill_uniform(float *p, size_t n, float lo, float hi, unsigned seed)
{
    uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13; // xorshift64: fast, fixed, and plenty for benchmark data
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = lo + (hi - lo) * static_cast<float>(s >> 40) * (1.0f / 16777216.0f);
    }
}

void add_case(const Case &c) { cases().push_back(c); }

static Make wrap(Simple f)
{
    return [f](const Problem &p) -> Call { return [f, p] { f(p); }; };
}

void add_fwd(const std::string &impl, Make make, const std::string &op)
{
    add_case({op, impl, std::move(make), OPS_FWD, 8.0, false, {Regime::hot, Regime::cold}});
}
void add_bwd(const std::string &impl, Make make, const std::string &op)
{
    add_case({op, impl, std::move(make), OPS_BWD, 12.0, true, {Regime::hot, Regime::cold}});
}
void add_fwd(const std::string &impl, Simple f, const std::string &op)
{
    add_fwd(impl, wrap(std::move(f)), op);
}
void add_bwd(const std::string &impl, Simple f, const std::string &op)
{
    add_bwd(impl, wrap(std::move(f)), op);
}

// Same bytes, same regime, and only the operands the stream itself moves get flushed.
void add_stream(const std::string &op, bool backward)
{
    const Simple copy = [](const Problem &p) { ln_bench_stream_copy(p.x, p.y, p.rows * p.cols); };
    const Simple add = [](const Problem &p) {
        ln_bench_stream_add(p.dy, p.x, p.dx, p.rows * p.cols);
    };
    const unsigned ops = backward ? OP_DY | OP_X | OP_DX : OP_X | OP_Y;
    const double bpe = backward ? 12.0 : 8.0;
    add_case({op, "stream", wrap(backward ? add : copy), ops, bpe, false,
              {Regime::hot, Regime::cold}, false});
#if LN_BENCH_HAVE_STREAM_NT
    // Cold only: in L2 non-temporal stores are just slower. A kernel using them may beat
    // "stream"; this is the roof it then answers to.
    const Simple copy_nt = [](const Problem &p) {
        ln_bench_stream_copy_nt(p.x, p.y, p.rows * p.cols);
    };
    const Simple add_nt = [](const Problem &p) {
        ln_bench_stream_add_nt(p.dy, p.x, p.dx, p.rows * p.cols);
    };
    add_case({op, "stream_nt", wrap(backward ? add_nt : copy_nt), ops, bpe, false,
              {Regime::cold}, false});
#endif
}

void set_check(const std::string &op, Check check) { checks()[op] = std::move(check); }

void note(const std::string &key, const std::string &value)
{
    benchmark::AddCustomContext(key, value);
}

// Google Benchmark's own filter rule: an extended regex searched in the name, a leading
// '-' negating it; empty or "all" takes everything.
static bool selected(const std::string &name, const std::string &filter)
{
    if (filter.empty() || filter == "all")
        return true;
    const bool negated = filter[0] == '-';
    const std::regex re(negated ? filter.substr(1) : filter, std::regex::extended);
    return std::regex_search(name, re) != negated;
}

size_t register_all(const std::string &sweep_name, int explicit_reps, const std::string &filter)
{
    const Sweep sw = sweep_named(sweep_name);
    note("ln_sweep", sweep_name);
    note("ln_clock", "thread CPU time (wall clock: the *_mt ops)");
    size_t runs = 0;
    for (Regime rg : {Regime::hot, Regime::cold, Regime::row1, Regime::warm}) {
        const auto &cols_list = rg == Regime::hot ? sw.hot_cols
                                : rg == Regime::cold ? sw.cold_cols
                                : rg == Regime::warm ? sw.warm_cols : sw.row1_cols;
        const int reps = explicit_reps > 0 ? explicit_reps
                                           : rg == Regime::cold ? sw.cold_reps : sw.hot_reps;
        for (const Case &c : cases()) {
            if (std::find(c.regimes.begin(), c.regimes.end(), rg) == c.regimes.end())
                continue;
            for (size_t cols : cols_list) {
                const std::string name = bench_name(c, rg, cols);
                auto *b = benchmark::RegisterBenchmark(
                    name.c_str(), [c, rg, cols](benchmark::State &st) { run_case(st, c, rg, cols); });
                b->ComputeStatistics("min", stat_min)->ComputeStatistics("max", stat_max);
                if (rg == Regime::cold)
                    b->UseManualTime()->Iterations(sw.cold_iters);
                else
                    b->MinTime(sw.hot_min_time);
                if (c.wall_clock && rg != Regime::cold)
                    b->UseRealTime();
                if (explicit_reps <= 0)
                    b->Repetitions(reps);
                // The filter sees the library's full name: ours and the settings above.
                std::string full = name;
                if (rg == Regime::cold) {
                    full += "/iterations:" + std::to_string(sw.cold_iters);
                } else {
                    char t[32];
                    std::snprintf(t, sizeof t, "/min_time:%0.3f", sw.hot_min_time);
                    full += t;
                }
                if (explicit_reps <= 0)
                    full += "/repeats:" + std::to_string(reps);
                full += rg == Regime::cold ? "/manual_time" : c.wall_clock ? "/real_time" : "";
                runs += selected(full, filter) ? static_cast<size_t>(reps) : 0;
            }
        }
    }
    return runs;
}

} // namespace lnb
