//! `--export nccl-tuner`: the CSV config of NCCL's example tuner plugin
//! (github.com/NVIDIA/nccl `ext-tuner/example`, read from `NCCL_TUNER_CONFIG_FILE` or
//! `./nccl_tuner.conf`), saying for each op and size range which algorithm the fit predicts
//! fastest.
//!
//! One config per line, `collective_type,min_bytes,max_bytes,algorithm,protocol,channels,
//! nNodes,nRanks,numPipeOps,regBuff` (`loadConfig` in `ext-tuner/example/plugin.c`; the README
//! and `nccl_tuner.conf` beside it): collective_type one of broadcast, reduce, allgather,
//! reducescatter, allreduce; min/max_bytes inclusive; algorithm tree, ring, collnet_direct,
//! collnet_chain, nvls, nvls_tree, pat; protocol ll, ll128, simple; channels −1 keeps NCCL's
//! choice; nNodes, nRanks, numPipeOps and regBuff −1 match anything. The first matching line
//! wins and gets cost 0 in NCCL's table for that algorithm and protocol.
//!
//! What we write: for each op with a ring or tree curve measured at the target world, or a
//! cross-world model that reaches it, the algorithm with the smallest predicted time over
//! 1 B .. 1 TiB, switching where the predictions cross (found to the byte). A curve measured at
//! exactly the target world and node count is used through its regimes (segments); otherwise
//! the model. nNodes and nRanks are the target's (the choice depends on them). Where the fit
//! has forced protocols (`--proto ll,ll128,simple`) for an algorithm, every (algorithm,
//! protocol) is a candidate and the line names the winner's protocol; otherwise the algorithm's
//! auto (or protocol-less) curve or model is the candidate and, the plugin having no "any"
//! protocol (an unknown name parses as simple), protocol is `simple`. Channels, numPipeOps and
//! regBuff are −1.
//!
//! The plugin reads lines with `fgets` into 256 bytes and treats any line not starting with
//! `#` as a config, so every line we write is shorter than that and there is no header line.

use super::{describe, missing, provenance, ExportFormat, ExportOptions};
use crate::collective::{Algo, Op, Proto};
use crate::error::{Error, Result};
use crate::fit::forms::Form;
use crate::fit::schema::{proto_rank, CurveFit, FitFile, Line, WorldModel};

/// Algorithms NCCL has, in tie-break order.
const ALGOS: [Algo; 2] = [Algo::Ring, Algo::Tree];

/// The ops the plugin knows, in the order we write them.
const OPS: [Op; 5] = [
    Op::AllReduce,
    Op::AllGather,
    Op::ReduceScatter,
    Op::Broadcast,
    Op::Reduce,
];

/// The largest size the search looks at (1 TiB); the winner there holds above.
const LARGEST: u64 = 1 << 40;

/// The plugin's line buffer.
pub const MAX_LINE: usize = 256;

/// How one algorithm's time is predicted at the target world.
enum Predictor<'a> {
    /// Regimes of a curve measured at the target world.
    Segments(&'a [Line]),
    /// A cross-world model.
    Model(&'a WorldModel, Form),
}

struct Candidate<'a> {
    algo: Algo,
    /// The forced protocol it was measured with; `None` for NCCL's own choice (or none).
    proto: Option<Proto>,
    predictor: Predictor<'a>,
}

impl Candidate<'_> {
    fn time_us(&self, op: Op, world: usize, nodes: usize, bytes: u64) -> f64 {
        let s = bytes as f64;
        match &self.predictor {
            Predictor::Segments(lines) => {
                let l = lines
                    .iter()
                    .find(|l| bytes <= l.max_bytes)
                    .or(lines.last())
                    .expect("segments are not empty");
                l.alpha_us.value + l.beta_ns_per_byte.value * s / 1e3
            }
            Predictor::Model(m, form) => form
                .coefficients(op, world, nodes, s)
                .map(|c| {
                    c.iter()
                        .zip(&m.params)
                        .map(|(c, p)| c * p.param.value)
                        .sum()
                })
                .unwrap_or(f64::INFINITY),
        }
    }

    /// "ring", or "ring/ll128" for a forced protocol.
    fn name(&self) -> String {
        match self.proto {
            Some(p) => format!("{}/{p}", self.algo),
            None => self.algo.to_string(),
        }
    }

    /// The protocol column: the forced one, else the plugin's fallback.
    fn protocol(&self) -> Proto {
        self.proto.unwrap_or(Proto::Simple)
    }

    fn source(&self, world: usize, nodes: usize) -> String {
        match &self.predictor {
            Predictor::Segments(lines) => format!(
                "{} segment(s) of the curve measured at {world} ranks on {nodes} node(s)",
                lines.len()
            ),
            Predictor::Model(m, _) => describe(m),
        }
    }
}

