//! What NCCL actually ran: collbench is its own NCCL profiler plugin. NCCL 2.23+ loads a
//! profiler from `NCCL_PROFILER_PLUGIN`, and the value `STATIC_PLUGIN` makes it look for the
//! plugin's symbol in the running program (`dlopen(NULL)`, NCCL `src/plugin/plugin_open.cc`),
//! so the collbench executable exports [`ncclProfiler_v1`] (build.rs) and the rank sets the
//! variable before NCCL starts. NCCL hands every collective's descriptor to `startEvent`,
//! with the algorithm and protocol it chose for it; the last one is kept here, and the sweep
//! records it per point (`nccl_algo`, `nccl_proto`), so that a forced `NCCL_ALGO` that NCCL
//! ignored shows. Interface v1 is the one every release from 2.23 on still loads (newer ones
//! fall back to it, `src/plugin/profiler.cc`). Chosen over the TUNING lines of `NCCL_DEBUG`,
//! which NCCL prints at INFO level on every call (a cost inside timed loops) and only from
//! 2.24 on.
//!
//! The callbacks do nothing but store a few atomics; they never fail and never allocate.

#![allow(non_upper_case_globals)]

use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

use super::sys;
use crate::model::record::{NCCL_ALGOS, NCCL_PROTOS};

/// The variable NCCL reads for its profiler plugin, and the value that names this program.
pub const PLUGIN_ENV: &str = "NCCL_PROFILER_PLUGIN";
pub const IN_PROGRAM: &str = "STATIC_PLUGIN";

/// `ncclProfileColl` (NCCL's profiler.h): host collective events.
pub const PROFILE_COLL: c_int = 1 << 1;

/// The collective member of `ncclProfilerEventDescr_v1_t`'s union (profiler_v1.h).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CollV1 {
    pub name: *const c_char,
    pub comm_hash: u64,
    pub seq_number: u64,
    pub func: u8,
    pub send_buff: *const c_void,
    pub recv_buff: *mut c_void,
    pub count: usize,
    pub root: c_int,
    pub datatype: u8,
    pub op: u32,
    pub traffic_bytes: usize,
    pub n_max_channels: u8,
    pub n_warps: u8,
    pub algo: u8,
    pub proto: u8,
    pub is_collnet: c_int,
    pub is_nvls: c_int,
}

/// `ncclProfilerEventDescr_v1_t`, with the union as its largest member (the collective one),
/// read only for events of type [`PROFILE_COLL`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EventDescrV1 {
    pub type_: u8,
    pub parent_obj: *mut c_void,
    pub rank: c_int,
    pub coll: CollV1,
}

/// `ncclProfiler_v1_t`.
#[repr(C)]
pub struct ProfilerV1 {
    pub name: *const c_char,
    pub init: unsafe extern "C" fn(*mut *mut c_void, *mut c_int) -> sys::ncclResult_t,
    pub start_event:
        unsafe extern "C" fn(*mut c_void, *mut *mut c_void, *mut EventDescrV1) -> sys::ncclResult_t,
    pub stop_event: unsafe extern "C" fn(*mut c_void) -> sys::ncclResult_t,
    pub record_event_state:
        unsafe extern "C" fn(*mut c_void, c_int, *mut c_void) -> sys::ncclResult_t,
    pub finalize: unsafe extern "C" fn(*mut c_void) -> sys::ncclResult_t,
}

/// The plugin table, shareable as NCCL shares it (read only, pointers to statics).
#[repr(transparent)]
pub struct Exported(pub ProfilerV1);

// SAFETY: the table is immutable and points to a static string and to functions.
unsafe impl Sync for Exported {}

/// The symbol NCCL looks up (`dlsym(handle, "ncclProfiler_v1")`).
#[no_mangle]
#[used]
pub static ncclProfiler_v1: Exported = Exported(ProfilerV1 {
    name: c"collbench".as_ptr(),
    init,
    start_event,
    stop_event,
    record_event_state,
    finalize,
});

/// Where `init` and `startEvent` point NCCL: any non-null address; nothing is kept per event.
static TOKEN: u8 = 0;

