//! GPU telemetry for the NCCL backend through NVML (nvml-wrapper): power, SM clock and
//! temperature sampled in a background thread while each point runs, the board's energy counter
//! and NVLink traffic counters read at the point's start and end marks.
//!
//! ```no_run
//! use collbench::backend::nccl::telemetry::{DeviceRef, Telemetry};
//! let mut telemetry = Telemetry::start(&[DeviceRef::Index(0)], Telemetry::DEFAULT_INTERVAL);
//! telemetry.begin_point();
//! // ... the point's timed collective calls ...
//! let rows: Vec<_> = telemetry.end_point(1000).into_iter().map(|g| g.row(0)).collect();
//! ```
//!
//! Without NVML (no driver, no GPU) [`Telemetry::start`] prints one line to stderr and returns
//! a disabled `Telemetry` whose results are empty, so telemetry.csv gets rows with empty fields;
//! nothing here panics or fails a run.
//!
//! **What the numbers mean.**
//! * Power (`power_w_mean`, `power_w_max`) is `NVML_FI_DEV_POWER_INSTANT`, nvidia-smi's
//!   `power.draw.instant` ("the last measured instant power draw for the entire board"), where
//!   the driver offers it; otherwise `nvmlDeviceGetPowerUsage`, nvidia-smi's `power.draw`, which
//!   per `nvidia-smi --help-query-gpu` "on Ampere or newer devices, returns average power draw
//!   over 1 sec; on older devices, returns instantaneous power draw" (`power_source` says which).
//!   Either way the board's sensor is slower than a small collective: a point shorter than about
//!   a second averages over earlier work, and on A100 and H100 the sensor observes only part of
//!   each period (Yang et al., "Part-time Power Measurements: nvidia-smi's Lack of Attention",
//!   arXiv:2312.02741). Give points enough iterations to last a second or more when power
//!   matters.
//! * Energy (`energy_j`) is the difference of the total-energy counter
//!   (`nvmlDeviceGetTotalEnergyConsumption`, mJ, Volta and newer) between the marks, else the mean
//!   sampled power × the window; `energy_j_per_op` divides by the calls made in the window.
//! * NVLink (`nvlink_tx_gbps`, `nvlink_rx_gbps`) is the difference of the data throughput counters
//!   (`NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX`, KiB) summed over all links (scope id `UINT_MAX`,
//!   or link by link where the driver refuses that), over the window; empty without NVLink.
//!
//! The NCCL sweep samples every [`Telemetry::DEFAULT_INTERVAL`] (10 ms). `begin_point` and
//! `end_point` make several NVML calls each, which go through the driver: call them outside the
//! timed iterations.

mod aggregate;
mod nvml;
mod sampler;

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvml_wrapper::Nvml;
use serde::{Deserialize, Serialize};

pub use self::aggregate::{summarize, Counters, Sample, Window};
use self::nvml::Capabilities;
pub use self::nvml::{DeviceRef, NVML_FIX, NVML_LIB_ENV};
use self::sampler::{SampledGpu, Shared};
use super::loader::override_path;
pub use crate::report::telemetry_csv::{GpuLabel, PointTelemetry, TelemetryRow};

/// One GPU's telemetry over one point (serialisable, for a rank to send it to the writer).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuPoint {
    pub gpu: GpuLabel,
    pub telemetry: PointTelemetry,
}

impl GpuPoint {
    /// The telemetry.csv row of `rank` (its `point` is set when the row is appended).
    pub fn row(self, rank: usize) -> TelemetryRow {
        TelemetryRow {
            point: 0,
            rank,
            gpu: self.gpu,
            telemetry: self.telemetry,
        }
    }
}

/// Samples the GPUs of this process while points run; see the module docs.
#[derive(Debug)]
pub struct Telemetry {
    /// What each result row says about its GPU, in the order asked for.
    labels: Vec<GpuLabel>,
    active: Option<Active>,
    /// Why telemetry is off.
    unavailable: Option<String>,
}

/// A running sampler.
struct Active {
    nvml: Arc<Nvml>,
    gpus: Vec<(SampledGpu, Capabilities)>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Start of the open point and the counters read then.
    begun: Option<(Instant, Vec<Counters>)>,
}

impl std::fmt::Debug for Active {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Active")
            .field("gpus", &self.gpus)
            .finish_non_exhaustive()
    }
}

/// Set once a process has said that telemetry is off, so it says so once.
static REPORTED: AtomicBool = AtomicBool::new(false);

impl Telemetry {
    /// The sampling interval used by the NCCL sweep.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(10);
    /// Shorter intervals are raised to this, so that the sampler never spins on NVML.
    pub const MIN_INTERVAL: Duration = Duration::from_millis(1);

    /// Starts sampling `devices` every `interval`. If telemetry cannot run, says why in one line
    /// on stderr (once per process) and returns a disabled `Telemetry`.
    pub fn start(devices: &[DeviceRef], interval: Duration) -> Telemetry {
        let telemetry = Telemetry::open(devices, interval);
        if let Some(why) = telemetry.unavailable() {
            // stderr is all there is to tell; a failed write must not stop the run.
            let _ = report_once(why, &REPORTED, &mut std::io::stderr());
        }
        telemetry
    }

    /// [`start`](Self::start) without the message (for ranks other than the one that reports);
    /// NVML is opened from `COLLBENCH_NVML_LIB` if set, else libnvidia-ml.so.1.
    pub fn open(devices: &[DeviceRef], interval: Duration) -> Telemetry {
        let path = override_path(std::env::var_os(NVML_LIB_ENV));
        Telemetry::open_library(path.as_deref(), devices, interval)
    }

