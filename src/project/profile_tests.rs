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
        let rings = fit.models.iter().filter(|m| m.algo == Algo::Ring);
        let ops: Vec<Op> = rings.clone().map(|m| m.op).collect();
        assert_eq!(
            ops,
            [Op::AllGather, Op::ReduceScatter, Op::AllReduce],
            "{name}"
        );
        for m in rings {
            assert_eq!((m.dtype, m.form.as_str()), (DType::BF16, "two-level"));
            assert_eq!(m.covariance.len(), 4);
        }
        for m in &fit.models {
            assert_eq!(m.t_quantile, 0.0);
            assert!(m.covariance.iter().flatten().all(|&c| c == 0.0));
            assert!(m.selected && m.worlds.len() == 9 && m.nodes == fit.models[0].nodes);
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
        for m in read(name).models.iter().filter(|m| m.algo == Algo::Ring) {
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

/// NCCL 2.30.7 src/graph/tuning.cc: hwLat Tree/Simple over NVLink and the network (lines 159,
/// 171), NVLS and NVLSTree/Simple (lines 161, 173); perChMaxTreeBws beyond 2 nodes (lines
/// 200-202); 16 channels assumed; the tree graph's total bandwidth taken as the ring's 90% of IB.
#[test]
fn tree_and_nvls_models_follow_nccl_tuning() {
    let caps = [10.0, 17.8, 36.0];
    for ((name, _, ib, _), cap) in CLUSTERS.into_iter().zip(caps) {
        let fit = read(name);
        let tree: Vec<_> = fit.models.iter().filter(|m| m.algo == Algo::Tree).collect();
        assert_eq!(tree.len(), 1, "{name}");
        let (m, bus) = (tree[0], f64::min(0.92 * IB_EFFICIENCY * ib, 16.0 * cap));
        assert_eq!((m.op, m.form.as_str()), (Op::AllReduce, "nccl-tree"));
        assert_params(m, [4.0, 14.0, 1.0 / (0.5 * bus)]);
        let nvls: Vec<_> = fit.models.iter().filter(|m| m.algo == Algo::Nvls).collect();
        assert_eq!(nvls.len(), usize::from(name == "h100-ib400"), "{name}");
        if let Some(m) = nvls.first() {
            // busBw = 16 · min(22.5 · 0.85 · 15/16 · 2, 22.5, 45.5) = 360 GB/s.
            let per_channel = IB_EFFICIENCY * ib / 16.0;
            let intra = per_channel * 0.85 * 15.0 / 16.0 * 2.0;
            let bus = 16.0 * intra.min(per_channel).min(45.5);
            assert_eq!(m.form, "nvls-tree");
            assert_params(m, [25.0, 20.9, 1.0 / bus]);
            assert!((bus - 360.0).abs() < 1e-9);
        }
        assert!(fit.notes.iter().any(|n| n.contains("v2.30.7")), "{name}");
    }
}

fn assert_params(m: &crate::fit::schema::WorldModel, want: [f64; 3]) {
    let got: Vec<f64> = m.params.iter().map(|p| p.param.value).collect();
    assert_eq!(got.len(), 3);
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g / w - 1.0).abs() < 1e-12,
            "{} {}: {got:?} vs {want:?}",
            m.op,
            m.algo
        );
    }
}
