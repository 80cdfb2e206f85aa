//! Which NCCL protocol the projection uses when a fit measured several for one op and
//! algorithm (`collbench sweep --backend nccl --proto ll,ll128,simple`).
//!
//! NCCL's own choice (`auto`) when the fit has it: that is what a training job gets without
//! `NCCL_PROTO`. Without it, the fastest of the measured protocols at each size: what NCCL's
//! tuner aims for, and the best a job forcing one protocol per size could do. A fit without
//! protocols (host, MPI) has one candidate and nothing to say. Every choice among protocols is
//! named in a note.

use crate::collective::Proto;
use crate::fit::schema::{proto_rank, CurveFit, WorldModel};

/// A curve or model that may have been measured with a protocol.
pub trait Measured {
    fn proto(&self) -> Option<Proto>;
    /// Whether `other` is the same measurement but for the protocol.
    fn same_but_proto(&self, other: &Self) -> bool;
}

impl Measured for CurveFit {
    fn proto(&self) -> Option<Proto> {
        self.key.proto
    }

    fn same_but_proto(&self, other: &Self) -> bool {
        let (a, b) = (&self.key, &other.key);
        (&a.backend, a.op, a.algo, a.dtype) == (&b.backend, b.op, b.algo, b.dtype)
            && (a.world, a.nodes.max(1), a.in_place) == (b.world, b.nodes.max(1), b.in_place)
            && (a.comm, &a.traffic) == (b.comm, &b.traffic)
    }
}

impl Measured for WorldModel {
    fn proto(&self) -> Option<Proto> {
        self.proto
    }

    fn same_but_proto(&self, other: &Self) -> bool {
        (
            &self.backend,
            self.op,
            self.algo,
            self.dtype,
            self.in_place,
            &self.form,
            self.comm,
            &self.traffic,
        ) == (
            &other.backend,
            other.op,
            other.algo,
            other.dtype,
            other.in_place,
            &other.form,
            other.comm,
            &other.traffic,
        )
    }
}

/// The candidates for `chosen` (picked with NCCL's own choice first): itself alone when it is
/// that choice or the only protocol measured, else every protocol of the same measurement.
/// The note says which was used, when the fit has protocols.
pub fn pool<'a, T: Measured>(
    chosen: &'a T,
    all: impl Iterator<Item = &'a T>,
    what: &str,
) -> (Vec<&'a T>, Option<String>) {
    let mut siblings: Vec<&T> = all.filter(|o| o.same_but_proto(chosen)).collect();
    siblings.sort_by_key(|o| o.proto());
    siblings.dedup_by_key(|o| o.proto());
    let names: Vec<&str> = siblings
        .iter()
        .filter_map(|o| o.proto())
        .map(Proto::name)
        .collect();
    let listed = names.join(", ");
    match chosen.proto() {
        None => (vec![chosen], None),
        Some(p) if proto_rank(Some(p)) == 0 => {
            let note = (names.len() > 1).then(|| {
                format!("{what}: of the protocols measured ({listed}), NCCL's own choice (auto) is used")
            });
            (vec![chosen], note)
        }
        Some(p) if siblings.len() <= 1 => (
            vec![chosen],
            Some(format!(
                "{what}: only protocol {p} was measured; it is used"
            )),
        ),
        Some(_) => {
            let note = format!(
                "{what}: protocols {listed} were measured but not auto, so the fastest of them at \
                 each size is used"
            );
            (siblings, Some(note))
        }
    }
}

