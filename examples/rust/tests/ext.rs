// ext.rs - the 1.1 wrappers: views give the contiguous bits, RMSNorm, accumulate, fused add.
mod common;

use common::{each_isa, Rng};
use layernorm::{Error, Rows, ACCUMULATE, RMS_NORM};

const U: f64 = 1.0 / (1u64 << 24) as f64; // float32 unit roundoff

/// Rows of `cols` from column `off` of a (rows x ld) buffer, made contiguous.
fn gather(buf: &[f32], rows: usize, cols: usize, ld: usize, off: usize) -> Vec<f32> {
    (0..rows)
        .flat_map(|r| buf[r * ld + off..r * ld + off + cols].to_vec())
        .collect()
}

#[test]
fn views_give_the_contiguous_bits() {
    let mut rng = Rng(21);
    each_isa(|isa| {
        for cols in [1usize, 7, 33, 768] {
            let (rows, ld) = (5, 3 * cols + 5);
            let buf = rng.normal(rows * ld, 0.3, 1.5);
            let dybuf = rng.normal(rows * ld, 0.0, 1.0);
            let gamma = rng.normal(cols, 1.0, 0.3);
            let view = Rows { rows, cols, ld };
            let (x, dy) = (
                gather(&buf, rows, cols, ld, cols),
                gather(&dybuf, rows, cols, ld, 2),
            );
            let want = layernorm::forward(&x, Some(&gamma), None, cols, 1e-5).unwrap();
            let mut ybuf = vec![0f32; rows * ld];
            let (mut m, mut r) = (vec![0f32; rows], vec![0f32; rows]);
            layernorm::forward_ex(
                &buf[cols..],
                view,
                Some(&gamma),
                None,
                &mut ybuf[1..],
                ld,
                Some(&mut m),
                Some(&mut r),
                1e-5,
                0,
            )
            .unwrap();
            assert_eq!(
                gather(&ybuf, rows, cols, ld, 1),
                want.y,
                "{} cols {cols}",
                isa.name()
            );
            assert_eq!(
                (m.clone(), r.clone()),
                (want.mean.clone(), want.rstd.clone())
            );
            // Nothing outside the view was written.
            let outside = ybuf
                .iter()
                .enumerate()
                .filter(|(i, _)| (i % ld) < 1 || (i % ld) > cols);
            assert!(outside.into_iter().all(|(_, v)| *v == 0.0));

            let g = layernorm::backward(&dy, &x, Some(&gamma), &m, &r, cols).unwrap();
            let mut dxbuf = vec![0f32; rows * ld];
            let (mut dg, mut db) = (vec![0f32; cols], vec![0f32; cols]);
            layernorm::backward_ex(
                &dybuf[2..],
                ld,
                &buf[cols..],
                view,
                Some(&gamma),
                Some(&m),
                &r,
                Some((&mut dxbuf[..], ld)),
                Some(&mut dg),
                Some(&mut db),
                0,
            )
            .unwrap();
            assert_eq!(gather(&dxbuf, rows, cols, ld, 0), g.dx);
            assert_eq!((dg, db), (g.dgamma, g.dbeta));
        }
    });
}

