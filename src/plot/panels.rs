//! Splits an op's lines over several figures when one figure would hold more lines than the
//! palette has colours: past that, colours repeat, lines cannot be told apart, and the legend
//! outgrows the figure (a `--root all` sweep of two dtypes, both placements and two algorithms
//! at 4 ranks has 32 lines). The lines are split by root, then placement, dtype, node count,
//! backend and run, each only where it varies, until every figure holds at most
//! [`MAX_LINES`] lines or nothing is left to split by. Each part's figures carry what its lines
//! share in their file name (`busbw-gather-root2`) and title; a figure that needs no split keeps
//! its name.

use std::collections::BTreeMap;

use super::figure::{Figure, PALETTE};
use super::measured::{run_name, LineKey, OpLines};
use crate::report::run_reader::Run;

/// The most lines one figure holds, when they can be split: one per palette colour.
pub const MAX_LINES: usize = PALETTE.len();

/// The lines of one figure of an op, and what they share that the op's other panels do not.
pub struct Panel<'a> {
    /// File-name parts, e.g. `["root2", "bf16"]`; empty when the op's lines were not split.
    pub names: Vec<String>,
    /// Title parts, e.g. `["root 2", "bf16"]`.
    pub captions: Vec<String>,
    pub lines: OpLines<'a>,
}

impl Panel<'_> {
    /// Puts the panel's shared values into `fig`'s file name and title.
    pub fn tag(&self, fig: &mut Figure) {
        if self.names.is_empty() {
            return;
        }
        fig.name = format!("{}-{}", fig.name, self.names.join("-"));
        fig.title = format!("{} ({})", fig.title, self.captions.join(", "));
    }
}

/// A quantity lines are split by: its file-name part and caption for one line.
type Dim = fn(&LineKey, &[Run]) -> (String, String);

/// The quantities, in the order they are split by.
const DIMS: [Dim; 6] = [
    |k, _| match k.root {
        Some(r) => (format!("root{r}"), format!("root {r}")),
        None => (String::from("unrooted"), String::from("no root")),
    },
    |k, _| match k.in_place {
        true => ("in-place".into(), "in place".into()),
        false => ("out-of-place".into(), "out of place".into()),
    },
    |k, _| (k.dtype.to_string(), k.dtype.to_string()),
    |k, _| (format!("{}nodes", k.nodes), format!("{} nodes", k.nodes)),
    |k, _| (k.backend.clone(), k.backend.clone()),
    |k, runs| {
        let name = runs.get(k.run).map_or_else(String::new, run_name);
        (format!("run{}", k.run + 1), name)
    },
];

/// The panels of one op's lines (one panel, unnamed, when they fit in one figure).
pub fn split<'a>(lines: OpLines<'a>, runs: &[Run]) -> Vec<Panel<'a>> {
    let mut panels = vec![Panel {
        names: Vec::new(),
        captions: Vec::new(),
        lines,
    }];
    for dim in DIMS {
        if panels.iter().all(|p| p.lines.len() <= MAX_LINES) {
            break;
        }
        panels = panels
            .into_iter()
            .flat_map(|p| split_by(p, dim, runs))
            .collect();
    }
    panels
}

