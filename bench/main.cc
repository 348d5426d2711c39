// main.cc - ln_bench: registers every case for the chosen sweep and hands over to Google Benchmark.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <sys/utsname.h>

#include <benchmark/benchmark.h>

#include "harness.h"
#include "progress.h"

namespace {

std::string cpu_model()
{
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);)
        if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
            return line.substr(line.find(':') + 2);
    utsname u{}; // Arm's /proc/cpuinfo has no model name: at least say the architecture
    return std::string("unknown ") + (uname(&u) == 0 ? u.machine : "CPU");
}

} // namespace

// Own flag: --ln_sweep=quick|full|smoke|ext (default quick; ext: the 1.1 entry points). Everything else goes to Google Benchmark.
int main(int argc, char **argv)
{
    std::string sweep = "quick";
    int explicit_reps = 0; // --benchmark_repetitions=N, which the library keeps to itself
    bool listing = false;  // --benchmark_list_tests: nothing runs
    std::vector<char *> rest;
    for (int i = 0; i < argc; i++) {
        if (std::strncmp(argv[i], "--ln_sweep=", 11) == 0) {
            sweep = argv[i] + 11;
            continue;
        }
        if (std::strncmp(argv[i], "--benchmark_list_tests", 22) == 0)
            listing = std::strcmp(argv[i], "--benchmark_list_tests=false") != 0;
        if (std::strncmp(argv[i], "--benchmark_repetitions=", 24) == 0)
            explicit_reps = std::max(1, std::atoi(argv[i] + 24));
        rest.push_back(argv[i]);
    }
    if (sweep != "quick" && sweep != "full" && sweep != "smoke" && sweep != "ext") {
        std::fprintf(stderr, "ln_bench: --ln_sweep must be quick, full, smoke or ext\n");
        return 2;
    }
    int n = static_cast<int>(rest.size());
    benchmark::Initialize(&n, rest.data());
    if (benchmark::ReportUnrecognizedArguments(n, rest.data()))
        return 2;

    lnb::note("cpu_model", cpu_model());
    ln_bench_cases_layernorm();
    if (sweep == "full" || sweep == "ext")
        ln_bench_cases_strided_flags();
    ln_bench_cases_threads();
    ln_bench_cases_bf16_gelu();
#ifdef LN_BENCH_ONEDNN
    ln_bench_cases_onednn();
#else
    lnb::note("onednn", "absent");
#endif
    const size_t runs = lnb::register_all(sweep, explicit_reps, benchmark::GetBenchmarkFilter());
    lnb::progress_start(listing ? 0 : runs);
    const auto reporter = lnb::progress_reporter();
    benchmark::RunSpecifiedBenchmarks(reporter.get());
    lnb::progress_finish();
    benchmark::Shutdown();
    return 0;
}
