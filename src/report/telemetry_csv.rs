//! `telemetry.csv` (schema `collbench.telemetry/v1`): GPU power, energy, clock, temperature and
//! NVLink traffic of every point, one row per (point, rank), written by the NCCL backend (see
//! `backend::nccl::telemetry`). The types live here, outside the `nccl` feature, so that every
//! build can read a GPU run's results.
//!
//! A value NVML could not give is an empty field: a machine without NVML writes rows whose
//! telemetry fields are all empty (`samples` 0), so the file always has a row per point and rank.

use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::csvio::{self, push_row, CsvFile, Row};
use crate::error::{Error, Result};
use crate::named::named_enum;

/// Schema id of telemetry.csv.
pub const TELEMETRY_SCHEMA: &str = "collbench.telemetry/v1";

/// File name of the GPU telemetry inside a results folder.
pub const TELEMETRY_FILE: &str = "telemetry.csv";

/// The columns of telemetry.csv, in order.
pub const TELEMETRY_COLUMNS: [&str; 17] = [
    "point",
    "rank",
    "device",
    "gpu_name",
    "samples",
    "power_w_mean",
    "power_w_max",
    "energy_j",
    "energy_j_per_op",
    "sm_clock_mhz_mean",
    "temp_c_max",
    "nvlink_tx_gbps",
    "nvlink_rx_gbps",
    "window_s",
    "power_source",
    "energy_source",
    "pci_bus_id",
];

const WHAT: &str = "collbench telemetry.csv (collbench.telemetry/v1)";

named_enum!(
    /// Which NVML reading the power columns come from.
    PowerSource, "power source", {
        /// `NVML_FI_DEV_POWER_INSTANT`: the current draw (nvidia-smi `power.draw.instant`).
        Instant => "instant",
        /// `nvmlDeviceGetPowerUsage` (nvidia-smi `power.draw`): a one-second average on Ampere
        /// and newer boards, the current draw on older ones.
        Usage => "usage",
    }
);

named_enum!(
    /// How `energy_j` was obtained.
    EnergySource, "energy source", {
        /// Difference of the board's total-energy counter (`nvmlDeviceGetTotalEnergyConsumption`,
        /// Volta and newer) between the start and the end of the point.
        Counter => "counter",
        /// Mean sampled power × the point's window, where the counter is missing.
        Power => "power",
    }
);

/// One GPU's telemetry over one point; every value is `None` where NVML could not give it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointTelemetry {
    /// Sampler readings taken during the point (0 when telemetry is off).
    pub samples: usize,
    /// Seconds between the point's start and end marks.
    pub window_s: Option<f64>,
    /// Mean of the sampled power, W.
    pub power_w_mean: Option<f64>,
    /// Largest sampled power, W.
    pub power_w_max: Option<f64>,
    pub power_source: Option<PowerSource>,
    /// Energy the board used during the point, J.
    pub energy_j: Option<f64>,
    /// `energy_j` / the collective calls made during the point, J.
    pub energy_j_per_op: Option<f64>,
    pub energy_source: Option<EnergySource>,
    /// Mean sampled SM clock, MHz.
    pub sm_clock_mhz_mean: Option<f64>,
    /// Highest sampled GPU temperature, °C.
    pub temp_c_max: Option<f64>,
    /// NVLink data sent, summed over links, GB/s (1e9 bytes/s) over the window.
    pub nvlink_tx_gbps: Option<f64>,
    /// NVLink data received, summed over links, GB/s over the window.
    pub nvlink_rx_gbps: Option<f64>,
}

/// Which GPU a row is about; empty where unknown (NVML unavailable).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuLabel {
    /// NVML index, the number nvidia-smi shows (not the CUDA ordinal, which
    /// `CUDA_VISIBLE_DEVICES` and `CUDA_DEVICE_ORDER` renumber).
    pub index: Option<u32>,
    /// Product name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// PCI bus id, e.g. `00000000:18:00.0`.
    pub pci_bus_id: String,
}

/// A row of telemetry.csv.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetryRow {
    /// Row of summary.csv, from 0.
    pub point: usize,
    /// Rank within the point's group.
    pub rank: usize,
    pub gpu: GpuLabel,
    pub telemetry: PointTelemetry,
}

