//! Probes the CUDA driver (libcuda.so.1) for a usable GPU with our own loader, before cudarc is
//! touched: cudarc panics when it cannot load the driver or a symbol, we report instead. Part of
//! the thin unsafe layer.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::path::PathBuf;

use super::error::{CudaError, CUDA_LIB_ENV};
use super::loader::{open, override_path, symbol};
use super::sys;

/// The names tried, in order, when no override is given.
pub const CUDA_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];
const CUDA_FIX: &str = "install the NVIDIA driver (it provides libcuda.so.1) or set \
     COLLBENCH_CUDA_LIB=/path/to/libcuda.so.1";

/// What the driver offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverInfo {
    /// The library that was loaded.
    pub path: PathBuf,
    /// The CUDA version the driver supports, e.g. 12040 for 12.4.
    pub version: i32,
    /// Visible devices (at least one).
    pub devices: i32,
}

impl DriverInfo {
    /// "12.4".
    pub fn version_text(&self) -> String {
        format!("{}.{}", self.version / 1000, (self.version % 1000) / 10)
    }
}

/// Loads libcuda (honouring `COLLBENCH_CUDA_LIB`), initialises it and counts devices.
pub fn probe_driver() -> Result<DriverInfo, CudaError> {
    probe_driver_from(override_path(std::env::var_os(CUDA_LIB_ENV)))
}

/// As [`probe_driver`], from `path` or the default names.
pub fn probe_driver_from(path: Option<PathBuf>) -> Result<DriverInfo, CudaError> {
    let (lib, path) = open(CUDA_LIB_ENV, path, CUDA_NAMES, CUDA_FIX)?;
    let init: sys::cuInit_t = symbol(&lib, &path, CUDA_LIB_ENV, "cuInit")?;
    let get_version: sys::cuDriverGetVersion_t =
        symbol(&lib, &path, CUDA_LIB_ENV, "cuDriverGetVersion")?;
    let get_count: sys::cuDeviceGetCount_t = symbol(&lib, &path, CUDA_LIB_ENV, "cuDeviceGetCount")?;
    let err_name: sys::cuGetErrorName_t = symbol(&lib, &path, CUDA_LIB_ENV, "cuGetErrorName")?;
    let call = |name: &'static str, code: sys::CUresult| match code {
        sys::CUDA_SUCCESS => Ok(()),
        sys::CUDA_ERROR_NO_DEVICE => Err(CudaError::NoDevice),
        code => Err(CudaError::Call {
            call: name,
            code,
            name: error_name(err_name, code),
        }),
    };
    let mut version: c_int = 0;
    // SAFETY: cuDriverGetVersion writes one int; it may be called before cuInit.
    call("cuDriverGetVersion", unsafe { get_version(&mut version) })?;
    // SAFETY: cuInit takes flags that must be 0.
    call("cuInit", unsafe { init(0) })?;
    let mut devices: c_int = 0;
    // SAFETY: cuDeviceGetCount writes one int; cuInit succeeded.
    call("cuDeviceGetCount", unsafe { get_count(&mut devices) })?;
    // The driver stays loaded for the life of the process (cudarc opens it again): unloading
    // an initialised driver is not supported by NVIDIA.
    std::mem::forget(lib);
    if devices < 1 {
        return Err(CudaError::NoDevice);
    }
    Ok(DriverInfo {
        path,
        version,
        devices,
    })
}

fn error_name(err_name: sys::cuGetErrorName_t, code: sys::CUresult) -> String {
    let mut ptr: *const c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string, or fails for unknown codes.
    let known = unsafe { err_name(code, &mut ptr) } == sys::CUDA_SUCCESS;
    if !known || ptr.is_null() {
        return "CUDA_ERROR_UNKNOWN".to_string();
    }
    // SAFETY: a non-null result points to a static NUL-terminated string.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}
