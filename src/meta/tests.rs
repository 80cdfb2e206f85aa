//! meta.json written, read back and refused, and this host described.

use super::host::{parse_cpu_model, parse_meminfo};
use super::*;

fn sample() -> Meta {
    Meta::new(
        vec!["collbench".into(), "sweep".into()],
        "host",
        "shm",
        4,
        1,
        serde_json::json!({"op": ["allgather"], "iters": 20}),
    )
}

#[test]
fn write_read_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut meta = sample();
    meta.files
        .insert("summary.csv".into(), "collbench.summary/v1".into());
    meta.finish(RunStatus::Failed, Some("rank 2 died".into()));
    meta.write(dir.path()).unwrap();
    assert!(!dir.path().join("meta.json.tmp").exists());
    let back = Meta::read(&dir.path().join(META_FILE)).unwrap();
    assert_eq!(back, meta);
    let text = fs::read_to_string(dir.path().join(META_FILE)).unwrap();
    assert!(text.contains("\"status\": \"failed\""), "{text}");
}

#[test]
fn gpus_are_written_only_for_gpu_runs_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut meta = sample();
    meta.write(dir.path()).unwrap();
    let text = fs::read_to_string(dir.path().join(META_FILE)).unwrap();
    assert!(!text.contains("\"gpus\""), "{text}");
    meta.gpus = vec!["NVIDIA H100 80GB HBM3".into(); 2];
    meta.library = Some("NCCL 2.21.5".into());
    meta.write(dir.path()).unwrap();
    let back = Meta::read(&dir.path().join(META_FILE)).unwrap();
    assert_eq!(back.gpus, meta.gpus);
    assert_eq!(back.library.as_deref(), Some("NCCL 2.21.5"));
}

#[test]
fn new_meta_is_running_and_described() {
    let meta = sample();
    assert_eq!(meta.status, RunStatus::Running);
    assert_eq!(meta.schema, META_SCHEMA);
    assert!(meta.ended.is_none());
    assert!(
        meta.started.ends_with('Z') && meta.started.len() == 20,
        "{}",
        meta.started
    );
    assert!(humantime::parse_rfc3339(&meta.started).is_ok());
    assert!(!meta.host.arch.is_empty());
}

#[test]
fn read_refuses_other_schemas_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(META_FILE);
    let mut value = serde_json::to_value(sample()).unwrap();
    value["schema"] = "collbench.meta/v9".into();
    fs::write(&path, value.to_string()).unwrap();
    let err = Meta::read(&path).unwrap_err().to_string();
    assert!(
        err.contains("meta.json") && err.contains("collbench.meta/v9"),
        "{err}"
    );

    fs::write(&path, "{\"a\": 1}").unwrap();
    let err = Meta::read(&path).unwrap_err().to_string();
    assert!(err.contains("meta.json") && err.contains("schema"), "{err}");

    fs::write(&path, "{\"schema\": \"collbench.meta/v1\",").unwrap();
    let err = Meta::read(&path).unwrap_err().to_string();
    assert!(err.contains("meta.json") && err.contains("JSON"), "{err}");
}

#[test]
fn read_missing_file_is_io_error() {
    let err = Meta::read(Path::new("/nonexistent/meta.json")).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
}

#[test]
fn parses_proc_files() {
    let mem = "MemTotal:       24605384 kB\nMemFree: 1 kB\nMemAvailable:   20000000 kB\n";
    assert_eq!(parse_meminfo(mem, "MemTotal"), Some(24605384 * 1024));
    assert_eq!(parse_meminfo(mem, "MemAvailable"), Some(20000000 * 1024));
    assert_eq!(parse_meminfo(mem, "Mem"), None);
    let cpu = "processor\t: 0\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n";
    assert_eq!(
        parse_cpu_model(cpu).as_deref(),
        Some("AMD EPYC 7B13 64-Core Processor")
    );
    assert_eq!(parse_cpu_model("processor: 0\n"), None);
}

#[test]
fn detect_reads_this_host() {
    let host = HostInfo::detect();
    assert!(host.cores >= 1);
    if cfg!(target_os = "linux") {
        assert!(
            host.mem_total_bytes > 0 && host.os.starts_with("Linux"),
            "{host:?}"
        );
    }
}
