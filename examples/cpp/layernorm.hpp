// layernorm.hpp - a header-only C++ face of liblayernorm: vectors in, exceptions out.
#ifndef LAYERNORM_HPP
#define LAYERNORM_HPP

#include <layernorm.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ln
{

// A status code of the library as an exception (still a std::runtime_error, as before).
class error : public std::runtime_error
{
  public:
    explicit error(int status)
        : std::runtime_error(std::string("liblayernorm: ") + ln_status_string(status)),
          status_(status)
    {
    }
    int status() const noexcept { return status_; }

  private:
    int status_;
};

inline void check(int status)
{
    if (status != LN_OK)
        throw error(status);
}

using bf16 = std::uint16_t; // raw bf16 bits: the upper half of the float with that value

template <class T> struct forward_result {
    std::vector<T> y;
    std::vector<float> mean, rstd;
};
template <class T> struct backward_result {
    std::vector<T> dx;
    std::vector<float> dgamma, dbeta;
};

namespace detail
{
// One overload per element type, so forward/backward below are written once.
inline int fwd(const float *x, const float *g, const float *b, float *y, float *m, float *r,
               size_t rows, size_t cols, float eps)
{
    return ln_forward_f32(x, g, b, y, m, r, rows, cols, eps);
}
inline int fwd(const bf16 *x, const float *g, const float *b, bf16 *y, float *m, float *r,
               size_t rows, size_t cols, float eps)
{
    return ln_forward_bf16(x, g, b, y, m, r, rows, cols, eps);
}
inline int bwd(const float *dy, const float *x, const float *g, const float *m, const float *r,
               float *dx, float *dg, float *db, size_t rows, size_t cols)
{
    return ln_backward_f32(dy, x, g, m, r, dx, dg, db, rows, cols);
}
inline int bwd(const bf16 *dy, const bf16 *x, const float *g, const float *m, const float *r,
               bf16 *dx, float *dg, float *db, size_t rows, size_t cols)
{
    return ln_backward_bf16(dy, x, g, m, r, dx, dg, db, rows, cols);
}

// Rows of x; cols == 0 is left for the library to refuse (LN_ERR_SHAPE).
inline size_t rows_of(size_t n, size_t cols, const std::vector<float> &gamma,
                      const std::vector<float> &beta)
{
    if (cols != 0 && n % cols != 0)
        throw std::invalid_argument("liblayernorm: x is not a whole number of rows");
    if ((!gamma.empty() && gamma.size() != cols) || (!beta.empty() && beta.size() != cols))
        throw std::invalid_argument("liblayernorm: gamma/beta must have cols elements");
    return cols != 0 ? n / cols : n;
}
inline const float *opt(const std::vector<float> &v) { return v.empty() ? nullptr : v.data(); }
} // namespace detail

// LayerNorm of each row of x (rows of `cols` float or bf16 values). gamma, beta: cols
// floats, empty meaning ones / zeros. mean and rstd are float for both element types.
template <class T>
forward_result<T> forward(const std::vector<T> &x, const std::vector<float> &gamma,
                          const std::vector<float> &beta, size_t cols, float eps = 1e-5f)
{
    const size_t rows = detail::rows_of(x.size(), cols, gamma, beta);
    forward_result<T> f{std::vector<T>(x.size()), std::vector<float>(rows),
                        std::vector<float>(rows)};
    check(detail::fwd(x.data(), detail::opt(gamma), detail::opt(beta), f.y.data(), f.mean.data(),
                      f.rstd.data(), rows, cols, eps));
    return f;
}

// Gradients of forward: dx like x; dgamma, dbeta float sums over rows.
template <class T>
backward_result<T> backward(const std::vector<T> &dy, const std::vector<T> &x,
                            const std::vector<float> &gamma, const forward_result<T> &f,
                            size_t cols)
{
    const size_t rows = detail::rows_of(x.size(), cols, gamma, {});
    if (dy.size() != x.size() || f.mean.size() != rows || f.rstd.size() != rows)
        throw std::invalid_argument("liblayernorm: dy, mean or rstd does not match x");
    backward_result<T> g{std::vector<T>(x.size()), std::vector<float>(cols),
                         std::vector<float>(cols)};
    check(detail::bwd(dy.data(), x.data(), detail::opt(gamma), f.mean.data(), f.rstd.data(),
                      g.dx.data(), g.dgamma.data(), g.dbeta.data(), rows, cols));
    return g;
}

enum class gelu { tanh = LN_GELU_TANH, erf = LN_GELU_ERF };

inline std::vector<float> gelu_forward(const std::vector<float> &x, gelu kind)
{
    std::vector<float> y(x.size());
    check(ln_gelu_forward_f32(x.data(), y.data(), x.size(), static_cast<int>(kind)));
    return y;
}

inline std::vector<float> gelu_backward(const std::vector<float> &dy, const std::vector<float> &x,
                                        gelu kind)
{
    if (dy.size() != x.size())
        throw std::invalid_argument("liblayernorm: dy and x differ in size");
    std::vector<float> dx(x.size());
    check(ln_gelu_backward_f32(dy.data(), x.data(), dx.data(), x.size(), static_cast<int>(kind)));
    return dx;
}

// Threads for the whole process (default 1, clamped to 1..256); results never change.
inline void set_num_threads(int n) { check(ln_set_num_threads(n)); }
inline int num_threads() { return ln_get_num_threads(); }

} // namespace ln

#endif // LAYERNORM_HPP
