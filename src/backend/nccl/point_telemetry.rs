//! NVML telemetry around each point of the NCCL sweep: every member rank samples its own GPU
//! ([`Telemetry`]) from just before NCCL's estimate and the warm-up until the checked call has
//! finished, sends what it measured to rank 0 through the store, and rank 0 writes the rows to
//! telemetry.csv before the point's summary row.

use super::gpu::Gpu;
use super::telemetry::{DeviceRef, GpuPoint, Telemetry, TelemetryRow};
use crate::model::plan::Point;

/// Starts sampling the rank's GPU, found by PCI bus id (NVML numbers GPUs differently from
/// CUDA under `CUDA_VISIBLE_DEVICES`). Rank 0 says once when NVML cannot run; the others
/// stay silent, so a node does not print the same line per GPU.
pub fn start(rank: usize, gpu: &Gpu) -> Telemetry {
    let device = match gpu.pci_bus_id() {
        Some(id) => DeviceRef::PciBusId(id),
        None => DeviceRef::Index(gpu.ordinal as u32),
    };
    let interval = Telemetry::DEFAULT_INTERVAL;
    if rank == 0 {
        Telemetry::start(&[device], interval)
    } else {
        Telemetry::open(&[device], interval)
    }
}

/// Collective calls a member makes inside the telemetry window of `p` with `agg` calls per
/// iteration (`--agg`): warm-up, timed and loop iterations, and the one call whose output is
/// checked.
pub fn calls(p: &Point, agg: usize) -> u64 {
    ((p.warmup + 2 * p.iters) as u64).saturating_mul(agg.max(1) as u64) + 1
}

/// A rank's telemetry as gathered (JSON; empty for a rank outside the point's group).
pub fn encode(points: &[GpuPoint]) -> Vec<u8> {
    if points.is_empty() {
        return Vec::new();
    }
    serde_json::to_vec(points).unwrap_or_default()
}

/// The telemetry.csv rows of a point from every rank's part, in rank order. A part that does
/// not decode gives an empty row for that rank rather than stopping the run: the timing is
/// what the point is for.
pub fn rows(all: &[Vec<u8>]) -> Vec<TelemetryRow> {
    let mut out = Vec::new();
    for (rank, part) in all.iter().enumerate().filter(|(_, b)| !b.is_empty()) {
        let points: Vec<GpuPoint> =
            serde_json::from_slice(part).unwrap_or_else(|_| vec![GpuPoint::default()]);
        out.extend(points.into_iter().map(|gp| gp.row(rank)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::nccl::gpu::pci_bus_id;
    use crate::report::telemetry_csv::PointTelemetry;

    #[test]
    fn energy_is_shared_by_every_call_of_the_window_grouped_ones_included() {
        use crate::collective::{Algo, DType, Op, ReduceOp, Shape};
        let call = crate::model::call::Call {
            op: Op::AllReduce,
            algo: Algo::Auto,
            dtype: DType::F32,
            redop: ReduceOp::Sum,
            shape: Shape::new(Op::AllReduce, DType::F32, 1024, 2),
            root: 0,
        };
        let p = Point {
            call,
            world: 2,
            nodes: 1,
            pair: None,
            in_place: false,
            requested: 1024,
            iters: 20,
            warmup: 5,
            timing: Default::default(),
            cycle: 0,
            traffic: None,
            split: None,
            compute: None,
        };
        assert_eq!(calls(&p, 1), 5 + 40 + 1);
        assert_eq!(calls(&p, 4), (5 + 40) * 4 + 1);
        assert_eq!(calls(&p, 0), 46, "no grouping is one call per iteration");
    }

    #[test]
    fn parts_become_rows_of_their_ranks() {
        let mut gp = GpuPoint::default();
        gp.gpu.name = "NVIDIA H100 80GB HBM3".into();
        gp.telemetry = PointTelemetry {
            samples: 12,
            power_w_mean: Some(412.5),
            ..PointTelemetry::default()
        };
        let all = vec![
            encode(&[gp.clone()]),
            encode(&[]),
            encode(&[gp]),
            b"junk".to_vec(),
        ];
        let rows = rows(&all);
        assert_eq!(rows.iter().map(|r| r.rank).collect::<Vec<_>>(), [0, 2, 3]);
        assert_eq!(rows[1].telemetry.power_w_mean, Some(412.5));
        assert_eq!(rows[1].gpu.name, "NVIDIA H100 80GB HBM3");
        assert_eq!(rows[2].telemetry, PointTelemetry::default());
    }

    #[test]
    fn bus_ids_are_written_as_nvml_reads_them() {
        assert_eq!(pci_bus_id(0, 0x18, 0), "00000000:18:00.0");
        assert_eq!(pci_bus_id(1, 0xdb, 3), "00000001:db:03.0");
    }
}
