// bf16_gelu.rs - the 1.3 wrappers on every available ISA: bf16 LayerNorm against a float64
// reference of the widened inputs, GELU against libm's tanh/erfc in double, and errors.
mod common;

use common::{each_isa, Rng};
use layernorm::{bf16_to_f32, f32_to_bf16, Error, Gelu};

const U: f64 = 1.0 / (1u64 << 24) as f64; // float32 unit roundoff

#[link(name = "m")]
extern "C" {
    fn erfc(x: f64) -> f64; // not in Rust's std; libm's is correctly rounded to ~1 ulp
}

/// ulp of a float near v: 2^(e - 23) for |v| in [2^e, 2^(e+1)), 2^-149 below the normals.
fn ulp(v: f64, mantissa_bits: i32) -> f64 {
    if v.abs() < f32::MIN_POSITIVE as f64 {
        return 2f64.powi(-149);
    }
    2f64.powi(v.abs().log2().floor() as i32 - mantissa_bits)
}
fn ulp32(v: f64) -> f64 {
    ulp(v, 23)
}
fn ulp_bf16(v: f64) -> f64 {
    ulp(v, 7)
}

/// (f(x), f'(x), size of f''s two terms) in double, straight from the definitions.
fn gelu_ref(x: f64, kind: Gelu) -> (f64, f64, f64) {
    match kind {
        Gelu::Tanh => {
            // 0.5 (1 + tanh u) as the sigmoid 1 / (1 + e^-2u), and 1 - tanh^2 u as
            // 4 s (1 - s): the same functions without 1 + tanh's cancellation for x < -4.
            let c = (2.0 / std::f64::consts::PI).sqrt();
            let u = c * (x + 0.044715 * x * x * x);
            let s = 1.0 / (1.0 + (-2.0 * u).exp());
            let one_minus_s = 1.0 / (1.0 + (2.0 * u).exp());
            let (a, b) = (
                s,
                2.0 * x * s * one_minus_s * c * (1.0 + 3.0 * 0.044715 * x * x),
            );
            debug_assert!((s - 0.5 * (1.0 + u.tanh())).abs() <= 1e-15);
            (x * s, a + b, a.abs() + b.abs())
        }
        Gelu::Erf => {
            let cdf = 0.5 * unsafe { erfc(-x / std::f64::consts::SQRT_2) };
            let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
            (x * cdf, cdf + x * pdf, cdf + (x * pdf).abs())
        }
    }
}

#[test]
fn gelu_matches_the_double_formulas() {
    let mut rng = Rng(31);
    // A fine grid over [-6, 6] (where activations live) plus random normals.
    let mut x: Vec<f32> = (-6 * 128..=6 * 128).map(|i| i as f32 / 128.0).collect();
    x.extend(rng.normal(2000, 0.0, 2.0));
    let dy = rng.normal(x.len(), 0.0, 1.0);
    each_isa(|isa| {
        for kind in [Gelu::Tanh, Gelu::Erf] {
            let y = layernorm::gelu_forward(&x, kind).unwrap();
            let dx = layernorm::gelu_backward(&dy, &x, kind).unwrap();
            for i in 0..x.len() {
                let (f, d, terms) = gelu_ref(x[i] as f64, kind);
                // The header's bound: forward within 4 ulp (|f| stays far above 2^-100
                // here); backward within 4 ulp, plus where f''s two terms cancel (near
                // x = -0.75) a few roundings (8 u) of the terms' size.
                let (g, dg) = (dy[i] as f64, dy[i] as f64 * d);
                let fwd_err = (y[i] as f64 - f).abs();
                assert!(
                    fwd_err <= 4.0 * ulp32(f),
                    "{} {kind:?} f({}) = {} vs {f}",
                    isa.name(),
                    x[i],
                    y[i]
                );
                let bwd_err = (dx[i] as f64 - dg).abs();
                let bound = 4.0 * ulp32(dg) + 8.0 * U * g.abs() * terms;
                assert!(
                    bwd_err <= bound,
                    "{} {kind:?} x {} dy {}: {} vs {dg}",
                    isa.name(),
                    x[i],
                    dy[i],
                    dx[i]
                );
            }
        }
    });
}

