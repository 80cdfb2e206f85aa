//! Telemetry against the real NVML of this machine: disabled with one line where it cannot be
//! opened (no driver), enabled where it can; either way the results keep their shape.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::nvml::NvlinkScope;
use super::*;
use crate::report::telemetry_csv::{EnergySource, PowerSource};

fn one_line(why: &str) {
    assert!(!why.is_empty() && !why.contains('\n'), "{why:?}");
    assert!(why.contains("telemetry columns left empty"), "{why}");
}

#[test]
fn nvml_here_gives_either_a_sampler_or_one_line_and_empty_results() {
    let mut t = Telemetry::open_library(None, &[DeviceRef::Index(0)], Telemetry::DEFAULT_INTERVAL);
    t.begin_point();
    let points = t.end_point(10);
    assert_eq!(points.len(), 1);
    assert_eq!(points[0].gpu.index, Some(0));
    match t.unavailable() {
        Some(why) => {
            assert!(!t.enabled());
            one_line(why);
            assert!(
                why.starts_with("NVML unavailable (") || why.starts_with("NVML telemetry off (")
            );
            assert_eq!(points[0].telemetry, PointTelemetry::default());
        }
        None => {
            assert!(t.enabled());
            assert!(!points[0].gpu.name.is_empty(), "{points:?}");
            assert!(points[0].telemetry.window_s.is_some(), "{points:?}");
        }
    }
}

#[test]
fn a_missing_override_library_names_the_variable_the_file_and_the_fix() {
    let path = Path::new("/nonexistent/collbench/libnvidia-ml.so.1");
    let t = Telemetry::open_library(Some(path), &[0.into()], Telemetry::DEFAULT_INTERVAL);
    assert!(!t.enabled());
    let why = t.unavailable().unwrap();
    one_line(why);
    assert!(
        why.starts_with(
            "NVML unavailable (COLLBENCH_NVML_LIB=/nonexistent/collbench/libnvidia-ml.so.1: "
        ),
        "{why}"
    );
    assert!(why.ends_with(NVML_FIX), "{why}");
    assert!(!why.contains("libloading error"), "{why}");
}

#[test]
fn a_library_that_is_not_nvml_is_refused() {
    // libc is on every Linux machine and has no nvmlInit_v2.
    let t = Telemetry::open_library(Some(Path::new("libc.so.6")), &[0.into()], Duration::ZERO);
    let why = t.unavailable().unwrap();
    one_line(why);
    assert!(why.contains("COLLBENCH_NVML_LIB=libc.so.6"), "{why}");
}

#[test]
fn disabled_results_are_empty_and_in_the_order_asked() {
    let devices = [
        DeviceRef::Index(2),
        DeviceRef::PciBusId("00000000:18:00.0".into()),
        DeviceRef::Uuid("GPU-0b5c".into()),
    ];
    let mut t = Telemetry::open_library(Some(Path::new("/nonexistent")), &devices, Duration::ZERO);
    let before_any_point = t.end_point(1);
    t.begin_point();
    let points = t.end_point(1000);
    assert_eq!(before_any_point, points);
    let labels: Vec<_> = points.iter().map(|p| p.gpu.clone()).collect();
    assert_eq!(labels, t.gpus());
    assert_eq!(labels[0].index, Some(2));
    assert_eq!(labels[1].pci_bus_id, "00000000:18:00.0");
    assert_eq!(labels[2], GpuLabel::default());
    assert!(points
        .iter()
        .all(|p| p.telemetry == PointTelemetry::default()));
    let row = points[1].clone().row(3);
    assert_eq!((row.rank, row.telemetry.samples), (3, 0));
}

#[test]
fn the_reason_is_reported_once_per_process() {
    let reported = AtomicBool::new(false);
    let mut out = Vec::new();
    report_once("NVML unavailable (x): y", &reported, &mut out).unwrap();
    report_once("NVML unavailable (x): y", &reported, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "collbench: NVML unavailable (x): y\n"
    );
}

