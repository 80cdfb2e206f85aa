//! The live table in nccl-tests' text (`--format nccl-tests`): one table per test as nccl-tests
//! prints one per run (a collective at one world, algorithm and setup; the dtypes and sizes its
//! rows), each row holding a size's out-of-place and in-place halves. collbench measures a
//! curve's out-of-place points before its in-place ones, so an out-of-place half waits until
//! its in-place twin is measured and the two are printed as one line; a half without a planned
//! twin is printed alone (nccl-tests' blank half where the out-of-place one is missing). With
//! `--json-out FILE` the same tables go to FILE as nccl-tests' `-J` JSON, one document per
//! table, the file rewritten whole (atomically) after each row so that it always parses.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::meta::Meta;
use crate::model::plan::Point;
use crate::model::record::{PointKey, PointRecord};
use crate::report::nccl_tests_json as json;
use crate::report::nccl_tests_text::{
    body, half_bandwidths, preamble, table_footer, table_header, Device, Settings, Step, NULL_BODY,
};

/// Where the tables go: stdout's text, a `-J` file, or both.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// Print the text.
    pub text: bool,
    /// Write the JSON here.
    pub json: Option<PathBuf>,
    /// The command line, for the JSON's `args`.
    pub args: Vec<String>,
}

/// The state of the nccl-tests table of a sweep.
pub struct NcclTables {
    /// Settings of each table, by [`group`], from the plan.
    settings: HashMap<String, Settings>,
    /// The [`twin`] keys of the points planned in place.
    planned_in_place: HashSet<String>,
    /// Out-of-place halves waiting for their in-place twin, by twin key.
    waiting: Vec<(String, PointRecord)>,
    open: Option<Open>,
    /// Device lines per rank: host, device name.
    ranks: Vec<(String, String)>,
    outputs: Outputs,
    /// The JSON documents so far (the last one open).
    docs: Vec<Value>,
    /// The first failure to write the JSON file; nothing is written after it.
    json_error: Option<crate::error::Error>,
}

/// The table being printed.
struct Open {
    group: String,
    test: &'static str,
    wrong: u64,
    busbw_sum: f64,
    halves: usize,
}

/// `key` without what varies inside one table (dtype, size, placement, root, reduction), as
/// text; the backend, protocol and communicator setup kept or dropped by `exact`.
fn normalized(key: &PointKey, exact: bool, keep_rows: bool) -> String {
    let mut k = key.clone();
    k.backend.clear();
    k.in_place = false;
    if !keep_rows {
        // A split's groups and a call beside a load are rows of their call's table (each
        // told apart by the note before it).
        (k.group, k.concurrent) = (None, None);
        k.dtype = crate::collective::DType::F32;
        (k.bytes, k.count, k.root) = (0, 0, None);
        k.redop = crate::collective::ReduceOp::Sum;
    }
    if !exact {
        k.proto = None;
        k.comm = Default::default();
    }
    format!("{k:?}")
}

/// The table a point belongs to.
fn group(key: &PointKey) -> String {
    normalized(key, false, false)
}

/// A point's row, the same for its two placements.
fn twin(key: &PointKey, exact: bool) -> String {
    normalized(key, exact, true)
}

impl NcclTables {
    /// The tables of `points`, with device lines from `meta`, to `outputs`.
    pub fn new(points: &[Point], meta: &Meta, outputs: Outputs) -> NcclTables {
        let mut settings: HashMap<String, Settings> = HashMap::new();
        let mut sizes: HashMap<String, Vec<usize>> = HashMap::new();
        for p in points {
            let key = p.key("");
            let g = group(&key);
            sizes.entry(g.clone()).or_default().push(p.requested);
            settings.entry(g).or_insert_with(|| Settings {
                agg: p.timing.agg,
                ..one_size(p.requested, p.warmup, p.iters)
            });
        }
        for (g, s) in settings.iter_mut() {
            let mut v = sizes.remove(g).unwrap_or_default();
            v.sort_unstable();
            v.dedup();
            if let (Some(&lo), Some(&hi)) = (v.first(), v.last()) {
                (s.min_bytes, s.max_bytes) = (lo, hi);
            }
            s.step = step_of(&v);
        }
        let planned_in_place = points
            .iter()
            .filter(|p| p.in_place)
            .flat_map(|p| p.rows(""))
            .map(|(_, _, k)| twin(&k, false))
            .collect();
        NcclTables {
            settings,
            planned_in_place,
            waiting: Vec::new(),
            open: None,
            ranks: rank_lines(meta),
            outputs,
            docs: Vec::new(),
            json_error: None,
        }
    }

    /// Whether the tables are printed (else only written as JSON).
    pub fn prints_text(&self) -> bool {
        self.outputs.text
    }

    /// The lines to print for a measured point (none while its half waits for its twin).
    pub fn point(&mut self, rec: &PointRecord) -> Vec<String> {
        let mut lines = self.switch_to(&rec.key);
        if let Some(open) = &mut self.open {
            open.wrong += rec.wrong;
            open.busbw_sum += half_bandwidths(rec).1;
            open.halves += 1;
        }
        let exact = twin(&rec.key, true);
        if !rec.key.in_place {
            if self.planned_in_place.contains(&twin(&rec.key, false)) {
                self.waiting.push((exact, rec.clone()));
                return lines;
            }
            lines.extend(self.row(Some(rec), None));
            return lines;
        }
        let found = self.waiting.iter().position(|(k, _)| *k == exact);
        let out = found.map(|i| self.waiting.remove(i).1);
        lines.extend(self.row(out.as_ref(), Some(rec)));
        lines
    }

