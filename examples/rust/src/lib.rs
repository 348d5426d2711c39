//! lib.rs - safe wrapper: slices in, `Result` out; lengths checked before any C call.
//!
//! ```no_run
//! let (rows, cols) = (2, 768);
//! let x = vec![0.5f32; rows * cols];
//! let out = layernorm::forward(&x, None, None, cols, 1e-5).unwrap();
//! let grads = layernorm::backward(&x, &x, None, &out.mean, &out.rstd, cols).unwrap();
//! layernorm::set_num_threads(2); // bitwise the same results, split over 2 threads
//! let xb: Vec<u16> = x.iter().map(|v| layernorm::f32_to_bf16(*v)).collect();
//! let outb = layernorm::forward_bf16(&xb, None, None, cols, 1e-5).unwrap();
//! let act = layernorm::gelu_forward(&out.y, layernorm::Gelu::Tanh).unwrap();
//! ```
mod bf16;
mod ext;
mod ffi;
mod gelu;

pub use bf16::{backward_bf16, bf16_to_f32, f32_to_bf16, forward_bf16, forward_bf16_into, Element};
pub use ext::{add_forward, backward_ex, forward_ex, Rows, ACCUMULATE, RMS_NORM};
pub use gelu::{gelu_backward, gelu_backward_into, gelu_forward, gelu_forward_into, Gelu};

use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_int;
use std::ptr;

/// A failure: a status code of the library, or a slice whose length does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A non-zero LN_ERR_* status (permanent values: 1 NULL ... 8 KIND).
    Status(i32),
    /// `what` has `got` elements where the shape needs `expected`.
    Length {
        what: &'static str,
        expected: usize,
        got: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Status(s) => write!(f, "liblayernorm: {} (status {})", status_string(*s), s),
            Error::Length {
                what,
                expected,
                got,
            } => {
                write!(f, "{what} has {got} elements, expected {expected}")
            }
        }
    }
}

impl std::error::Error for Error {}

pub const ERR_SHAPE: i32 = 2;
pub const ERR_EPS: i32 = 3;
pub const ERR_ISA: i32 = 5;
pub const ERR_FLAGS: i32 = 7;
pub const ERR_KIND: i32 = 8;

fn static_str(p: *const std::os::raw::c_char) -> &'static str {
    // The library returns static ASCII strings for every input.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("?")
}

pub fn status_string(status: i32) -> &'static str {
    static_str(unsafe { ffi::ln_status_string(status) })
}

fn check(status: c_int) -> Result<(), Error> {
    if status == 0 {
        Ok(())
    } else {
        Err(Error::Status(status))
    }
}

fn want(what: &'static str, got: usize, expected: usize) -> Result<(), Error> {
    if got == expected {
        Ok(())
    } else {
        Err(Error::Length {
            what,
            expected,
            got,
        })
    }
}

fn opt_ptr(s: Option<&[f32]>) -> *const f32 {
    s.map_or(ptr::null(), |s| s.as_ptr())
}

/// Rows of a row-major matrix of `len` floats with `cols` columns.
fn rows_of(len: usize, cols: usize) -> Result<usize, Error> {
    if cols == 0 {
        return Err(Error::Status(ERR_SHAPE)); // as the library says for cols == 0
    }
    want("x", len, len / cols * cols)?;
    Ok(len / cols)
}

/// Forward into caller-owned buffers: x and y are rows*cols (f32, or bf16 bits as u16),
/// mean and rstd rows long.
#[allow(clippy::too_many_arguments)]
pub fn forward_into<T: Element>(
    x: &[T],
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    cols: usize,
    eps: f32,
    y: &mut [T],
    mean: &mut [f32],
    rstd: &mut [f32],
) -> Result<(), Error> {
    let rows = rows_of(x.len(), cols)?;
    gamma.map_or(Ok(()), |g| want("gamma", g.len(), cols))?;
    beta.map_or(Ok(()), |b| want("beta", b.len(), cols))?;
    want("y", y.len(), x.len())?;
    want("mean", mean.len(), rows)?;
    want("rstd", rstd.len(), rows)?;
    check(unsafe {
        T::FORWARD(
            x.as_ptr(),
            opt_ptr(gamma),
            opt_ptr(beta),
            y.as_mut_ptr(),
            mean.as_mut_ptr(),
            rstd.as_mut_ptr(),
            rows,
            cols,
            eps,
        )
    })
}

