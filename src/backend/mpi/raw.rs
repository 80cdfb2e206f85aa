//! The MPI handles a call needs beyond rsmpi's safe API: the library's `MPI_IN_PLACE` marker,
//! and the datatype and reduction of each element type, f16, bf16 and fp8 included.

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
    narrow_ops: NarrowOps,
}

impl Handles {
    pub(super) fn new(version: &str) -> Handles {
        Handles {
            in_place: InPlace::of_library(version),
            version: version.to_string(),
            narrow_ops: NarrowOps::create(),
        }
    }

    /// `MPI_IN_PLACE`, or the refusal where it is not known.
    pub(super) fn in_place(&self) -> Result<*const c_void> {
        self.in_place
            .map(InPlace::pointer)
            .ok_or_else(|| InPlace::unknown(&self.version))
    }

    /// The MPI datatype of `dtype`: the 16- and 8-bit floats travel as unsigned integers of
    /// their size, which only the user operations of [`NarrowOps`] ever combine.
    pub(super) fn datatype(&self, dtype: DType) -> ffi::MPI_Datatype {
        match dtype {
            DType::F32 => f32::equivalent_datatype().as_raw(),
            DType::F64 => f64::equivalent_datatype().as_raw(),
            DType::I32 => i32::equivalent_datatype().as_raw(),
            DType::I8 => i8::equivalent_datatype().as_raw(),
            DType::U8 | DType::F8E4M3 | DType::F8E5M2 => u8::equivalent_datatype().as_raw(),
            DType::U32 => u32::equivalent_datatype().as_raw(),
            DType::I64 => i64::equivalent_datatype().as_raw(),
            DType::U64 => u64::equivalent_datatype().as_raw(),
            DType::F16 | DType::BF16 => u16::equivalent_datatype().as_raw(),
        }
    }

    /// The MPI reduction `redop` on elements of `dtype`; avg and mulsum, which MPI lacks, are
    /// refused.
    pub(super) fn reduction(&self, dtype: DType, redop: ReduceOp) -> Result<ffi::MPI_Op> {
        let Some(k) = MPI_REDOPS.iter().position(|&r| r == redop) else {
            return Err(Error::usage(format!(
                "--redop {redop}: MPI has no such reduction; use --backend host or nccl"
            )));
        };
        if let Some(d) = NARROW.iter().position(|&n| n == dtype) {
            return Ok(self.narrow_ops.0[d][k].as_raw());
        }
        // SAFETY: reading constants of rsmpi's C shim, set before any Rust code runs.
        Ok(unsafe {
            [
                ffi::RSMPI_SUM,
                ffi::RSMPI_PROD,
                ffi::RSMPI_MAX,
                ffi::RSMPI_MIN,
            ][k]
        })
    }
}

/// The reductions MPI has, in the order of the user functions below.
const MPI_REDOPS: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min];

/// The float types MPI lacks, in the order of the user functions below.
const NARROW: [DType; 4] = [DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2];

/// The reductions on f16, bf16 and fp8, which MPI does not have: user operations that combine
/// as the host backend's kernels do (widen to f32, combine, round to nearest even), so both
/// backends compute the same values. All are commutative.
struct NarrowOps(Vec<Vec<UnsafeUserOperation>>);

impl NarrowOps {
    /// One operation per narrow float type and MPI reduction (`MPI_Op_create`; freed on drop).
    fn create() -> NarrowOps {
        let ops = FUNCTIONS
            .iter()
            .map(|row| {
                row.iter()
                    // SAFETY: the function reads and writes `len` elements of its type's size
                    // at the two addresses MPI passes, which is what MPI guarantees are there
                    // for the unsigned-integer buffers these operations are used with.
                    .map(|&f| unsafe { UnsafeUserOperation::commutative(f) })
                    .collect()
            })
            .collect();
        NarrowOps(ops)
    }
}

type UserFunction =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut ffi::MPI_Datatype);

/// The user functions of every (narrow type, reduction), indexed as [`NARROW`] and
/// [`MPI_REDOPS`].
macro_rules! row {
    ($d:literal) => {
        [
            combine_narrow::<$d, 0>,
            combine_narrow::<$d, 1>,
            combine_narrow::<$d, 2>,
            combine_narrow::<$d, 3>,
        ]
    };
}
const FUNCTIONS: [[UserFunction; 4]; 4] = [row!(0), row!(1), row!(2), row!(3)];

/// `inoutvec[i] = invec[i] (op) inoutvec[i]` over `*len` elements of `NARROW[D]`, the
/// reduction `MPI_REDOPS[OP]`: the signature of an MPI user function.
///
/// # Safety
/// `invec` and `inoutvec` must hold `*len` elements of the type and not overlap.
unsafe extern "C" fn combine_narrow<const D: usize, const OP: usize>(
    invec: *mut c_void,
    inoutvec: *mut c_void,
    len: *mut c_int,
    _datatype: *mut ffi::MPI_Datatype,
) {
    let dtype = NARROW[D];
    let bytes = usize::try_from(*len).unwrap_or(0) * dtype.size();
    if bytes == 0 {
        return;
    }
    let src = std::slice::from_raw_parts(invec.cast::<u8>(), bytes);
    let dst = std::slice::from_raw_parts_mut(inoutvec.cast::<u8>(), bytes);
    // Commutative: `dst (op) src` is `src (op) dst`.
    reduce_into(dtype, MPI_REDOPS[OP], dst, src);
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
    fn narrow_functions_combine_like_the_host_kernels() {
        use half::{bf16, f16};
        let run = |dtype, redop, a: &[f64], b: &[f64]| -> Vec<f64> {
            let mut x: Vec<u8> = vec![0; a.len() * 2];
            let mut y: Vec<u8> = vec![0; b.len() * 2];
            let d = NARROW.iter().position(|&n| n == dtype).unwrap();
            let k = MPI_REDOPS.iter().position(|&r| r == redop).unwrap();
            for (i, (&u, &v)) in a.iter().zip(b).enumerate() {
                crate::check::write_value(dtype, &mut x, i, u);
                crate::check::write_value(dtype, &mut y, i, v);
            }
            let mut len = a.len() as c_int;
            let f = FUNCTIONS[d][k];
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
        assert_eq!(
            run(h, ReduceOp::Prod, &[3.0, 0.5], &[5.0, 0.25]),
            [15.0, 0.125]
        );
        // e4m3 steps by 2 from 16 to 32: 9 + 8 = 17 is a tie kept at 16; e5m2 6 × 6 = 36 is
        // rounded to 32 (steps of 8 from 32).
        let e4 = DType::F8E4M3;
        assert_eq!(
            run(e4, ReduceOp::Sum, &[9.0, 1.0], &[8.0, 2.0]),
            [16.0, 3.0]
        );
        assert_eq!(run(e4, ReduceOp::Max, &[9.0], &[-8.0]), [9.0]);
        let e5 = DType::F8E5M2;
        assert_eq!(
            run(e5, ReduceOp::Prod, &[6.0, 2.0], &[6.0, 3.0]),
            [32.0, 6.0]
        );
        assert_eq!(run(e5, ReduceOp::Min, &[6.0], &[-0.5]), [-0.5]);
        assert_eq!(f16::from_f64(2049.0).to_f64(), 2048.0);
        assert_eq!(bf16::from_f64(257.0).to_f64(), 256.0);
    }
}
