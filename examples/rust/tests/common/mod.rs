// common/mod.rs - shared by the integration tests: the per-ISA loop and a tiny RNG.
#![allow(dead_code)]
use layernorm::{Isa, ALL_ISAS};
use std::sync::Mutex;

// The ISA cap is process-wide and cargo runs tests on several threads.
pub static ISA_LOCK: Mutex<()> = Mutex::new(());

/// Runs `f` under each ISA the library can run here; the others are named as skipped.
pub fn each_isa(mut f: impl FnMut(Isa)) {
    let _guard = ISA_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let before = layernorm::isa();
    for isa in ALL_ISAS {
        if !isa.available() {
            println!(
                "isa {}: SKIPPED (not compiled in or not runnable here)",
                isa.name()
            );
            continue;
        }
        layernorm::set_max_isa(isa).unwrap();
        assert_eq!(layernorm::isa(), isa);
        f(isa);
        println!("isa {}: passed", isa.name());
    }
    layernorm::set_max_isa(before).unwrap();
}

/// splitmix64 and Box-Muller: reproducible normal samples without a crate.
pub struct Rng(pub u64);
impl Rng {
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn normal(&mut self, n: usize, mu: f64, sigma: f64) -> Vec<f32> {
        (0..n)
            .map(|_| {
                let (u, v) = (self.uniform().max(1e-300), self.uniform());
                (mu + sigma * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
            })
            .collect()
    }
}
