// main.cpp - a C++ program built against the *installed* liblayernorm (CMake or pkg-config),
// through layernorm.hpp: every operation on every available ISA against a double reference.
#include "layernorm.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>

namespace
{

int g_passed, g_failed;

void expect(bool ok, const char *what, const char *isa = "")
{
    ok ? g_passed++ : g_failed++;
    if (!ok)
        std::printf("FAILED %s %s\n", isa, what);
}

// The status a call throws as ln::error, -1 for another exception, 0 for none.
int status_of(const std::function<void()> &call)
{
    try {
        call();
    } catch (const ln::error &e) {
        return e.status();
    } catch (...) {
        return -1;
    }
    return 0;
}

const double U = std::ldexp(1.0, -24); // float unit roundoff
const double PI = 3.14159265358979323846;

// ulp of a value with `bits` fraction bits (23 float, 7 bf16) near v.
double ulp(double v, int bits)
{
    if (std::fabs(v) < 0x1p-126)
        return 0x1p-149;
    int e;
    std::frexp(v, &e);
    return std::ldexp(1.0, e - 1 - bits);
}

ln::bf16 to_bf16(float v) // round to nearest even (the inputs here are finite)
{
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    return static_cast<ln::bf16>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
double widen(float v) { return v; }
double widen(ln::bf16 v)
{
    const std::uint32_t b = std::uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

// LayerNorm of T rows (f32: 23 fraction bits, bf16: 7) against double from the same
// inputs: y within 4e-6 of the NUMERICS.md scale 1 + |gamma xhat| + |beta| plus, for bf16,
// the one bf16 ulp of the output rounding (header); dx per row within 1e-5 of its largest
// reference value plus that rounding, dgamma and dbeta within 1e-5 of theirs.
template <class T>
void layernorm_against_double(const std::vector<T> &x, const std::vector<T> &dy,
                              const std::vector<float> &gamma, const std::vector<float> &beta,
                              size_t cols, int bits, const char *isa)
{
    const auto f = ln::forward(x, gamma, beta, cols);
    const auto g = ln::backward(dy, x, gamma, f, cols);
    const size_t rows = x.size() / cols;
    std::vector<double> dg(cols), db(cols), xhat(cols), gd(cols);
    bool y_ok = true, dx_ok = true;
    for (size_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (size_t i = 0; i < cols; i++)
            mean += widen(x[r * cols + i]);
        mean /= double(cols);
        for (size_t i = 0; i < cols; i++)
            var += std::pow(widen(x[r * cols + i]) - mean, 2);
        const double rstd = 1 / std::sqrt(var / double(cols) + 1e-5);
        for (size_t i = 0; i < cols; i++) {
            const double gx = gamma[i] * (widen(x[r * cols + i]) - mean) * rstd, t = gx + beta[i];
            const double y = widen(f.y[r * cols + i]);
            const double tol = 4e-6 * (1 + std::fabs(gx) + std::fabs(beta[i])) +
                               (bits < 23 ? ulp(std::fmax(std::fabs(t), std::fabs(y)), bits) : 0);
            y_ok &= std::fabs(y - t) <= tol;
        }
        // Backward's centered formula from the saved float statistics.
        double mg = 0, mgx = 0, norm = 0;
        for (size_t i = 0; i < cols; i++) {
            xhat[i] = (widen(x[r * cols + i]) - f.mean[r]) * double(f.rstd[r]);
            gd[i] = widen(dy[r * cols + i]) * gamma[i];
            mg += gd[i] / double(cols), mgx += gd[i] * xhat[i] / double(cols);
            dg[i] += widen(dy[r * cols + i]) * xhat[i], db[i] += widen(dy[r * cols + i]);
        }
        for (size_t i = 0; i < cols; i++)
            norm = std::fmax(norm, std::fabs(f.rstd[r] * (gd[i] - mg - xhat[i] * mgx)));
        for (size_t i = 0; i < cols; i++) {
            const double t = f.rstd[r] * (gd[i] - mg - xhat[i] * mgx),
                         d = widen(g.dx[r * cols + i]);
            const double tol =
                1e-5 * norm + (bits < 23 ? ulp(std::fmax(std::fabs(t), std::fabs(d)), bits) : 0);
            dx_ok &= std::fabs(d - t) <= tol;
        }
    }
    double dg_err = 0, dg_norm = 0, db_err = 0, db_norm = 0;
    for (size_t i = 0; i < cols; i++) {
        dg_err = std::fmax(dg_err, std::fabs(g.dgamma[i] - dg[i])),
        dg_norm = std::fmax(dg_norm, std::fabs(dg[i]));
        db_err = std::fmax(db_err, std::fabs(g.dbeta[i] - db[i])),
        db_norm = std::fmax(db_norm, std::fabs(db[i]));
    }
    const char *kind = bits < 23 ? "bf16" : "f32";
    expect(y_ok, (std::string(kind) + " forward").c_str(), isa);
    expect(dx_ok, (std::string(kind) + " dx").c_str(), isa);
    expect(dg_err <= 1e-5 * dg_norm && db_err <= 1e-5 * db_norm,
           (std::string(kind) + " dgamma, dbeta").c_str(), isa);
}

// GELU against its definitions in double (tanh form through the sigmoid 1 / (1 + e^-2u),
// equal to 0.5 (1 + tanh u) without its cancellation for x < -4; erf form through erfc).
// The header's bound: 4 ulp, plus for the derivative, where its two terms cancel (near
// x = -0.75), a few roundings (8 u) of the terms' size.
void gelu_against_double(const char *isa)
{
    std::vector<float> x, dy;
    for (int i = -6 * 128; i <= 6 * 128; i++)
        x.push_back(float(i) / 128), dy.push_back(float(std::sin(i * 0.7)));
    const double c = std::sqrt(2 / PI);
    for (ln::gelu kind : {ln::gelu::tanh, ln::gelu::erf}) {
        const auto y = ln::gelu_forward(x, kind), dx = ln::gelu_backward(dy, x, kind);
        bool fwd_ok = true, bwd_ok = true;
        for (size_t i = 0; i < x.size(); i++) {
            const double v = x[i];
            double f, a, b;
            if (kind == ln::gelu::tanh) {
                const double u = c * (v + 0.044715 * v * v * v);
                const double s = 1 / (1 + std::exp(-2 * u)), s1 = 1 / (1 + std::exp(2 * u));
                f = v * s, a = s, b = 2 * v * s * s1 * c * (1 + 3 * 0.044715 * v * v);
            } else {
                a = 0.5 * std::erfc(-v / std::sqrt(2.0));
                f = v * a, b = v * std::exp(-0.5 * v * v) / std::sqrt(2 * PI);
            }
            const double d = dy[i] * (a + b);
            fwd_ok &= std::fabs(y[i] - f) <= 4 * ulp(f, 23);
            bwd_ok &= std::fabs(dx[i] - d) <=
                      4 * ulp(d, 23) + 8 * U * std::fabs(dy[i]) * (std::fabs(a) + std::fabs(b));
        }
        expect(fwd_ok, kind == ln::gelu::tanh ? "gelu tanh forward" : "gelu erf forward", isa);
        expect(bwd_ok, kind == ln::gelu::tanh ? "gelu tanh backward" : "gelu erf backward", isa);
    }
}

std::vector<float> wave(size_t n, double freq, double offset)
{
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = float(std::sin(freq * double(i)) * 2 + offset + double(i % 7) * 0.1);
    return v;
}

template <class T> bool same_bits(const std::vector<T> &a, const std::vector<T> &b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Every output of every operation, bitwise the same for 1, 2 and 4 threads; sized so
// 4 threads are allowed (forward: one per 32768 elements, backward: per 65536 and 64 rows).
void threads_change_no_bit(const char *isa)
{
    const size_t rows = 512, cols = 1024;
    const auto x = wave(rows * cols, 0.37, 0.5), dy = wave(rows * cols, 0.11, 0),
               gamma = wave(cols, 0.5, 1);
    std::vector<ln::bf16> xb(x.size()), dyb(x.size());
    for (size_t i = 0; i < x.size(); i++)
        xb[i] = to_bf16(x[i]), dyb[i] = to_bf16(dy[i]);
    auto run = [&](int threads) {
        ln::set_num_threads(threads);
        const auto f = ln::forward(x, gamma, {}, cols);
        const auto g = ln::backward(dy, x, gamma, f, cols);
        const auto fb = ln::forward(xb, gamma, {}, cols);
        const auto gb = ln::backward(dyb, xb, gamma, fb, cols);
        return std::make_tuple(
            std::vector<std::vector<float>>{
                f.y, f.mean, f.rstd, g.dx, g.dgamma, g.dbeta, fb.mean, fb.rstd, gb.dgamma, gb.dbeta,
                ln::gelu_forward(x, ln::gelu::tanh), ln::gelu_backward(dy, x, ln::gelu::erf)},
            fb.y, gb.dx);
    };
    const auto one = run(1);
    for (int threads : {2, 4}) {
        const auto many = run(threads);
        bool same = same_bits(std::get<1>(one), std::get<1>(many)) &&
                    same_bits(std::get<2>(one), std::get<2>(many));
        for (size_t k = 0; k < std::get<0>(one).size(); k++)
            same &= same_bits(std::get<0>(one)[k], std::get<0>(many)[k]);
        expect(same, threads == 2 ? "2 threads bitwise" : "4 threads bitwise", isa);
    }
}

void errors_are_exceptions()
{
    const std::vector<float> x(12, 1.5f), gamma3(3);
    expect(status_of([&] { ln::forward(x, {}, {}, 0); }) == LN_ERR_SHAPE, "cols 0: LN_ERR_SHAPE");
    expect(status_of([&] { ln::forward(x, {}, {}, 4, -1.0f); }) == LN_ERR_EPS,
           "eps < 0: LN_ERR_EPS");
    expect(status_of([&] { ln::forward(std::vector<ln::bf16>(8), {}, {}, 4, NAN); }) == LN_ERR_EPS,
           "bf16 eps NaN: LN_ERR_EPS");
    expect(status_of([&] { ln::gelu_forward(x, static_cast<ln::gelu>(7)); }) == LN_ERR_KIND,
           "gelu kind 7: LN_ERR_KIND");
    expect(status_of([&] { ln::gelu_backward(x, x, static_cast<ln::gelu>(-1)); }) == LN_ERR_KIND,
           "gelu backward kind -1: LN_ERR_KIND");
    expect(status_of([&] { ln::forward(x, gamma3, {}, 4); }) == -1,
           "gamma of 3 for 4 cols refused");
    expect(status_of([&] { ln::forward(x, {}, {}, 5); }) == -1, "12 values in rows of 5 refused");
    expect(status_of([&] { ln::gelu_backward(gamma3, x, ln::gelu::erf); }) == -1,
           "dy size refused");
    try {
        ln::forward(x, {}, {}, 0);
    } catch (const std::runtime_error &e) { // still a runtime_error, as before the wrapper
        expect(std::strstr(e.what(), "liblayernorm: ") == e.what(), "message names the library");
    }
    const int before = ln::num_threads();
    ln::set_num_threads(0);
    expect(ln::num_threads() == 1, "0 threads means 1");
    ln::set_num_threads(1000);
    expect(ln::num_threads() == 256, "1000 threads means 256");
    ln::set_num_threads(before);
}

} // namespace

int main()
{
    if (ln_version() / 10000 != LN_VERSION_MAJOR) {
        std::fprintf(stderr, "header %s but library %s\n", LN_VERSION_STRING, ln_version_string());
        return 1;
    }
    const int best = ln_get_isa();
    for (int isa = LN_ISA_SCALAR; isa <= LN_ISA_SVE; isa++) {
        if (!ln_isa_available(isa)) {
            std::printf("isa %s: SKIPPED (not compiled in or not runnable here)\n",
                        ln_isa_name(isa));
            continue;
        }
        ln::check(ln_set_max_isa(isa));
        const char *name = ln_isa_name(isa);
        for (size_t cols : {1, 7, 33, 768, 1000}) {
            const auto x = wave(3 * cols, 0.37, 3), dy = wave(3 * cols, 0.23, 0);
            const auto gamma = wave(cols, 0.05, 1), beta = wave(cols, 0.09, -0.5);
            layernorm_against_double(x, dy, gamma, beta, cols, 23, name);
            std::vector<ln::bf16> xb(x.size()), dyb(x.size());
            for (size_t i = 0; i < x.size(); i++)
                xb[i] = to_bf16(x[i]), dyb[i] = to_bf16(dy[i]);
            layernorm_against_double(xb, dyb, gamma, beta, cols, 7, name);
        }
        gelu_against_double(name);
        threads_change_no_bit(name);
    }
    ln::check(ln_set_max_isa(best));
    errors_are_exceptions();
    std::printf("liblayernorm %s, isa %s: %d checks passed, %d failed\n", ln_version_string(),
                ln_isa_name(ln_get_isa()), g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
