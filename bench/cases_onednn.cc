// cases_onednn.cc - oneDNN's f32 layer_normalization and eltwise GELU (forward, backward) on our very buffers.
#include <memory>
#include <unordered_map>

#include <dnnl.hpp>
#include <omp.h>

#include "harness.h"

namespace {

constexpr float kEps = 1e-5f;
using dnnl::memory;
using Args = std::unordered_map<int, memory>;

dnnl::engine &engine()
{
    static dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

const auto kFlags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;

memory::desc plain(memory::dims dims)
{
    return memory::desc(dims, memory::data_type::f32,
                        dims.size() == 2 ? memory::format_tag::ab : memory::format_tag::a);
}

dnnl::layer_normalization_forward::primitive_desc fwd_pd(const lnb::Problem &p)
{
    const auto md = plain({(memory::dim)p.rows, (memory::dim)p.cols});
    const dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_training, md, kEps,
                                                    kFlags);
    return dnnl::layer_normalization_forward::primitive_desc(d, engine());
}

// Wraps our pointers: oneDNN reads and writes exactly the buffers our kernels use.
memory wrap(const memory::desc &md, const float *ptr)
{
    return memory(md, engine(), const_cast<float *>(ptr));
}

// The timed call: one execute, waited for (the CPU stream is synchronous anyway).
lnb::Call call_of(dnnl::primitive prim, Args args)
{
    auto s = std::make_shared<dnnl::stream>(engine());
    return [prim, args, s] {
        prim.execute(*s, args);
        s->wait();
    };
}

lnb::Call make_fwd(const lnb::Problem &p)
{
    const auto pd = fwd_pd(p);
    const auto vec = plain({(memory::dim)p.cols});
    // mean/variance land in our mean/rstd buffers: the same bytes our forward writes.
    return call_of(dnnl::layer_normalization_forward(pd),
                   {{DNNL_ARG_SRC, wrap(pd.src_desc(), p.x)}, {DNNL_ARG_DST, wrap(pd.dst_desc(), p.y)},
                    {DNNL_ARG_MEAN, wrap(pd.mean_desc(), p.mean)},
                    {DNNL_ARG_VARIANCE, wrap(pd.variance_desc(), p.rstd)},
                    {DNNL_ARG_SCALE, wrap(vec, p.gamma)}, {DNNL_ARG_SHIFT, wrap(vec, p.beta)}});
}

lnb::Call make_bwd(const lnb::Problem &p)
{
    // oneDNN takes the variance, not rstd: the harness's var (lnb::Problem).
    const auto fpd = fwd_pd(p);
    const auto md = fpd.src_desc();
    const dnnl::layer_normalization_backward::desc d(dnnl::prop_kind::backward, md, md, kEps,
                                                     kFlags);
    const dnnl::layer_normalization_backward::primitive_desc pd(d, engine(), fpd);
    const auto vec = plain({(memory::dim)p.cols});
    // SHIFT is not read by the math, but oneDNN 2.6.3's execute() fails without it.
    return call_of(dnnl::layer_normalization_backward(pd),
                   {{DNNL_ARG_SRC, wrap(md, p.x)}, {DNNL_ARG_DIFF_DST, wrap(md, p.dy)},
                    {DNNL_ARG_MEAN, wrap(pd.mean_desc(), p.mean)},
                    {DNNL_ARG_VARIANCE, wrap(pd.variance_desc(), p.var)},
                    {DNNL_ARG_SCALE, wrap(vec, p.gamma)}, {DNNL_ARG_SHIFT, wrap(vec, p.beta)},
                    {DNNL_ARG_DIFF_SRC, wrap(md, p.dx)},
                    {DNNL_ARG_DIFF_SCALE, wrap(vec, p.dgamma)},
                    {DNNL_ARG_DIFF_SHIFT, wrap(vec, p.dbeta)}});
}

// GELU as oneDNN's eltwise primitive over the n = rows * cols floats, as one 1-D tensor.
memory::desc flat(const lnb::Problem &p) { return plain({(memory::dim)(p.rows * p.cols)}); }

dnnl::eltwise_forward::primitive_desc gelu_fwd_pd(const lnb::Problem &p, dnnl::algorithm alg)
{
    const dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_training, alg, flat(p), 0.0f,
                                        0.0f);
    return dnnl::eltwise_forward::primitive_desc(d, engine());
}

lnb::Make gelu_fwd(dnnl::algorithm alg)
{
    return [alg](const lnb::Problem &p) {
        const auto pd = gelu_fwd_pd(p, alg);
        return call_of(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, wrap(pd.src_desc(), p.x)},
                                                   {DNNL_ARG_DST, wrap(pd.dst_desc(), p.y)}});
    };
}

// dx = dy f'(x) from x (not from y): the same inputs as ours.
lnb::Make gelu_bwd(dnnl::algorithm alg)
{
    return [alg](const lnb::Problem &p) {
        const auto md = flat(p);
        const dnnl::eltwise_backward::desc d(alg, md, md, 0.0f, 0.0f);
        const dnnl::eltwise_backward::primitive_desc pd(d, engine(), gelu_fwd_pd(p, alg));
        return call_of(dnnl::eltwise_backward(pd), {{DNNL_ARG_SRC, wrap(md, p.x)},
                                                    {DNNL_ARG_DIFF_DST, wrap(md, p.dy)},
                                                    {DNNL_ARG_DIFF_SRC, wrap(md, p.dx)}});
    };
}

} // namespace

void ln_bench_cases_onednn()
{
    // Debian's oneDNN runs on OpenMP: one thread, like every other line of the report.
    omp_set_num_threads(1);
    const dnnl_version_t *v = dnnl_version();
    lnb::note("onednn", std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                            std::to_string(v->patch));
    lnb::add_fwd("onednn", lnb::Make(make_fwd));
    // BETA is an operand too (see above): flush it with the rest.
    lnb::add_case({"bwd", "onednn", make_bwd, lnb::OPS_BWD | lnb::OP_BETA, 12.0, true,
                   {lnb::Regime::hot, lnb::Regime::cold}});
    // GELU beside ours (cases_bf16_gelu.cc): both forms, forward and backward.
    for (const auto &[op, alg] : {std::pair{std::string("gelu_tanh"), dnnl::algorithm::eltwise_gelu_tanh},
                                  std::pair{std::string("gelu_erf"), dnnl::algorithm::eltwise_gelu_erf}}) {
        lnb::add_fwd("onednn", gelu_fwd(alg), op);
        lnb::add_case({op + "_bwd", "onednn", gelu_bwd(alg), lnb::OPS_GELU_BWD, 12.0, false,
                       {lnb::Regime::hot, lnb::Regime::cold}});
    }
}
