//! nccl-tests 2.19.6's text output written from collbench's points, so that a parser of
//! nccl-tests logs (cluster health checks, CI `awk`, `collbench import`) reads a collbench sweep
//! unchanged. The widths and formats are those of nccl-tests' src/util.cu (`writeDeviceReport`,
//! `writeResultHeader`, `writeBenchmarkLinePreamble`, `writeBenchmarkLineBody`,
//! `writeResultFooter`) and src/common.cu (`getFloatStr`'s fallbacks); the numbers are
//! nccl-tests': the size and per-call count it prints, the time of the back-to-back loop, and
//! algbw and busbw from that time.

use crate::collective::DType;
use crate::model::record::PointRecord;

/// What nccl-tests prints instead of a half it did not run (`writeBenchMarkLineNullBody`).
pub const NULL_BODY: &str = "                                ";

/// The run's settings for the `# nThread ...` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub min_bytes: usize,
    pub max_bytes: usize,
    /// The step: a factor, or bytes for linear steps.
    pub step: Step,
    pub warmup: usize,
    pub iters: usize,
    pub agg: usize,
    pub graph: bool,
}

/// How sizes grow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    Factor(u64),
    Bytes(usize),
}

/// One rank's line under `# Using devices`.
#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    pub rank: usize,
    pub pid: u32,
    pub host: String,
    pub device: usize,
    pub name: String,
}

/// `getFloatStr`: `value` in `width` characters with two decimals, then one, then none, then
/// in exponent form.
pub fn float_str(value: f64, width: usize) -> String {
    for decimals in [2, 1, 0] {
        let s = format!("{value:>width$.decimals$}");
        if s.len() <= width {
            return s;
        }
    }
    let exp = c_exponent(value, if width >= 7 { 1 } else { 0 });
    format!("{exp:>width$}")
}

/// C's `%.{decimals}e`: an exponent of at least two digits with its sign (`1.6e+07`).
fn c_exponent(value: f64, decimals: usize) -> String {
    let s = format!("{value:.decimals$e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// C's `%g`: six significant digits, fixed or exponent form, trailing zeros dropped.
pub fn c_g(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return if value == 0.0 {
            "0".into()
        } else {
            format!("{value}")
        };
    }
    let sci = format!("{value:.5e}");
    let exp: i32 = sci
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let (mantissa, _) = sci.split_once('e').unwrap_or((&sci, ""));
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:0>2}", trim_zeros(mantissa), exp.abs());
    }
    let decimals = usize::try_from(5 - exp).unwrap_or(0);
    trim_zeros(&format!("{value:.decimals$}")).to_string()
}

/// `1.50000` → `1.5`, `2.000` → `2`; text without a point as it is.
fn trim_zeros(s: &str) -> &str {
    match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.'),
        false => s,
    }
}

/// nccl-tests' name of a dtype (its `test_typenames`): the first of the dtype's aliases.
pub fn type_name(dtype: DType) -> &'static str {
    dtype.aliases().first().copied().unwrap_or(dtype.name())
}

/// The `redop` column nccl-tests prints for a point ([`crate::collective::Op::nccl_test_redop`]): the reduction
/// where the op takes one (SendRecv too), `none` for the data-moving ops, nothing for
/// hypercube.
pub fn redop_column(rec: &PointRecord) -> &'static str {
    rec.key.op.nccl_test_redop().unwrap_or(rec.key.redop.name())
}

/// The lines that open a test's table: the test, its settings, the devices and the column
/// header.
pub fn table_header(test: &str, s: &Settings, devices: &[Device]) -> Vec<String> {
    let (step, unit) = match s.step {
        Step::Factor(f) => (f.to_string(), "factor"),
        Step::Bytes(b) => (b.to_string(), "bytes"),
    };
    let mut lines = vec![
        format!("# Collective test starting: {test}"),
        format!(
            "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: {step}({unit}) warmup iters: {} \
             iters: {} agg iters: {} validation: 1 graph: {} unalign: 0",
            s.min_bytes,
            s.max_bytes,
            s.warmup,
            s.iters,
            s.agg,
            u8::from(s.graph)
        ),
        "#".into(),
        "# Using devices".into(),
    ];
    lines.extend(devices.iter().map(|d| {
        format!(
            "#  Rank {:>2} Group {:>2} Pid {:>6} on {:>10} device {:>2} [0000:00:00] {}",
            d.rank, 0, d.pid, d.host, d.device, d.name
        )
    }));
    lines.push("#".into());
    lines.extend(column_header());
    lines
}

/// `writeResultHeader` without per-iteration timing or timestamps.
fn column_header() -> [String; 3] {
    let e = "";
    [
        format!(
            "# {e:>10}  {e:>12}  {e:>8}  {e:>6}  {e:>6}           out-of-place                       in-place          "
        ),
        format!(
            "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} ",
            "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
            "algbw", "busbw", "#wrong"
        ),
        format!(
            "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} ",
            "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
            "(GB/s)", ""
        ),
    ]
}

/// A row's first columns (`writeBenchmarkLinePreamble`): size, the count nccl-tests passes to
/// the call (per rank where the op splits the buffer), type, redop and root (-1 without one).
pub fn preamble(rec: &PointRecord) -> String {
    let (size, count, type_name, redop, root) = preamble_fields(rec);
    format!(
        "{size:>12}  {count:>12}  {type_name:>8}  {redop:>6}  {:>6}",
        format!("{root:>6}")
    )
}

/// The values of [`preamble`]: size, count, type, redop and root.
pub fn preamble_fields(rec: &PointRecord) -> (usize, usize, &'static str, &'static str, i64) {
    let k = &rec.key;
    let count = match k.op.splits_per_rank() {
        true => k.count / k.world.max(1),
        false => k.count,
    };
    let root = k.root.map_or(-1, |r| i64::try_from(r).unwrap_or(i64::MAX));
    (k.bytes, count, type_name(k.dtype), redop_column(rec), root)
}

/// A half's columns (`writeBenchmarkLineBody`): the loop's time per call (the samples' mean
/// where a backend has no loop time), algbw and busbw from it, and `#wrong`.
pub fn body(rec: &PointRecord) -> String {
    let time = rec.loop_time_us.unwrap_or(rec.time_us_mean);
    let (alg, bus) = half_bandwidths(rec);
    format!(
        "  {:>7}  {:>6}  {:>6}  {:>6}",
        float_str(time, 7),
        float_str(alg, 6),
        float_str(bus, 6),
        rec.wrong
    )
}

/// algbw and busbw of the time [`body`] prints.
pub fn half_bandwidths(rec: &PointRecord) -> (f64, f64) {
    let k = &rec.key;
    let time = rec.loop_time_us.unwrap_or(rec.time_us_mean);
    let alg = crate::collective::algbw_gbps(k.op, k.bytes, k.world, time);
    (alg, crate::collective::busbw_gbps(k.op, k.world, alg))
}

/// The lines that close a table (`writeResultFooter`): the wrong elements in all, the mean
/// busbw of every half printed, and the test's name.
pub fn table_footer(test: &str, wrong: u64, avg_busbw: f64) -> Vec<String> {
    let verdict = if wrong == 0 { "OK" } else { "FAILED" };
    vec![
        format!("# {:<20} : {wrong} {verdict}", "Out of bounds values"),
        format!("# {:<20} : {} ", "Avg bus bandwidth", c_g(avg_busbw)),
        "#".into(),
        format!("# Collective test concluded: {test}"),
        "#".into(),
    ]
}

#[cfg(test)]
#[path = "nccl_tests_text_tests.rs"]
mod tests;
