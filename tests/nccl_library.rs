//! The real libnccl without a GPU: found by the default search (pip's NCCL under the
//! site-packages of the python3 on PATH, as PyTorch users have it) and through
//! `COLLBENCH_NCCL_LIB`, its version read and equal to its nccl.h's, every result code's own
//! string, the optional entry points detected, unique ids made and carried byte for byte, and a
//! communicator that cannot be made failing with NCCL's own last error. SKIPPED without the
//! library (CI installs `nvidia-nccl-cu12`).

#![cfg(feature = "nccl")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use collbench::backend::nccl::comm::Communicator;
use collbench::backend::nccl::error::{NcclError, ResultCode};
use collbench::backend::nccl::features::OPTIONAL;
use collbench::backend::nccl::loader::Nccl;
use collbench::backend::nccl::{cuda, search, tuning};
use common::skip::can_use;
use common::{command, Run, Spawned};

/// The pip-installed library the default search finds, or `None` after saying SKIPPED.
fn pip_nccl() -> Option<PathBuf> {
    let sites = search::python_site_dirs();
    let found = search::pip_libraries(&sites).into_iter().next();
    let missing = found
        .is_none()
        .then(|| format!("no pip NCCL: {}", search::describe_sites(&sites)));
    can_use("libnccl", missing).then_some(found).flatten()
}

/// `NCCL_MAJOR.NCCL_MINOR.NCCL_PATCH` of the nccl.h beside a pip library.
fn header_version(lib: &Path) -> String {
    let site = search::site_of(lib).expect("a site folder");
    let text = std::fs::read_to_string(site.join(search::PIP_NCCL_HEADER)).expect("nccl.h");
    let define = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("nccl.h defines {name}"))
            .trim()
            .to_string()
    };
    format!(
        "{}.{}.{}",
        define("NCCL_MAJOR"),
        define("NCCL_MINOR"),
        define("NCCL_PATCH")
    )
}

fn gpu_here() -> bool {
    cuda::probe_driver().is_ok()
}

#[test]
fn nccl_default_search_finds_pip_nccl_and_its_version_is_its_headers() {
    let Some(lib) = pip_nccl() else { return };
    // Only when nothing else is on the dynamic linker's path is the pip library the one found.
    let by_name = ["libnccl.so.2", "libnccl.so"]
        .iter()
        // SAFETY: loading NCCL runs only its own initialisers.
        .any(|n| unsafe { libloading::Library::new(n) }.is_ok());
    let nccl = Nccl::load_from(None).expect("the default search loads libnccl");
    if !by_name {
        assert_eq!(nccl.path, lib);
    }
    let explicit = Nccl::load_from(Some(lib.clone())).expect("COLLBENCH_NCCL_LIB's path");
    assert_eq!(explicit.path, lib);
    let version = explicit.version().expect("ncclGetVersion").to_string();
    assert_eq!(version, header_version(&lib));
}

#[test]
fn nccl_every_result_code_has_the_library_s_own_string() {
    let Some(lib) = pip_nccl() else { return };
    let nccl = Nccl::load_from(Some(lib)).unwrap();
    let unknown = nccl.error_string(ResultCode::Unknown(9999));
    let mut seen = Vec::new();
    for raw in 1..=8 {
        let code = ResultCode::from_raw(raw).expect("a failure code");
        assert!(
            !matches!(code, ResultCode::Unknown(_)),
            "code {raw} has no name"
        );
        let text = nccl.error_string(code);
        assert!(
            !text.is_empty() && text != unknown,
            "{}: {text:?}",
            code.name()
        );
        assert!(!seen.contains(&text), "{} repeats {text:?}", code.name());
        seen.push(text);
    }
}

#[test]
fn nccl_optional_entry_points_are_detected_and_declared_in_nccl_h() {
    let Some(lib) = pip_nccl() else { return };
    let nccl = Nccl::load_from(Some(lib.clone())).unwrap();
    let site = search::site_of(&lib).unwrap();
    let header = std::fs::read_to_string(site.join(search::PIP_NCCL_HEADER)).unwrap();
    let v = nccl.version().unwrap();
    for f in OPTIONAL {
        let (major, minor) = f.since.split_once('.').unwrap();
        let since = (major.parse().unwrap(), minor.parse().unwrap());
        let declared = header.contains(&format!(" {}(", f.symbol));
        assert_eq!(declared, nccl.has(f.symbol), "{}", f.symbol);
        if (v.major, v.minor) >= since {
            assert!(
                nccl.has(f.symbol),
                "NCCL {v} lacks {} (since {})",
                f.symbol,
                f.since
            );
        }
    }
}

