//! From a point's raw readings to its [`PointTelemetry`]: pure arithmetic, no NVML.

use crate::report::telemetry_csv::{EnergySource, PointTelemetry, PowerSource};

/// One reading of one GPU by the sampler thread; `None` where NVML refused the value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Board power, mW.
    pub power_mw: Option<u32>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// GPU die temperature, °C.
    pub temp_c: Option<u32>,
}

/// Cumulative counters read at a point's start or end mark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Total energy since the driver loaded, mJ.
    pub energy_mj: Option<u64>,
    /// NVLink data sent, summed over links, KiB.
    pub nvlink_tx_kib: Option<u64>,
    /// NVLink data received, summed over links, KiB.
    pub nvlink_rx_kib: Option<u64>,
}

/// What was known about a point besides its samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Seconds between the start and end marks.
    pub elapsed_s: f64,
    pub begin: Counters,
    pub end: Counters,
    /// Collective calls made between the marks.
    pub iterations: u64,
    /// Which reading the samples' power is.
    pub power_source: Option<PowerSource>,
}

/// The point's telemetry from its samples and counters.
pub fn summarize(samples: &[Sample], w: &Window) -> PointTelemetry {
    let power_w = || samples.iter().filter_map(|s| s.power_mw).map(milli);
    let power_w_mean = mean(power_w());
    let (energy_j, energy_source) = energy(w, power_w_mean);
    PointTelemetry {
        samples: samples.len(),
        window_s: positive(w.elapsed_s),
        power_w_mean,
        power_w_max: max(power_w()),
        power_source: power_w_mean.and(w.power_source),
        energy_j,
        energy_j_per_op: energy_j.and_then(|e| per_op(e, w.iterations)),
        energy_source,
        sm_clock_mhz_mean: mean(samples.iter().filter_map(|s| s.sm_clock_mhz).map(f64::from)),
        temp_c_max: max(samples.iter().filter_map(|s| s.temp_c).map(f64::from)),
        nvlink_tx_gbps: throughput(w.begin.nvlink_tx_kib, w.end.nvlink_tx_kib, w.elapsed_s),
        nvlink_rx_gbps: throughput(w.begin.nvlink_rx_kib, w.end.nvlink_rx_kib, w.elapsed_s),
    }
}

/// Energy of the point: the counter's difference where both marks have it and it did not go
/// backwards (a driver reload restarts it), else mean power × the window.
fn energy(w: &Window, power_w_mean: Option<f64>) -> (Option<f64>, Option<EnergySource>) {
    if let Some(mj) = delta(w.begin.energy_mj, w.end.energy_mj) {
        return (Some(mj as f64 / 1000.0), Some(EnergySource::Counter));
    }
    match (power_w_mean, positive(w.elapsed_s)) {
        (Some(p), Some(s)) => (Some(p * s), Some(EnergySource::Power)),
        _ => (None, None),
    }
}

/// GB/s (1e9 bytes/s) of a KiB counter over `elapsed_s`.
fn throughput(begin: Option<u64>, end: Option<u64>, elapsed_s: f64) -> Option<f64> {
    let kib = delta(begin, end)?;
    let s = positive(elapsed_s)?;
    Some(kib as f64 * 1024.0 / s / 1e9)
}

/// `end - begin` of a counter, `None` if either is missing or it went backwards.
fn delta(begin: Option<u64>, end: Option<u64>) -> Option<u64> {
    end?.checked_sub(begin?)
}

fn per_op(energy_j: f64, iterations: u64) -> Option<f64> {
    (iterations > 0).then(|| energy_j / iterations as f64)
}

fn milli(x: u32) -> f64 {
    f64::from(x) / 1000.0
}

