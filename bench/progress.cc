// progress.cc - the sweep's progress meter (progress.h) and the reporter wrapper around it.
#include "progress.h"

#include <chrono>
#include <cstdio>
#include <iostream>

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

void progress_step(const std::string &name)
{
    Meter &m = meter();
    if (m.total == 0)
        return;
    m.steps++;
    m.done += m.done < m.total; // never past the end, should a run be miscounted
    m.last = name;
    // A few redraws a second are plenty, and keep the terminal out of the timings.
    if (!m.tty || m.done == m.total || Clock::now() - m.drawn > std::chrono::milliseconds(250))
        draw();
}

void progress_finish()
{
    Meter &m = meter();
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