/// What forward returns: y (f32, or raw bf16 bits as u16) plus the per-row statistics
/// backward needs, always f32.
#[derive(Debug, Clone)]
pub struct Forward<T = f32> {
    pub y: Vec<T>,
    pub mean: Vec<f32>,
    pub rstd: Vec<f32>,
}

/// LayerNorm of each row of `x` (row-major, `cols` wide). gamma, beta: None = 1, 0.
/// For bf16 rows (u16 bits) the statistics are float and y is rounded to bf16.
pub fn forward<T: Element>(
    x: &[T],
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    cols: usize,
    eps: f32,
) -> Result<Forward<T>, Error> {
    let rows = rows_of(x.len(), cols)?;
    let mut out = Forward {
        y: vec![T::default(); x.len()],
        mean: vec![0.0; rows],
        rstd: vec![0.0; rows],
    };
    forward_into(
        x,
        gamma,
        beta,
        cols,
        eps,
        &mut out.y,
        &mut out.mean,
        &mut out.rstd,
    )?;
    Ok(out)
}

/// Gradients of forward: dx (rows*cols, f32 or bf16 bits), dgamma and dbeta (cols, f32,
/// summed over rows).
#[derive(Debug, Clone)]
pub struct Backward<T = f32> {
    pub dx: Vec<T>,
    pub dgamma: Vec<f32>,
    pub dbeta: Vec<f32>,
}

/// mean and rstd as forward (of either element type) wrote them.
pub fn backward<T: Element>(
    dy: &[T],
    x: &[T],
    gamma: Option<&[f32]>,
    mean: &[f32],
    rstd: &[f32],
    cols: usize,
) -> Result<Backward<T>, Error> {
    let rows = rows_of(x.len(), cols)?;
    want("dy", dy.len(), x.len())?;
    want("mean", mean.len(), rows)?;
    want("rstd", rstd.len(), rows)?;
    gamma.map_or(Ok(()), |g| want("gamma", g.len(), cols))?;
    // Zeroed: with no rows the library writes nothing, and the sums are then 0.
    let mut g = Backward {
        dx: vec![T::default(); x.len()],
        dgamma: vec![0.0; cols],
        dbeta: vec![0.0; cols],
    };
    check(unsafe {
        T::BACKWARD(
            dy.as_ptr(),
            x.as_ptr(),
            opt_ptr(gamma),
            mean.as_ptr(),
            rstd.as_ptr(),
            g.dx.as_mut_ptr(),
            g.dgamma.as_mut_ptr(),
            g.dbeta.as_mut_ptr(),
            rows,
            cols,
        )
    })?;
    Ok(g)
}

/// Instruction-set ids: the library's permanent values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Scalar = 0,
    Avx2 = 1,
    Avx512 = 2,
    Neon = 3,
    Sve = 4,
}

pub const ALL_ISAS: [Isa; 5] = [Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon, Isa::Sve];

impl Isa {
    pub fn name(self) -> &'static str {
        static_str(unsafe { ffi::ln_isa_name(self as c_int) })
    }
    pub fn available(self) -> bool {
        unsafe { ffi::ln_isa_available(self as c_int) != 0 }
    }
}

/// The kernel in use.
pub fn isa() -> Isa {
    let id = unsafe { ffi::ln_get_isa() };
    ALL_ISAS
        .into_iter()
        .find(|i| *i as c_int == id)
        .unwrap_or(Isa::Scalar)
}

/// Caps the kernel for the whole process (best available ISA not above `isa`).
pub fn set_max_isa(isa: Isa) -> Result<(), Error> {
    check(unsafe { ffi::ln_set_max_isa(isa as c_int) })
}

/// (major, minor, patch) of the loaded library, and its version string.
pub fn version() -> (u32, u32, u32) {
    let v = unsafe { ffi::ln_version() };
    (v / 10000, v / 100 % 100, v % 100)
}

pub fn version_string() -> &'static str {
    static_str(unsafe { ffi::ln_version_string() })
}

/// The most threads one call may use, for the whole process (default 1; the library
/// clamps to 1..=256). Results are bitwise the same for every setting.
pub fn set_num_threads(n: usize) {
    let n = n.min(std::os::raw::c_int::MAX as usize) as c_int;
    // Always LN_OK: every value is clamped, none refused.
    unsafe { ffi::ln_set_num_threads(n) };
}

/// The current thread setting (from set_num_threads, else $LN_NUM_THREADS, else 1).
pub fn num_threads() -> usize {
    unsafe { ffi::ln_get_num_threads() }.max(1) as usize
}