/// Appends telemetry rows to telemetry.csv.
#[derive(Debug)]
pub struct TelemetryWriter {
    csv: CsvFile,
}

impl TelemetryWriter {
    /// Creates `dir/telemetry.csv` with its header; refuses an existing one.
    pub fn create(dir: &Path) -> Result<Self> {
        Ok(TelemetryWriter {
            csv: CsvFile::create(dir, TELEMETRY_FILE, &TELEMETRY_COLUMNS)?,
        })
    }

    /// Appends the rows of point `point` (their own `point` is ignored) in one write.
    pub fn append(&mut self, point: usize, rows: &[TelemetryRow]) -> Result<()> {
        let mut lines = String::new();
        for row in rows {
            push_row(&mut lines, &fields(point, row));
        }
        self.csv.append(&lines)
    }
}

/// The CSV fields of one row.
fn fields(point: usize, row: &TelemetryRow) -> Vec<String> {
    let t = &row.telemetry;
    let float = |x: Option<f64>| csvio::float(x.unwrap_or(f64::NAN));
    let name = |x: Option<&'static str>| x.unwrap_or_default().to_string();
    vec![
        point.to_string(),
        row.rank.to_string(),
        row.gpu.index.map(|i| i.to_string()).unwrap_or_default(),
        plain_text(&row.gpu.name),
        t.samples.to_string(),
        float(t.power_w_mean),
        float(t.power_w_max),
        float(t.energy_j),
        float(t.energy_j_per_op),
        float(t.sm_clock_mhz_mean),
        float(t.temp_c_max),
        float(t.nvlink_tx_gbps),
        float(t.nvlink_rx_gbps),
        float(t.window_s),
        name(t.power_source.map(PowerSource::name)),
        name(t.energy_source.map(EnergySource::name)),
        plain_text(&row.gpu.pci_bus_id),
    ]
}

/// Text from the driver, made safe for the unquoted dialect: a comma, quote or line break
/// becomes a space (a GPU name must never stop a run from recording its point).
fn plain_text(s: &str) -> String {
    s.replace([',', '"', '\n', '\r'], " ")
}

/// Reads telemetry.csv back in file order; errors name the file and line.
pub fn read_telemetry(path: &Path) -> Result<Vec<TelemetryRow>> {
    csvio::read_rows(path, WHAT, &TELEMETRY_COLUMNS, parse_row)
}

fn parse_row(row: &Row) -> Result<TelemetryRow> {
    let float =
        |c: &str| -> Result<Option<f64>> { Ok(Some(row.float(c)?).filter(|x| !x.is_nan())) };
    let device = row.get("device")?;
    Ok(TelemetryRow {
        point: row.parse("point")?,
        rank: row.parse("rank")?,
        gpu: GpuLabel {
            index: if device.is_empty() {
                None
            } else {
                Some(row.parse("device")?)
            },
            name: row.get("gpu_name")?.to_string(),
            pci_bus_id: row.get("pci_bus_id")?.to_string(),
        },
        telemetry: PointTelemetry {
            samples: row.parse("samples")?,
            window_s: float("window_s")?,
            power_w_mean: float("power_w_mean")?,
            power_w_max: float("power_w_max")?,
            power_source: optional_name(row, "power_source")?,
            energy_j: float("energy_j")?,
            energy_j_per_op: float("energy_j_per_op")?,
            energy_source: optional_name(row, "energy_source")?,
            sm_clock_mhz_mean: float("sm_clock_mhz_mean")?,
            temp_c_max: float("temp_c_max")?,
            nvlink_tx_gbps: float("nvlink_tx_gbps")?,
            nvlink_rx_gbps: float("nvlink_rx_gbps")?,
        },
    })
}

/// A name column that may be empty.
fn optional_name<T: FromStr<Err = Error>>(row: &Row, column: &str) -> Result<Option<T>> {
    match row.get(column)? {
        "" => Ok(None),
        _ => row.parse(column).map(Some),
    }
}