#[test]
fn gelu_specials() {
    let x = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0];
    for kind in [Gelu::Tanh, Gelu::Erf] {
        let y = layernorm::gelu_forward(&x, kind).unwrap();
        assert!(y[0].is_nan());
        assert_eq!(y[1], f32::INFINITY);
        assert_eq!(y[2].to_bits(), (-0.0f32).to_bits());
        assert_eq!(y[3], 0.0);
        let dx = layernorm::gelu_backward(&[1.0; 4], &x, kind).unwrap();
        assert!(dx[0].is_nan());
        assert_eq!((dx[1], dx[2], dx[3]), (1.0, 0.0, 0.5));
    }
}

#[test]
fn bf16_conversions_round_to_nearest_even() {
    assert_eq!(f32_to_bf16(1.0), 0x3f80);
    assert_eq!(f32_to_bf16(1.0 + 1.0 / 256.0), 0x3f80); // tie, kept bit even: down
    assert_eq!(f32_to_bf16(1.0 + 3.0 / 256.0), 0x3f82); // tie, kept bit odd: up
    assert_eq!(f32_to_bf16(1.0 + 1.5 / 256.0), 0x3f81); // above the tie: up
    assert_eq!(f32_to_bf16(-2.0), 0xc000);
    assert_eq!(f32_to_bf16(f32::MAX), 0x7f80); // rounds up to +Inf, as IEEE
    assert_eq!(f32_to_bf16(f32::NEG_INFINITY), 0xff80);
    assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
    assert!(bf16_to_f32(f32_to_bf16(f32::from_bits(0x7f800001))).is_nan()); // low payload
    assert_eq!(bf16_to_f32(0x0001), f32::from_bits(0x0001_0000)); // subnormals kept
    for b in [0x3f80u16, 0x0080, 0x8001, 0x7f7f] {
        assert_eq!(f32_to_bf16(bf16_to_f32(b)), b);
    }
}

/// Rows of normals rounded to bf16, and their exact float values.
fn bf16_rows(rng: &mut Rng, n: usize, mu: f64, sigma: f64) -> (Vec<u16>, Vec<f64>) {
    let b: Vec<u16> = rng
        .normal(n, mu, sigma)
        .into_iter()
        .map(f32_to_bf16)
        .collect();
    let w = b.iter().map(|&v| bf16_to_f32(v) as f64).collect();
    (b, w)
}