fn positive(x: f64) -> Option<f64> {
    (x.is_finite() && x > 0.0).then_some(x)
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn max(values: impl Iterator<Item = f64>) -> Option<f64> {
    values.reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(power_mw: u32, sm_clock_mhz: u32, temp_c: u32) -> Sample {
        Sample {
            power_mw: Some(power_mw),
            sm_clock_mhz: Some(sm_clock_mhz),
            temp_c: Some(temp_c),
        }
    }

    fn three_samples() -> Vec<Sample> {
        vec![
            sample(400_000, 1980, 60),
            sample(420_000, 1990, 62),
            sample(440_000, 2000, 61),
        ]
    }

    fn window(begin: Counters, end: Counters) -> Window {
        Window {
            elapsed_s: 0.5,
            begin,
            end,
            iterations: 1000,
            power_source: Some(PowerSource::Instant),
        }
    }

    #[test]
    fn counters_give_energy_and_nvlink_throughput() {
        let begin = Counters {
            energy_mj: Some(1_000_000),
            nvlink_tx_kib: Some(5),
            nvlink_rx_kib: Some(0),
        };
        // 97 656 250 KiB = 1e11 bytes in 0.5 s: 200 GB/s; half of that received: 100 GB/s.
        let end = Counters {
            energy_mj: Some(1_210_000),
            nvlink_tx_kib: Some(97_656_255),
            nvlink_rx_kib: Some(48_828_125),
        };
        let t = summarize(&three_samples(), &window(begin, end));
        assert_eq!(t.samples, 3);
        assert_eq!(t.window_s, Some(0.5));
        assert_eq!(t.power_w_mean, Some(420.0));
        assert_eq!(t.power_w_max, Some(440.0));
        assert_eq!(t.power_source, Some(PowerSource::Instant));
        assert_eq!(t.energy_j, Some(210.0));
        assert_eq!(t.energy_source, Some(EnergySource::Counter));
        assert_eq!(t.energy_j_per_op, Some(0.21));
        assert_eq!(t.sm_clock_mhz_mean, Some(1990.0));
        assert_eq!(t.temp_c_max, Some(62.0));
        assert_eq!(t.nvlink_tx_gbps, Some(200.0));
        assert_eq!(t.nvlink_rx_gbps, Some(100.0));
    }

    #[test]
    fn without_the_energy_counter_energy_is_mean_power_times_window() {
        let none = Counters::default();
        let t = summarize(&three_samples(), &window(none, none));
        // 420 W × 0.5 s.
        assert_eq!(t.energy_j, Some(210.0));
        assert_eq!(t.energy_source, Some(EnergySource::Power));
        assert_eq!(t.energy_j_per_op, Some(0.21));
        assert_eq!((t.nvlink_tx_gbps, t.nvlink_rx_gbps), (None, None));
    }

    #[test]
    fn a_counter_that_went_backwards_is_not_trusted() {
        let begin = Counters {
            energy_mj: Some(9_000),
            nvlink_tx_kib: Some(10),
            ..Counters::default()
        };
        let end = Counters {
            energy_mj: Some(100),
            nvlink_tx_kib: Some(4),
            ..Counters::default()
        };
        let t = summarize(&three_samples(), &window(begin, end));
        assert_eq!(t.energy_source, Some(EnergySource::Power));
        assert_eq!(t.nvlink_tx_gbps, None);
    }

    #[test]
    fn missing_readings_are_left_out_of_means_but_samples_count_them() {
        let mut samples = three_samples();
        samples[0].power_mw = None;
        samples[2].sm_clock_mhz = None;
        samples.push(Sample::default());
        let t = summarize(&samples, &window(Counters::default(), Counters::default()));
        assert_eq!(t.samples, 4);
        // (420 + 440) / 2 W; (1980 + 1990) / 2 MHz.
        assert_eq!(t.power_w_mean, Some(430.0));
        assert_eq!(t.power_w_max, Some(440.0));
        assert_eq!(t.sm_clock_mhz_mean, Some(1985.0));
        assert_eq!(t.energy_j, Some(215.0));
    }

    #[test]
    fn no_samples_no_power_but_the_counter_still_counts() {
        let begin = Counters {
            energy_mj: Some(0),
            ..Counters::default()
        };
        let end = Counters {
            energy_mj: Some(1_500),
            ..Counters::default()
        };
        let mut w = window(begin, end);
        w.iterations = 0;
        let t = summarize(&[], &w);
        assert_eq!(t.samples, 0);
        assert_eq!(
            (t.power_w_mean, t.power_w_max, t.power_source),
            (None, None, None)
        );
        assert_eq!((t.sm_clock_mhz_mean, t.temp_c_max), (None, None));
        assert_eq!(t.energy_j, Some(1.5));
        assert_eq!(t.energy_j_per_op, None, "no calls: no energy per call");
    }

    #[test]
    fn an_empty_window_yields_no_rates() {
        let mut w = window(Counters::default(), Counters::default());
        w.elapsed_s = 0.0;
        let t = summarize(&three_samples(), &w);
        assert_eq!(
            (t.window_s, t.energy_j, t.energy_source),
            (None, None, None)
        );
        assert_eq!(t.power_w_mean, Some(420.0));
    }
}
