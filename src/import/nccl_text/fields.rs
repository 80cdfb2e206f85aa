//! The fields of nccl-tests text, one line at a time: the header's settings, the library
//! version code, a rank line, the table's column header and its rows.

use crate::import::lines::last_digit_step;
use crate::import::log::{Half, PrintedSpread, RankLine, Row};
use crate::import::ParseError;

/// The columns of a table, from its header line.
#[derive(Clone, Debug)]
pub(super) struct Columns {
    /// Whether there is a `redop` column after `type` (old releases print none for ops that do
    /// not reduce).
    pub(super) redop: bool,
    /// Whether there is a `root` column.
    pub(super) root: bool,
    /// Groups of (time, algbw, busbw, wrong|error): 1 or 2.
    pub(super) halves: usize,
    /// Columns per group: 4, or 8 with nccl-tests `-I 1`'s `i_min i_max i_p99 i_cv%`.
    pub(super) width: usize,
}

impl Columns {
    pub(super) fn lead(&self) -> usize {
        3 + usize::from(self.redop) + usize::from(self.root)
    }

    pub(super) fn fields(&self) -> usize {
        self.lead() + self.width * self.halves
    }
}

/// The `key value` settings of a `# nThread 1 nGpus 8 minBytes 8 ... iters: 20 ...` header.
pub(super) fn header_settings(w: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut key: Vec<&str> = Vec::new();
    for word in w {
        let is_value = word.starts_with(|c: char| c.is_ascii_digit() || c == '-');
        if is_value && !key.is_empty() {
            let name = key.join(" ").trim_end_matches(':').to_string();
            out.push((name, word.to_string()));
            key.clear();
        } else if !is_value {
            key.push(word);
        }
    }
    out
}

/// `nccl-library=21903` → `NCCL 2.19.3` (codes below 10000 are 2.8 and older: X*1000+Y*100+Z).
pub(super) fn nccl_version(code: &str) -> Option<String> {
    let c: u32 = code.parse().ok()?;
    let (major, minor, patch) = if c >= 10000 {
        (c / 10000, c % 10000 / 100, c % 100)
    } else {
        (c / 1000, c % 1000 / 100, c % 100)
    };
    Some(format!("NCCL {major}.{minor}.{patch}"))
}

/// `Rank 0 [Group 0] Pid 1234 on host device 0 [0x1b] NVIDIA H100 80GB HBM3`.
pub(super) fn parse_rank_line(w: &[&str]) -> Option<RankLine> {
    let after = |key: &str| w.iter().position(|x| *x == key).and_then(|i| w.get(i + 1));
    let rank = after("Rank")?.parse().ok()?;
    let host = after("on")?.to_string();
    let device_at = w.iter().position(|x| *x == "device");
    let device = device_at.and_then(|i| w.get(i + 1)?.parse().ok());
    // The name follows the bus id (`[0x1b]`), or the device number when there is none.
    let mut name_from = device_at.map_or(w.len(), |i| i + 2);
    if w.get(name_from).is_some_and(|x| x.starts_with('[')) {
        name_from += 1;
    }
    Some(RankLine {
        rank,
        host,
        pid: after("Pid").and_then(|p| p.parse().ok()),
        device,
        gpu: w.get(name_from..).map_or(String::new(), |n| n.join(" ")),
    })
}

/// The columns of `size count type redop [root] time algbw busbw #wrong|error [x2]`.
pub(super) fn parse_columns(w: &[&str]) -> Option<Columns> {
    let names: Vec<String> = w
        .iter()
        .map(|x| x.trim_start_matches('#').to_ascii_lowercase())
        .filter(|x| !x.is_empty())
        .collect();
    let lead = names.iter().position(|x| x == "time")?;
    let lead_names: Vec<&str> = names[..lead].iter().map(String::as_str).collect();
    let (redop, root) = match lead_names.as_slice() {
        ["size", "count", "type"] => (false, false),
        ["size", "count", "type", "redop"] => (true, false),
        ["size", "count", "type", "root"] => (false, true),
        ["size", "count", "type", "redop", "root"] => (true, true),
        _ => return None,
    };
    let groups = &names[lead..];
    let width = if groups.iter().any(|g| g == "i_min") {
        8
    } else {
        4
    };
    let halves = groups.len() / width;
    let group_ok = |g: &[String]| {
        g[0] == "time"
            && g[1] == "algbw"
            && g[2] == "busbw"
            && (g[3] == "wrong" || g[3] == "error")
            && (width == 4 || g[4..] == ["i_min", "i_max", "i_p99", "i_cv%"])
    };
    let whole = groups.len() % width == 0 && (1..=2).contains(&halves);
    if !whole || !groups.chunks(width).all(group_ok) {
        return None;
    }
    Some(Columns {
        redop,
        root,
        halves,
        width,
    })
}

