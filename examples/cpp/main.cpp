// main.cpp - a C++ program built against the *installed* liblayernorm (CMake or pkg-config).
#include <layernorm.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// The C API reports failures as status codes; a C++ caller usually wants exceptions.
void check(int status)
{
    if (status != LN_OK)
        throw std::runtime_error(std::string("liblayernorm: ") + ln_status_string(status));
}

struct Stats {
    std::vector<float> y, mean, rstd;
};

Stats forward(const std::vector<float> &x, const std::vector<float> &gamma,
              const std::vector<float> &beta, size_t rows, size_t cols)
{
    Stats s{std::vector<float>(x.size()), std::vector<float>(rows), std::vector<float>(rows)};
    check(ln_forward_f32(x.data(), gamma.data(), beta.data(), s.y.data(), s.mean.data(),
                         s.rstd.data(), rows, cols, 1e-5f));
    return s;
}

// Largest deviation from a double-precision LayerNorm, in units of the NUMERICS.md scale
// 1 + |gamma * xhat| + |beta|: the contract keeps it below 4e-6 for these sizes.
double worst_error(const std::vector<float> &x, const std::vector<float> &gamma,
                   const std::vector<float> &beta, const std::vector<float> &y, size_t cols)
{
    double worst = 0;
    for (size_t r = 0; r < x.size() / cols; r++) {
        const float *row = &x[r * cols];
        double mean = 0, var = 0;
        for (size_t i = 0; i < cols; i++)
            mean += row[i];
        mean /= double(cols);
        for (size_t i = 0; i < cols; i++)
            var += (row[i] - mean) * (row[i] - mean);
        const double rstd = 1 / std::sqrt(var / double(cols) + 1e-5);
        for (size_t i = 0; i < cols; i++) {
            const double gx = gamma[i] * (row[i] - mean) * rstd, ref = gx + beta[i];
            const double err = std::fabs(y[r * cols + i] - ref) / (1 + std::fabs(gx) + std::fabs(beta[i]));
            worst = err > worst ? err : worst;
        }
    }
    return worst;
}

}  // namespace

int main()
{
    if (ln_version() / 10000 != LN_VERSION_MAJOR) {
        std::fprintf(stderr, "header %s but library %s\n", LN_VERSION_STRING, ln_version_string());
        return 1;
    }
    const size_t rows = 3, cols = 768;
    std::vector<float> x(rows * cols), gamma(cols), beta(cols);
    for (size_t i = 0; i < x.size(); i++)
        x[i] = float(std::sin(0.37 * double(i)) * 3 + double(i % 7));
    for (size_t i = 0; i < cols; i++) {
        gamma[i] = 1.0f + 0.001f * float(i);
        beta[i] = 0.5f - 0.002f * float(i);
    }
    const Stats s = forward(x, gamma, beta, rows, cols);
    const double err = worst_error(x, gamma, beta, s.y, cols);

    std::vector<float> dy(x.size(), 0.25f), dx(x.size()), dgamma(cols), dbeta(cols);
    check(ln_backward_f32(dy.data(), x.data(), gamma.data(), s.mean.data(), s.rstd.data(),
                          dx.data(), dgamma.data(), dbeta.data(), rows, cols));
    // dbeta is a sum over rows of dy: 3 * 0.25, exact in float.
    bool threw = false;
    try {
        forward(x, gamma, beta, rows, 0); // LN_ERR_SHAPE
    } catch (const std::runtime_error &) {
        threw = true;
    }
    std::printf("liblayernorm %s, isa %s, forward error %.2e (scale units), dbeta[0] %g, "
                "cols=0 %s\n", ln_version_string(), ln_isa_name(ln_get_isa()), err,
                double(dbeta[0]), threw ? "rejected" : "ACCEPTED");
    return err <= 4e-6 && dbeta[0] == 0.75f && threw ? 0 : 1;
}
