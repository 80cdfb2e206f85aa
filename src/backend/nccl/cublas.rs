//! cuBLAS for the GEMM load of `sweep --with-compute gemm`, loaded at run time by our own
//! loader as libnccl is (`COLLBENCH_CUBLAS_LIB`, then `libcublas.so.12`/`.so.13`/`.so` by the
//! dynamic linker's search, then the `nvidia-cublas-cu12` wheel that PyTorch installs, under
//! the site folders of the `python3` on PATH). Not cudarc's cuBLAS module: it panics where the
//! library or one of its symbols is missing, and a missing cuBLAS must be one clear error.
//! Part of the thin unsafe layer: every call into cuBLAS is made here, behind a safe method.
//!
//! Declarations from cuBLAS 12's `cublas_api.h` and CUDA's `library_types.h`; the values are
//! checked against those headers by tests/cublas_library.rs.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cudarc::driver::CudaStream;
use libloading::Library;

use super::error::LoadError;
use super::loader::{open, open_by_name_or_pip, override_path, symbol};

/// The environment variable that points collbench at a specific libcublas.
pub const CUBLAS_LIB_ENV: &str = "COLLBENCH_CUBLAS_LIB";
/// The names tried, in order, when no override is given.
pub const CUBLAS_NAMES: &[&str] = &["libcublas.so.12", "libcublas.so.13", "libcublas.so"];
/// Where the `nvidia-cublas-cu12` wheel keeps its library, under a site folder.
pub const PIP_CUBLAS_LIB: &str = "nvidia/cublas/lib/libcublas.so.12";
const CUBLAS_FIX: &str = "install cuBLAS (the CUDA toolkit's lib64 on LD_LIBRARY_PATH, or `pip \
     install nvidia-cublas-cu12` for the python3 on PATH), or set \
     COLLBENCH_CUBLAS_LIB=/path/to/libcublas.so.12";

/// `cublasHandle_t`.
pub type Handle = *mut c_void;
/// `cublasStatus_t`.
pub type Status = c_int;

pub const STATUS_SUCCESS: Status = 0;
/// `cublasOperation_t` CUBLAS_OP_N: the matrix as stored (column-major).
pub const OP_N: c_int = 0;
/// `cudaDataType` CUDA_R_16BF and CUDA_R_32F.
pub const CUDA_R_16BF: c_int = 14;
pub const CUDA_R_32F: c_int = 0;
/// `cublasComputeType_t` CUBLAS_COMPUTE_32F: FP32 accumulation, as training's BF16 GEMMs.
pub const COMPUTE_32F: c_int = 68;
/// `cublasGemmAlgo_t` CUBLAS_GEMM_DEFAULT: cuBLAS' heuristics choose.
pub const GEMM_DEFAULT: c_int = -1;
/// `libraryPropertyType` MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL.
pub const PROPERTIES: [c_int; 3] = [0, 1, 2];

/// Every `cublasStatus_t` but success, with its enumerator's name.
pub const STATUS_NAMES: &[(Status, &str)] = &[
    (1, "CUBLAS_STATUS_NOT_INITIALIZED"),
    (3, "CUBLAS_STATUS_ALLOC_FAILED"),
    (7, "CUBLAS_STATUS_INVALID_VALUE"),
    (8, "CUBLAS_STATUS_ARCH_MISMATCH"),
    (11, "CUBLAS_STATUS_MAPPING_ERROR"),
    (13, "CUBLAS_STATUS_EXECUTION_FAILED"),
    (14, "CUBLAS_STATUS_INTERNAL_ERROR"),
    (15, "CUBLAS_STATUS_NOT_SUPPORTED"),
    (16, "CUBLAS_STATUS_LICENSE_ERROR"),
];