    /// [`open`](Self::open) with NVML loaded from `library` (`None`: libnvidia-ml.so.1).
    pub fn open_library(library: Option<&Path>, devices: &[DeviceRef], interval: Duration) -> Self {
        let labels: Vec<GpuLabel> = devices.iter().map(DeviceRef::label).collect();
        let disabled = |why: String| Telemetry {
            labels: labels.clone(),
            active: None,
            unavailable: Some(why),
        };
        let nvml = match nvml::open(library) {
            Ok(nvml) => Arc::new(nvml),
            Err(why) => return disabled(unavailable_message(&why)),
        };
        match activate(nvml, devices, interval.max(Self::MIN_INTERVAL)) {
            Ok((active, labels)) => Telemetry {
                labels,
                active: Some(active),
                unavailable: None,
            },
            Err(why) => disabled(why),
        }
    }

    /// Whether GPUs are being sampled.
    pub fn enabled(&self) -> bool {
        self.active.is_some()
    }

    /// Why telemetry is off (one line), or `None` when it runs.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// The GPUs, in the order asked for.
    pub fn gpus(&self) -> &[GpuLabel] {
        &self.labels
    }

    /// Marks the start of a point: reads the counters and starts the sampler.
    pub fn begin_point(&mut self) {
        if let Some(a) = &mut self.active {
            let counters = a.read_counters();
            a.begun = Some((Instant::now(), counters));
            a.shared.begin(a.gpus.len());
        }
    }

    /// Marks the end of a point in which `iterations` collective calls were made: one result
    /// per GPU, in the order asked for; empty ones when telemetry is off or no point was begun.
    pub fn end_point(&mut self, iterations: u64) -> Vec<GpuPoint> {
        let summaries = match &mut self.active {
            Some(a) => a.end(iterations),
            None => None,
        };
        let mut summaries = summaries.unwrap_or_default().into_iter();
        self.labels
            .iter()
            .map(|gpu| GpuPoint {
                gpu: gpu.clone(),
                telemetry: summaries.next().unwrap_or_default(),
            })
            .collect()
    }
}

/// Whether telemetry can run here, for `collbench backends`: "telemetry: NVML sees ..." or the
/// line [`Telemetry::start`] would print.
pub fn status_line() -> String {
    let path = override_path(std::env::var_os(NVML_LIB_ENV));
    match nvml::status(path.as_deref()) {
        Ok(seen) => format!("telemetry: {seen}"),
        Err(why) => format!("telemetry: {}", unavailable_message(&why)),
    }
}

/// Writes `collbench: <why>` to `out` unless `reported` says it was written already.
fn report_once(why: &str, reported: &AtomicBool, out: &mut impl Write) -> std::io::Result<()> {
    if reported.swap(true, Ordering::Relaxed) {
        return Ok(());
    }
    writeln!(out, "collbench: {why}")
}

/// The one line printed when NVML cannot be opened.
pub fn unavailable_message(reason: &str) -> String {
    format!("NVML unavailable ({reason}): telemetry columns left empty; {NVML_FIX}")
}

/// Finds the GPUs, probes what each offers and starts the sampler thread.
fn activate(
    nvml: Arc<Nvml>,
    devices: &[DeviceRef],
    interval: Duration,
) -> Result<(Active, Vec<GpuLabel>), String> {
    let mut gpus = Vec::new();
    let mut labels = Vec::new();
    for r in devices {
        let dev = nvml::find(&nvml, r).map_err(|why| {
            format!(
                "NVML telemetry off ({why}): telemetry columns left empty; check `nvidia-smi -L`"
            )
        })?;
        let label = nvml::label(&dev);
        let caps = nvml::capabilities(&dev);
        let index = label.index.ok_or_else(|| {
            format!("NVML telemetry off (no index for GPU {r}): telemetry columns left empty")
        })?;
        gpus.push((
            SampledGpu {
                index,
                power: caps.power,
            },
            caps,
        ));
        labels.push(label);
    }
    let shared = Arc::new(Shared::default());
    let sampled = gpus.iter().map(|(g, _)| *g).collect();
    let thread = sampler::spawn(Arc::clone(&nvml), sampled, interval, Arc::clone(&shared))
        .map_err(|e| {
            format!("NVML sampler thread did not start ({e}): telemetry columns left empty")
        })?;
    let active = Active {
        nvml,
        gpus,
        shared,
        thread: Some(thread),
        begun: None,
    };
    Ok((active, labels))
}

impl Active {
    fn read_counters(&self) -> Vec<Counters> {
        self.gpus
            .iter()
            .map(|(g, caps)| match self.nvml.device_by_index(g.index) {
                Ok(dev) => nvml::counters(&dev, &caps.nvlink),
                Err(_) => Counters::default(),
            })
            .collect()
    }

    /// Closes the open point; `None` if none was begun.
    fn end(&mut self, iterations: u64) -> Option<Vec<PointTelemetry>> {
        let end = self.read_counters();
        let samples = self.shared.end();
        let (start, begin) = self.begun.take()?;
        let elapsed_s = start.elapsed().as_secs_f64();
        let per_gpu = self.gpus.iter().zip(begin).zip(end).zip(samples);
        let summaries = per_gpu.map(|((((g, _), begin), end), samples)| {
            let window = Window {
                elapsed_s,
                begin,
                end,
                iterations,
                power_source: g.power,
            };
            summarize(&samples, &window)
        });
        Some(summaries.collect())
    }
}

impl Drop for Active {
    /// Stops and joins the sampler; a sampler that panicked is ignored (its results are lost,
    /// the run goes on).
    fn drop(&mut self) {
        self.shared.stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests;
