//! The busbw profiles of `--expect` (bench-configs/expect/*.toml, bundled, or a file of
//! one's own): per row, the ops, the busbw public numbers say a healthy system reaches and the
//! size from which it saturates, with its source. Reading and checking only; turning a profile
//! into criteria is [`super::expect`]'s.

use std::path::Path;

use serde::Deserialize;

use crate::collective::{Algo, Op};
use crate::error::{Error, Result};
use crate::units::{parse_list, parse_size};

/// The profiles shipped inside the binary: (name, text).
pub const BUNDLED: [(&str, &str); 9] = [
    (
        "h100-nvswitch",
        include_str!("../../bench-configs/expect/h100-nvswitch.toml"),
    ),
    (
        "a100-nvswitch",
        include_str!("../../bench-configs/expect/a100-nvswitch.toml"),
    ),
    (
        "a800-nvswitch",
        include_str!("../../bench-configs/expect/a800-nvswitch.toml"),
    ),
    (
        "ib-edr-100",
        include_str!("../../bench-configs/expect/ib-edr-100.toml"),
    ),
    (
        "ib-hdr-200",
        include_str!("../../bench-configs/expect/ib-hdr-200.toml"),
    ),
    (
        "ib-ndr-400",
        include_str!("../../bench-configs/expect/ib-ndr-400.toml"),
    ),
    (
        "roce-200",
        include_str!("../../bench-configs/expect/roce-200.toml"),
    ),
    (
        "roce-400",
        include_str!("../../bench-configs/expect/roce-400.toml"),
    ),
    (
        "efa-100",
        include_str!("../../bench-configs/expect/efa-100.toml"),
    ),
];

/// What a profile's numbers are per: the whole node, or one NIC (times `--nics`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    Node,
    Nic,
}

/// A profile, read and checked.
#[derive(Clone, Debug)]
pub struct Profile {
    pub name: String,
    pub per: Per,
    pub rows: Vec<Row>,
}

/// One expectation: these ops (and algorithms) reach `busbw_gbps` from `from_bytes` on.
#[derive(Clone, Debug)]
pub struct Row {
    pub ops: Vec<Op>,
    pub algos: Vec<Algo>,
    pub busbw_gbps: f64,
    pub from_bytes: usize,
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: String,
    description: Option<String>,
    per: Per,
    expect: Vec<RawRow>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    op: String,
    algo: Option<String>,
    busbw_gbps: f64,
    from_bytes: toml::Value,
    source: String,
}

/// The largest busbw a row may expect (GB/s): past any link built or announced.
const MAX_BUSBW_GBPS: f64 = 100_000.0;

impl Profile {
    /// A bundled profile by name, or a TOML file at that path.
    pub fn load(name: &str) -> Result<Profile> {
        let bundled = name.trim().to_ascii_lowercase();
        if let Some((_, text)) = BUNDLED.iter().find(|(n, _)| *n == bundled) {
            return Profile::parse(text, Path::new(name));
        }
        let path = Path::new(name);
        if !path.is_file() {
            let names: Vec<&str> = BUNDLED.iter().map(|(n, _)| *n).collect();
            let models = crate::fit::profiles::profile_names();
            return Err(Error::usage(format!(
                "expect profile {name}: no such profile or file; the bundled ones are {} (busbw \
                 floors) and {} (network models), or give a file: a profile .toml or a fit.json",
                names.join(", "),
                models.join(", ")
            )));
        }
        let text =
            crate::input::read_text_capped(path, crate::input::MAX_SPEC_BYTES, "expect profile")?;
        Profile::parse(&text, path)
    }

    /// Parses a profile; errors are one line naming `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Profile> {
        let bad = |msg: String| Error::Input {
            path: path.to_path_buf(),
            msg,
        };
        let raw: RawProfile =
            toml::from_str(text).map_err(|e| bad(super::criteria::toml_error(text, &e)))?;
        let _ = raw.description;
        if raw.expect.is_empty() {
            return Err(bad("no [[expect]] row; add at least one".into()));
        }
        let rows = raw.expect.iter().enumerate().map(|(i, r)| row(r, i));
        let rows = rows.collect::<Result<Vec<Row>, String>>().map_err(bad)?;
        Ok(Profile {
            name: raw.name,
            per: raw.per,
            rows,
        })
    }
}

fn row(r: &RawRow, i: usize) -> Result<Row, String> {
    let at = |m: String| format!("[[expect]] #{}: {m}", i + 1);
    let ops = parse_list::<Op>(&r.op).map_err(|e| at(format!("op: {e}")))?;
    let algos = match &r.algo {
        Some(a) => parse_list::<Algo>(a).map_err(|e| at(format!("algo: {e}")))?,
        None => Vec::new(),
    };
    if !(r.busbw_gbps > 0.0 && r.busbw_gbps <= MAX_BUSBW_GBPS) {
        return Err(at(format!(
            "busbw_gbps {} is not in (0, {MAX_BUSBW_GBPS}]",
            r.busbw_gbps
        )));
    }
    let from_bytes = match &r.from_bytes {
        toml::Value::String(s) => parse_size(s).map_err(|e| at(format!("from_bytes: {e}")))?,
        toml::Value::Integer(n) if *n > 0 => *n as usize,
        v => return Err(at(format!("from_bytes {v} is not a size such as \"8G\""))),
    };
    if r.source.trim().is_empty() {
        return Err(at("source is empty: say where the number comes from".into()));
    }
    Ok(Row {
        ops,
        algos,
        busbw_gbps: r.busbw_gbps,
        from_bytes,
        source: r.source.clone(),
    })
}