#[test]
fn bf16_layernorm_matches_double() {
    let mut rng = Rng(32);
    each_isa(|isa| {
        for cols in [1usize, 7, 33, 768, 1000] {
            let rows = 3;
            let (x, xw) = bf16_rows(&mut rng, rows * cols, 0.5, 2.0);
            let (dy, dyw) = bf16_rows(&mut rng, rows * cols, 0.0, 1.0);
            let gamma = rng.normal(cols, 1.0, 0.5);
            let beta = rng.normal(cols, 0.0, 1.0);
            let f = layernorm::forward_bf16(&x, Some(&gamma), Some(&beta), cols, 1e-5).unwrap();
            let g =
                layernorm::backward_bf16(&dy, &x, Some(&gamma), &f.mean, &f.rstd, cols).unwrap();
            let (mut dx, mut dg, mut db) =
                (vec![0f64; x.len()], vec![0f64; cols], vec![0f64; cols]);
            for r in 0..rows {
                let row = &xw[r * cols..(r + 1) * cols];
                let mean = row.iter().sum::<f64>() / cols as f64;
                let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / cols as f64;
                let rstd = 1.0 / (var + 1e-5).sqrt();
                // NUMERICS.md: mean within 2^-23 (|mean| + std), rstd within 4 u relative.
                assert!((f.mean[r] as f64 - mean).abs() <= 2.0 * U * (mean.abs() + var.sqrt()));
                assert!((f.rstd[r] as f64 - rstd).abs() <= 4.0 * U * rstd);
                for i in 0..cols {
                    let gx = gamma[i] as f64 * (row[i] - mean) * rstd;
                    let t = gx + beta[i] as f64;
                    let y = bf16_to_f32(f.y[r * cols + i]) as f64;
                    // The float result is within 4e-6 of the scale 1 + |gamma xhat| + |beta|
                    // (NUMERICS.md); rounding it to bf16 adds at most one bf16 ulp (header).
                    let bound = 4e-6 * (1.0 + gx.abs() + (beta[i] as f64).abs())
                        + ulp_bf16(t.abs().max(y.abs()));
                    assert!(
                        (y - t).abs() <= bound,
                        "{} cols {cols}: y {y} vs {t}",
                        isa.name()
                    );
                }
                // Backward's centered formula from the saved (float) statistics.
                let (m, s) = (f.mean[r] as f64, f.rstd[r] as f64);
                let xhat: Vec<f64> = row.iter().map(|v| (v - m) * s).collect();
                let gd: Vec<f64> = (0..cols)
                    .map(|i| dyw[r * cols + i] * gamma[i] as f64)
                    .collect();
                let mg = gd.iter().sum::<f64>() / cols as f64;
                let mgx = gd.iter().zip(&xhat).map(|(a, b)| a * b).sum::<f64>() / cols as f64;
                for i in 0..cols {
                    dx[r * cols + i] = s * (gd[i] - mg - xhat[i] * mgx);
                    dg[i] += dyw[r * cols + i] * xhat[i];
                    db[i] += dyw[r * cols + i];
                }
            }
            // Float contract 1e-5 ||ref||_inf (NUMERICS.md), dx then rounded to bf16.
            let inf = |v: &[f64]| v.iter().fold(0f64, |a, b| a.max(b.abs()));
            for i in 0..x.len() {
                let got = bf16_to_f32(g.dx[i]) as f64;
                let bound = 1e-5 * inf(&dx) + ulp_bf16(got.abs().max(dx[i].abs()));
                assert!(
                    (got - dx[i]).abs() <= bound,
                    "{} cols {cols}: dx",
                    isa.name()
                );
            }
            for (what, got, want) in [("dgamma", &g.dgamma, &dg), ("dbeta", &g.dbeta, &db)] {
                let err = got
                    .iter()
                    .zip(want)
                    .fold(0f64, |a, (g, w)| a.max((*g as f64 - w).abs()));
                assert!(
                    err <= 1e-5 * inf(want),
                    "{} cols {cols}: {what} {err:e}",
                    isa.name()
                );
            }
        }
    });
}

#[test]
fn errors_are_results_and_write_nothing() {
    let x = vec![f32_to_bf16(1.5); 12];
    let (mut y, mut m, mut r) = (vec![7u16; 12], vec![7f32; 3], vec![7f32; 3]);
    let eps = layernorm::forward_bf16_into(&x, None, None, 4, f32::NAN, &mut y, &mut m, &mut r);
    assert_eq!(eps, Err(Error::Status(layernorm::ERR_EPS)));
    assert!(y.iter().all(|v| *v == 7) && m == [7.0; 3] && r == [7.0; 3]);
    assert_eq!(
        layernorm::forward_bf16(&x, None, None, 0, 1e-5).unwrap_err(),
        Error::Status(layernorm::ERR_SHAPE)
    );
    let f = layernorm::forward_bf16(&x, None, None, 4, 1e-5).unwrap();
    assert_eq!(
        layernorm::backward_bf16(&x[..8], &x, None, &f.mean, &f.rstd, 4).unwrap_err(),
        Error::Length {
            what: "dy",
            expected: 12,
            got: 8
        }
    );
    assert_eq!(
        layernorm::backward_bf16(&x, &x, None, &f.mean[..2], &f.rstd, 4).unwrap_err(),
        Error::Length {
            what: "mean",
            expected: 3,
            got: 2
        }
    );
    let xf = [1.0f32; 5];
    let mut dx = [9f32; 4];
    assert_eq!(
        layernorm::gelu_backward_into(&xf, &xf, &mut dx, Gelu::Erf),
        Err(Error::Length {
            what: "dx",
            expected: 5,
            got: 4
        })
    );
    assert_eq!(dx, [9.0; 4]);
    assert_eq!(
        layernorm::gelu_backward(&xf[..4], &xf, Gelu::Tanh).unwrap_err(),
        Error::Length {
            what: "dy",
            expected: 5,
            got: 4
        }
    );
    assert_eq!(layernorm::gelu_forward(&[], Gelu::Tanh), Ok(vec![]));
    // An unknown GELU kind cannot be named through the enum; its status still reads well.
    assert!(layernorm::status_string(layernorm::ERR_KIND).contains("kind"));
}