#[test]
fn nccl_unique_ids_are_real_distinct_and_carried_byte_for_byte() {
    let Some(lib) = pip_nccl() else { return };
    let nccl = Nccl::load_from(Some(lib)).unwrap();
    let a = nccl.unique_id().expect("ncclGetUniqueId needs no GPU");
    let b = nccl.unique_id().unwrap();
    assert_ne!(a, b, "two ids must differ");
    assert!(a.0.iter().any(|&x| x != 0), "an id is not all zeros");
    let carried = tuning::decode_id("nccl-id-0", &tuning::encode_id(&a)).unwrap();
    assert_eq!(carried.0, a.0);
}

#[test]
fn nccl_communicator_that_cannot_be_made_fails_with_nccl_s_own_last_error() {
    let Some(lib) = pip_nccl() else { return };
    if gpu_here() {
        common::skip::skipped("a GPU is here: the GPU tests make real communicators");
        return;
    }
    let nccl = Nccl::load_from(Some(lib)).unwrap();
    let id = nccl.unique_id().unwrap();
    // Both ways in: with the configuration (NCCL 2.14+, as the sweep makes communicators) and
    // without.
    let config =
        collbench::backend::nccl::config::comm_config(nccl.version().unwrap(), &Default::default());
    let plain = Communicator::init(Arc::clone(&nccl), 1, &id, 0, None)
        .err()
        .unwrap();
    assert!(
        plain.to_string().starts_with("ncclCommInitRank failed: "),
        "{plain}"
    );
    let err = Communicator::init(Arc::clone(&nccl), 1, &id, 0, Some(&config))
        .err()
        .expect("no communicator without a GPU");
    let text = err.to_string();
    assert!(
        matches!(
            err,
            NcclError::Call {
                call: "ncclCommInitRankConfig",
                ..
            }
        ),
        "{text}"
    );
    let last = nccl.last_error().expect("ncclGetLastError says why");
    assert!(!last.is_empty());
    assert!(
        text.contains(&last),
        "the error carries NCCL's detail: {text}"
    );
    assert!(
        text.starts_with("ncclCommInitRankConfig failed: "),
        "{text}"
    );
}

