//! Reading the JSON that nccl-tests writes with `-J FILE` (`"version": 1`: `config` with the
//! header settings and `devices`, `results` with one object per size holding `out_of_place`
//! and `in_place` {time, alg_bw, bus_bw, nwrong}). Several documents in one file (one per test,
//! concatenated) are read in turn.

use serde_json::Value;

use super::log::{Half, LogRun, RankLine, Row};
use super::ParseError;

/// Whether `text` is JSON rather than the printed table.
pub fn looks_like_json(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

/// Every run of a `-J` file.
pub fn parse(text: &str) -> Result<Vec<LogRun>, ParseError> {
    let mut runs = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut offset = 0;
    for doc in stream {
        let doc = doc.map_err(|e| ParseError {
            line: e.line().max(1),
            msg: format!("not valid nccl-tests JSON: {e}"),
        })?;
        let line = 1 + text[..offset.min(text.len())].matches('\n').count();
        runs.push(run(&doc, line).map_err(|msg| ParseError { line, msg })?);
        offset = next_offset(text, offset);
    }
    if runs.is_empty() {
        return Err(ParseError {
            line: 1,
            msg: "no JSON document in the file".into(),
        });
    }
    Ok(runs)
}

/// Where the document after the one starting at `from` starts (for line numbers only).
fn next_offset(text: &str, from: usize) -> usize {
    let rest = &text[from.min(text.len())..];
    let mut it = serde_json::Deserializer::from_str(rest).into_iter::<serde::de::IgnoredAny>();
    let _ = it.next();
    from + it.byte_offset()
}

fn run(doc: &Value, line: usize) -> Result<LogRun, String> {
    let version = doc.get("version").and_then(Value::as_u64);
    if !matches!(version, Some(1..=3)) {
        return Err(format!(
            "a JSON document without `\"version\"` 1, 2 or 3: not nccl-tests -J output this \
             release reads (found {})",
            doc.get("version").map_or("none".into(), Value::to_string)
        ));
    }
    let config = doc.get("config").ok_or("no `config` object")?;
    let results = doc
        .get("results")
        .and_then(Value::as_array)
        .ok_or("no `results` array")?;
    let mut rows = Vec::new();
    for (i, r) in results.iter().enumerate() {
        rows.push(row(r, line).map_err(|m| format!("results[{i}]: {m}"))?);
    }
    Ok(LogRun {
        test: test_name(doc),
        tool_version: None,
        library: doc
            .get("nccl_version")
            .and_then(Value::as_u64)
            .map(library_of),
        header: settings(config),
        ranks: ranks(config)?,
        rows,
        first_line: line,
        last_line: line,
        ..LogRun::default()
    })
}

/// The binary, from `args[0]`.
fn test_name(doc: &Value) -> Option<String> {
    let first = doc.get("args")?.as_array()?.first()?.as_str()?;
    Some(first.rsplit('/').next().unwrap_or(first).to_string())
}

/// `22902` → `NCCL 2.29.2` (codes below 10000: X*1000+Y*100+Z).
fn library_of(c: u64) -> String {
    let (major, minor, patch) = if c >= 10000 {
        (c / 10000, c % 10000 / 100, c % 100)
    } else {
        (c / 1000, c % 1000 / 100, c % 100)
    };
    format!("NCCL {major}.{minor}.{patch}")
}

/// The header settings under the names the printed header uses.
fn settings(config: &Value) -> std::collections::BTreeMap<String, String> {
    let names = [
        ("nthreads", "nThread"),
        ("ngpus", "nGpus"),
        ("minimum_bytes", "minBytes"),
        ("maximum_bytes", "maxBytes"),
        ("step_factor", "step"),
        ("warmup_iters", "warmup iters"),
        ("iterations", "iters"),
        ("aggregated_iterations", "agg iters"),
        ("validation", "validation"),
        ("graph", "graph"),
    ];
    names
        .into_iter()
        .filter_map(|(json, printed)| {
            let v = config.get(json)?;
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            Some((printed.to_string(), text))
        })
        .collect()
}

fn ranks(config: &Value) -> Result<Vec<RankLine>, String> {
    let Some(devices) = config.get("devices").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let num = |k: &str| d.get(k).and_then(Value::as_u64);
            let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            Ok(RankLine {
                rank: num("rank").ok_or(format!("config.devices[{i}]: no `rank`"))? as usize,
                host: text("hostname"),
                pid: num("pid"),
                device: num("device").and_then(|x| u32::try_from(x).ok()),
                gpu: text("device_info"),
            })
        })
        .collect()
}

fn row(r: &Value, line: usize) -> Result<Row, String> {
    let size = r
        .get("size")
        .and_then(Value::as_u64)
        .ok_or("no whole `size`")?;
    let text = |k: &str| {
        r.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let root = match r.get("root") {
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(v) => v.as_i64(),
        None => None,
    };
    Ok(Row {
        bytes: size,
        count: r.get("count").and_then(Value::as_u64),
        type_name: text("type"),
        redop_name: text("redop"),
        root,
        out_of_place: half(r.get("out_of_place"))?,
        in_place: half(r.get("in_place"))?,
        line,
    })
}

/// One half; `None` where it is absent or not a measurement (`time` not a positive number).
fn half(h: Option<&Value>) -> Result<Option<Half>, String> {
    let Some(h) = h.filter(|h| h.is_object()) else {
        return Ok(None);
    };
    let num = |k: &str| h.get(k).and_then(Value::as_f64).filter(|x| x.is_finite());
    let Some(time_us) = num("time").filter(|t| *t > 0.0) else {
        return Ok(None);
    };
    let wrong = match num("nwrong") {
        Some(w) if w >= 0.0 && w.fract() == 0.0 && w < 1e18 => Some(w as u64),
        Some(w) => return Err(format!("nwrong {w} is not a count")),
        None => None,
    };
    Ok(Some(Half {
        time_us,
        min_us: None,
        max_us: None,
        algbw_gbps: num("alg_bw"),
        busbw_gbps: num("bus_bw"),
        wrong,
        error: None,
        iters: None,
        time_step_us: printed_step(time_us),
    }))
}

/// The step of the last digit nccl-tests keeps of a time: it prints times in 7 characters with
/// at most 2 decimals (`4366.46`, `14977.1`, `160344`), and the JSON holds the same value.
fn printed_step(t: f64) -> f64 {
    let digits = (t.abs().max(1.0).log10().floor() as i32) + 1;
    let decimals = (7 - digits - 1).clamp(0, 2);
    match digits {
        d if d > 7 => 10f64.powi(d - 2),
        _ => 10f64.powi(-decimals),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_steps_follow_the_table_widths() {
        assert_eq!(printed_step(837.47), 0.01);
        assert_eq!(printed_step(4366.46), 0.01);
        assert_eq!(printed_step(14977.1), 0.1);
        assert_eq!(printed_step(160344.0), 1.0);
    }

    #[test]
    fn library_codes_of_both_encodings() {
        assert_eq!(library_of(22902), "NCCL 2.29.2");
        assert_eq!(library_of(2708), "NCCL 2.7.8");
    }
}