/// The smallest of `time` over the pool (the pool is not empty); errors pass through.
pub fn fastest<T, E>(pool: &[&T], time: impl Fn(&T) -> Result<f64, E>) -> Result<f64, E> {
    let mut best = f64::INFINITY;
    for x in pool {
        best = best.min(time(x)?);
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{Algo, Op};
    use crate::fit::export::testfit::{curve, line, model};
    use crate::fit::forms::Form;

    fn models(protos: &[Option<Proto>]) -> Vec<WorldModel> {
        protos
            .iter()
            .map(|&p| {
                let mut m = model(
                    Op::AllReduce,
                    Algo::Ring,
                    Form::Ring,
                    &[5.0, 0.1],
                    &[(2, 1)],
                );
                m.proto = p;
                m
            })
            .collect()
    }

    fn protos(pool: &[&WorldModel]) -> Vec<Option<Proto>> {
        pool.iter().map(|m| m.proto).collect()
    }

    #[test]
    fn auto_is_used_alone_when_measured_and_said_so() {
        let all = models(&[Some(Proto::Ll), Some(Proto::Auto), Some(Proto::Simple)]);
        let (pool, note) = pool(&all[1], all.iter(), "allreduce ring");
        assert_eq!(protos(&pool), [Some(Proto::Auto)]);
        assert_eq!(
            note.unwrap(),
            "allreduce ring: of the protocols measured (ll, simple, auto), NCCL's own choice \
             (auto) is used"
        );
    }

    #[test]
    fn without_auto_every_protocol_competes_and_a_lone_one_is_named() {
        let all = models(&[Some(Proto::Simple), Some(Proto::Ll)]);
        let (p, note) = pool(&all[0], all.iter(), "allgather ring");
        assert_eq!(protos(&p), [Some(Proto::Ll), Some(Proto::Simple)]);
        assert!(note
            .unwrap()
            .contains("protocols ll, simple were measured but not auto"));
        let one = models(&[Some(Proto::Ll128)]);
        let (p, note) = pool(&one[0], one.iter(), "allgather ring");
        assert_eq!(protos(&p), [Some(Proto::Ll128)]);
        assert_eq!(
            note.unwrap(),
            "allgather ring: only protocol ll128 was measured; it is used"
        );
    }

    #[test]
    fn without_protocols_there_is_one_candidate_and_no_note() {
        let all = models(&[None]);
        let (p, note) = pool(&all[0], all.iter(), "x");
        assert_eq!((protos(&p), note), (vec![None], None));
        // Curves of another world are another measurement, not another protocol.
        let mut a = curve(Op::AllReduce, Algo::Ring, 2, 1, vec![line(8, 64, 1.0, 0.1)]);
        let mut b = curve(Op::AllReduce, Algo::Ring, 4, 1, vec![line(8, 64, 1.0, 0.1)]);
        a.key.proto = Some(Proto::Ll);
        b.key.proto = Some(Proto::Simple);
        assert!(!a.same_but_proto(&b));
        b.key.world = 2;
        assert!(a.same_but_proto(&b));
        let t = fastest(&[&1.0, &3.0, &2.0], |x: &f64| Ok::<f64, ()>(*x));
        assert_eq!(t, Ok(1.0));
    }

    /// A fit of ring AllGather with LL (2 µs, 0.5 ns/B), Simple (20 µs, 0.05 ns/B) and, when
    /// asked, Auto (10 µs, 0.1 ns/B): as cross-world models, or as curves measured at 4 ranks.
    fn allgather_fit(auto: bool, as_curves: bool) -> crate::fit::schema::FitFile {
        let mut truths = vec![(Proto::Ll, 2.0, 0.5), (Proto::Simple, 20.0, 0.05)];
        if auto {
            truths.push((Proto::Auto, 10.0, 0.1));
        }
        let (mut ms, mut cs) = (Vec::new(), Vec::new());
        for (p, a, b) in truths {
            if as_curves {
                let mut c = curve(
                    Op::AllGather,
                    Algo::Ring,
                    4,
                    1,
                    vec![line(8, 1 << 30, a, b)],
                );
                c.key.proto = Some(p);
                cs.push(c);
            } else {
                let mut m = model(
                    Op::AllGather,
                    Algo::Ring,
                    Form::Ring,
                    &[a, b],
                    &[(2, 1), (8, 1)],
                );
                m.proto = Some(p);
                ms.push(m);
            }
        }
        crate::fit::export::testfit::fit(ms, cs)
    }

    /// µs of a 4-rank AllGather of `bytes`, and the network's notes.
    fn projected_us(fit: &crate::fit::schema::FitFile, bytes: f64) -> (f64, Vec<String>) {
        let net = crate::project::comm::Network::new(fit);
        let four = crate::project::layout::Group { ranks: 4, nodes: 1 };
        let t = net.time_s(Op::AllGather, four, bytes).unwrap();
        (t * 1e6, net.notes())
    }

    fn close(got: f64, want: f64) {
        assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    }

    #[test]
    fn the_projection_takes_the_fastest_protocol_at_each_size_without_auto() {
        // Ring AllGather at p = 4: 3·alpha + 3/4·S·beta.
        let fit = allgather_fit(false, false);
        let (small, notes) = projected_us(&fit, 1e3);
        close(small, 3.0 * 2.0 + 0.75 * 0.5); // LL
        let (large, _) = projected_us(&fit, 1e8);
        close(large, 3.0 * 20.0 + 0.75 * 1e5 * 0.05); // Simple
        assert!(
            notes.iter().any(|n| n
                == "allgather ring: protocols ll, simple were measured \
                but not auto, so the fastest of them at each size is used"),
            "{notes:?}"
        );
        // Measured at the group's own size: the curves, the same rule.
        let fit = allgather_fit(false, true);
        close(projected_us(&fit, 1e3).0, 2.0 + 0.5);
        close(projected_us(&fit, 1e8).0, 20.0 + 1e5 * 0.05);
    }

    #[test]
    fn the_projection_takes_auto_when_measured() {
        let fit = allgather_fit(true, false);
        let (small, notes) = projected_us(&fit, 1e3);
        close(small, 3.0 * 10.0 + 0.75 * 0.1);
        close(projected_us(&fit, 1e8).0, 30.0 + 0.75 * 1e5 * 0.1);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("NCCL's own choice (auto) is used")),
            "{notes:?}"
        );
        let fit = allgather_fit(true, true);
        close(projected_us(&fit, 1e8).0, 10.0 + 1e5 * 0.1);
    }
}