type CreateFn = unsafe extern "C" fn(*mut Handle) -> Status;
type DestroyFn = unsafe extern "C" fn(Handle) -> Status;
type SetStreamFn = unsafe extern "C" fn(Handle, *mut c_void) -> Status;
type GetPropertyFn = unsafe extern "C" fn(c_int, *mut c_int) -> Status;
type GetStatusNameFn = unsafe extern "C" fn(Status) -> *const c_char;
#[allow(clippy::type_complexity)]
type GemmExFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    c_int,
    c_int,
) -> Status;

/// A failed cuBLAS call: its name, status and cuBLAS' name for the status.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {name} ({status})")]
pub struct CublasError {
    pub call: &'static str,
    pub status: Status,
    pub name: String,
}

/// A loaded libcublas: the entry points collbench calls, kept valid by the library handle.
pub struct Cublas {
    pub path: PathBuf,
    create: CreateFn,
    destroy: DestroyFn,
    set_stream: SetStreamFn,
    get_property: GetPropertyFn,
    get_status_name: Option<GetStatusNameFn>,
    gemm_ex: GemmExFn,
    _lib: Library,
}

impl Cublas {
    /// Loads the library from `COLLBENCH_CUBLAS_LIB` where set, else by the default search.
    pub fn load() -> Result<Arc<Cublas>, LoadError> {
        Cublas::load_from(override_path(std::env::var_os(CUBLAS_LIB_ENV)))
    }

    /// As [`Cublas::load`], from `path` or the default search.
    pub fn load_from(path: Option<PathBuf>) -> Result<Arc<Cublas>, LoadError> {
        let (lib, path) = match path {
            Some(path) => open(CUBLAS_LIB_ENV, Some(path), CUBLAS_NAMES, CUBLAS_FIX)?,
            None => open_by_name_or_pip(CUBLAS_LIB_ENV, CUBLAS_NAMES, CUBLAS_FIX, PIP_CUBLAS_LIB)?,
        };
        let get = |name| (&lib, path.as_path(), name);
        Ok(Arc::new(Cublas {
            create: sym(get("cublasCreate_v2"))?,
            destroy: sym(get("cublasDestroy_v2"))?,
            set_stream: sym(get("cublasSetStream_v2"))?,
            get_property: sym(get("cublasGetProperty"))?,
            // cuBLAS 11.4.2+; older libraries are named by the status number only.
            get_status_name: sym(get("cublasGetStatusName")).ok(),
            gemm_ex: sym(get("cublasGemmEx"))?,
            path,
            _lib: lib,
        }))
    }

    /// `major.minor.patch` of the loaded library (no GPU needed).
    pub fn version(&self) -> Result<(i32, i32, i32), CublasError> {
        let mut v = [0; 3];
        for (slot, property) in v.iter_mut().zip(PROPERTIES) {
            // SAFETY: cublasGetProperty writes one int for a valid libraryPropertyType.
            self.check("cublasGetProperty", unsafe {
                (self.get_property)(property, slot)
            })?;
        }
        Ok((v[0], v[1], v[2]))
    }

    /// The enumerator's name of `status`: cuBLAS' own where it has `cublasGetStatusName`,
    /// else ours, else the number.
    pub fn status_name(&self, status: Status) -> String {
        let known = STATUS_NAMES.iter().find(|(s, _)| *s == status);
        if let Some(f) = self.get_status_name {
            // SAFETY: returns a pointer to a static NUL-terminated string (or null).
            let ptr = unsafe { f(status) };
            if !ptr.is_null() {
                // SAFETY: non-null, static and NUL-terminated per cuBLAS' documentation.
                return unsafe { CStr::from_ptr(ptr) }
                    .to_string_lossy()
                    .into_owned();
            }
        }
        known.map_or(format!("cublasStatus_t {status}"), |(_, n)| n.to_string())
    }

    fn check(&self, call: &'static str, status: Status) -> Result<(), CublasError> {
        match status {
            STATUS_SUCCESS => Ok(()),
            status => Err(CublasError {
                call,
                status,
                name: self.status_name(status),
            }),
        }
    }
}