static SEEN: AtomicU64 = AtomicU64::new(0);
static LAST_FUNC: AtomicU8 = AtomicU8::new(0);
static LAST_ALGO: AtomicU8 = AtomicU8::new(0);
static LAST_PROTO: AtomicU8 = AtomicU8::new(0);
static LAST_COUNT: AtomicUsize = AtomicUsize::new(0);

fn token() -> *mut c_void {
    std::ptr::addr_of!(TOKEN) as *mut c_void
}

unsafe extern "C" fn init(context: *mut *mut c_void, mask: *mut c_int) -> sys::ncclResult_t {
    if !context.is_null() {
        // SAFETY: NCCL passes a valid out-pointer.
        unsafe { *context = token() };
    }
    if !mask.is_null() {
        // SAFETY: as above.
        unsafe { *mask = PROFILE_COLL };
    }
    sys::NCCL_SUCCESS
}

unsafe extern "C" fn start_event(
    _context: *mut c_void,
    handle: *mut *mut c_void,
    descr: *mut EventDescrV1,
) -> sys::ncclResult_t {
    if !handle.is_null() {
        // SAFETY: NCCL passes a valid out-pointer.
        unsafe { *handle = std::ptr::null_mut() };
    }
    // SAFETY: NCCL passes a descriptor valid for the call; its union is read only as the
    // collective member, and only when the type says it is one.
    let Some(d) = (unsafe { descr.as_ref() }) else {
        return sys::NCCL_SUCCESS;
    };
    if c_int::from(d.type_) == PROFILE_COLL {
        LAST_FUNC.store(d.coll.func, Ordering::Relaxed);
        LAST_ALGO.store(d.coll.algo, Ordering::Relaxed);
        LAST_PROTO.store(d.coll.proto, Ordering::Relaxed);
        LAST_COUNT.store(d.coll.count, Ordering::Relaxed);
        SEEN.fetch_add(1, Ordering::Release);
    }
    sys::NCCL_SUCCESS
}

unsafe extern "C" fn stop_event(_handle: *mut c_void) -> sys::ncclResult_t {
    sys::NCCL_SUCCESS
}

unsafe extern "C" fn record_event_state(
    _handle: *mut c_void,
    _state: c_int,
    _args: *mut c_void,
) -> sys::ncclResult_t {
    sys::NCCL_SUCCESS
}

unsafe extern "C" fn finalize(_context: *mut c_void) -> sys::ncclResult_t {
    sys::NCCL_SUCCESS
}

/// The last collective NCCL described to the profiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ran {
    /// NCCL's `ncclFunc_t` index (0 Broadcast, 1 Reduce, 2 AllGather, 3 ReduceScatter,
    /// 4 AllReduce, as `src/include/nccl_common.h`).
    pub func: u8,
    /// Elements of the call.
    pub count: usize,
    /// `NCCL_ALGO_*` and `NCCL_PROTO_*` indices.
    pub algo: u8,
    pub proto: u8,
}

impl Ran {
    /// The algorithm as collbench names it (`NCCL_ALGO_*` of `nccl_common.h`, in its order).
    pub fn algo_name(&self) -> &'static str {
        let known = &NCCL_ALGOS[..NCCL_ALGOS.len() - 1];
        known
            .get(usize::from(self.algo))
            .copied()
            .unwrap_or("unknown")
    }

    /// The protocol as collbench names it (`NCCL_PROTO_*`: LL, LL128, Simple).
    pub fn proto_name(&self) -> &'static str {
        let known = &NCCL_PROTOS[..NCCL_PROTOS.len() - 1];
        known
            .get(usize::from(self.proto))
            .copied()
            .unwrap_or("unknown")
    }
}

/// How many collectives NCCL has described so far (0: the plugin is not loaded).
pub fn seen() -> u64 {
    SEEN.load(Ordering::Acquire)
}

/// The last collective described after `since` ([`seen`] before the call), or `None`.
pub fn last_since(since: u64) -> Option<Ran> {
    (seen() > since).then(|| Ran {
        func: LAST_FUNC.load(Ordering::Relaxed),
        count: LAST_COUNT.load(Ordering::Relaxed),
        algo: LAST_ALGO.load(Ordering::Relaxed),
        proto: LAST_PROTO.load(Ordering::Relaxed),
    })
}

