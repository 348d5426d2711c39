// reference.rs - the wrapper on every available ISA against a float64 Rust reference.
mod common;

use common::{each_isa, Rng, ISA_LOCK};
use layernorm::{Error, Isa, ALL_ISAS};

/// Per row in f64 from the same f32 inputs: (mean, rstd), as NUMERICS.md's oracle.
fn ref_stats(row: &[f32], eps: f64) -> (f64, f64) {
    let n = row.len() as f64;
    let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean, 1.0 / (var + eps).sqrt())
}

const COLS: [usize; 7] = [1, 2, 7, 33, 768, 1000, 4099];
const ROWS: usize = 3;

/// Every available ISA times every width: f(isa, cols, x, gamma, rng for more data).
fn each_case(seed: u64, mut f: impl FnMut(Isa, usize, &[f32], &[f32], &mut Rng)) {
    let mut rng = Rng(seed);
    each_isa(|isa| {
        for cols in COLS {
            let x = rng.normal(ROWS * cols, 0.5, 2.0);
            let gamma = rng.normal(cols, 1.0, 0.5);
            f(isa, cols, &x, &gamma, &mut rng);
        }
    });
}

#[test]
fn forward_keeps_the_contract() {
    each_case(7, |isa, cols, x, gamma, rng| {
        let beta = rng.normal(cols, 0.0, 1.0);
        let out = layernorm::forward(x, Some(gamma), Some(&beta), cols, 1e-5).unwrap();
        // NUMERICS.md: |y - y_ref| <= 4e-6 (1 + |gamma xhat_ref| + |beta|), n <= 16384.
        for r in 0..ROWS {
            let (mean, rstd) = ref_stats(&x[r * cols..(r + 1) * cols], 1e-5);
            for i in 0..cols {
                let gx = gamma[i] as f64 * (x[r * cols + i] as f64 - mean) * rstd;
                let err = (out.y[r * cols + i] as f64 - gx - beta[i] as f64).abs();
                let bound = 4e-6 * (1.0 + gx.abs() + (beta[i] as f64).abs());
                assert!(
                    err <= bound,
                    "{} cols {cols}: {err:e} > {bound:e}",
                    isa.name()
                );
            }
        }
    });
}

#[test]
fn backward_keeps_the_contract() {
    each_case(11, |isa, cols, x, gamma, rng| {
        let dy = rng.normal(ROWS * cols, 0.0, 1.0);
        let f = layernorm::forward(x, Some(gamma), None, cols, 1e-5).unwrap();
        let g = layernorm::backward(&dy, x, Some(gamma), &f.mean, &f.rstd, cols).unwrap();
        // The centered formula in f64 from the same inputs: the saved rstd, the row's
        // exact mean (the library recovers the saved float mean's rounding from the row;
        // at 2 cols, where dx is ~1e-5 of dy by cancellation, that rounding is all of it).
        let (mut dx, mut dg, mut db) = (vec![0f64; x.len()], vec![0f64; cols], vec![0f64; cols]);
        for r in 0..ROWS {
            let row = r * cols..(r + 1) * cols;
            let (m, s) = (ref_stats(&x[row.clone()], 1e-5).0, f.rstd[r] as f64);
            let xhat: Vec<f64> = x[row.clone()].iter().map(|&v| (v as f64 - m) * s).collect();
            let gd: Vec<f64> = (0..cols)
                .map(|i| dy[r * cols + i] as f64 * gamma[i] as f64)
                .collect();
            let mg = gd.iter().sum::<f64>() / cols as f64;
            let mgx = gd.iter().zip(&xhat).map(|(a, b)| a * b).sum::<f64>() / cols as f64;
            for i in 0..cols {
                dx[r * cols + i] = s * (gd[i] - mg - xhat[i] * mgx);
                dg[i] += dy[r * cols + i] as f64 * xhat[i];
                db[i] += dy[r * cols + i] as f64;
            }
        }
        // NUMERICS.md: ||got - ref||_inf <= 1e-5 ||ref||_inf for dx, dgamma, dbeta.
        for (what, got, want) in [
            ("dx", &g.dx, &dx),
            ("dgamma", &g.dgamma, &dg),
            ("dbeta", &g.dbeta, &db),
        ] {
            let norm = want.iter().fold(0f64, |a, v| a.max(v.abs()));
            let err = got
                .iter()
                .zip(want.iter())
                .fold(0f64, |a, (g, w)| a.max((*g as f64 - w).abs()));
            assert!(
                err <= 1e-5 * norm,
                "{} {what} cols {cols}: {err:e} > 1e-5 * {norm:e}",
                isa.name()
            );
        }
    });
}

#[test]
fn errors_are_results() {
    let x = vec![1.0f32; 12];
    let bad_len = layernorm::forward(&x, None, None, 5, 1e-5).unwrap_err();
    assert!(matches!(bad_len, Error::Length { what: "x", .. }));
    let gamma = vec![1.0f32; 3];
    let bad_gamma = layernorm::forward(&x, Some(&gamma), None, 4, 1e-5).unwrap_err();
    assert_eq!(
        bad_gamma,
        Error::Length {
            what: "gamma",
            expected: 4,
            got: 3
        }
    );
    assert_eq!(
        layernorm::forward(&x, None, None, 0, 1e-5).unwrap_err(),
        Error::Status(layernorm::ERR_SHAPE)
    );
    let eps = layernorm::forward(&x, None, None, 4, -1.0).unwrap_err();
    assert_eq!(eps, Error::Status(layernorm::ERR_EPS));
    assert!(eps.to_string().contains("eps"));
    let _guard = ISA_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(missing) = ALL_ISAS.into_iter().find(|i| !i.available()) {
        let before = layernorm::isa();
        assert_eq!(
            layernorm::set_max_isa(missing),
            Err(Error::Status(layernorm::ERR_ISA))
        );
        assert_eq!(layernorm::isa(), before);
    }
}

#[test]
fn version_and_names() {
    let (major, minor, patch) = layernorm::version();
    assert_eq!(major, 1);
    assert_eq!(
        layernorm::version_string(),
        format!("{major}.{minor}.{patch}")
    );
    let names: Vec<&str> = ALL_ISAS.iter().map(|i| i.name()).collect();
    assert_eq!(names, ["scalar", "avx2", "avx512", "neon", "sve"]);
    assert!(Isa::Scalar.available());
}
