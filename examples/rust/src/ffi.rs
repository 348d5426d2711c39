// ffi.rs - the C declarations of include/layernorm.h, one to one (LAYERNORM_1.0 to 1.3).
use std::os::raw::{c_char, c_int, c_uint};

extern "C" {
    pub fn ln_forward_f32(
        x: *const f32,
        gamma: *const f32,
        beta: *const f32,
        y: *mut f32,
        mean: *mut f32,
        rstd: *mut f32,
        rows: usize,
        cols: usize,
        eps: f32,
    ) -> c_int;
    pub fn ln_backward_f32(
        dy: *const f32,
        x: *const f32,
        gamma: *const f32,
        mean: *const f32,
        rstd: *const f32,
        dx: *mut f32,
        dgamma: *mut f32,
        dbeta: *mut f32,
        rows: usize,
        cols: usize,
    ) -> c_int;
    pub fn ln_status_string(status: c_int) -> *const c_char;
    pub fn ln_get_isa() -> c_int;
    pub fn ln_set_max_isa(isa: c_int) -> c_int;
    pub fn ln_isa_available(isa: c_int) -> c_int;
    pub fn ln_isa_name(isa: c_int) -> *const c_char;
    pub fn ln_version() -> c_uint;
    pub fn ln_version_string() -> *const c_char;
}

// LAYERNORM_1.1
extern "C" {
    pub fn ln_forward_ex_f32(
        x: *const f32,
        ldx: usize,
        gamma: *const f32,
        beta: *const f32,
        y: *mut f32,
        ldy: usize,
        mean: *mut f32,
        rstd: *mut f32,
        rows: usize,
        cols: usize,
        eps: f32,
        flags: c_uint,
    ) -> c_int;
    pub fn ln_backward_ex_f32(
        dy: *const f32,
        lddy: usize,
        x: *const f32,
        ldx: usize,
        gamma: *const f32,
        mean: *const f32,
        rstd: *const f32,
        dx: *mut f32,
        lddx: usize,
        dgamma: *mut f32,
        dbeta: *mut f32,
        rows: usize,
        cols: usize,
        flags: c_uint,
    ) -> c_int;
    pub fn ln_add_forward_f32(
        x: *const f32,
        residual: *const f32,
        gamma: *const f32,
        beta: *const f32,
        sum: *mut f32,
        y: *mut f32,
        mean: *mut f32,
        rstd: *mut f32,
        rows: usize,
        cols: usize,
        eps: f32,
        flags: c_uint,
    ) -> c_int;
}

// LAYERNORM_1.2: threads
extern "C" {
    pub fn ln_set_num_threads(n: c_int) -> c_int;
    pub fn ln_get_num_threads() -> c_int;
}

// LAYERNORM_1.3: bf16 LayerNorm (raw bf16 bits in u16) and GELU
extern "C" {
    pub fn ln_forward_bf16(
        x: *const u16,
        gamma: *const f32,
        beta: *const f32,
        y: *mut u16,
        mean: *mut f32,
        rstd: *mut f32,
        rows: usize,
        cols: usize,
        eps: f32,
    ) -> c_int;
    pub fn ln_backward_bf16(
        dy: *const u16,
        x: *const u16,
        gamma: *const f32,
        mean: *const f32,
        rstd: *const f32,
        dx: *mut u16,
        dgamma: *mut f32,
        dbeta: *mut f32,
        rows: usize,
        cols: usize,
    ) -> c_int;
    pub fn ln_gelu_forward_f32(x: *const f32, y: *mut f32, n: usize, kind: c_int) -> c_int;
    pub fn ln_gelu_backward_f32(
        dy: *const f32,
        x: *const f32,
        dx: *mut f32,
        n: usize,
        kind: c_int,
    ) -> c_int;
}
