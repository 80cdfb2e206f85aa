//! The NCCL backend as a user meets it: `collbench backends`, and `sweep --backend nccl` on a
//! build without the feature or a machine without a GPU. The GPU tests are `#[ignore]`d; on a
//! GPU node run them with `cargo test --release --features nccl --test nccl -- --ignored`
//! (each prints SKIPPED and passes where `collbench backends` says nccl cannot run).

mod common;

use std::time::Duration;

use common::{command, run, Run, Spawned};

#[cfg(feature = "nccl")]
#[path = "nccl/gpu.rs"]
mod gpu;
#[cfg(feature = "nccl")]
#[path = "nccl/gpu_choices.rs"]
mod gpu_choices;
#[cfg(feature = "nccl")]
#[path = "nccl/gpu_compute.rs"]
mod gpu_compute;
#[cfg(feature = "nccl")]
#[path = "nccl/gpu_reductions.rs"]
mod gpu_reductions;

const LIMIT: Duration = Duration::from_secs(60);

/// `sweep --backend nccl` into a fresh folder, with extra environment.
fn nccl_sweep(env: &[(&str, &str)]) -> (Run, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let args = [
        "sweep",
        "--no-progress",
        "--backend",
        "nccl",
        "--iters",
        "2",
    ];
    let mut cmd = command(&args);
    cmd.arg("--out").arg(&out);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let r = Spawned::start(cmd).finish(std::time::Instant::now(), LIMIT);
    assert!(!r.stderr.contains("panicked"), "{r:?}");
    assert!(
        !out.exists(),
        "a refused sweep must not leave a results folder"
    );
    (r, tmp)
}

fn one_line_exit_2(r: &Run) -> &str {
    assert_eq!(r.code(), 2, "{r:?}");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{r:?}");
    lines[0]
}