#[test]
fn nccl_backends_names_the_pip_library_and_its_optional_entry_points() {
    let Some(lib) = pip_nccl() else { return };
    let mut cmd = command(&["backends", "--json"]);
    cmd.env_remove("COLLBENCH_NCCL_LIB");
    let r = Spawned::start(cmd).finish(std::time::Instant::now(), Duration::from_secs(60));
    assert_eq!(r.code(), 0, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let detail = v["backends"][2]["detail"].as_str().unwrap();
    let version = header_version(&lib);
    assert!(detail.contains(&format!("NCCL {version} (")), "{detail}");
    assert!(detail.contains("optional: ncclSend ncclRecv"), "{detail}");
    assert!(
        detail.contains("ncclAlltoAll ncclGather ncclScatter"),
        "{detail}"
    );
}

/// A bootstrap rehearsal of `ranks` ranks with the pip library and `flags`, into `out`.
fn rehearse(lib: &Path, out: &Path, ranks: &str, flags: &[&str], env: &[(&str, &str)]) -> Run {
    let mut args = vec![
        "sweep",
        "--backend",
        "nccl",
        "--ranks",
        ranks,
        "-b",
        "8",
        "-e",
        "8",
    ];
    args.extend_from_slice(&["--timeout", "20s"]);
    args.extend_from_slice(flags);
    let mut cmd = command(&args);
    cmd.arg("--out").arg(out);
    cmd.env("COLLBENCH_NCCL_BOOTSTRAP_ONLY", "1");
    cmd.env("COLLBENCH_NCCL_LIB", lib);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let limit = common::hang_limit(Duration::from_secs(20));
    Spawned::start(cmd).finish(std::time::Instant::now(), limit)
}

#[test]
fn nccl_bootstrap_rehearsal_carries_the_id_and_fails_in_one_line_naming_a_rank() {
    let Some(lib) = pip_nccl() else { return };
    if gpu_here() {
        common::skip::skipped("a GPU is here: the GPU tests make real communicators");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let r = rehearse(&lib, &out, "3", &[], &[]);
    assert_eq!(r.code(), 2, "{r:?}");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "one line: {r:?}");
    let line = lines[0];
    // Every rank reached ncclCommInitRank: the id went through the store and each rank's copy
    // equalled rank 0's (a difference fails before, naming the byte).
    assert!(line.starts_with("collbench: nccl rank "), "{line}");
    assert!(
        line.contains(" ended with exit code 2: ncclCommInitRankConfig failed: "),
        "{line}"
    );
    let nccl = Nccl::load_from(Some(lib)).unwrap();
    let id = nccl.unique_id().unwrap();
    let own = Communicator::init(nccl.clone(), 1, &id, 0, None)
        .err()
        .unwrap();
    let detail = nccl.last_error().unwrap_or_default();
    assert!(
        own.to_string().contains(&detail) && line.contains(&detail),
        "{line}"
    );
    // The folder is closed as failed, with the error, and readable.
    let meta = collbench::meta::Meta::read(&out.join("meta.json")).expect("meta.json");
    assert_eq!(meta.status, collbench::meta::RunStatus::Failed, "{meta:?}");
    assert!(meta
        .error
        .unwrap_or_default()
        .contains("ncclCommInitRankConfig failed"));
    assert_eq!(meta.ranks, 3);
    assert_eq!(meta.gpus.len(), 3);
    assert!(meta.library.unwrap_or_default().starts_with("NCCL 2."));
    assert_eq!(common::summary_rows_on_disk(&out), 0);
}

#[test]
fn nccl_every_communicator_setup_is_checked_against_the_library_and_recorded() {
    let Some(lib) = pip_nccl() else { return };
    if gpu_here() {
        common::skip::skipped("a GPU is here: the GPU tests make real communicators");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let flags = [
        "--register",
        "none,symmetric",
        "--cta-policy",
        "efficiency",
        "--ctas",
        "4,2:16",
        "--agg",
        "4",
    ];
    let r = rehearse(&lib, &out, "2", &flags, &[]);
    // Every combination passed the library's checks; the first communicator is then made with
    // the first combination's configuration and fails without a GPU.
    assert_eq!(r.code(), 2, "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{r:?}");
    assert!(
        r.stderr_lines()[0].contains("ncclCommInitRankConfig failed"),
        "{r:?}"
    );
    let meta = collbench::meta::Meta::read(&out.join("meta.json")).expect("meta.json");
    let o = &meta.options;
    assert_eq!(
        (&o["buffers"], &o["agg_iters"]),
        (&"ncclMemAlloc".into(), &4.into()),
        "{o}"
    );
    let setups = o["comm_setups"].as_array().unwrap();
    assert_eq!(setups.len(), 4, "{o}");
    assert_eq!(
        setups[0],
        serde_json::json!({"cta_policy": "efficiency", "ctas": "4"})
    );
    assert_eq!(setups[3]["register"], "symmetric");
    let configs = o["nccl_configs"].as_array().unwrap();
    assert_eq!(
        (&configs[1]["minCTAs"], &configs[1]["maxCTAs"]),
        (&2.into(), &16.into())
    );
    assert_eq!(configs[0]["CTAPolicy"], 1, "NCCL_CTA_POLICY_EFFICIENCY");
    // A variable NCCL would prefer to the flag is refused by name, before any communicator.
    let out = tmp.path().join("overridden");
    let r = rehearse(&lib, &out, "2", &["--ctas", "4"], &[("NCCL_MAX_CTAS", "8")]);
    assert_eq!(r.code(), 2, "{r:?}");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{r:?}");
    assert!(
        lines[0].contains("--ctas is overridden by NCCL_MAX_CTAS=8 in the environment"),
        "{r:?}"
    );
}

#[test]
fn nccl_2_28_and_later_run_alltoall_gather_and_scatter_with_their_own_functions() {
    use collbench::collective::{Op, NCCL_GROUPED_P2P};
    let Some(lib) = pip_nccl() else { return };
    let nccl = Nccl::load_from(Some(lib)).unwrap();
    let v = nccl.version().unwrap();
    let own = (v.major, v.minor) >= (2, 28);
    for op in [Op::AllToAll, Op::Gather, Op::Scatter] {
        assert_eq!(nccl.native(op), own, "{op} in NCCL {v}");
        let want = if own {
            op.nccl_function()
        } else {
            NCCL_GROUPED_P2P
        };
        assert_eq!(nccl.call_name(op), want);
    }
    assert_eq!(nccl.call_name(Op::AllToAll), "ncclAlltoAll", "NCCL {v}");
    assert_eq!(nccl.call_name(Op::SendRecv), NCCL_GROUPED_P2P);
    assert_eq!(nccl.call_name(Op::AllReduce), "ncclAllReduce");
}
