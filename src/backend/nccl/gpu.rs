//! One rank's GPU through cudarc's driver layer: the context of its device, one stream for
//! every call, device buffers grown once to the largest point, and CUDA events that time each
//! iteration on that stream. cudarc panics where it cannot load the driver; the probe has
//! loaded it by then, and the first cudarc call is guarded so that a panic becomes an error.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DriverError};

use super::comm::Communicator;
use super::error::CudaError;
use crate::error::{Error, Result};

/// A driver error as collbench reports it, naming the call.
pub fn driver_error(call: &'static str, e: DriverError) -> Error {
    let err = CudaError::Call {
        call,
        code: e.0 as i32,
        name: format!("{e:?}"),
    };
    Error::Rank(err.to_string())
}

/// The rank's device, its stream, and its name.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// The driver's device name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    pub ordinal: usize,
}

impl Gpu {
    /// Opens device `ordinal` (the rank's local rank) and makes it current on this thread.
    pub fn open(ordinal: usize) -> Result<Gpu> {
        let ctx = guarded(|| CudaContext::new(ordinal))
            .map_err(|e| Error::Rank(format!("GPU {ordinal}: {e}")))?
            .map_err(|e| driver_error("cuCtxCreate (primary context)", e))?;
        // Buffers live on one stream: no cross-stream tracking events inside timed loops.
        // SAFETY: every buffer and call of this rank uses `stream` only, but for the GEMM
        // load's matrices (backend::nccl::gemm), read on a second stream only after their fill
        // was synchronised, and that stream is joined back to `stream` after every batch.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| driver_error("cuStreamCreate", e))?;
        let name = ctx.name().map_err(|e| driver_error("cuDeviceGetName", e))?;
        Ok(Gpu {
            ctx,
            stream,
            name,
            ordinal,
        })
    }

    /// `n` zeroed bytes on the device; running out of memory names the size and the fix.
    pub fn alloc(&self, n: usize) -> Result<CudaSlice<u8>> {
        self.stream.alloc_zeros::<u8>(n.max(1)).map_err(|e| {
            Error::Rank(format!(
                "GPU {}: cannot allocate {} ({e:?}); lower -e",
                self.ordinal,
                crate::units::format_size(n)
            ))
        })
    }

    /// A timing event (cuEventCreate with CU_EVENT_DEFAULT).
    pub fn timing_event(&self) -> Result<CudaEvent> {
        self.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| driver_error("cuEventCreate", e))
    }

    /// The device address of a buffer (for NCCL, which takes raw pointers).
    pub fn address(&self, buf: &CudaSlice<u8>) -> u64 {
        let (ptr, _no_event) = buf.device_ptr(&self.stream);
        ptr
    }

    /// The PCI bus id as NVML reads it (`00000000:18:00.0`), if the driver says.
    pub fn pci_bus_id(&self) -> Option<String> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let get = |a| self.ctx.attribute(a).ok();
        let domain = get(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?;
        let bus = get(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
        let device = get(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?;
        Some(pci_bus_id(domain, bus, device))
    }

    /// The raw stream, for NCCL.
    pub fn raw_stream(&self) -> super::sys::cudaStream_t {
        self.stream.cu_stream() as super::sys::cudaStream_t
    }
}

/// Runs a cudarc call that may panic (a driver it cannot load, a missing symbol), turning the
/// panic into an error and keeping its message off stderr.
fn guarded<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> std::result::Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let out = std::panic::catch_unwind(f);
    std::panic::set_hook(hook);
    out.map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the CUDA driver could not be used".into());
        format!("{msg}; add the folder of libcuda.so to LD_LIBRARY_PATH")
    })
}

/// How [`wait_events`] looks at an event that is not complete yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Sleep 50 µs between looks: waits that are not timed.
    Sleeping,
    /// Look again at once: the end of a timed loop, which must not be rounded up to a poll
    /// (nccl-tests' `testStreamSynchronize` likewise polls `cudaStreamQuery`).
    Spinning,
}

/// Waits for `events` to complete in order, failing on the communicator's asynchronous error or
/// when none completes for `stall` (a peer that died or hangs). Polls instead of blocking in the
/// driver, so a dead peer is reported instead of waited on forever; spinning, the error and the
/// clock are looked at every 1024 polls, off the common path.
pub fn wait_events(
    events: &[&CudaEvent],
    comm: &Communicator,
    stall: Duration,
    poll: Poll,
) -> Result<()> {
    let mut last_progress = Instant::now();
    let mut done = 0;
    let mut polls = 0u32;
    while done < events.len() {
        if events[done].is_complete() {
            done += 1;
            last_progress = Instant::now();
            continue;
        }
        polls = polls.wrapping_add(1);
        if poll == Poll::Spinning && polls % 1024 != 0 {
            std::hint::spin_loop();
            continue;
        }
        comm.check_async().map_err(|e| Error::Rank(e.to_string()))?;
        if last_progress.elapsed() > stall {
            return Err(Error::Rank(format!(
                "NCCL made no progress for {} ({done} of {} calls done); a peer rank may have died",
                humantime::format_duration(stall),
                events.len()
            )));
        }
        if poll == Poll::Sleeping {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    Ok(())
}

/// NVML's form of a PCI bus id from CUDA's domain, bus and device numbers.
pub fn pci_bus_id(domain: i32, bus: i32, device: i32) -> String {
    format!("{domain:08x}:{bus:02x}:{device:02x}.0")
}
