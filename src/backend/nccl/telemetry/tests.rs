//! Telemetry against the real NVML of this machine: disabled with one line where it cannot be
//! opened (no driver), enabled where it can; either way the results keep their shape.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::*;

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