    /// The lines that end the sweep (halves still waiting, the last table's footer), and the
    /// JSON file's write error, if any.
    pub fn finish(&mut self) -> (Vec<String>, Option<crate::error::Error>) {
        (self.close(), self.json_error.take())
    }

    /// One size's row: its line (where the text is printed) and its JSON result.
    fn row(&mut self, out: Option<&PointRecord>, inp: Option<&PointRecord>) -> Option<String> {
        let first = out.or(inp)?;
        let line = match (out, inp) {
            (Some(o), Some(i)) => format!("{}{}{}", preamble(o), body(o), body(i)),
            (Some(o), None) => format!("{}{}", preamble(o), body(o)),
            (None, _) => format!("{}{NULL_BODY}{}", preamble(first), body(first)),
        };
        if self.outputs.json.is_some() {
            if let Some(doc) = self.docs.last_mut() {
                json::push(doc, json::result(out, inp));
            }
            self.write_json();
        }
        self.outputs.text.then_some(line)
    }

    /// Rewrites the JSON file with every document so far.
    fn write_json(&mut self) {
        let Some(path) = &self.outputs.json else {
            return;
        };
        if self.json_error.is_some() {
            return;
        }
        let mut text = String::new();
        for doc in &self.docs {
            text.push_str(&serde_json::to_string_pretty(doc).unwrap_or_default());
            text.push('\n');
        }
        if let Err(e) = crate::output::file::write_atomic(path, text.as_bytes()) {
            self.json_error = Some(e);
        }
    }

    /// Closes the open table where `key` belongs to another, and opens `key`'s.
    fn switch_to(&mut self, key: &PointKey) -> Vec<String> {
        let g = group(key);
        if self.open.as_ref().is_some_and(|o| o.group == g) {
            return Vec::new();
        }
        let mut lines = self.close();
        let test = key.op.nccl_test();
        let settings = self.settings.get(&g).cloned();
        let settings = settings.unwrap_or_else(|| one_size(key.bytes, 0, 0));
        let devices = self.devices(key.world);
        if self.outputs.text {
            lines.extend(table_header(test, &settings, &devices));
        }
        if self.outputs.json.is_some() {
            let args = &self.outputs.args;
            self.docs
                .push(json::document(test, args, &settings, &devices));
        }
        self.open = Some(Open {
            group: g,
            test,
            wrong: 0,
            busbw_sum: 0.0,
            halves: 0,
        });
        lines
    }

    /// Waiting halves printed alone, then the open table's footer.
    fn close(&mut self) -> Vec<String> {
        let waiting: Vec<PointRecord> = self.waiting.drain(..).map(|(_, r)| r).collect();
        let mut lines: Vec<String> = waiting
            .iter()
            .filter_map(|r| self.row(Some(r), None))
            .collect();
        if let Some(o) = self.open.take() {
            let avg = o.busbw_sum / o.halves.max(1) as f64;
            if self.outputs.text {
                lines.extend(table_footer(o.test, o.wrong, avg));
            }
            if let Some(doc) = self.docs.last_mut() {
                json::finish(doc, o.wrong, avg);
                self.write_json();
            }
        }
        lines
    }

    /// The `# Using devices` lines of a group of `world` ranks (the first `world` of the run).
    fn devices(&self, world: usize) -> Vec<Device> {
        (0..world)
            .map(|rank| {
                let (host, name) = self.ranks.get(rank).cloned().unwrap_or_default();
                Device {
                    rank,
                    pid: 0,
                    host,
                    device: rank,
                    name,
                }
            })
            .collect()
    }
}

/// Each rank's host and device name: its node's host name and GPU where meta.json has them,
/// else this host and its CPU.
fn rank_lines(meta: &Meta) -> Vec<(String, String)> {
    (0..meta.ranks)
        .map(|r| {
            let node = meta.rank_nodes.get(r).copied().unwrap_or(0);
            let host = meta.hosts.get(node).unwrap_or(&meta.host.hostname).clone();
            let name = meta.gpus.get(r).unwrap_or(&meta.host.cpu_model).clone();
            (host, name)
        })
        .collect()
}

/// The settings of a table of one size (the others fill in as the plan's sizes are read).
fn one_size(bytes: usize, warmup: usize, iters: usize) -> Settings {
    Settings {
        min_bytes: bytes,
        max_bytes: bytes,
        step: Step::Bytes(1 << 20),
        warmup,
        iters,
        agg: 1,
        graph: false,
    }
}

/// nccl-tests' step from the sizes asked for: their common factor, else their first
/// difference (linear steps), else its default step of 1 MiB.
fn step_of(sizes: &[usize]) -> Step {
    let [a, b, ..] = sizes else {
        return Step::Bytes(1 << 20);
    };
    let factor = (*a > 0 && b % a == 0).then(|| b / a);
    let geometric = factor
        .is_some_and(|f| f > 1 && sizes.windows(2).all(|w| w[0].checked_mul(f) == Some(w[1])));
    match (geometric, factor) {
        (true, Some(f)) => Step::Factor(f as u64),
        _ => Step::Bytes(b - a),
    }
}

#[cfg(test)]
mod step_tests {
    use super::*;

    #[test]
    fn the_step_is_read_back_from_the_sizes() {
        assert_eq!(step_of(&[8, 64, 512]), Step::Factor(8));
        assert_eq!(step_of(&[1024, 2048, 3072]), Step::Bytes(1024));
        assert_eq!(step_of(&[1024, 2048]), Step::Factor(2));
        assert_eq!(step_of(&[4096]), Step::Bytes(1 << 20));
        assert_eq!(step_of(&[]), Step::Bytes(1 << 20));
        assert_eq!(step_of(&[usize::MAX / 2, usize::MAX - 1]), Step::Factor(2));
    }
}