/// `p` split by the values of `dim`, if it is too full and they vary in it.
fn split_by<'a>(p: Panel<'a>, dim: Dim, runs: &[Run]) -> Vec<Panel<'a>> {
    if p.lines.len() <= MAX_LINES {
        return vec![p];
    }
    let mut parts: BTreeMap<(String, String), OpLines<'a>> = BTreeMap::new();
    for (k, pts) in &p.lines {
        parts
            .entry(dim(k, runs))
            .or_default()
            .insert(k.clone(), pts.clone());
    }
    if parts.len() < 2 {
        return vec![p];
    }
    parts
        .into_iter()
        .map(|((name, caption), lines)| {
            let mut names = p.names.clone();
            let mut captions = p.captions.clone();
            names.push(name);
            captions.push(caption);
            Panel {
                names,
                captions,
                lines,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{Algo, DType};

    fn key(algo: Algo, dtype: DType, in_place: bool, root: Option<usize>) -> LineKey {
        LineKey {
            algo,
            proto: None,
            world: 4,
            nodes: 1,
            dtype,
            redop: crate::collective::ReduceOp::Sum,
            in_place,
            root,
            comm: Default::default(),
            traffic: None,
            group: None,
            backend: "host".into(),
            run: 0,
        }
    }

    fn lines(keys: Vec<LineKey>) -> OpLines<'static> {
        keys.into_iter().map(|k| (k, Vec::new())).collect()
    }

    fn every(roots: usize, dtypes: &[DType], algos: &[Algo]) -> Vec<LineKey> {
        let mut keys = Vec::new();
        for &algo in algos {
            for &dtype in dtypes {
                for in_place in [false, true] {
                    for r in 0..roots {
                        keys.push(key(algo, dtype, in_place, Some(r)));
                    }
                }
            }
        }
        keys
    }

    #[test]
    fn lines_that_fit_stay_in_one_unnamed_figure() {
        let keys = every(2, &[DType::F32], &[Algo::Binomial, Algo::Linear]);
        assert_eq!(keys.len(), 8);
        let panels = split(lines(keys), &[]);
        assert_eq!(panels.len(), 1);
        assert!(panels[0].names.is_empty() && panels[0].lines.len() == 8);
    }

    #[test]
    fn too_many_lines_are_split_by_root_first_then_further_as_needed() {
        let both = [DType::F32, DType::BF16];
        let two = [Algo::Binomial, Algo::Linear];
        // 4 roots x 2 placements x 2 dtypes x 2 algorithms: 8 lines per root.
        let panels = split(lines(every(4, &both, &two)), &[]);
        let names: Vec<String> = panels.iter().map(|p| p.names.join("-")).collect();
        assert_eq!(names, ["root0", "root1", "root2", "root3"]);
        assert!(panels.iter().all(|p| p.lines.len() == 8));
        assert!(panels[2].lines.keys().all(|k| k.root == Some(2)));
        // 16 per root: each root is split again by placement.
        let three = [Algo::Binomial, Algo::Linear, Algo::Ring];
        let panels = split(lines(every(2, &both, &three)), &[]);
        assert_eq!(panels.len(), 4);
        assert_eq!(panels[1].names, ["root0", "out-of-place"]);
        assert_eq!(panels[1].captions, ["root 0", "out of place"]);
        assert!(panels.iter().all(|p| p.lines.len() == 6));
    }

    #[test]
    fn lines_that_differ_only_in_what_is_never_split_stay_together() {
        let algos = [
            Algo::Ring,
            Algo::Tree,
            Algo::RecursiveDoubling,
            Algo::Pairwise,
        ];
        let mut keys = Vec::new();
        for world in 1..=3 {
            for &algo in &algos {
                let mut k = key(algo, DType::F32, false, None);
                k.world = world;
                keys.push(k);
            }
        }
        let panels = split(lines(keys), &[]);
        assert_eq!(panels.len(), 1);
        assert_eq!(panels[0].lines.len(), 12);
    }

    #[test]
    fn a_split_panel_names_its_figures() {
        let p = Panel {
            names: vec!["root1".into(), "bf16".into()],
            captions: vec!["root 1".into(), "bf16".into()],
            lines: OpLines::new(),
        };
        let mut fig = crate::plot::figure::Figure {
            name: "busbw-gather".into(),
            title: "gather bus bandwidth by message size".into(),
            x: crate::plot::measured::size_axis(),
            y: crate::plot::measured::busbw_axis(),
            series: Vec::new(),
            legend: crate::plot::figure::Legend::UpperLeft,
            note: None,
            y_from_zero: true,
        };
        p.tag(&mut fig);
        assert_eq!(fig.name, "busbw-gather-root1-bf16");
        assert_eq!(
            fig.title,
            "gather bus bandwidth by message size (root 1, bf16)"
        );
    }
}