/// One table row.
pub(super) fn parse_row(n: usize, f: &[&str], cols: &Columns) -> Result<Row, ParseError> {
    let bad = |msg: String| ParseError { line: n, msg };
    if f.len() != cols.fields() {
        return Err(bad(format!(
            "a table row with {} fields where the table has {}",
            f.len(),
            cols.fields()
        )));
    }
    let int = |i: usize, what: &str| {
        f[i].parse::<u64>()
            .map_err(|_| bad(format!("{what} '{}' is not a whole number", f[i])))
    };
    let root = match cols.root {
        true => {
            let at = cols.lead() - 1;
            let root = f[at].parse::<i64>();
            Some(root.map_err(|_| bad(format!("root '{}' is not a number", f[at])))?)
        }
        false => None,
    };
    let lead = cols.lead();
    let w = cols.width;
    let half = |h: usize| parse_half(&f[lead + w * h..lead + w * h + w]).map_err(&bad);
    Ok(Row {
        bytes: int(0, "size")?,
        count: Some(int(1, "count")?),
        type_name: f[2].to_string(),
        redop_name: if cols.redop { f[3] } else { "none" }.to_string(),
        root,
        out_of_place: half(0)?,
        in_place: if cols.halves == 2 { half(1)? } else { None },
        line: n,
    })
}

/// `time algbw busbw wrong|error`, and with `-I 1` `i_min i_max i_p99 i_cv%`; `None` where the
/// time is `N/A` (no such measurement).
fn parse_half(f: &[&str]) -> Result<Option<Half>, String> {
    if f[0] == "N/A" {
        return Ok(None);
    }
    let time_us = positive(f[0], "time")?;
    let bw = |t: &str| match t {
        "N/A" => Ok(None),
        _ => number(t, "bandwidth").map(Some),
    };
    let (wrong, error) = match f[3] {
        "N/A" => (None, None),
        t if t.bytes().all(|b| b.is_ascii_digit()) => (
            Some(
                t.parse::<u64>()
                    .map_err(|_| format!("#wrong '{t}' is too large"))?,
            ),
            None,
        ),
        t => match number(t, "error")? {
            // nccl-tests prints N/A where it did not check; a count or error is never negative.
            e if e < 0.0 => return Err(format!("#wrong '{t}' is negative")),
            e => (None, Some(e)),
        },
    };
    Ok(Some(Half {
        time_us,
        min_us: None,
        max_us: None,
        algbw_gbps: bw(f[1])?,
        busbw_gbps: bw(f[2])?,
        wrong,
        error,
        iters: None,
        time_step_us: last_digit_step(f[0]),
        samples: Vec::new(),
        spread: match f.len() {
            8 => Some(spread(&f[4..])?),
            _ => None,
        },
    }))
}

/// `-I 1`'s per-iteration minimum, maximum and p99 (µs) and CV (%, kept as a fraction).
fn spread(f: &[&str]) -> Result<PrintedSpread, String> {
    let cv = number(f[3], "i_cv%")?;
    if cv < 0.0 {
        return Err(format!("i_cv% '{}' is negative", f[3]));
    }
    let s = PrintedSpread {
        min_us: positive(f[0], "i_min")?,
        max_us: positive(f[1], "i_max")?,
        p99_us: positive(f[2], "i_p99")?,
        cv: cv / 100.0,
    };
    if !(s.min_us <= s.p99_us && s.p99_us <= s.max_us) {
        return Err(format!(
            "i_min {} <= i_p99 {} <= i_max {} does not hold",
            f[0], f[2], f[1]
        ));
    }
    Ok(s)
}

pub(super) fn is_number(t: &str) -> bool {
    t.parse::<f64>().is_ok()
}

/// A finite number, or an error naming the column.
fn number(t: &str, what: &str) -> Result<f64, String> {
    match t.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("{what} '{t}' is not a number")),
    }
}

/// A finite positive number, or an error naming the column.
pub(in crate::import) fn positive(t: &str, what: &str) -> Result<f64, String> {
    match number(t, what)? {
        x if x > 0.0 => Ok(x),
        _ => Err(format!("{what} '{t}' is not a positive number")),
    }
}