#[test]
fn backends_lists_all_three_and_exits_0() {
    let r = run(&["backends"], LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let lines: Vec<_> = r.stdout.lines().collect();
    // A nccl build adds a line under nccl on whether NVML telemetry can run.
    let nvml_line = usize::from(cfg!(feature = "nccl"));
    assert_eq!(lines.len(), 4 + nvml_line, "{}", r.stdout);
    assert!(lines[1].starts_with("host     yes    yes"), "{}", r.stdout);
    assert!(lines[2].starts_with("mpi "), "{}", r.stdout);
    let built = if cfg!(feature = "nccl") { "yes" } else { "no " };
    assert!(
        lines[3].starts_with(&format!("nccl     {built}")),
        "{}",
        r.stdout
    );
}

#[test]
fn backends_json_has_the_schema_and_a_reason_per_backend() {
    let r = run(&["backends", "--json"], LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v["schema"], "collbench.backends/v1");
    let rows = v["backends"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[2]["backend"], "nccl");
    assert_eq!(rows[2]["built"], cfg!(feature = "nccl"));
    assert!(rows
        .iter()
        .all(|r| !r["detail"].as_str().unwrap().is_empty()));
    assert_eq!(rows[2]["telemetry"].is_string(), cfg!(feature = "nccl"));
}

#[cfg(feature = "nccl")]
#[test]
fn backends_says_why_nvml_telemetry_cannot_run() {
    let mut cmd = command(&["backends"]);
    cmd.env("COLLBENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    let r = Spawned::start(cmd).finish(std::time::Instant::now(), LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let line = r.stdout.lines().nth(4).unwrap_or_default().trim_start();
    assert!(
        line.starts_with(
            "telemetry: NVML unavailable (COLLBENCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1: "
        ),
        "{}",
        r.stdout
    );
    assert!(line.contains("telemetry columns left empty"), "{line}");
}

#[cfg(not(feature = "nccl"))]
#[test]
fn sweep_nccl_without_the_feature_says_how_to_rebuild() {
    let (r, _tmp) = nccl_sweep(&[]);
    let line = one_line_exit_2(&r);
    assert!(
        line.contains("cargo build --release --features nccl"),
        "{line}"
    );
}

#[cfg(feature = "nccl")]
#[test]
fn sweep_nccl_names_each_missing_library_and_the_variable_to_set() {
    let env = [
        ("COLLBENCH_CUDA_LIB", "/nonexistent/libcuda.so.1"),
        ("COLLBENCH_NCCL_LIB", "/nonexistent/libnccl.so.2"),
    ];
    let (r, _tmp) = nccl_sweep(&env);
    let line = one_line_exit_2(&r);
    assert!(
        line.starts_with("collbench: the nccl backend cannot run here"),
        "{line}"
    );
    assert!(
        line.contains("COLLBENCH_CUDA_LIB=/nonexistent/libcuda.so.1"),
        "{line}"
    );
    assert!(
        line.contains("COLLBENCH_NCCL_LIB=/nonexistent/libnccl.so.2"),
        "{line}"
    );
}

#[cfg(feature = "nccl")]
#[test]
fn sweep_nccl_on_this_machine_exits_2_without_panicking() {
    // Without a GPU (no driver, no device or no NCCL) the answer is one line and exit 2.
    let r = run(&["backends", "--json"], LIMIT);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    if v["backends"][2]["runs"] == true {
        common::skip::skipped("this machine can run NCCL; the GPU tests cover it");
        return;
    }
    let (r, _tmp) = nccl_sweep(&[]);
    let line = one_line_exit_2(&r);
    assert!(line.contains("the nccl backend cannot run here"), "{line}");
}

#[cfg(feature = "nccl")]
#[test]
fn sweep_nccl_refuses_host_only_requests_before_looking_for_a_gpu() {
    // Bad input is refused with exit 2 whether or not a GPU is there; on this machine the
    // missing library may be named first, so the refusal is checked by its exit code.
    let r = run(&["sweep", "--backend", "host", "--proto", "ll"], LIMIT);
    assert_eq!(r.code(), 2, "{r:?}");
    assert_eq!(
        r.stderr_lines(),
        ["collbench: --proto ll: protocols are NCCL's; drop --proto or use --backend nccl (this is --backend host)"]
    );
    let r = run(
        &["sweep", "--backend", "nccl", "--algo", "recursive-doubling"],
        LIMIT,
    );
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(
        r.stderr.contains("no such combination on the nccl backend"),
        "{r:?}"
    );
}

#[cfg(feature = "nccl")]
#[test]
#[ignore = "needs an NVIDIA GPU, its driver and libnccl"]
fn gpu_backends_finds_the_gpu_and_nccl() {
    let r = run(&["backends", "--json"], LIMIT);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let detail = v["backends"][2]["detail"].as_str().unwrap().to_string();
    let missing = (v["backends"][2]["runs"] != true).then(|| detail.clone());
    if !common::skip::can_use("gpu", missing) {
        return;
    }
    assert!(
        detail.contains("GPU(s)") && detail.contains("NCCL 2."),
        "{detail}"
    );
}

/// Runs a bench-configs/nccl script with `COLLBENCH` (and `srun`) replaced by recorders, and
/// returns the argument lists collbench would have been given.
fn recorded_calls(script: &str) -> Vec<Vec<String>> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("calls");
    let write = |name: &str, body: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    };
    let recorder = write(
        "collbench",
        &format!(
            "for a in \"$@\"; do printf '%s\\037' \"$a\"; done >> {0}; echo >> {0}",
            log.display()
        ),
    );
    write("srun", "exec \"$@\"");
    let path = format!(
        "{}:{}",
        tmp.path().display(),
        std::env::var("PATH").unwrap()
    );
    let root = env!("CARGO_MANIFEST_DIR");
    let status = std::process::Command::new("bash")
        .arg(format!("{root}/bench-configs/nccl/{script}"))
        .env("COLLBENCH", &recorder)
        .env("OUT", tmp.path().join("out"))
        .env("PATH", path)
        .env_remove("NCCL_TESTS")
        .status()
        .unwrap();
    assert!(status.success(), "{script}: {status}");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    text.lines()
        .map(|l| {
            l.split('\u{1f}')
                .filter(|a| !a.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

#[test]
fn bench_config_commands_are_valid_nccl_sweeps() {
    use clap::Parser;
    for (script, calls) in [("one-node-8gpu.sh", 3), ("two-nodes-slurm.sh", 1)] {
        let recorded = recorded_calls(script);
        assert_eq!(recorded.len(), calls, "{script}: {recorded:?}");
        for args in recorded {
            let full = std::iter::once("collbench".to_string()).chain(args.clone());
            let cli = collbench::cli::Cli::try_parse_from(full)
                .unwrap_or_else(|e| panic!("{script}: {args:?}: {e}"));
            let collbench::cli::Command::Sweep(sweep) = cli.command else {
                panic!("{script}: not a sweep: {args:?}");
            };
            let req = sweep
                .into_request(args.clone())
                .unwrap_or_else(|e| panic!("{script}: {args:?}: {e}"));
            assert_eq!(req.backend.name(), "nccl", "{args:?}");
        }
    }
}
