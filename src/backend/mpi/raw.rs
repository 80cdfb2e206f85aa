//! The MPI handles a call needs beyond rsmpi's safe API: the library's `MPI_IN_PLACE` marker,
//! and the datatype and reduction of each element type, f16 and bf16 included.

use std::os::raw::{c_int, c_void};

use mpi::collective::UnsafeUserOperation;
use mpi::datatype::Equivalence;
use mpi::ffi;
use mpi::raw::AsRaw;

use crate::backend::host::reduce::reduce_into;
use crate::collective::{DType, ReduceOp};
use crate::error::{Error, Result};

/// The library's `MPI_IN_PLACE`. mpi.h defines it as a cast pointer constant (Open MPI
/// `(void *) 1`, MPICH and the libraries built on it `(void *) -1`), which bindgen cannot
/// carry into `mpi::ffi`, so it is chosen from the running library's version string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InPlace(usize);

impl InPlace {
    /// The marker of the library named by `MPI_Get_library_version`, if it is one whose mpi.h
    /// is known.
    pub(super) fn of_library(version: &str) -> Option<InPlace> {
        const MPICH_FAMILY: [&str; 3] = ["MPICH", "MVAPICH", "Intel(R) MPI"];
        if version.contains("Open MPI") {
            Some(InPlace(1))
        } else if MPICH_FAMILY.iter().any(|name| version.contains(name)) {
            Some(InPlace(usize::MAX))
        } else {
            None
        }
    }

    /// The refusal of `--in-place` under a library whose marker is not known.
    pub(super) fn unknown(version: &str) -> Error {
        Error::usage(format!(
            "--in-place: MPI_IN_PLACE of this library is not known to collbench ({version}); \
             use --in-place off"
        ))
    }

    fn pointer(self) -> *const c_void {
        self.0 as *const c_void
    }
}

/// What calls need from the library, set up once after `MPI_Init` and dropped before
/// `MPI_Finalize`.
pub struct Handles {
    pub in_place: Option<InPlace>,
    /// The library's version string, for messages.
    pub version: String,
    half_ops: HalfOps,
}

impl Handles {
    pub(super) fn new(version: &str) -> Handles {
        Handles {
            in_place: InPlace::of_library(version),
            version: version.to_string(),
            half_ops: HalfOps::create(),
        }
    }

    /// `MPI_IN_PLACE`, or the refusal where it is not known.
    pub(super) fn in_place(&self) -> Result<*const c_void> {
        self.in_place
            .map(InPlace::pointer)
            .ok_or_else(|| InPlace::unknown(&self.version))
    }

    /// The MPI datatype of `dtype`: f16 and bf16 travel as 2-byte integers, which only the
    /// user operations of [`HalfOps`] ever combine.
    pub(super) fn datatype(&self, dtype: DType) -> ffi::MPI_Datatype {
        match dtype {
            DType::F32 => f32::equivalent_datatype().as_raw(),
            DType::F64 => f64::equivalent_datatype().as_raw(),
            DType::I32 => i32::equivalent_datatype().as_raw(),
            // SAFETY: reading a constant of rsmpi's C shim, set before any Rust code runs.
            DType::F16 | DType::BF16 => unsafe { ffi::RSMPI_UINT16_T },
        }
    }

    /// The MPI reduction `redop` on elements of `dtype`.
    pub(super) fn reduction(&self, dtype: DType, redop: ReduceOp) -> ffi::MPI_Op {
        if matches!(dtype, DType::F16 | DType::BF16) {
            return self.half_ops.get(dtype, redop);
        }
        // SAFETY: reading constants of rsmpi's C shim, set before any Rust code runs.
        unsafe {
            match redop {
                ReduceOp::Sum => ffi::RSMPI_SUM,
                ReduceOp::Max => ffi::RSMPI_MAX,
                ReduceOp::Min => ffi::RSMPI_MIN,
            }
        }
    }
}

/// The reductions on f16 and bf16, which MPI does not have: user operations that combine as the
/// host backend's kernels do (widen to f32, combine, round to nearest even), so both backends
/// compute the same values. All are commutative.
struct HalfOps(Vec<(DType, ReduceOp, UnsafeUserOperation)>);

impl HalfOps {
    /// One operation per 16-bit float type and reduction (`MPI_Op_create`; freed on drop).
    fn create() -> HalfOps {
        let mut ops = Vec::new();
        for dtype in [DType::F16, DType::BF16] {
            for &redop in ReduceOp::ALL {
                // SAFETY: the function reads and writes `len` elements of 2 bytes at the two
                // addresses MPI passes, which is what MPI guarantees are there for the
                // `MPI_UINT16_T` buffers these operations are used with.
                let op = unsafe { UnsafeUserOperation::commutative(half_function(dtype, redop)) };
                ops.push((dtype, redop, op));
            }
        }
        HalfOps(ops)
    }

    fn get(&self, dtype: DType, redop: ReduceOp) -> ffi::MPI_Op {
        let found = self.0.iter().find(|(d, r, _)| *d == dtype && *r == redop);
        // Every (16-bit type, reduction) pair is created above.
        found.map_or_else(
            || unreachable!("no {dtype} {redop} operation"),
            |o| o.2.as_raw(),
        )
    }
}

