//! How far a prediction lies beyond the measured worlds, and what that does to its interval.
//!
//! A model's `extrapolation` error was measured predicting its largest world from the smaller
//! ones, a step of `log2(largest / from_world)` doublings. Beyond the largest world the
//! interval is widened by that error per such step: `rel = err · log2(world / largest) /
//! log2(largest / from_world)`, added on both sides of the mean's confidence interval. Beyond
//! [`WARN_FACTOR`] times the largest world the answer carries a warning: the form's shape was
//! never tested that far.

use super::super::schema::WorldModel;

/// Beyond this multiple of the largest fitted world a prediction is a guess.
pub const WARN_FACTOR: f64 = 4.0;

/// The widening of one prediction.
#[derive(Clone, Debug, PartialEq)]
pub struct Beyond {
    /// world / largest fitted world (≤ 1 inside the measured range).
    pub factor: f64,
    /// The model's error predicting its largest world from the smaller ones, if validated.
    pub held_out_rel_err: Option<f64>,
    /// The relative half-width added to the interval.
    pub widen_rel: f64,
    pub warning: Option<String>,
}

/// The widening for `world` from model `m`, whose way of predicting had `held_out_rel_err` on
/// the model's largest world (None: never validated).
pub fn beyond(m: &WorldModel, world: usize, held_out_rel_err: Option<f64>) -> Beyond {
    let largest = m.worlds.iter().copied().max().unwrap_or(0).max(1) as f64;
    let factor = world as f64 / largest;
    let e = m.extrapolation.as_ref();
    let step = e.map_or(1.0, |e| {
        (largest / e.from_world.max(1) as f64).log2().max(1e-9)
    });
    let widen_rel = match held_out_rel_err {
        Some(err) if factor > 1.0 => err * factor.log2() / step,
        _ => 0.0,
    };
    let warning = (factor > WARN_FACTOR).then(|| warning(m, world, largest, factor, e.is_some()));
    Beyond {
        factor,
        held_out_rel_err,
        widen_rel,
        warning,
    }
}

fn warning(m: &WorldModel, world: usize, largest: f64, factor: f64, validated: bool) -> String {
    format!(
        "world {world} is {factor:.1}x the largest world the {} model was fitted on ({largest}); \
         beyond {WARN_FACTOR}x its shape is untested{}: measure a larger world if you can",
        m.form,
        if validated {
            ", and its interval grows with the distance"
        } else {
            " and it was never validated on a held-out world"
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{Algo, Op};
    use crate::fit::export::testfit::model;
    use crate::fit::forms::Form;
    use crate::fit::schema::Extrapolation;

    fn validated(err: f64) -> WorldModel {
        let mut m = model(
            Op::AllReduce,
            Algo::Ring,
            Form::Ring,
            &[1.0, 0.1],
            &[(8, 1), (16, 1), (32, 1)],
        );
        m.extrapolation = Some(Extrapolation {
            world: 32,
            nodes: 1,
            from_world: 16,
            rel_err_mean: err,
            rel_err_max: err,
            anchored_rel_err_mean: Some(err / 2.0),
            naive_rel_err_mean: None,
        });
        m
    }

    #[test]
    fn the_interval_grows_by_the_held_out_error_per_doubling() {
        let m = validated(0.05);
        // Inside the measured worlds nothing changes.
        assert_eq!(beyond(&m, 16, Some(0.05)).widen_rel, 0.0);
        assert_eq!(beyond(&m, 32, Some(0.05)).widen_rel, 0.0);
        // Two doublings beyond 32 (the held-out step was one doubling): 2 × 5%.
        let b = beyond(&m, 128, Some(0.05));
        assert!((b.widen_rel - 0.10).abs() < 1e-12, "{b:?}");
        assert_eq!(b.factor, 4.0);
        assert!(b.warning.is_none());
        let far = beyond(&m, 256, Some(0.05));
        assert!(
            far.warning.as_deref().unwrap().contains("8.0x the largest"),
            "{far:?}"
        );
    }

    #[test]
    fn an_unvalidated_model_is_not_widened_but_warned() {
        let mut m = validated(0.05);
        m.extrapolation = None;
        let b = beyond(&m, 1024, None);
        assert_eq!((b.widen_rel, b.held_out_rel_err), (0.0, None));
        assert!(b.warning.unwrap().contains("never validated"));
    }
}