/// The CSV text.
pub fn render(fit: &FitFile, opts: &ExportOptions) -> Result<String> {
    let (world, nodes, from) = target(fit, opts)?;
    let mut out = vec![
        "# NCCL example tuner plugin config (NVIDIA/nccl ext-tuner/example), CSV".to_string(),
        format!("# {}.", provenance(fit)),
        "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,\
         numPipeOps,regBuff"
            .to_string(),
        format!("# For {world} ranks on {nodes} node(s) ({from}); other sizes match no line."),
        "# protocol: the fitted one where --proto forced it, else simple (the plugin has no \
         'any'). channels -1: NCCL's choice."
            .to_string(),
        "# See collbench docs/EXPORTS.md.".to_string(),
    ];
    let mut rows = 0;
    for op in OPS {
        let cands: Vec<Candidate> = ALGOS
            .iter()
            .flat_map(|&a| candidates(fit, op, a, (world, nodes)))
            .collect();
        if cands.is_empty() {
            continue;
        }
        out.push(format!("# {op}:"));
        for c in &cands {
            out.push(clip(format!(
                "#   {}: {}",
                c.name(),
                c.source(world, nodes)
            )));
        }
        if cands.len() == 1 {
            out.push(format!(
                "#   only {} was fitted: nothing to compare it with.",
                cands[0].name()
            ));
        }
        for (lo, hi, i) in ranges(&cands, op, world, nodes) {
            out.push(format!(
                "{op},{lo},{hi},{},{},-1,{nodes},{world},-1,-1",
                cands[i].algo,
                cands[i].protocol()
            ));
            rows += 1;
        }
    }
    if rows == 0 {
        return Err(missing(
            ExportFormat::NcclTuner,
            &format!("ring or tree curve or model at {world} ranks on {nodes} node(s)"),
            fit,
        ));
    }
    let mut text = out.join("\n");
    text.push('\n');
    Ok(text)
}

/// A comment cut to fit the plugin's line buffer.
fn clip(mut line: String) -> String {
    if line.len() >= MAX_LINE - 1 {
        let mut cut = MAX_LINE - 5;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push_str("...");
    }
    line
}

/// World and nodes to write for: the flags, else the largest ring or tree curve measured.
fn target(fit: &FitFile, opts: &ExportOptions) -> Result<(usize, usize, String)> {
    let largest = fit
        .curves
        .iter()
        .filter(|c| ALGOS.contains(&c.key.algo))
        .map(|c| (c.key.world, c.key.nodes.max(1)))
        .chain(
            fit.models
                .iter()
                .filter(|m| ALGOS.contains(&m.algo))
                .flat_map(|m| m.worlds.iter().copied().zip(m.nodes.iter().copied())),
        )
        .max();
    let (world, nodes, from) = match (opts.npus, opts.nodes, largest) {
        (Some(p), n, _) => (p, n.unwrap_or(1), "from --npus/--nodes".to_string()),
        // Scaling out adds nodes of the ranks per node fitted, as the other exports do.
        (None, Some(n), Some((w, n0))) => {
            let per = (w / n0.max(1)).max(1);
            let world = n.saturating_mul(per);
            (world, n, format!("--nodes, {per} ranks per node as fitted"))
        }
        (None, None, Some((w, n))) => (w, n, "the largest world fitted".to_string()),
        (None, _, None) => {
            return Err(missing(
                ExportFormat::NcclTuner,
                "ring or tree curve or model",
                fit,
            ))
        }
    };
    if world < 2 || nodes == 0 || world % nodes != 0 {
        return Err(Error::usage(format!(
            "--export nccl-tuner: {world} ranks on {nodes} node(s) is not a world to tune \
             (needs 2 or more ranks, a whole number per node)"
        )));
    }
    Ok((world, nodes, from))
}