/// A row with every field measured, for tests here and of the readers above this module.
#[cfg(test)]
pub(crate) fn full_row() -> TelemetryRow {
    TelemetryRow {
        point: 99,
        rank: 3,
        gpu: GpuLabel {
            index: Some(5),
            name: "NVIDIA H100 80GB HBM3".into(),
            pci_bus_id: "00000000:9A:00.0".into(),
        },
        telemetry: PointTelemetry {
            samples: 41,
            window_s: Some(0.5),
            power_w_mean: Some(412.25),
            power_w_max: Some(498.5),
            power_source: Some(PowerSource::Instant),
            energy_j: Some(206.125),
            energy_j_per_op: Some(0.206125),
            energy_source: Some(EnergySource::Counter),
            sm_clock_mhz_mean: Some(1980.0),
            temp_c_max: Some(61.0),
            nvlink_tx_gbps: Some(301.5),
            nvlink_rx_gbps: Some(299.75),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(point: usize, rows: &[TelemetryRow]) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = TelemetryWriter::create(dir.path()).unwrap();
        w.append(point, rows).unwrap();
        let text = std::fs::read_to_string(dir.path().join(TELEMETRY_FILE)).unwrap();
        (dir, text)
    }

    #[test]
    fn header_and_schema() {
        let (_dir, text) = written(0, &[]);
        assert_eq!(TELEMETRY_SCHEMA, "collbench.telemetry/v1");
        assert_eq!(
            text,
            "point,rank,device,gpu_name,samples,power_w_mean,power_w_max,energy_j,\
             energy_j_per_op,sm_clock_mhz_mean,temp_c_max,nvlink_tx_gbps,nvlink_rx_gbps,\
             window_s,power_source,energy_source,pci_bus_id\n"
        );
        let dir = tempfile::tempdir().unwrap();
        TelemetryWriter::create(dir.path()).unwrap();
        assert!(
            TelemetryWriter::create(dir.path()).is_err(),
            "never overwrites"
        );
    }

    #[test]
    fn full_row_is_written_exactly_and_reads_back() {
        let row = full_row();
        let (dir, text) = written(7, std::slice::from_ref(&row));
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "7,3,5,NVIDIA H100 80GB HBM3,41,412.25,498.5,206.125,0.206125,1980,61,301.5,\
             299.75,0.5,instant,counter,00000000:9A:00.0"
        );
        let back = read_telemetry(&dir.path().join(TELEMETRY_FILE)).unwrap();
        assert_eq!(back, vec![TelemetryRow { point: 7, ..row }]);
    }

    #[test]
    fn empty_telemetry_row_has_empty_fields_and_reads_back_as_none() {
        let row = TelemetryRow {
            point: 0,
            rank: 1,
            gpu: GpuLabel::default(),
            telemetry: PointTelemetry::default(),
        };
        let (dir, text) = written(2, std::slice::from_ref(&row));
        assert_eq!(text.lines().nth(1).unwrap(), "2,1,,,0,,,,,,,,,,,,");
        let back = read_telemetry(&dir.path().join(TELEMETRY_FILE)).unwrap();
        assert_eq!(back, vec![TelemetryRow { point: 2, ..row }]);
    }

    #[test]
    fn rows_of_a_point_go_out_in_one_append_and_names_are_made_plain() {
        let mut odd = full_row();
        odd.gpu.name = "GPU \"x\",\nrev 2".into();
        odd.telemetry.power_w_max = Some(f64::INFINITY);
        let (dir, text) = written(4, &[full_row(), odd]);
        assert_eq!(text.lines().count(), 3, "{text}");
        let back = read_telemetry(&dir.path().join(TELEMETRY_FILE)).unwrap();
        assert_eq!(back[1].gpu.name, "GPU  x   rev 2");
        assert_eq!(back[1].telemetry.power_w_max, None, "not finite: empty");
        assert_eq!((back[0].point, back[1].point), (4, 4));
    }

    #[test]
    fn unknown_source_names_are_refused_with_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TELEMETRY_FILE);
        let (_d, text) = written(0, &[full_row()]);
        std::fs::write(&path, text.replace("instant", "peak")).unwrap();
        let msg = read_telemetry(&path).unwrap_err().to_string();
        assert!(msg.contains("line 2") && msg.contains("peak"), "{msg}");
    }
}