#[test]
fn rms_norm_and_accumulate() {
    let mut rng = Rng(22);
    each_isa(|isa| {
        let (rows, cols) = (67, 96);
        let x = rng.normal(rows * cols, 0.5, 2.0);
        let dy = rng.normal(rows * cols, 0.0, 1.0);
        let contiguous = Rows::contiguous(rows, cols);
        let (mut y, mut m, mut r) = (vec![0f32; x.len()], vec![1f32; rows], vec![0f32; rows]);
        layernorm::forward_ex(
            &x,
            contiguous,
            None,
            None,
            &mut y,
            cols,
            Some(&mut m),
            Some(&mut r),
            1e-5,
            RMS_NORM,
        )
        .unwrap();
        assert!(m.iter().all(|v| *v == 0.0));
        for row in 0..rows {
            let xs = &x[row * cols..(row + 1) * cols];
            let ms = xs.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / cols as f64;
            let rstd = 1.0 / (ms + 1e-5).sqrt();
            for i in 0..cols {
                // The LayerNorm contract with xhat = x rstd (tests/test_kernel_strided_flags.c).
                let want = xs[i] as f64 * rstd;
                let err = (y[row * cols + i] as f64 - want).abs();
                assert!(
                    err <= 4e-6 * (1.0 + want.abs()),
                    "{} rms row {row}",
                    isa.name()
                );
            }
        }
        // Accumulate: within u (|old| + 2 |fresh|) of old + fresh (test_kernel_strided_flags.c).
        let grads = |start: (Vec<f32>, Vec<f32>, Vec<f32>), extra: u32| {
            let (mut dx, mut dg, mut db) = start;
            layernorm::backward_ex(
                &dy,
                cols,
                &x,
                contiguous,
                None,
                None,
                &r,
                Some((&mut dx[..], cols)),
                Some(&mut dg),
                Some(&mut db),
                RMS_NORM | extra,
            )
            .unwrap();
            (dx, dg, db)
        };
        let fresh = grads(
            (vec![0.0; rows * cols], vec![0.0; cols], vec![0.0; cols]),
            0,
        );
        let old = (
            rng.normal(rows * cols, 0.0, 3.0),
            rng.normal(cols, 0.0, 3.0),
            rng.normal(cols, 0.0, 3.0),
        );
        let acc = grads(old.clone(), ACCUMULATE);
        for (a, (o, f)) in [
            (&acc.0, (&old.0, &fresh.0)),
            (&acc.1, (&old.1, &fresh.1)),
            (&acc.2, (&old.2, &fresh.2)),
        ] {
            for i in 0..a.len() {
                let want = o[i] as f64 + f[i] as f64;
                let bound = U * ((o[i] as f64).abs() + 2.0001 * (f[i] as f64).abs());
                assert!(
                    (a[i] as f64 - want).abs() <= bound,
                    "{} accumulate",
                    isa.name()
                );
            }
        }
    });
}

#[test]
fn add_forward_is_forward_of_the_sum() {
    let mut rng = Rng(23);
    each_isa(|isa| {
        let (rows, cols) = (4, 768);
        let x = rng.normal(rows * cols, 0.0, 1.0);
        let res = rng.normal(rows * cols, 0.0, 4.0);
        let s: Vec<f32> = x.iter().zip(&res).map(|(a, b)| a + b).collect();
        let want = layernorm::forward(&s, None, None, cols, 1e-5).unwrap();
        let (mut sum, mut y) = (vec![0f32; s.len()], vec![0f32; s.len()]);
        layernorm::add_forward(
            &x,
            &res,
            cols,
            None,
            None,
            Some(&mut sum),
            &mut y,
            None,
            None,
            1e-5,
            0,
        )
        .unwrap();
        assert_eq!(sum, s, "{}", isa.name());
        assert_eq!(y, want.y, "{}", isa.name());
    });
}

#[test]
fn view_errors() {
    let x = vec![0f32; 10];
    let mut y = vec![0f32; 10];
    let mut try_view = |rows, ld, flags| {
        let view = Rows { rows, cols: 4, ld };
        layernorm::forward_ex(&x, view, None, None, &mut y, 4, None, None, 1e-5, flags)
    };
    let short = Error::Length {
        what: "x",
        expected: 12,
        got: 10,
    };
    assert_eq!(try_view(3, 4, 0), Err(short));
    assert_eq!(try_view(2, 3, 0), Err(Error::Status(layernorm::ERR_SHAPE)));
    assert_eq!(
        try_view(2, 4, 0x80),
        Err(Error::Status(layernorm::ERR_FLAGS))
    );
    assert_eq!(try_view(2, 4, 0), Ok(()));
}
