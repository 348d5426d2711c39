// gelu.rs - the 1.3 GELU, elementwise over f32 slices (the activation of a GPT-2 MLP).
use crate::{check, ffi, want, Error};
use std::os::raw::c_int;

/// Which GELU: the library's permanent LN_GELU_* values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gelu {
    /// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), GPT-2's form.
    Tanh = 0,
    /// 0.5 x (1 + erf(x / sqrt 2)), the exact form.
    Erf = 1,
}

/// y[i] = gelu(x[i]); y must be as long as x.
pub fn gelu_forward_into(x: &[f32], y: &mut [f32], kind: Gelu) -> Result<(), Error> {
    want("y", y.len(), x.len())?;
    check(unsafe { ffi::ln_gelu_forward_f32(x.as_ptr(), y.as_mut_ptr(), x.len(), kind as c_int) })
}

pub fn gelu_forward(x: &[f32], kind: Gelu) -> Result<Vec<f32>, Error> {
    let mut y = vec![0.0; x.len()];
    gelu_forward_into(x, &mut y, kind)?;
    Ok(y)
}

/// dx[i] = dy[i] * gelu'(x[i]); dy and dx as long as x.
pub fn gelu_backward_into(dy: &[f32], x: &[f32], dx: &mut [f32], kind: Gelu) -> Result<(), Error> {
    want("dy", dy.len(), x.len())?;
    want("dx", dx.len(), x.len())?;
    check(unsafe {
        ffi::ln_gelu_backward_f32(
            dy.as_ptr(),
            x.as_ptr(),
            dx.as_mut_ptr(),
            x.len(),
            kind as c_int,
        )
    })
}

pub fn gelu_backward(dy: &[f32], x: &[f32], kind: Gelu) -> Result<Vec<f32>, Error> {
    let mut dx = vec![0.0; x.len()];
    gelu_backward_into(dy, x, &mut dx, kind)?;
    Ok(dx)
}
