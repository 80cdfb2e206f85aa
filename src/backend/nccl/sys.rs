//! NCCL's C interface as declared in its public `nccl.h` (2.x): the types, enum values and
//! function-pointer types collbench uses. Declarations only; [`super::loader`] resolves them.

#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_uint, c_void};

/// `ncclResult_t`.
pub type ncclResult_t = c_int;
/// `ncclSuccess`.
pub const NCCL_SUCCESS: ncclResult_t = 0;
pub const NCCL_UNHANDLED_CUDA_ERROR: ncclResult_t = 1;
pub const NCCL_SYSTEM_ERROR: ncclResult_t = 2;
pub const NCCL_INTERNAL_ERROR: ncclResult_t = 3;
pub const NCCL_INVALID_ARGUMENT: ncclResult_t = 4;
pub const NCCL_INVALID_USAGE: ncclResult_t = 5;
pub const NCCL_REMOTE_ERROR: ncclResult_t = 6;
/// NCCL 2.14+ (non-blocking communicators).
pub const NCCL_IN_PROGRESS: ncclResult_t = 7;
/// A communicator operation that timed out (in nccl.h by 2.32; older libraries never return it).
pub const NCCL_TIMEOUT: ncclResult_t = 8;

/// `ncclComm_t`: opaque pointer to a communicator.
pub type ncclComm_t = *mut c_void;
/// `cudaStream_t`: opaque pointer to a CUDA stream (`CUstream` of the driver API).
pub type cudaStream_t = *mut c_void;

/// `NCCL_UNIQUE_ID_BYTES`.
pub const NCCL_UNIQUE_ID_BYTES: usize = 128;

/// `ncclUniqueId`: passed by value to `ncclCommInitRank`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ncclUniqueId {
    pub internal: [c_char; NCCL_UNIQUE_ID_BYTES],
}

/// `ncclDataType_t`.
pub type ncclDataType_t = c_int;
pub const NCCL_INT8: ncclDataType_t = 0;
pub const NCCL_UINT8: ncclDataType_t = 1;
pub const NCCL_INT32: ncclDataType_t = 2;
pub const NCCL_UINT32: ncclDataType_t = 3;
pub const NCCL_INT64: ncclDataType_t = 4;
pub const NCCL_UINT64: ncclDataType_t = 5;
pub const NCCL_FLOAT16: ncclDataType_t = 6;
pub const NCCL_FLOAT32: ncclDataType_t = 7;
pub const NCCL_FLOAT64: ncclDataType_t = 8;
pub const NCCL_BFLOAT16: ncclDataType_t = 9;
pub const NCCL_FLOAT8E4M3: ncclDataType_t = 10;
pub const NCCL_FLOAT8E5M2: ncclDataType_t = 11;

/// `ncclRedOp_t`.
pub type ncclRedOp_t = c_int;
pub const NCCL_SUM: ncclRedOp_t = 0;
pub const NCCL_PROD: ncclRedOp_t = 1;
pub const NCCL_MAX: ncclRedOp_t = 2;
pub const NCCL_MIN: ncclRedOp_t = 3;
pub const NCCL_AVG: ncclRedOp_t = 4;

/// `ncclScalarResidence_t`: where `ncclRedOpCreatePreMulSum` reads its scalar.
pub type ncclScalarResidence_t = c_int;
pub const NCCL_SCALAR_HOST_IMMEDIATE: ncclScalarResidence_t = 1;

pub type ncclRedOpCreatePreMulSum_t = unsafe extern "C" fn(
    op: *mut ncclRedOp_t,
    scalar: *mut c_void,
    datatype: ncclDataType_t,
    residence: ncclScalarResidence_t,
    comm: ncclComm_t,
) -> ncclResult_t;
pub type ncclRedOpDestroy_t =
    unsafe extern "C" fn(op: ncclRedOp_t, comm: ncclComm_t) -> ncclResult_t;

pub type ncclGetVersion_t = unsafe extern "C" fn(version: *mut c_int) -> ncclResult_t;
pub type ncclGetUniqueId_t = unsafe extern "C" fn(id: *mut ncclUniqueId) -> ncclResult_t;
pub type ncclCommInitRank_t = unsafe extern "C" fn(
    comm: *mut ncclComm_t,
    nranks: c_int,
    id: ncclUniqueId,
    rank: c_int,
) -> ncclResult_t;
pub type ncclCommDestroy_t = unsafe extern "C" fn(comm: ncclComm_t) -> ncclResult_t;
pub type ncclCommGetAsyncError_t =
    unsafe extern "C" fn(comm: ncclComm_t, async_error: *mut ncclResult_t) -> ncclResult_t;
