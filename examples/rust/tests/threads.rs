// threads.rs - the thread setting: clamped, process-wide, and every result bitwise the
// same for 1, 2 and 4 threads on every available ISA.
mod common;

use common::{each_isa, Rng};
use layernorm::{f32_to_bf16, Gelu};

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

#[test]
fn threads_are_clamped_and_change_no_bit() {
    // One test: the setting is process-wide and cargo runs tests on several threads.
    let before = layernorm::num_threads();
    for (n, want) in [
        (0, 1),
        (1, 1),
        (3, 3),
        (256, 256),
        (1000, 256),
        (usize::MAX, 256),
    ] {
        layernorm::set_num_threads(n);
        assert_eq!(layernorm::num_threads(), want, "set_num_threads({n})");
    }
    // Big enough for 4 threads in every operation: forward takes one per 32768 elements,
    // backward one per 65536 and per 64 rows.
    let (rows, cols) = (512, 1024);
    let mut rng = Rng(41);
    let x = rng.normal(rows * cols, 0.3, 2.0);
    let dy = rng.normal(rows * cols, 0.0, 1.0);
    let gamma = rng.normal(cols, 1.0, 0.5);
    let (xb, dyb): (Vec<u16>, Vec<u16>) = (
        x.iter().map(|v| f32_to_bf16(*v)).collect(),
        dy.iter().map(|v| f32_to_bf16(*v)).collect(),
    );
    each_isa(|isa| {
        let run = |threads: usize| {
            layernorm::set_num_threads(threads);
            let f = layernorm::forward(&x, Some(&gamma), None, cols, 1e-5).unwrap();
            let g = layernorm::backward(&dy, &x, Some(&gamma), &f.mean, &f.rstd, cols).unwrap();
            let fb = layernorm::forward_bf16(&xb, Some(&gamma), None, cols, 1e-5).unwrap();
            let gb = layernorm::backward_bf16(&dyb, &xb, Some(&gamma), &fb.mean, &fb.rstd, cols)
                .unwrap();
            let gelu = layernorm::gelu_forward(&x, Gelu::Tanh).unwrap();
            let dgelu = layernorm::gelu_backward(&dy, &x, Gelu::Erf).unwrap();
            (
                [
                    f.y, f.mean, f.rstd, g.dx, g.dgamma, g.dbeta, fb.mean, fb.rstd, gb.dgamma,
                    gb.dbeta, gelu, dgelu,
                ]
                .map(|v| bits(&v)),
                (fb.y, gb.dx),
            )
        };
        let one = run(1);
        for threads in [2, 4] {
            assert!(run(threads) == one, "{} with {threads} threads", isa.name());
        }
    });
    layernorm::set_num_threads(before);
    assert_eq!(layernorm::num_threads(), before);
}
