//! `collbench backends`: which backends this build has and whether this machine can run them.

use clap::Args;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::call::BackendKind;

/// Schema id of `collbench backends --json`.
pub const SCHEMA: &str = "collbench.backends/v1";

/// `collbench backends`.
#[derive(Args, Debug)]
pub struct BackendsArgs {
    /// Print JSON (schema collbench.backends/v1) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One backend's line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BackendStatus {
    pub backend: &'static str,
    /// The build includes it (its cargo feature was enabled).
    pub built: bool,
    /// `sweep --backend <name>` can run on this machine.
    pub runs: bool,
    /// What it runs on, or what is missing and how to fix it.
    pub detail: String,
    /// Whether its GPU telemetry (NVML) can run here; only for a built backend that has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<String>,
}

/// The status of every backend, host first.
pub fn statuses() -> Vec<BackendStatus> {
    [BackendKind::Host, BackendKind::Mpi, BackendKind::Nccl]
        .into_iter()
        .map(status)
        .collect()
}

fn status(kind: BackendKind) -> BackendStatus {
    let availability = kind.availability();
    let detail = match (&availability, kind) {
        (Ok(()), BackendKind::Host) => "built in: rank processes over shared memory or TCP".into(),
        (Ok(()), BackendKind::Nccl) => format!("ready: {}", super::nccl_found()),
        (Ok(()), _) => "ready".into(),
        (Err(why), _) => why.clone(),
    };
    BackendStatus {
        backend: kind.name(),
        built: kind.built(),
        runs: availability.is_ok(),
        detail,
        telemetry: kind.telemetry(),
    }
}

/// The human table.
pub fn table(rows: &[BackendStatus]) -> String {
    let yes = |b: bool| if b { "yes" } else { "no" };
    let mut out = format!(
        "{:<8} {:<6} {:<10} {}\n",
        "backend", "built", "runs here", "detail"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<8} {:<6} {:<10} {}\n",
            r.backend,
            yes(r.built),
            yes(r.runs),
            r.detail
        ));
        if let Some(t) = &r.telemetry {
            out.push_str(&format!("{:<27}{t}\n", ""));
        }
    }
    out
}

/// The JSON document.
pub fn json(rows: &[BackendStatus]) -> Result<String> {
    let doc = serde_json::json!({ "schema": SCHEMA, "backends": rows });
    serde_json::to_string_pretty(&doc).map_err(|e| Error::usage(format!("backends JSON: {e}")))
}

/// Runs `collbench backends`; always exit 0 (a missing backend is information, not an error).
pub fn run_backends(args: &BackendsArgs) -> Result<u8> {
    let rows = statuses();
    let text = if args.json {
        json(&rows)? + "\n"
    } else {
        table(&rows)
    };
    crate::output::stdout::print(&text);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_always_runs_and_every_backend_is_listed() {
        let rows = statuses();
        let names: Vec<_> = rows.iter().map(|r| r.backend).collect();
        assert_eq!(names, ["host", "mpi", "nccl"]);
        assert!(rows[0].built && rows[0].runs);
        assert_eq!(rows[2].built, cfg!(feature = "nccl"));
        assert_eq!((&rows[0].telemetry, &rows[1].telemetry), (&None, &None));
        assert_eq!(rows[2].telemetry.is_some(), cfg!(feature = "nccl"));
        if let Some(t) = &rows[2].telemetry {
            assert!(
                t.starts_with("telemetry: NVML ") && !t.contains('\n'),
                "{t}"
            );
        }
        for r in &rows {
            assert!(!r.detail.is_empty(), "{r:?}");
            assert!(r.runs || !r.detail.contains('\n'), "one line: {r:?}");
        }
    }

    #[test]
    fn table_and_json_carry_every_row() {
        let rows = vec![BackendStatus {
            backend: "nccl",
            built: true,
            runs: false,
            detail: "no GPU".into(),
            telemetry: Some("telemetry: NVML unavailable (x)".into()),
        }];
        let t = table(&rows);
        assert!(
            t.lines().nth(1).unwrap().starts_with("nccl     yes    no"),
            "{t}"
        );
        let under_detail = format!("{}telemetry: NVML unavailable (x)", " ".repeat(27));
        assert_eq!(t.lines().nth(2).unwrap(), under_detail, "{t}");
        let v: serde_json::Value = serde_json::from_str(&json(&rows).unwrap()).unwrap();
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!(v["backends"][0]["runs"], false);
        assert_eq!(v["backends"][0]["detail"], "no GPU");
        assert_eq!(
            v["backends"][0]["telemetry"],
            "telemetry: NVML unavailable (x)"
        );
    }
}