fn sym<T: Copy>((lib, path, name): (&Library, &Path, &'static str)) -> Result<T, LoadError> {
    symbol(lib, path, CUBLAS_LIB_ENV, name)
}

/// A cuBLAS handle whose work goes to one stream; destroyed when dropped.
pub struct BlasHandle {
    blas: Arc<Cublas>,
    raw: Handle,
    /// Dropped after the handle is destroyed (fields drop after `Drop::drop`).
    stream: Arc<CudaStream>,
}

/// One BF16 GEMM `C = A·B` of square `n × n` matrices (FP32 accumulation), given by the
/// matrices' device addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SquareGemm {
    pub n: usize,
    pub a: u64,
    pub b: u64,
    pub c: u64,
}

impl BlasHandle {
    /// A handle on the current CUDA context (the caller's GPU is current on this thread) whose
    /// calls are enqueued on `stream` (its `CUstream` is the same object as a `cudaStream_t`),
    /// which the handle keeps alive.
    pub fn create(blas: Arc<Cublas>, stream: Arc<CudaStream>) -> Result<BlasHandle, CublasError> {
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: cublasCreate_v2 writes one handle.
        blas.check("cublasCreate_v2", unsafe { (blas.create)(&mut raw) })?;
        let handle = BlasHandle { blas, raw, stream };
        // SAFETY: a live handle and a live stream of the current context, held by the handle.
        let status =
            unsafe { (handle.blas.set_stream)(handle.raw, handle.stream.cu_stream().cast()) };
        handle.blas.check("cublasSetStream_v2", status)?;
        Ok(handle)
    }

    /// Enqueues `g` on the handle's stream.
    pub fn gemm(&self, g: SquareGemm) -> Result<(), CublasError> {
        let n = c_int::try_from(g.n).map_err(|_| CublasError {
            call: "cublasGemmEx",
            status: 7,
            name: format!("n = {} does not fit a C int", g.n),
        })?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let ptr = |a: u64| a as usize as *const c_void;
        // SAFETY: the addresses are device allocations of at least n·n BF16 elements each that
        // the caller keeps alive until the stream has run the call; alpha and beta are host
        // floats (the handle's default pointer mode), read before the call returns.
        let status = unsafe {
            (self.blas.gemm_ex)(
                self.raw,
                OP_N,
                OP_N,
                n,
                n,
                n,
                (&alpha as *const f32).cast(),
                ptr(g.a),
                CUDA_R_16BF,
                n,
                ptr(g.b),
                CUDA_R_16BF,
                n,
                (&beta as *const f32).cast(),
                g.c as usize as *mut c_void,
                CUDA_R_16BF,
                n,
                COMPUTE_32F,
                GEMM_DEFAULT,
            )
        };
        self.blas.check("cublasGemmEx", status)
    }
}

impl Drop for BlasHandle {
    fn drop(&mut self) {
        // SAFETY: the handle is live and dropped once; a failure cannot be reported from Drop
        // and leaves nothing for this process to clean.
        let _ = unsafe { (self.blas.destroy)(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_that_does_not_load_names_the_variable_and_the_path() {
        let e = Cublas::load_from(Some(PathBuf::from("/nonexistent/libcublas.so.12")))
            .err()
            .expect("no library there");
        let text = e.to_string();
        assert!(text.contains(CUBLAS_LIB_ENV), "{text}");
        assert!(text.contains("/nonexistent/libcublas.so.12"), "{text}");
    }

    #[test]
    fn a_library_without_cublas_symbols_is_refused_naming_the_symbol() {
        // libc loads everywhere and has no cuBLAS entry point.
        let e = Cublas::load_from(Some(PathBuf::from("libc.so.6")))
            .err()
            .expect("libc is not cuBLAS");
        assert!(e.to_string().contains("cublasCreate_v2"), "{e}");
    }
}
