//! The bundled network profiles: valid fit.json files whose numbers follow from the public
//! constants they cite (docs/METHODOLOGY.md, "Projection").

use std::path::Path;

use crate::collective::{Algo, DType, Op};
use crate::fit::schema::FitFile;

/// NCCL 2.20.3 src/graph/tuning.cc: hwLat Ring/Simple over NVLink and over the network (µs).
const NVLINK_STEP_US: f64 = 3.4;
const NET_STEP_US: f64 = 14.0;
/// Assumed fractions of link bandwidth that NCCL rings reach.
const NVLINK_EFFICIENCY: f64 = 0.8;
const IB_EFFICIENCY: f64 = 0.9;
const GPUS_PER_NODE: f64 = 8.0;

/// (profile, NVLink GB/s per GPU both directions, IB GB/s per node, NCCL netOverhead µs of the
/// node's CPU: 1 on Intel, 2 on AMD).
const CLUSTERS: [(&str, f64, f64, f64); 3] = [
    ("v100-ib100", 300.0, 100.0, 1.0),
    ("a100-ib200", 600.0, 200.0, 2.0),
    ("h100-ib400", 900.0, 400.0, 1.0),
];

fn read(name: &str) -> FitFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("bench-configs/profiles")
        .join(format!("{name}.json"));
    FitFile::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn profiles_are_fit_files_with_two_level_ring_models() {
    for (name, ..) in CLUSTERS {
        let fit = read(name);
        assert!(!fit.sources.is_empty() && !fit.notes.is_empty(), "{name}");
        let ops: Vec<Op> = fit.models.iter().map(|m| m.op).collect();
        assert_eq!(
            ops,
            [Op::AllGather, Op::ReduceScatter, Op::AllReduce],
            "{name}"
        );
        for m in &fit.models {
            assert_eq!(
                (m.algo, m.dtype, m.form.as_str()),
                (Algo::Ring, DType::BF16, "two-level")
            );
            assert_eq!(m.t_quantile, 0.0);
            assert!(m.covariance.iter().flatten().all(|&c| c == 0.0));
            assert_eq!(m.covariance.len(), 4);
        }
        assert!(
            fit.sources.iter().any(|s| s.path.contains("tuning.cc")),
            "{name}"
        );
    }
}

#[test]
fn profile_parameters_follow_their_derivation() {
    for (name, nvlink, ib, overhead) in CLUSTERS {
        let want = [
            NVLINK_STEP_US,
            1.0 / (NVLINK_EFFICIENCY * nvlink / 2.0),
            NET_STEP_US + (GPUS_PER_NODE - 1.0) * NVLINK_STEP_US.max(3.0 * overhead),
            1.0 / (IB_EFFICIENCY * ib / GPUS_PER_NODE),
        ];
        for m in &read(name).models {
            let got: Vec<f64> = m.params.iter().map(|p| p.param.value).collect();
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g / w - 1.0).abs() < 1e-12,
                    "{name} {}: {got:?} vs {want:?}",
                    m.op
                );
            }
        }
    }
}

#[test]
fn embedded_profiles_are_the_files() {
    for (name, ..) in CLUSTERS {
        assert_eq!(super::specs::profile(name).unwrap(), read(name), "{name}");
    }
}