pub type ncclCommAbort_t = unsafe extern "C" fn(comm: ncclComm_t) -> ncclResult_t;
pub type ncclGetErrorString_t = unsafe extern "C" fn(result: ncclResult_t) -> *const c_char;
/// `ncclGetLastError` (2.13+): the last error's detail for `comm` (may be NULL).
pub type ncclGetLastError_t = unsafe extern "C" fn(comm: ncclComm_t) -> *const c_char;
/// `NCCL_API_MAGIC`: the `magic` of a configuration made by `NCCL_CONFIG_INITIALIZER`.
pub const NCCL_API_MAGIC: c_uint = 0xcafe_beef;
/// `NCCL_CONFIG_UNDEF_INT`: an attribute left to the library.
pub const NCCL_CONFIG_UNDEF_INT: c_int = -2147483648;
/// `NCCL_CTA_POLICY_*` (NCCL 2.27+; ZERO 2.28+).
pub const NCCL_CTA_POLICY_DEFAULT: c_int = 0;
pub const NCCL_CTA_POLICY_EFFICIENCY: c_int = 1;
pub const NCCL_CTA_POLICY_ZERO: c_int = 2;
/// The NCCL whose nccl.h the layout of [`ncclConfig_t`] below is (2.32.3).
pub const NCCL_CONFIG_LAYOUT_VERSION: c_uint = 23203;

/// `ncclConfig_t` as nccl.h 2.32 declares it, field names as there. The struct only grows, at
/// its end (2.14 ... 2.32 in NCCL's history), and NCCL copies at most its own size of it
/// (`parseCommConfig`: `min(config->size, sizeof(ncclConfig_t))`), so an older library reads
/// the prefix it knows. Made by [`super::config::comm_config`] as `NCCL_CONFIG_INITIALIZER`.
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Clone, Copy, Debug)]
pub struct ncclConfig_t {
    pub size: usize,
    pub magic: c_uint,
    pub version: c_uint,
    pub blocking: c_int,
    pub cgaClusterSize: c_int,
    pub minCTAs: c_int,
    pub maxCTAs: c_int,
    pub netName: *const c_char,
    pub splitShare: c_int,
    pub trafficClass: c_int,
    pub commName: *const c_char,
    pub collnetEnable: c_int,
    pub CTAPolicy: c_int,
    pub shrinkShare: c_int,
    pub nvlsCTAs: c_int,
    pub nChannelsPerNetPeer: c_int,
    pub nvlinkCentricSched: c_int,
    pub graphUsageMode: c_int,
    pub numRmaCtx: c_int,
    pub maxP2pPeers: c_int,
    pub graphStreamOrdering: c_int,
    pub launchOrderImplicit: c_int,
    pub numRmaSig: c_int,
    pub rmaEagerInit: c_int,
    pub hostCftMode: c_int,
    pub nvlsHostMode: c_int,
}
/// `ncclCommInitRankConfig` (NCCL 2.14+).
pub type ncclCommInitRankConfig_t = unsafe extern "C" fn(
    comm: *mut ncclComm_t,
    nranks: c_int,
    id: ncclUniqueId,
    rank: c_int,
    config: *mut ncclConfig_t,
) -> ncclResult_t;
/// `NCCL_SPLIT_NOCOLOR`: a rank passing it gets no new communicator (`*newcomm = NULL`).
pub const NCCL_SPLIT_NOCOLOR: c_int = -1;
/// `ncclCommSplit` (2.18+). `config` may be NULL: the new communicator inherits the parent's.
pub type ncclCommSplit_t = unsafe extern "C" fn(
    comm: ncclComm_t,
    color: c_int,
    key: c_int,
    newcomm: *mut ncclComm_t,
    config: *mut ncclConfig_t,
) -> ncclResult_t;
pub type ncclGroupStart_t = unsafe extern "C" fn() -> ncclResult_t;
/// `ncclSimInfo_t` (NCCL 2.22+), as `NCCL_SIM_INFO_INITIALIZER` fills it: `size`,
/// `magic` = [`NCCL_SIM_INFO_MAGIC`], `version` = `NCCL_VERSION_CODE`, `estimatedTime` =
/// [`NCCL_UNDEF_FLOAT`]. NCCL copies at most `size` bytes and refuses another magic.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ncclSimInfo_t {
    pub size: usize,
    pub magic: c_uint,
    pub version: c_uint,
    /// Output: the estimated time of the group's operations (microseconds, the unit of NCCL's
    /// tuning model), or `NCCL_UNDEF_FLOAT` where NCCL made no estimate.
    pub estimated_time: f32,
}
pub const NCCL_SIM_INFO_MAGIC: c_uint = 0x7468_5283;
/// `NCCL_UNDEF_FLOAT`.
pub const NCCL_UNDEF_FLOAT: f32 = -1.0;
/// `ncclGroupSimulateEnd` (2.22+): ends a group without launching it, filling `estimatedTime`.
pub type ncclGroupSimulateEnd_t = unsafe extern "C" fn(sim: *mut ncclSimInfo_t) -> ncclResult_t;
pub type ncclGroupEnd_t = unsafe extern "C" fn() -> ncclResult_t;
pub type ncclAllReduce_t = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: ncclDataType_t,
    op: ncclRedOp_t,
    comm: ncclComm_t,
    stream: cudaStream_t,
) -> ncclResult_t;
pub type ncclAllGather_t = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    send_count: usize,
    dtype: ncclDataType_t,
    comm: ncclComm_t,
    stream: cudaStream_t,
) -> ncclResult_t;
pub type ncclReduceScatter_t = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    recv_count: usize,
    dtype: ncclDataType_t,
    op: ncclRedOp_t,
    comm: ncclComm_t,
    stream: cudaStream_t,
) -> ncclResult_t;
pub type ncclBroadcast_t = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: ncclDataType_t,
    root: c_int,
    comm: ncclComm_t,
    stream: cudaStream_t,
) -> ncclResult_t;
pub type ncclReduce_t = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: ncclDataType_t,
    op: ncclRedOp_t,
    root: c_int,
    comm: ncclComm_t,
    stream: cudaStream_t,
) -> ncclResult_t;
/// `ncclSend` (NCCL 2.7+): sends `count` elements to `peer`; in a group with the matching
/// `ncclRecv` on `peer`.
pub type ncclSend_t = unsafe extern "C" fn(
    send: *const c_void,
    count: usize,
    dtype: ncclDataType_t,
    peer: c_int,
    comm: ncclComm_t,
    stream: cudaStream_t,
) -> ncclResult_t;
/// `ncclRecv` (NCCL 2.7+): receives `count` elements from `peer`.
pub type ncclRecv_t = unsafe extern "C" fn(
    recv: *mut c_void,
    count: usize,
    dtype: ncclDataType_t,
    peer: c_int,
    comm: ncclComm_t,
    stream: cudaStream_t,
) -> ncclResult_t;

