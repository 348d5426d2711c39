// progress.cc - the sweep's progress meter (progress.h) and the reporter wrapper around it.
#include "progress.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <set>

#include <unistd.h>

namespace lnb {
namespace {

using Clock = std::chrono::steady_clock;

struct Meter {
    size_t total = 0, done = 0, steps = 0; // steps: done, uncapped
    int tenths = 0;     // off a terminal: the last tenth of the sweep printed
    bool tty = false;
    bool shown = false; // a line is on the terminal now
    Clock::time_point start, drawn;
    std::string last;   // the benchmark that finished last
};

Meter &meter()
{
    static Meter m;
    return m;
}

std::string minutes(double s)
{
    char buf[32];
    const long t = static_cast<long>(s + 0.5);
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
    return buf;
}

// "412/1106 runs (37%), 0:48 elapsed, ~1:22 left": runs are interleaved at random, so
// the rate so far is the rate of the rest.
std::string status()
{
    const Meter &m = meter();
    const double elapsed = std::chrono::duration<double>(Clock::now() - m.start).count();
    char buf[160];
    const int n = std::snprintf(buf, sizeof buf, "bench: %zu/%zu runs (%zu%%), %s elapsed", m.done,
                                m.total, m.done * 100 / m.total, minutes(elapsed).c_str());
    std::string s(buf, static_cast<size_t>(n));
    if (m.done * 50 >= m.total && m.done < m.total) // from 2% on: the first runs say little
        s += ", ~" + minutes(elapsed / static_cast<double>(m.done) *
                             static_cast<double>(m.total - m.done)) + " left";
    return s;
}

void clear()
{
    Meter &m = meter();
    if (m.tty && m.shown)
        std::fputs("\r\033[K", stderr);
    m.shown = false;
}

void draw()
{
    Meter &m = meter();
    if (m.total == 0)
        return;
    if (m.tty) {
        // One line that fits 80 columns: the status, then as much of the last name as fits.
        std::string line = status() + (m.last.empty() ? "" : "  " + m.last);
        if (line.size() > 79)
            line.resize(79);
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
        m.shown = true;
        m.drawn = Clock::now();
    } else if (m.done * 10 / m.total > static_cast<size_t>(m.tenths)) {
        m.tenths = static_cast<int>(m.done * 10 / m.total);
        std::fprintf(stderr, "%s\n", status().c_str());
    }
    std::fflush(stderr);
}

// Google Benchmark's display reporter, with the meter's line cleared before it writes.
class Wrapper : public benchmark::BenchmarkReporter {
public:
    explicit Wrapper(benchmark::BenchmarkReporter *inner) : inner_(inner)
    {
        inner_->SetErrorStream(&std::cout); // the context block goes with the results
    }
    bool ReportContext(const Context &context) override
    {
        clear();
        const bool go = inner_->ReportContext(context);
        std::cout.flush();
        draw();
        return go;
    }
    void ReportRuns(const std::vector<Run> &runs) override
    {
        clear();
        inner_->ReportRuns(runs);
        std::cout.flush();
        draw();
    }
    void Finalize() override
    {
        clear();
        inner_->Finalize();
    }

private:
    std::unique_ptr<benchmark::BenchmarkReporter> inner_;
};

} // namespace

void progress_start(size_t total)
{
    Meter &m = meter();
    m.total = total;
    m.tty = isatty(STDERR_FILENO) == 1;
    m.start = m.drawn = Clock::now();
}

namespace {

void step(const std::string &name)
{
    Meter &m = meter();
    m.steps++;
    m.done += m.done < m.total; // never past the end, should a run be miscounted
    m.last = name;
    // A few redraws a second are plenty, and keep the terminal out of the timings.
    if (!m.tty || m.done == m.total || Clock::now() - m.drawn > std::chrono::milliseconds(250))
        draw();
}

// Google Benchmark (1.7) times a repetition in one call, except a benchmark's first: that
// one first calls with growing iteration counts until a call runs long enough, and only
// that last call is the repetition. Its calls follow each other, so a call of a first
// repetition is left pending until the next call shows whether it was calibration (the
// same benchmark again, with more iterations) or the repetition itself (anything else).
// The library keeps its decision to itself; this needs no clock to guess it.
struct Pending {
    std::string name;
    benchmark::IterationCount iters = 0;
    bool set = false;
};
Pending g_pending;
std::set<std::string> g_started; // benchmarks past their first repetition

void counted(const std::string &name)
{
    g_started.insert(name);
    if (meter().total > 0)
        step(name);
}

void settle(const std::string &next, benchmark::IterationCount iters)
{
    if (g_pending.set && !(next == g_pending.name && iters > g_pending.iters))
        counted(g_pending.name);
    g_pending.set = false;
}

} // namespace

void progress_call(const std::string &name, benchmark::IterationCount iters)
{
    settle(name, iters);
}

void progress_called(const std::string &name, benchmark::IterationCount iters, bool final)
{
    if (final || g_started.count(name))
        counted(name);
    else
        g_pending = {name, iters, true};
}

void progress_finish()
{
    Meter &m = meter();
    settle("", 0);
    clear();
    if (!m.tty && m.total > 0 && m.tenths < 10) // a log then says where the sweep stopped
        std::fprintf(stderr, "%s\n", status().c_str());
    if (m.total > 0 && m.steps > m.total) // the meter ran past its count: say so
        std::fprintf(stderr, "bench: the meter counted %zu runs for %zu expected\n", m.steps,
                     m.total);
}

std::unique_ptr<benchmark::BenchmarkReporter> progress_reporter()
{
    return std::unique_ptr<benchmark::BenchmarkReporter>(
        new Wrapper(benchmark::CreateDefaultDisplayReporter()));
}

} // namespace lnb