/// Builds fake_nvml.c (a stand-in libnvidia-ml with known readings) into `dir`; `None`, with a
/// note, where this machine has no C compiler.
fn fake_nvml(dir: &Path, per_link: bool) -> Option<std::path::PathBuf> {
    let src = dir.join("fake_nvml.c");
    std::fs::write(&src, include_str!("fake_nvml.c")).unwrap();
    let lib = dir.join("libfake-nvml.so");
    let mut cc = std::process::Command::new("cc");
    cc.args(["-shared", "-fPIC", "-o"]).arg(&lib).arg(&src);
    if per_link {
        cc.arg("-DPER_LINK");
    }
    match cc.status() {
        Ok(status) => {
            assert!(status.success(), "cc could not build fake_nvml.c");
            Some(lib)
        }
        Err(e) => {
            let missing = format!("no C compiler (cc) to build the fake NVML ({e})");
            crate::test_skip::can_use("cc", Some(missing));
            None
        }
    }
}

/// A point of 4 calls measured through the fake library, retried until the sampler has filed a
/// reading (its thread may be scheduled late on a loaded machine).
fn fake_point(lib: &Path) -> (Telemetry, GpuPoint) {
    let one_ms = Duration::from_millis(1);
    let mut t = Telemetry::open_library(Some(lib), &[DeviceRef::Index(0)], one_ms);
    assert_eq!(t.unavailable(), None);
    for _ in 0..500 {
        t.begin_point();
        std::thread::sleep(Duration::from_millis(20));
        let point = t.end_point(4).remove(0);
        if point.telemetry.samples > 0 {
            return (t, point);
        }
    }
    panic!("the sampler filed no reading in 500 points");
}

/// The fake's readings, exactly; NVLink back in KiB over the reported window.
fn assert_fake_readings(p: &GpuPoint) {
    let name = "Fake GPU, rev 1".to_string();
    let gpu = GpuLabel {
        index: Some(0),
        name,
        pci_bus_id: String::new(),
    };
    assert_eq!(p.gpu, gpu);
    let t = &p.telemetry;
    assert_eq!((t.power_w_mean, t.power_w_max), (Some(300.0), Some(300.0)));
    assert_eq!(
        t.power_source,
        Some(PowerSource::Instant),
        "instant preferred"
    );
    assert_eq!(
        (t.sm_clock_mhz_mean, t.temp_c_max),
        (Some(1500.0), Some(55.0))
    );
    // One mark of the energy counter: 1000 mJ, over 4 calls.
    assert_eq!((t.energy_j, t.energy_j_per_op), (Some(1.0), Some(0.25)));
    assert_eq!(t.energy_source, Some(EnergySource::Counter));
    let window = t.window_s.unwrap();
    let kib = |gbps: Option<f64>| gbps.unwrap() * window * 1e9 / 1024.0;
    // 1000 and 500 KiB × (1 + 2 + 3 + 4) over the four links.
    assert!((kib(t.nvlink_tx_gbps) - 10_000.0).abs() < 1e-6, "{t:?}");
    assert!((kib(t.nvlink_rx_gbps) - 5_000.0).abs() < 1e-6, "{t:?}");
}

fn nvlink_scope(t: &Telemetry) -> NvlinkScope {
    t.active.as_ref().unwrap().gpus[0].1.nvlink.clone()
}

#[test]
fn fake_nvml_reads_nvlink_summed_over_all_links() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = fake_nvml(dir.path(), false) else {
        return;
    };
    let (t, point) = fake_point(&lib);
    assert_eq!(nvlink_scope(&t), NvlinkScope::AllLinks);
    assert_fake_readings(&point);
}

#[test]
fn fake_nvml_without_the_summed_read_sums_link_by_link() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = fake_nvml(dir.path(), true) else {
        return;
    };
    let (t, point) = fake_point(&lib);
    assert_eq!(nvlink_scope(&t), NvlinkScope::Links(vec![0, 1, 2, 3]));
    assert_fake_readings(&point);
    assert!(
        Telemetry::open_library(Some(&lib), &[7.into()], Duration::ZERO)
            .unavailable()
            .unwrap()
            .contains("no GPU with index 7")
    );
}
