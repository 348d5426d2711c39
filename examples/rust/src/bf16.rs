// bf16.rs - bf16 rows (raw bits in u16) beside f32 ones: the element types lib.rs's
// forward/backward take, the 1.3 bf16 entry points, and the conversions a caller needs.
use crate::{ffi, Backward, Error, Forward};
use std::os::raw::c_int;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for u16 {}
}

// The C signatures of forward and backward for rows of T (T = f32 or u16).
type ForwardFn<T> = unsafe extern "C" fn(
    *const T,
    *const f32,
    *const f32,
    *mut T,
    *mut f32,
    *mut f32,
    usize,
    usize,
    f32,
) -> c_int;
type BackwardFn<T> = unsafe extern "C" fn(
    *const T,
    *const T,
    *const f32,
    *const f32,
    *const f32,
    *mut T,
    *mut f32,
    *mut f32,
    usize,
    usize,
) -> c_int;

/// The element types of LayerNorm rows: f32, and u16 holding bf16 bits. Sealed: the
/// library has kernels for these two only.
pub trait Element: Copy + Default + sealed::Sealed {
    #[doc(hidden)]
    const FORWARD: ForwardFn<Self>;
    #[doc(hidden)]
    const BACKWARD: BackwardFn<Self>;
}

impl Element for f32 {
    const FORWARD: ForwardFn<f32> = ffi::ln_forward_f32;
    const BACKWARD: BackwardFn<f32> = ffi::ln_backward_f32;
}

impl Element for u16 {
    const FORWARD: ForwardFn<u16> = ffi::ln_forward_bf16;
    const BACKWARD: BackwardFn<u16> = ffi::ln_backward_bf16;
}

/// The bf16 nearest to `v` (ties to even), as the library rounds its outputs; a NaN
/// stays a quiet NaN of the same sign.
pub fn f32_to_bf16(v: f32) -> u16 {
    let b = v.to_bits();
    if v.is_nan() {
        return ((b >> 16) | 0x40) as u16; // quiet bit set, so truncation cannot give Inf
    }
    let round = 0x7fff + ((b >> 16) & 1); // half an ulp, one less when the kept bit is even
    (b.wrapping_add(round) >> 16) as u16
}

/// The float with the same value (exact: bf16 is the upper half of an f32).
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// bf16 forward into caller-owned buffers (forward_into for u16 rows): x and y rows*cols
/// bf16, gamma and beta cols floats (None: ones, zeros), mean and rstd rows floats.
#[allow(clippy::too_many_arguments)]
pub fn forward_bf16_into(
    x: &[u16],
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    cols: usize,
    eps: f32,
    y: &mut [u16],
    mean: &mut [f32],
    rstd: &mut [f32],
) -> Result<(), Error> {
    crate::forward_into(x, gamma, beta, cols, eps, y, mean, rstd)
}

/// LayerNorm of each bf16 row (statistics in float, y rounded to bf16).
pub fn forward_bf16(
    x: &[u16],
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    cols: usize,
    eps: f32,
) -> Result<Forward<u16>, Error> {
    crate::forward(x, gamma, beta, cols, eps)
}

/// Gradients of the bf16 forward: dx in bf16, dgamma and dbeta in float. mean and rstd
/// as either forward wrote them.
pub fn backward_bf16(
    dy: &[u16],
    x: &[u16],
    gamma: Option<&[f32]>,
    mean: &[f32],
    rstd: &[f32],
    cols: usize,
) -> Result<Backward<u16>, Error> {
    crate::backward(dy, x, gamma, mean, rstd, cols)
}