type UserFunction =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut ffi::MPI_Datatype);

/// The user function of `redop` on `dtype` (f16 or bf16).
fn half_function(dtype: DType, redop: ReduceOp) -> UserFunction {
    const SUM: u8 = 0;
    const MAX: u8 = 1;
    const MIN: u8 = 2;
    let bf16 = dtype == DType::BF16;
    match (bf16, redop) {
        (false, ReduceOp::Sum) => combine_half::<false, SUM>,
        (false, ReduceOp::Max) => combine_half::<false, MAX>,
        (false, ReduceOp::Min) => combine_half::<false, MIN>,
        (true, ReduceOp::Sum) => combine_half::<true, SUM>,
        (true, ReduceOp::Max) => combine_half::<true, MAX>,
        (true, ReduceOp::Min) => combine_half::<true, MIN>,
    }
}

/// `inoutvec[i] = invec[i] (op) inoutvec[i]` over `*len` elements of bf16 (`BF16`) or f16,
/// `OP` indexing [`ReduceOp::ALL`] order (sum, max, min): the signature of an MPI user
/// function.
///
/// # Safety
/// `invec` and `inoutvec` must hold `*len` 2-byte elements and not overlap.
unsafe extern "C" fn combine_half<const BF16: bool, const OP: u8>(
    invec: *mut c_void,
    inoutvec: *mut c_void,
    len: *mut c_int,
    _datatype: *mut ffi::MPI_Datatype,
) {
    let bytes = usize::try_from(*len).unwrap_or(0) * 2;
    if bytes == 0 {
        return;
    }
    let src = std::slice::from_raw_parts(invec.cast::<u8>(), bytes);
    let dst = std::slice::from_raw_parts_mut(inoutvec.cast::<u8>(), bytes);
    let dtype = if BF16 { DType::BF16 } else { DType::F16 };
    let redop = ReduceOp::ALL[usize::from(OP)];
    // Commutative: `dst (op) src` is `src (op) dst`.
    reduce_into(dtype, redop, dst, src);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_place_marker_follows_the_library_family() {
        let open_mpi = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4";
        assert_eq!(InPlace::of_library(open_mpi), Some(InPlace(1)));
        let mpich = "MPICH Version:      4.0\nMPICH Release date: ...";
        assert_eq!(InPlace::of_library(mpich), Some(InPlace(usize::MAX)));
        let intel = "Intel(R) MPI Library 2021.6 for Linux* OS";
        assert_eq!(InPlace::of_library(intel), Some(InPlace(usize::MAX)));
        assert_eq!(InPlace::of_library("Some MPI 1.0"), None);
        let msg = InPlace::unknown("Some MPI 1.0").to_string();
        assert!(msg.contains("Some MPI 1.0") && msg.contains("--in-place off"));
    }

    /// The user functions called as MPI calls them, on values whose f16 and bf16 results are
    /// exact only with round-to-nearest-even through f32 (bf16: 256 + 1 is a tie, kept at 256;
    /// 258 + 1 rounds up to 260).
    #[test]
    fn half_functions_combine_like_the_host_kernels() {
        use half::{bf16, f16};
        let run = |dtype, redop, a: &[f64], b: &[f64]| -> Vec<f64> {
            let mut x: Vec<u8> = vec![0; a.len() * 2];
            let mut y: Vec<u8> = vec![0; b.len() * 2];
            for (i, (&u, &v)) in a.iter().zip(b).enumerate() {
                crate::check::write_value(dtype, &mut x, i, u);
                crate::check::write_value(dtype, &mut y, i, v);
            }
            let mut len = a.len() as c_int;
            let f = half_function(dtype, redop);
            let (xp, yp) = (x.as_mut_ptr().cast(), y.as_mut_ptr().cast());
            // SAFETY: both buffers hold `len` 2-byte elements.
            unsafe { f(xp, yp, &mut len, std::ptr::null_mut()) };
            (0..a.len())
                .map(|i| crate::check::read_value(dtype, &y, i))
                .collect()
        };
        let bf = DType::BF16;
        assert_eq!(
            run(bf, ReduceOp::Sum, &[1.0, 1.0, 3.0], &[256.0, 258.0, 4.0]),
            [256.0, 260.0, 7.0]
        );
        assert_eq!(run(bf, ReduceOp::Max, &[1.0, 9.0], &[2.0, 3.0]), [2.0, 9.0]);
        assert_eq!(run(bf, ReduceOp::Min, &[1.0, 9.0], &[2.0, 3.0]), [1.0, 3.0]);
        let h = DType::F16;
        assert_eq!(
            run(h, ReduceOp::Sum, &[1.0, 0.5], &[2048.0, 1.25]),
            [2048.0, 1.75]
        );
        assert_eq!(run(h, ReduceOp::Max, &[-1.0], &[-2.0]), [-1.0]);
        assert_eq!(run(h, ReduceOp::Min, &[-1.0], &[-2.0]), [-2.0]);
        assert_eq!(f16::from_f64(2049.0).to_f64(), 2048.0);
        assert_eq!(bf16::from_f64(257.0).to_f64(), 256.0);
    }
}
