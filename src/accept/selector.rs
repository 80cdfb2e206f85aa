//! Which measured points a criterion applies to: its `op`, `algo`, `proto`, `dtype`, `world`,
//! `nodes`, `in_place` and size-window keys. Pure.

use crate::collective::{Algo, DType, Op, Proto};
use crate::units::format_size;

/// Which points a criterion applies to; an empty list or `None` matches anything.
#[derive(Clone, Debug, PartialEq)]
pub struct Selector {
    pub ops: Vec<Op>,
    pub algos: Vec<Algo>,
    /// NCCL protocols; a point without one (host, MPI) matches only an empty list.
    pub protos: Vec<Proto>,
    pub dtypes: Vec<DType>,
    pub worlds: Vec<usize>,
    pub nodes: Option<usize>,
    pub in_place: Option<bool>,
    /// Size window on the measured `bytes`, both ends included.
    pub min_bytes: usize,
    pub max_bytes: usize,
}

impl Selector {
    /// Whether a point with these keys is selected.
    #[allow(clippy::too_many_arguments)]
    pub fn matches(
        &self,
        op: Op,
        algo: Algo,
        proto: Option<Proto>,
        dtype: DType,
        world: usize,
        nodes: Option<usize>,
        bytes: usize,
        in_place: bool,
    ) -> bool {
        let any_or = |list_empty: bool, hit: bool| list_empty || hit;
        any_or(self.ops.is_empty(), self.ops.contains(&op))
            && any_or(self.algos.is_empty(), self.algos.contains(&algo))
            && any_or(
                self.protos.is_empty(),
                proto.is_some_and(|p| self.protos.contains(&p)),
            )
            && any_or(self.dtypes.is_empty(), self.dtypes.contains(&dtype))
            && any_or(self.worlds.is_empty(), self.worlds.contains(&world))
            && match (self.nodes, nodes) {
                (Some(want), Some(have)) => want == have,
                _ => true,
            }
            && self.in_place.map_or(true, |p| p == in_place)
            && (self.min_bytes..=self.max_bytes).contains(&bytes)
    }

    /// The selector as text, e.g. `op allreduce, world 2, 1 MiB..64 MiB`.
    pub fn describe(&self) -> String {
        fn list<T: std::fmt::Display>(key: &str, v: &[T]) -> Option<String> {
            (!v.is_empty()).then(|| {
                let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                format!("{key} {}", items.join("/"))
            })
        }
        let mut parts: Vec<String> = [
            list("op", &self.ops),
            list("algo", &self.algos),
            list("proto", &self.protos),
            list("dtype", &self.dtypes),
            list("world", &self.worlds),
            self.nodes.map(|n| format!("nodes {n}")),
            self.in_place.map(|p| format!("in_place {p}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        parts.push(self.window());
        parts.join(", ")
    }

    /// The size window as text.
    pub fn window(&self) -> String {
        match (self.min_bytes, self.max_bytes) {
            (0, usize::MAX) => "any size".into(),
            (lo, usize::MAX) => format!("sizes >= {}", format_size(lo)),
            (0, hi) => format!("sizes <= {}", format_size(hi)),
            (lo, hi) => format!("sizes {}..{}", format_size(lo), format_size(hi)),
        }
    }
}
