//! What an imported run's meta.json says of its source: `options` (the log's header settings)
//! and `import` (tool, test, lines, how its times were taken). Pure.

use std::collections::BTreeMap;

use super::log::{LogRun, Tool};
use crate::collective::Op;
use crate::meta::ImportInfo;

/// meta.json `options`: the log's header settings, so the folder says how it was measured.
pub(super) fn options(run: &LogRun) -> serde_json::Value {
    let settings: BTreeMap<&str, &str> = run
        .header
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    serde_json::json!({ "imported": true, "settings": settings })
}

pub(super) fn import_info(
    tool: Tool,
    run: &LogRun,
    source: &str,
    op: Op,
    algo_from: String,
) -> ImportInfo {
    let test = run.test.clone().unwrap_or_else(|| op.name().to_string());
    let mut notes = Vec::new();
    if run.foreign_lines > 0 {
        notes.push(format!(
            "{} line(s) inside the run were not the benchmark's (NCCL INFO, other output); \
             ignored",
            run.foreign_lines
        ));
    }
    ImportInfo {
        tool: tool.name().into(),
        tool_version: run.tool_version.clone(),
        test,
        source: source.into(),
        lines: [run.first_line, run.last_line],
        per_iteration_samples: false,
        time_statistic: match tool {
            Tool::NcclTests => "average time per call over the timed iterations, averaged \
                                over ranks (nccl-tests -a 1, the default)"
                .into(),
            Tool::Osu => "average latency per call, averaged over ranks (OSU `Avg Latency`)".into(),
        },
        algo_from,
        settings: run.header.clone(),
        // -1: the collective has no root.
        root: run.rows.iter().find_map(|r| r.root).filter(|r| *r >= 0),
        checked: true,
        max_error: None,
        bandwidth_mismatches: 0,
        truncated: run.truncated,
        notes,
    }
}