/// Whether NCCL would find the plugin here: `dlsym(dlopen(NULL), "ncclProfiler_v1")`, the
/// lookup NCCL makes for `STATIC_PLUGIN`.
pub fn exported() -> bool {
    // SAFETY: dlopen(NULL) returns the main program's handle (never unloaded); dlsym only looks
    // a name up.
    unsafe {
        let program = libc::dlopen(std::ptr::null(), libc::RTLD_NOW);
        if program.is_null() {
            return false;
        }
        !libc::dlsym(program, c"ncclProfiler_v1".as_ptr()).is_null()
    }
}

/// Asks NCCL to load this program as its profiler, unless the user named a profiler of their
/// own. Called by a rank before NCCL starts and while the process has one thread.
pub fn install() -> bool {
    match std::env::var_os(PLUGIN_ENV) {
        Some(own) if own != IN_PROGRAM => false,
        Some(_) => true,
        None => {
            std::env::set_var(PLUGIN_ENV, IN_PROGRAM);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    fn coll(func: u8, count: usize, algo: u8, proto: u8) -> EventDescrV1 {
        EventDescrV1 {
            type_: PROFILE_COLL as u8,
            parent_obj: std::ptr::null_mut(),
            rank: 0,
            coll: CollV1 {
                name: std::ptr::null(),
                comm_hash: 0,
                seq_number: 0,
                func,
                send_buff: std::ptr::null(),
                recv_buff: std::ptr::null_mut(),
                count,
                root: 0,
                datatype: 7,
                op: 0,
                traffic_bytes: 0,
                n_max_channels: 2,
                n_warps: 16,
                algo,
                proto,
                is_collnet: 0,
                is_nvls: 0,
            },
        }
    }

    #[test]
    fn the_v1_descriptor_has_profiler_v1_h_s_layout() {
        // x86_64 and aarch64 Linux, from profiler_v1.h's field order and C's alignment rules.
        assert_eq!(offset_of!(EventDescrV1, parent_obj), 8);
        assert_eq!(offset_of!(EventDescrV1, rank), 16);
        assert_eq!(offset_of!(EventDescrV1, coll), 24);
        let c = |o: usize| 24 + o;
        assert_eq!(c(offset_of!(CollV1, func)), 48);
        assert_eq!(c(offset_of!(CollV1, send_buff)), 56);
        assert_eq!(c(offset_of!(CollV1, count)), 72);
        assert_eq!(c(offset_of!(CollV1, datatype)), 84);
        assert_eq!(c(offset_of!(CollV1, op)), 88);
        assert_eq!(c(offset_of!(CollV1, algo)), 106);
        assert_eq!(c(offset_of!(CollV1, proto)), 107);
        assert_eq!(c(offset_of!(CollV1, is_nvls)), 112);
        assert_eq!(size_of::<ProfilerV1>(), 6 * 8);
    }

    #[test]
    fn a_collective_s_algorithm_and_protocol_are_kept_and_other_events_ignored() {
        let before = seen();
        let mut h = token();
        let mut d = coll(4, 1024, 1, 2);
        // SAFETY: valid pointers to locals, as NCCL passes them.
        unsafe {
            let mut ctx = std::ptr::null_mut();
            let mut mask = 0;
            assert_eq!(init(&mut ctx, &mut mask), 0);
            assert_eq!((mask, ctx.is_null()), (PROFILE_COLL, false));
            assert_eq!(start_event(ctx, &mut h, &mut d), 0);
            assert!(h.is_null());
            let mut group = coll(0, 5, 0, 0);
            group.type_ = 1;
            assert_eq!(start_event(ctx, &mut h, &mut group), 0);
            assert_eq!(start_event(ctx, &mut h, std::ptr::null_mut()), 0);
            assert_eq!(stop_event(h), 0);
            assert_eq!(finalize(ctx), 0);
        }
        let ran = last_since(before).expect("one collective seen");
        assert_eq!(
            ran,
            Ran {
                func: 4,
                count: 1024,
                algo: 1,
                proto: 2
            }
        );
        assert_eq!((ran.algo_name(), ran.proto_name()), ("ring", "simple"));
        assert_eq!(last_since(seen()), None);
        let odd = Ran {
            func: 4,
            count: 1,
            algo: 9,
            proto: 7,
        };
        assert_eq!((odd.algo_name(), odd.proto_name()), ("unknown", "unknown"));
    }
}
