//! GPU power of a source run, from the telemetry.csv that NVML sampling leaves beside an NCCL
//! run's summary (docs/FORMATS.md). It travels in fit.json's `sources[].gpu_power` so that the
//! projection, which reads nothing but fit.json, can use measured power for time a GPU spends
//! only communicating.

use super::schema::SourcePower;
use crate::report::telemetry_csv::TelemetryRow;

/// One GPU's power during one point; `None` where NVML gave nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct PointPower {
    pub gpu: String,
    pub samples: u64,
    pub mean_w: Option<f64>,
    pub max_w: Option<f64>,
}

/// The power of a run with these telemetry.csv rows, or `None` when it has no row with a
/// measurement (a run without telemetry.csv has no rows; a run on a machine where NVML could
/// not start writes empty power fields).
pub fn source_power(telemetry: &[TelemetryRow]) -> Option<SourcePower> {
    let rows: Vec<PointPower> = telemetry.iter().map(point_power).collect();
    summarize(&rows)
}

fn point_power(row: &TelemetryRow) -> PointPower {
    PointPower {
        gpu: row.gpu.name.clone(),
        samples: row.telemetry.samples as u64,
        mean_w: row.telemetry.power_w_mean,
        max_w: row.telemetry.power_w_max,
    }
}

/// Sample-weighted mean of the measured rows and the highest maximum.
pub fn summarize(rows: &[PointPower]) -> Option<SourcePower> {
    let measured: Vec<&PointPower> = rows
        .iter()
        .filter(|r| r.samples > 0 && r.mean_w.is_some())
        .collect();
    let (mean, samples) = weighted_mean(
        measured
            .iter()
            .map(|r| (r.mean_w.unwrap_or(0.0), r.samples)),
    )?;
    let max = measured
        .iter()
        .filter_map(|r| r.max_w.or(r.mean_w))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut gpus: Vec<String> = measured.iter().map(|r| r.gpu.clone()).collect();
    gpus.sort();
    gpus.dedup();
    Some(SourcePower {
        power_w_mean: mean,
        power_w_max: max,
        samples,
        gpus,
    })
}

/// The mean of `(mean, samples)` parts weighted by their samples, and the samples in all;
/// `None` without samples.
pub fn weighted_mean(parts: impl IntoIterator<Item = (f64, u64)>) -> Option<(f64, u64)> {
    let (sum, samples) = parts.into_iter().fold((0.0, 0u64), |(s, n), (mean, k)| {
        (s + mean * k as f64, n + k)
    });
    (samples > 0).then(|| (sum / samples as f64, samples))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::telemetry_csv::{full_row, read_telemetry, TelemetryWriter, TELEMETRY_FILE};

    fn row(gpu: &str, samples: u64, mean: Option<f64>, max: Option<f64>) -> PointPower {
        PointPower {
            gpu: gpu.into(),
            samples,
            mean_w: mean,
            max_w: max,
        }
    }

    #[test]
    fn means_are_weighted_by_samples_and_empty_rows_ignored() {
        let rows = [
            row("NVIDIA H100", 30, Some(200.0), Some(250.0)),
            row("NVIDIA H100", 10, Some(400.0), Some(450.0)),
            row("", 0, None, None),
        ];
        let p = summarize(&rows).unwrap();
        // (30·200 + 10·400) / 40 = 250 W.
        assert_eq!(p.power_w_mean, 250.0);
        assert_eq!(p.power_w_max, 450.0);
        assert_eq!(p.samples, 40);
        assert_eq!(p.gpus, vec!["NVIDIA H100".to_string()]);
    }

    #[test]
    fn no_measurement_is_none() {
        assert_eq!(summarize(&[row("", 0, None, None)]), None);
        assert_eq!(summarize(&[]), None);
    }

    #[test]
    fn a_run_without_telemetry_has_no_power() {
        assert_eq!(source_power(&[]), None);
    }

    #[test]
    fn the_fit_reads_the_power_this_writer_writes() {
        // An empty row (NVML unavailable on that rank) is left out of the run's power.
        let dir = tempfile::tempdir().unwrap();
        let mut w = TelemetryWriter::create(dir.path()).unwrap();
        w.append(0, &[full_row(), TelemetryRow::default()]).unwrap();
        let rows = read_telemetry(&dir.path().join(TELEMETRY_FILE)).unwrap();
        let power = source_power(&rows).unwrap();
        assert_eq!((power.power_w_mean, power.power_w_max), (412.25, 498.5));
        assert_eq!(power.samples, 41);
        assert_eq!(power.gpus, ["NVIDIA H100 80GB HBM3"]);
    }
}
