//! Opens libnccl at run time (libnccl.so.2, then libnccl.so, or the path in
//! `COLLBENCH_NCCL_LIB`) and resolves the entry points of [`super::sys`]. Part of the thin unsafe
//! layer: every FFI call into NCCL is made here, behind a safe method.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libloading::Library;

use super::error::{check, LoadError, NcclError, ResultCode, NCCL_LIB_ENV};
pub use super::features::Version;
use super::{features, search, sys};

/// The names tried, in order, when no override is given.
pub const NCCL_NAMES: &[&str] = &["libnccl.so.2", "libnccl.so"];
const NCCL_FIX: &str = "install NCCL (the libnccl2 package or NVIDIA's tarball, its lib folder on \
     LD_LIBRARY_PATH; or `pip install nvidia-nccl-cu12` for the python3 on PATH), or set \
     COLLBENCH_NCCL_LIB=/path/to/libnccl.so.2";

/// The override path from an environment value; an empty value counts as unset.
pub fn override_path(value: Option<std::ffi::OsString>) -> Option<PathBuf> {
    value.filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// Opens the override path if given, otherwise the first of `names` that loads.
pub fn open(
    var: &'static str,
    path: Option<PathBuf>,
    names: &[&str],
    fix: &'static str,
) -> Result<(Library, PathBuf), LoadError> {
    if let Some(path) = path {
        // SAFETY: loading a shared library runs its initialisers; the libraries opened here
        // (libnccl, libcuda) are the vendor's, whose initialisers have no preconditions.
        return match unsafe { Library::new(&path) } {
            Ok(lib) => Ok((lib, path)),
            Err(e) => Err(LoadError::Override {
                var,
                path,
                reason: e.to_string(),
            }),
        };
    }
    let mut reason = String::from("no names to try");
    for name in names {
        // SAFETY: as above.
        match unsafe { Library::new(name) } {
            Ok(lib) => return Ok((lib, PathBuf::from(name))),
            Err(e) => reason = e.to_string(),
        }
    }
    Err(LoadError::NotFound {
        tried: names.iter().map(|n| n.to_string()).collect(),
        reason,
        fix,
    })
}

/// Resolves one function pointer of type `T`.
pub fn symbol<T: Copy>(
    lib: &Library,
    path: &Path,
    var: &'static str,
    name: &'static str,
) -> Result<T, LoadError> {
    // SAFETY: every `T` used with this is the `sys` function-pointer type declared for `name`
    // in the vendor header; the pointer is only used while `lib` (kept beside it) is loaded.
    match unsafe { lib.get::<T>(name.as_bytes()) } {
        Ok(sym) => Ok(*sym),
        Err(e) => Err(LoadError::Symbol {
            var,
            path: path.to_path_buf(),
            symbol: name,
            reason: e.to_string(),
        }),
    }
}

/// A loaded libnccl: the entry points collbench calls, kept valid by the library handle.
pub struct Nccl {
    pub path: PathBuf,
    pub get_version: sys::ncclGetVersion_t,
    pub get_unique_id: sys::ncclGetUniqueId_t,
    pub comm_init_rank: sys::ncclCommInitRank_t,
    /// NCCL 2.14+; `None` with older libraries (communicators then take the defaults).
    pub comm_init_rank_config: Option<sys::ncclCommInitRankConfig_t>,
    pub comm_destroy: sys::ncclCommDestroy_t,
    pub comm_get_async_error: sys::ncclCommGetAsyncError_t,
    pub comm_abort: sys::ncclCommAbort_t,
    /// NCCL 2.18+; `None` with older libraries (world sizes then use fresh communicators).
    pub comm_split: Option<sys::ncclCommSplit_t>,
    pub get_error_string: sys::ncclGetErrorString_t,
    /// NCCL 2.13+; `None` with older libraries.
    pub get_last_error: Option<sys::ncclGetLastError_t>,
    pub group_start: sys::ncclGroupStart_t,
    pub group_end: sys::ncclGroupEnd_t,
    /// NCCL 2.22+; `None` with older libraries (no time estimate is recorded then).
    pub group_simulate_end: Option<sys::ncclGroupSimulateEnd_t>,
    pub all_reduce: sys::ncclAllReduce_t,
    pub all_gather: sys::ncclAllGather_t,
    pub reduce_scatter: sys::ncclReduceScatter_t,
    pub broadcast: sys::ncclBroadcast_t,
    pub reduce: sys::ncclReduce_t,
    /// NCCL 2.7+, as `recv`; `None` with older libraries (AllToAll and SendRecv then fail with
    /// [`NcclError::Missing`], the collectives run).
    pub send: Option<sys::ncclSend_t>,
    pub recv: Option<sys::ncclRecv_t>,
    /// NCCL 2.28+: the ops' own functions; `None` with older libraries (they are then
    /// grouped `ncclSend`/`ncclRecv` calls, as nccl-tests falls back to).
    pub all_to_all: Option<sys::ncclAlltoAll_t>,
    /// NCCL 2.19+: local buffer registration (`--register local`).
    pub comm_register: Option<sys::ncclCommRegister_t>,
    pub comm_deregister: Option<sys::ncclCommDeregister_t>,
    /// NCCL 2.19+: buffers allocated as nccl-tests allocates them.
    pub mem_alloc: Option<sys::ncclMemAlloc_t>,
    pub mem_free: Option<sys::ncclMemFree_t>,
    /// NCCL 2.27+: symmetric registration (`--register symmetric`).
    pub window_register: Option<sys::ncclCommWindowRegister_t>,
    pub window_deregister: Option<sys::ncclCommWindowDeregister_t>,
    pub gather: Option<sys::ncclGather_t>,
    pub scatter: Option<sys::ncclScatter_t>,
    /// NCCL 2.11+: the scaled sums of `--redop mulsum`.
    pub red_op_create_pre_mul_sum: Option<sys::ncclRedOpCreatePreMulSum_t>,
    pub red_op_destroy: Option<sys::ncclRedOpDestroy_t>,
    /// The optional entry points of [`features::OPTIONAL`] this library exports.
    pub present: Vec<&'static str>,
    /// Never unloaded: NCCL keeps threads and CUDA state that outlive its communicators, and
    /// unloading it under them would crash at exit.
    _lib: std::mem::ManuallyDrop<Library>,
}

impl Nccl {
    /// Loads libnccl, honouring `COLLBENCH_NCCL_LIB`.
    pub fn load() -> Result<Arc<Nccl>, LoadError> {
        Self::load_from(override_path(std::env::var_os(NCCL_LIB_ENV)))
    }

    /// Loads libnccl from `path`, or from the default names when `None` and then from where
    /// pip installs it for the `python3` on PATH ([`search`]); refuses a library older than
    /// [`features::MIN_SUPPORTED`].
    pub fn load_from(path: Option<PathBuf>) -> Result<Arc<Nccl>, LoadError> {
        let (lib, path) = match path {
            Some(path) => open(NCCL_LIB_ENV, Some(path), NCCL_NAMES, NCCL_FIX)?,
            None => open_default()?,
        };
        let nccl = Self::resolve(lib, path)?;
        match nccl.version().map(features::too_old) {
            Ok(Some(reason)) => Err(LoadError::Unsupported {
                path: nccl.path.clone(),
                reason,
            }),
            _ => Ok(nccl),
        }
    }

    /// The entry points of an opened library.
    fn resolve(lib: Library, path: PathBuf) -> Result<Arc<Nccl>, LoadError> {
        let s = |name| (&lib, path.as_path(), name);
        let present = features::OPTIONAL
            .iter()
            .map(|f| f.symbol)
            .filter(|name| exports(&lib, name))
            .collect();
        Ok(Arc::new(Nccl {
            present,
            get_version: get(s("ncclGetVersion"))?,
            get_unique_id: get(s("ncclGetUniqueId"))?,
            comm_init_rank: get(s("ncclCommInitRank"))?,
            comm_init_rank_config: get(s("ncclCommInitRankConfig")).ok(),
            comm_destroy: get(s("ncclCommDestroy"))?,
            comm_get_async_error: get(s("ncclCommGetAsyncError"))?,
            comm_abort: get(s("ncclCommAbort"))?,
            comm_split: get(s("ncclCommSplit")).ok(),
            get_error_string: get(s("ncclGetErrorString"))?,
            get_last_error: get(s("ncclGetLastError")).ok(),
            group_start: get(s("ncclGroupStart"))?,
            group_end: get(s("ncclGroupEnd"))?,
            group_simulate_end: get(s("ncclGroupSimulateEnd")).ok(),
            all_reduce: get(s("ncclAllReduce"))?,
            all_gather: get(s("ncclAllGather"))?,
            reduce_scatter: get(s("ncclReduceScatter"))?,
            broadcast: get(s("ncclBroadcast"))?,
            reduce: get(s("ncclReduce"))?,
            send: get(s("ncclSend")).ok(),
            recv: get(s("ncclRecv")).ok(),
            all_to_all: get(s("ncclAlltoAll")).ok(),
            comm_register: get(s("ncclCommRegister")).ok(),
            comm_deregister: get(s("ncclCommDeregister")).ok(),
            mem_alloc: get(s("ncclMemAlloc")).ok(),
            mem_free: get(s("ncclMemFree")).ok(),
            window_register: get(s("ncclCommWindowRegister")).ok(),
            window_deregister: get(s("ncclCommWindowDeregister")).ok(),
            gather: get(s("ncclGather")).ok(),
            scatter: get(s("ncclScatter")).ok(),
            red_op_create_pre_mul_sum: get(s("ncclRedOpCreatePreMulSum")).ok(),
            red_op_destroy: get(s("ncclRedOpDestroy")).ok(),
            path: path.clone(),
            _lib: std::mem::ManuallyDrop::new(lib),
        }))
    }

    /// The library's own message for a result code.
    pub fn error_string(&self, code: ResultCode) -> String {
        // SAFETY: ncclGetErrorString takes any code and returns a static NUL-terminated string
        // (or NULL, handled below).
        let ptr = unsafe { (self.get_error_string)(code.raw()) };
        if ptr.is_null() {
            return code.message().to_string();
        }
        // SAFETY: non-null pointers from ncclGetErrorString point to static C strings.
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned()
    }

    /// Checks a raw result, with the library's message and, where the library keeps one, the
    /// detail of its last error.
    pub fn check(&self, call: &'static str, raw: sys::ncclResult_t) -> Result<(), NcclError> {
        check(call, raw, |code| {
            let text = self.error_string(code);
            match self.last_error() {
                Some(detail) if !detail.is_empty() && detail != text => {
                    format!("{text} ({detail})")
                }
                _ => text,
            }
        })
    }

    /// `ncclGetLastError(NULL)`: the library's description of its last error, if it has one.
    pub fn last_error(&self) -> Option<String> {
        let f = self.get_last_error?;
        // SAFETY: ncclGetLastError accepts a NULL communicator and returns a NUL-terminated
        // string owned by the library (or NULL).
        let ptr = unsafe { f(std::ptr::null_mut()) };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: non-null results are NUL-terminated C strings that live in the library.
        let text = unsafe { CStr::from_ptr(ptr) }.to_string_lossy();
        Some(text.trim().to_string())
    }

    /// Whether this library exports `symbol`, one of [`features::OPTIONAL`].
    pub fn has(&self, symbol: &str) -> bool {
        self.present.contains(&symbol)
    }

    /// Whether this library has `ncclCommSplit` (NCCL 2.18+).
    pub fn has_split(&self) -> bool {
        self.comm_split.is_some()
    }

    /// `ncclSend` and `ncclRecv`, which `what` (an op) needs; [`NcclError::Missing`] naming
    /// the NCCL that added them where this library is older.
    pub fn point_to_point(
        &self,
        what: &str,
    ) -> Result<(sys::ncclSend_t, sys::ncclRecv_t), NcclError> {
        both(self.send, self.recv).map_err(|symbol| NcclError::Missing {
            what: what.to_string(),
            symbol,
            since: P2P_SINCE,
            library: match self.version() {
                Ok(v) => format!("{} (NCCL {v})", self.path.display()),
                Err(_) => self.path.display().to_string(),
            },
        })
    }

    /// `ncclGetVersion`, decoded.
    pub fn version(&self) -> Result<Version, NcclError> {
        self.version_code().map(Version::from_code)
    }

    /// `ncclGetVersion` as NCCL encodes it (`NCCL_VERSION_CODE`, e.g. 22105).
    pub fn version_code(&self) -> Result<c_int, NcclError> {
        let mut raw: c_int = 0;
        // SAFETY: ncclGetVersion writes one int through a valid pointer.
        self.check("ncclGetVersion", unsafe { (self.get_version)(&mut raw) })?;
        Ok(raw)
    }

    /// `ncclGetUniqueId`: the id rank 0 creates and shares with the others.
    pub fn unique_id(&self) -> Result<UniqueId, NcclError> {
        let mut id = sys::ncclUniqueId {
            internal: [0; sys::NCCL_UNIQUE_ID_BYTES],
        };
        // SAFETY: ncclGetUniqueId fills the 128-byte struct it is given.
        self.check("ncclGetUniqueId", unsafe { (self.get_unique_id)(&mut id) })?;
        Ok(UniqueId(id.internal.map(|c| c as u8)))
    }
}

/// The default search: the dynamic linker's (LD_LIBRARY_PATH, ld.so.cache) by name, then the
/// pip-installed NCCL of the `python3` on PATH.
fn open_default() -> Result<(Library, PathBuf), LoadError> {
    open_by_name_or_pip(NCCL_LIB_ENV, NCCL_NAMES, NCCL_FIX, search::PIP_NCCL_LIB)
}

/// A vendor library by the dynamic linker's search of `names`, else the wheel file at
/// `pip_rel` under the site folders of the `python3` on PATH (where PyTorch users have it);
/// the failure says both what was tried and where.
pub fn open_by_name_or_pip(
    var: &'static str,
    names: &[&str],
    fix: &'static str,
    pip_rel: &str,
) -> Result<(Library, PathBuf), LoadError> {
    let by_name = match open(var, None, names, fix) {
        Ok(found) => return Ok(found),
        Err(e) => e,
    };
    let sites = search::python_site_dirs();
    for path in search::pip_files(&sites, pip_rel) {
        if let Ok(found) = open(var, Some(path), names, fix) {
            return Ok(found);
        }
    }
    Err(match by_name {
        LoadError::NotFound { tried, reason, fix } => LoadError::NotFound {
            tried,
            reason: format!("{reason}; {}", search::describe_sites_for(&sites, pip_rel)),
            fix,
        },
        other => other,
    })
}

/// Whether `lib` exports `name` (its address only is looked up, never its type).
fn exports(lib: &Library, name: &str) -> bool {
    // SAFETY: the symbol is looked up as an untyped address and neither called nor read.
    unsafe { lib.get::<*const std::ffi::c_void>(name.as_bytes()) }.is_ok()
}

fn get<T: Copy>((lib, path, name): (&Library, &Path, &'static str)) -> Result<T, LoadError> {
    symbol(lib, path, NCCL_LIB_ENV, name)
}

/// The NCCL release that added `ncclSend` and `ncclRecv`.
pub const P2P_SINCE: &str = "2.7";

/// Both point-to-point entry points, or the name of the first one missing.
pub fn both<S, R>(send: Option<S>, recv: Option<R>) -> Result<(S, R), &'static str> {
    match (send, recv) {
        (Some(s), Some(r)) => Ok((s, r)),
        (None, _) => Err("ncclSend"),
        (Some(_), None) => Err("ncclRecv"),
    }
}

/// The 128-byte id that joins ranks into one communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UniqueId(pub [u8; sys::NCCL_UNIQUE_ID_BYTES]);