/// `ncclAlltoAll` (NCCL 2.28+): `count` elements to and from every rank.
pub type ncclAlltoAll_t = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: ncclDataType_t,
    comm: ncclComm_t,
    stream: cudaStream_t,
) -> ncclResult_t;
/// `ncclGather` (NCCL 2.28+): `count` elements of every rank into `root`'s `recv`.
pub type ncclGather_t = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: ncclDataType_t,
    root: c_int,
    comm: ncclComm_t,
    stream: cudaStream_t,
) -> ncclResult_t;
/// `ncclScatter` (NCCL 2.28+): `count` elements of `root`'s `send` to every rank.
pub type ncclScatter_t = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: ncclDataType_t,
    root: c_int,
    comm: ncclComm_t,
    stream: cudaStream_t,
) -> ncclResult_t;
/// `ncclCommRegister` (NCCL 2.19+): registers a buffer with the communicator (local
/// registration, nccl-tests `-R 1`); `handle` is what `ncclCommDeregister` takes.
pub type ncclCommRegister_t = unsafe extern "C" fn(
    comm: ncclComm_t,
    buff: *mut c_void,
    size: usize,
    handle: *mut *mut c_void,
) -> ncclResult_t;
pub type ncclCommDeregister_t =
    unsafe extern "C" fn(comm: ncclComm_t, handle: *mut c_void) -> ncclResult_t;
/// `ncclMemAlloc` (NCCL 2.19+): device memory NCCL can register and map for its peers
/// (cuMem* allocations with the granularity NCCL needs); nccl-tests allocates every buffer so.
pub type ncclMemAlloc_t = unsafe extern "C" fn(ptr: *mut *mut c_void, size: usize) -> ncclResult_t;
/// `ncclMemFree` (NCCL 2.19+): frees what `ncclMemAlloc` allocated.
pub type ncclMemFree_t = unsafe extern "C" fn(ptr: *mut c_void) -> ncclResult_t;
/// `ncclWindow_t`: opaque pointer to a registered window (NCCL 2.27+).
pub type ncclWindow_t = *mut c_void;
/// `NCCL_WIN_COLL_SYMMETRIC`: a window every rank registers alike (symmetric registration,
/// nccl-tests `-R 2`).
pub const NCCL_WIN_COLL_SYMMETRIC: c_int = 1;
/// `ncclCommWindowRegister` (NCCL 2.27+): collective over the communicator.
pub type ncclCommWindowRegister_t = unsafe extern "C" fn(
    comm: ncclComm_t,
    buff: *mut c_void,
    size: usize,
    win: *mut ncclWindow_t,
    win_flags: c_int,
) -> ncclResult_t;
pub type ncclCommWindowDeregister_t =
    unsafe extern "C" fn(comm: ncclComm_t, win: ncclWindow_t) -> ncclResult_t;

/// CUDA driver API (`cuda.h`) entry points used to probe for a usable GPU before cudarc, which
/// panics when it cannot load the driver, is touched at all.
pub type CUresult = c_int;
pub const CUDA_SUCCESS: CUresult = 0;
pub const CUDA_ERROR_NO_DEVICE: CUresult = 100;
pub type cuInit_t = unsafe extern "C" fn(flags: u32) -> CUresult;
pub type cuDriverGetVersion_t = unsafe extern "C" fn(version: *mut c_int) -> CUresult;
pub type cuDeviceGetCount_t = unsafe extern "C" fn(count: *mut c_int) -> CUresult;
pub type cuGetErrorName_t =
    unsafe extern "C" fn(code: CUresult, name: *mut *const c_char) -> CUresult;