/// The candidates of `algo` for `op`: one per forced protocol the fit has for them, else one
/// of NCCL's own choice (or of a backend without protocols).
fn candidates(fit: &FitFile, op: Op, algo: Algo, at: (usize, usize)) -> Vec<Candidate<'_>> {
    let forced = |p: Option<Proto>| p.filter(|&p| p != Proto::Auto);
    let mut protos: Vec<Proto> = fit
        .curves
        .iter()
        .filter(|c| c.key.op == op && c.key.algo == algo)
        .filter_map(|c| forced(c.key.proto))
        .chain(
            fit.models
                .iter()
                .filter(|m| m.op == op && m.algo == algo)
                .filter_map(|m| forced(m.proto)),
        )
        .collect();
    protos.sort_by_key(|p| p.to_string());
    protos.dedup();
    let found: Vec<Candidate> = protos
        .iter()
        .filter_map(|&p| candidate(fit, (op, algo, Some(p)), at))
        .collect();
    if found.is_empty() {
        candidate(fit, (op, algo, None), at).into_iter().collect()
    } else {
        found
    }
}

/// How `algo` would run `op` with `proto` (`None`: auto or none) at the target: a curve
/// measured there, else a model that reaches it (single-level models are fitted on one node;
/// two-level ones span nodes).
fn candidate(
    fit: &FitFile,
    (op, algo, proto): (Op, Algo, Option<Proto>),
    (world, nodes): (usize, usize),
) -> Option<Candidate<'_>> {
    let wanted = |p: Option<Proto>| match proto {
        Some(want) => p == Some(want),
        None => proto_rank(p) == 0,
    };
    let curve: Option<&CurveFit> = fit
        .curves
        .iter()
        .filter(|c| {
            let k = &c.key;
            k.op == op && k.algo == algo && k.world == world && k.nodes.max(1) == nodes
        })
        .filter(|c| wanted(c.key.proto))
        .min_by_key(|c| {
            (
                !c.key.comm.is_default(),
                c.key.in_place,
                proto_rank(c.key.proto),
            )
        });
    if let Some(c) = curve {
        let lines = if c.segments.is_empty() {
            std::slice::from_ref(&c.line)
        } else {
            &c.segments[..]
        };
        return Some(Candidate {
            algo,
            proto,
            predictor: Predictor::Segments(lines),
        });
    }
    let forms: &[Form] = if nodes == 1 {
        &[Form::for_algo(algo), Form::TwoLevel]
    } else {
        &[Form::TwoLevel]
    };
    forms.iter().find_map(|&form| {
        fit.models
            .iter()
            .filter(|m| m.op == op && m.algo == algo && m.form == form.name())
            .filter(|m| m.params.len() == form.param_names().len() && wanted(m.proto))
            .filter(|_| form.coefficients(op, world, nodes, 1.0).is_some())
            .min_by_key(|m| (!m.comm.is_default(), m.in_place, proto_rank(m.proto)))
            .map(|m| Candidate {
                algo,
                proto,
                predictor: Predictor::Model(m, form),
            })
    })
}

/// Inclusive byte ranges and the index of the fastest candidate in each, covering 0 ..= u64::MAX.
fn ranges(cands: &[Candidate], op: Op, world: usize, nodes: usize) -> Vec<(u64, u64, usize)> {
    let best = |s: u64| -> usize {
        let mut pick = 0;
        let mut t_best = f64::INFINITY;
        for (i, c) in cands.iter().enumerate() {
            let t = c.time_us(op, world, nodes, s);
            if t < t_best {
                (pick, t_best) = (i, t);
            }
        }
        pick
    };
    // Sizes 2^(k/4), then the exact switch point by bisection between neighbours.
    let mut grid: Vec<u64> = (0..=160)
        .map(|k| 2f64.powf(k as f64 / 4.0).round() as u64)
        .collect();
    grid.dedup();
    debug_assert_eq!(grid.last(), Some(&LARGEST));
    let mut out = Vec::new();
    let (mut lo, mut cur, mut prev) = (0u64, best(1), 1u64);
    for &s in &grid[1..] {
        if best(s) != cur {
            let (mut a, mut z) = (prev, s);
            while z - a > 1 {
                let mid = a + (z - a) / 2;
                if best(mid) == cur {
                    a = mid;
                } else {
                    z = mid;
                }
            }
            out.push((lo, z - 1, cur));
            (lo, cur) = (z, best(z));
        }
        prev = s;
    }
    out.push((lo, u64::MAX, cur));
    out
}

#[cfg(test)]
#[path = "nccl_tuner_tests.rs"]
mod tests;
