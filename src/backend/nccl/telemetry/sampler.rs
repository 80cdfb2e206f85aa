//! The sampler thread: while a point is open it reads every GPU at a fixed interval; between
//! points it sleeps on a condition variable, so it costs nothing while buffers are set up.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvml_wrapper::{Device, Nvml};

use super::aggregate::Sample;
use super::nvml;
use crate::report::telemetry_csv::PowerSource;

/// State shared by the caller and the sampler thread.
#[derive(Debug, Default)]
pub struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct State {
    stop: bool,
    recording: bool,
    /// Counts points, so that a reading taken during one point is never filed under the next.
    point: u64,
    /// Readings of the open point, one vector per GPU.
    samples: Vec<Vec<Sample>>,
}

impl Shared {
    // A panic elsewhere cannot leave State inconsistent (every update is a plain assignment),
    // so a poisoned lock is used as it is.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a point for `gpus` GPUs: the sampler starts reading at once.
    pub fn begin(&self, gpus: usize) {
        let mut s = self.lock();
        s.point += 1;
        s.recording = true;
        s.samples = vec![Vec::new(); gpus];
        self.wake.notify_all();
    }

    /// Closes the point and hands over its readings.
    pub fn end(&self) -> Vec<Vec<Sample>> {
        let mut s = self.lock();
        s.recording = false;
        std::mem::take(&mut s.samples)
    }

    /// Tells the thread to finish.
    pub fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_all();
    }

    /// Blocks until a point is open; its number, or `None` once stopped.
    fn wait_for_point(&self) -> Option<u64> {
        let mut s = self.lock();
        while !s.stop && !s.recording {
            s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        (!s.stop).then_some(s.point)
    }

    /// Files readings taken during point `point` (unless it has closed meanwhile), then sleeps
    /// until `until`; `false` once stopped.
    fn store_and_sleep(&self, point: u64, readings: Vec<Sample>, until: Instant) -> bool {
        let mut s = self.lock();
        if s.recording && s.point == point {
            for (gpu, r) in s.samples.iter_mut().zip(readings) {
                gpu.push(r);
            }
        }
        loop {
            let now = Instant::now();
            if s.stop || now >= until {
                return !s.stop;
            }
            s = match self.wake.wait_timeout(s, until - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

/// A GPU as the sampler reads it.
#[derive(Clone, Copy, Debug)]
pub struct SampledGpu {
    /// NVML index.
    pub index: u32,
    pub power: Option<PowerSource>,
}

/// Starts the thread.
pub fn spawn(
    nvml: Arc<Nvml>,
    gpus: Vec<SampledGpu>,
    interval: Duration,
    shared: Arc<Shared>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("collbench-nvml".into())
        .spawn(move || run(&nvml, &gpus, interval, &shared))
}

fn run(nvml: &Nvml, gpus: &[SampledGpu], interval: Duration, shared: &Shared) {
    let devices: Vec<Option<Device>> = gpus
        .iter()
        .map(|g| nvml.device_by_index(g.index).ok())
        .collect();
    while let Some(point) = shared.wait_for_point() {
        // A fixed grid from the point's first reading: readings do not drift with their cost.
        let mut next = Instant::now();
        loop {
            let readings = read_all(&devices, gpus);
            // Readings slower than the interval: the next one follows at once, no backlog.
            next = (next + interval).max(Instant::now());
            if !shared.store_and_sleep(point, readings, next) {
                return;
            }
            let s = shared.lock();
            if !s.recording || s.point != point {
                break;
            }
        }
    }
}

fn read_all(devices: &[Option<Device>], gpus: &[SampledGpu]) -> Vec<Sample> {
    devices
        .iter()
        .zip(gpus)
        .map(|(d, g)| d.as_ref().map(|d| nvml::sample(d, g.power)))
        .map(Option::unwrap_or_default)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(power_mw: u32) -> Vec<Sample> {
        let s = Sample {
            power_mw: Some(power_mw),
            ..Sample::default()
        };
        vec![s, s]
    }

    #[test]
    fn readings_are_filed_under_their_own_point_only() {
        let shared = Shared::default();
        let now = Instant::now();
        shared.begin(2);
        let first = shared.wait_for_point().unwrap();
        assert!(shared.store_and_sleep(first, reading(1), now));
        assert!(shared.store_and_sleep(first, reading(2), now));
        let got = shared.end();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[1].iter().map(|s| s.power_mw).collect::<Vec<_>>(),
            [Some(1), Some(2)]
        );
        // A reading of the closed point that arrives late is dropped, also once the next opens.
        assert!(shared.store_and_sleep(first, reading(3), now));
        shared.begin(2);
        assert!(shared.store_and_sleep(first, reading(4), now));
        assert_eq!(shared.end(), vec![Vec::<Sample>::new(); 2]);
    }

    #[test]
    fn stop_ends_waiting_and_sleeping() {
        let shared = Shared::default();
        shared.stop();
        assert_eq!(shared.wait_for_point(), None);
        let far = Instant::now() + Duration::from_secs(3600);
        assert!(
            !shared.store_and_sleep(1, reading(1), far),
            "returns at once when stopped"
        );
    }
}
