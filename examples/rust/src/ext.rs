// ext.rs - the 1.1 entry points: row strides (views into wider buffers), RMSNorm,
// gradient accumulation and the fused residual add; same checks-then-call shape as lib.rs.
use crate::{check, ffi, opt_ptr, want, Error, ERR_SHAPE};
use std::ptr;

/// RMSNorm instead of LayerNorm (no centering; mean is written as 0, not read back).
pub const RMS_NORM: u32 = 0x1;
/// Backward adds into dx, dgamma and dbeta instead of overwriting them.
pub const ACCUMULATE: u32 = 0x2;

/// `rows` rows of `cols` floats, row r starting at element r * ld of its slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows {
    pub rows: usize,
    pub cols: usize,
    pub ld: usize,
}

impl Rows {
    pub fn contiguous(rows: usize, cols: usize) -> Rows {
        Rows {
            rows,
            cols,
            ld: cols,
        }
    }

    /// Checks that `s` holds every element the view touches (it may hold more).
    fn fits(&self, what: &'static str, len: usize) -> Result<(), Error> {
        if self.cols == 0 || self.ld < self.cols {
            return Err(Error::Status(ERR_SHAPE));
        }
        let span = if self.rows == 0 {
            0
        } else {
            (self.rows - 1) * self.ld + self.cols
        };
        if len < span {
            return Err(Error::Length {
                what,
                expected: span,
                got: len,
            });
        }
        Ok(())
    }
}

fn opt_mut(s: Option<&mut [f32]>) -> *mut f32 {
    s.map_or(ptr::null_mut(), |s| s.as_mut_ptr())
}

fn opt_len(what: &'static str, s: &Option<&mut [f32]>, n: usize) -> Result<(), Error> {
    s.as_ref().map_or(Ok(()), |s| want(what, s.len(), n))
}

/// Forward over row views: x laid out as `xr`, y with row stride `ldy`; mean and rstd
/// (rows long) optional. flags: 0 or RMS_NORM.
#[allow(clippy::too_many_arguments)]
pub fn forward_ex(
    x: &[f32],
    xr: Rows,
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    y: &mut [f32],
    ldy: usize,
    mean: Option<&mut [f32]>,
    rstd: Option<&mut [f32]>,
    eps: f32,
    flags: u32,
) -> Result<(), Error> {
    xr.fits("x", x.len())?;
    Rows { ld: ldy, ..xr }.fits("y", y.len())?;
    gamma.map_or(Ok(()), |g| want("gamma", g.len(), xr.cols))?;
    beta.map_or(Ok(()), |b| want("beta", b.len(), xr.cols))?;
    opt_len("mean", &mean, xr.rows)?;
    opt_len("rstd", &rstd, xr.rows)?;
    check(unsafe {
        ffi::ln_forward_ex_f32(
            x.as_ptr(),
            xr.ld,
            opt_ptr(gamma),
            opt_ptr(beta),
            y.as_mut_ptr(),
            ldy,
            opt_mut(mean),
            opt_mut(rstd),
            xr.rows,
            xr.cols,
            eps,
            flags,
        )
    })
}

/// Backward over row views: dy and x laid out as `xr` but with their own strides, dx
/// (optional) with stride `lddx`. mean may be None with RMS_NORM. flags: RMS_NORM,
/// ACCUMULATE or both.
#[allow(clippy::too_many_arguments)]
pub fn backward_ex(
    dy: &[f32],
    lddy: usize,
    x: &[f32],
    xr: Rows,
    gamma: Option<&[f32]>,
    mean: Option<&[f32]>,
    rstd: &[f32],
    dx: Option<(&mut [f32], usize)>,
    dgamma: Option<&mut [f32]>,
    dbeta: Option<&mut [f32]>,
    flags: u32,
) -> Result<(), Error> {
    xr.fits("x", x.len())?;
    Rows { ld: lddy, ..xr }.fits("dy", dy.len())?;
    gamma.map_or(Ok(()), |g| want("gamma", g.len(), xr.cols))?;
    mean.map_or(Ok(()), |m| want("mean", m.len(), xr.rows))?;
    want("rstd", rstd.len(), xr.rows)?;
    opt_len("dgamma", &dgamma, xr.cols)?;
    opt_len("dbeta", &dbeta, xr.cols)?;
    let (dx, lddx) = match dx {
        Some((d, ld)) => {
            Rows { ld, ..xr }.fits("dx", d.len())?;
            (d.as_mut_ptr(), ld)
        }
        None => (ptr::null_mut(), xr.cols),
    };
    check(unsafe {
        ffi::ln_backward_ex_f32(
            dy.as_ptr(),
            lddy,
            x.as_ptr(),
            xr.ld,
            opt_ptr(gamma),
            opt_ptr(mean),
            rstd.as_ptr(),
            dx,
            lddx,
            opt_mut(dgamma),
            opt_mut(dbeta),
            xr.rows,
            xr.cols,
            flags,
        )
    })
}

/// The pre-LN block in one pass: s = x + residual (into `sum` when given), y = LN(s).
/// Contiguous rows; flags: 0 or RMS_NORM.
#[allow(clippy::too_many_arguments)]
pub fn add_forward(
    x: &[f32],
    residual: &[f32],
    cols: usize,
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    sum: Option<&mut [f32]>,
    y: &mut [f32],
    mean: Option<&mut [f32]>,
    rstd: Option<&mut [f32]>,
    eps: f32,
    flags: u32,
) -> Result<(), Error> {
    let rows = crate::rows_of(x.len(), cols)?;
    want("residual", residual.len(), x.len())?;
    want("y", y.len(), x.len())?;
    opt_len("sum", &sum, x.len())?;
    gamma.map_or(Ok(()), |g| want("gamma", g.len(), cols))?;
    beta.map_or(Ok(()), |b| want("beta", b.len(), cols))?;
    opt_len("mean", &mean, rows)?;
    opt_len("rstd", &rstd, rows)?;
    check(unsafe {
        ffi::ln_add_forward_f32(
            x.as_ptr(),
            residual.as_ptr(),
            opt_ptr(gamma),
            opt_ptr(beta),
            opt_mut(sum),
            y.as_mut_ptr(),
            opt_mut(mean),
            opt_mut(rstd),
            rows,
            cols,
            eps,
            flags,
        )
    })
}
