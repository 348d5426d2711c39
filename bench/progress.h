// progress.h - the sweep's progress on stderr: timed runs done of total, elapsed, time left.
#ifndef LN_BENCH_PROGRESS_H
#define LN_BENCH_PROGRESS_H

#include <cstddef>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

namespace lnb {

// The sweep will time `total` runs (repetitions of benchmarks); 0 turns the meter off.
// On a terminal the meter is one line redrawn in place; elsewhere (a CI log) one line
// per tenth of the sweep.
void progress_start(size_t total);

// Every call of a benchmark function: progress_call as it starts, progress_called as it
// ends (`final`: surely a whole repetition, e.g. a fixed iteration count or an error).
// The meter counts repetitions; a benchmark's first one may take several calls.
void progress_call(const std::string &name, benchmark::IterationCount iters);
void progress_called(const std::string &name, benchmark::IterationCount iters, bool final);

// Clears the line; the sweep is over.
void progress_finish();

// Google Benchmark's own display reporter (as --benchmark_format and --benchmark_color
// choose) wrapped so the meter's line never mixes with its output, and with its context
// block (CPU, caches, warnings) on its output stream instead of stderr.
std::unique_ptr<benchmark::BenchmarkReporter> progress_reporter();

} // namespace lnb

#endif // LN_BENCH_PROGRESS_H
