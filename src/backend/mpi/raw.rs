//! The MPI handles a call needs beyond rsmpi's safe API: the library's `MPI_IN_PLACE` marker,
//! and the datatype and reduction of each element type.

use std::os::raw::c_void;

use mpi::datatype::Equivalence;
use mpi::ffi;
use mpi::raw::AsRaw;

use super::call::unsupported_dtype;
use crate::collective::{DType, ReduceOp};
use crate::error::{Error, Result};

/// The library's `MPI_IN_PLACE`. mpi.h defines it as a cast pointer constant (Open MPI
/// `(void *) 1`, MPICH and the libraries built on it `(void *) -1`), which bindgen cannot
/// carry into `mpi::ffi`, so it is chosen from the running library's version string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct InPlace(usize);

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

/// What calls need from the library, set up once after `MPI_Init`.
pub(super) struct Handles {
    pub in_place: Option<InPlace>,
    /// The library's version string, for messages.
    pub version: String,
}

impl Handles {
    pub(super) fn new(version: &str) -> Handles {
        Handles {
            in_place: InPlace::of_library(version),
            version: version.to_string(),
        }
    }

    /// `MPI_IN_PLACE`, or the refusal where it is not known.
    pub(super) fn in_place(&self) -> Result<*const c_void> {
        self.in_place
            .map(InPlace::pointer)
            .ok_or_else(|| InPlace::unknown(&self.version))
    }

    /// The MPI datatype of `dtype`.
    pub(super) fn datatype(&self, dtype: DType) -> Result<ffi::MPI_Datatype> {
        Ok(match dtype {
            DType::F32 => f32::equivalent_datatype().as_raw(),
            DType::F64 => f64::equivalent_datatype().as_raw(),
            DType::I32 => i32::equivalent_datatype().as_raw(),
            d @ (DType::F16 | DType::BF16) => return Err(unsupported_dtype(d)),
        })
    }

    /// The MPI reduction `redop` on elements of `dtype`.
    pub(super) fn reduction(&self, _dtype: DType, redop: ReduceOp) -> Result<ffi::MPI_Op> {
        // SAFETY: reading constants that rsmpi's C shim initialises statically.
        Ok(unsafe {
            match redop {
                ReduceOp::Sum => ffi::RSMPI_SUM,
                ReduceOp::Max => ffi::RSMPI_MAX,
                ReduceOp::Min => ffi::RSMPI_MIN,
            }
        })
    }
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
}
