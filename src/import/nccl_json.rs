//! Reading the JSON that nccl-tests writes with `-J FILE` (`"version": 1`: `config` with the
//! header settings and `devices`, `results` with one object per size holding `out_of_place`
//! and `in_place` {time, alg_bw, bus_bw, nwrong}, and with `-I 1` `out_of_place_per_iter` and
//! `in_place_per_iter` {times_us, per_process_max_times_us, ...}). Several documents in one
//! file (one per test, concatenated) are read in turn.

use serde_json::Value;

use super::log::{Half, LogRun, RankLine, Row};
use super::ParseError;
use crate::model::record::IterSample;

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
    // 1: nccl-tests 2.18 (ad956f1), 2: per-iteration timing (0fdb00a), 3: -K (e1dc979),
    // 4: 2.20.0, whose fields read here are those of 3 (tests/data/import's 2.20.0 document).
    let version = doc.get("version").and_then(Value::as_u64);
    if !matches!(version, Some(1..=4)) {
        return Err(format!(
            "a JSON document without `\"version\"` 1 to 4: not nccl-tests -J output this \
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
        out_of_place: with_samples(
            half(r.get("out_of_place"))?,
            r.get("out_of_place_per_iter"),
            "out_of_place_per_iter",
        )?,
        in_place: with_samples(
            half(r.get("in_place"))?,
            r.get("in_place_per_iter"),
            "in_place_per_iter",
        )?,
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
        samples: Vec::new(),
        spread: None,
    }))
}

/// The most per-iteration times one half may bring (nccl-tests' `-n` is an int, but a log's
/// list sizes memory here).
const MAX_ITER_SAMPLES: usize = 1_000_000;

/// The half with its `-I 1` samples: `times_us` (the iteration's time, the slowest process's
/// where several ran), and from `per_process_max_times_us` (one list per process, each its
/// slowest GPU's time) which process was slowest and the fastest's time.
fn with_samples(
    h: Option<Half>,
    per_iter: Option<&Value>,
    key: &str,
) -> Result<Option<Half>, String> {
    let Some(per_iter) = per_iter else {
        return Ok(h);
    };
    let Some(mut h) = h else {
        return Ok(None);
    };
    let times = times_list(per_iter.get("times_us"), &format!("{key}.times_us"))?;
    let procs = match per_iter.get("per_process_max_times_us") {
        Some(Value::Array(rows)) => rows
            .iter()
            .enumerate()
            .map(|(p, row)| times_list(Some(row), &format!("{key}.per_process_max_times_us[{p}]")))
            .collect::<Result<Vec<_>, String>>()?,
        Some(_) => return Err(format!("{key}.per_process_max_times_us is not a list")),
        None => Vec::new(),
    };
    if let Some(p) = procs.iter().position(|row| row.len() != times.len()) {
        return Err(format!(
            "{key}.per_process_max_times_us[{p}] has {} times, times_us {}",
            procs[p].len(),
            times.len()
        ));
    }
    h.samples = times
        .iter()
        .enumerate()
        .map(|(i, &t)| sample(t, procs.iter().map(|row| row[i])))
        .collect();
    Ok(Some(h))
}

/// A list of positive finite times (µs), at most [`MAX_ITER_SAMPLES`].
fn times_list(v: Option<&Value>, what: &str) -> Result<Vec<f64>, String> {
    let items = v
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{what} is not a list of times"))?;
    if items.len() > MAX_ITER_SAMPLES {
        return Err(format!(
            "{what} has {} times; at most {MAX_ITER_SAMPLES}",
            items.len()
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, x)| match x.as_f64() {
            Some(t) if t.is_finite() && t > 0.0 => Ok(t),
            _ => Err(format!("{what}[{i}] = {x} is not a positive time in µs")),
        })
        .collect()
}

/// One iteration: its time, the slowest and the fastest process where each is listed.
fn sample(time_us: f64, per_process: impl Iterator<Item = f64>) -> IterSample {
    let mut s = IterSample {
        time_us,
        slowest_rank: 0,
        fastest_us: time_us,
    };
    let mut slowest = f64::NEG_INFINITY;
    for (p, t) in per_process.enumerate() {
        if t > slowest {
            (slowest, s.slowest_rank) = (t, p);
        }
        s.fastest_us = if p == 0 { t } else { s.fastest_us.min(t) };
    }
    s
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
    fn the_slowest_and_fastest_process_of_an_iteration() {
        let s = sample(5.0, [3.0, 5.0, 4.0].into_iter());
        assert_eq!((s.time_us, s.slowest_rank, s.fastest_us), (5.0, 1, 3.0));
        let alone = sample(2.5, std::iter::empty());
        assert_eq!((alone.slowest_rank, alone.fastest_us), (0, 2.5));
    }

    #[test]
    fn library_codes_of_both_encodings() {
        assert_eq!(library_of(22902), "NCCL 2.29.2");
        assert_eq!(library_of(2708), "NCCL 2.7.8");
    }
}
