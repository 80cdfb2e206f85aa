//! An MPI world as the sweep drives it: the communicator of each world size, the hosts of the
//! ranks, one point measured on this rank (warm-up, barrier-timed iterations, exact check) and
//! the payload every rank sends to world rank 0.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;

use super::call::MpiBuffers;
use super::raw::Handles;
use crate::error::Result;
use crate::model::plan::Point;
use crate::model::topology::Topology;

/// Calls this rank has made (every warm-up, timed, loop and checked call, and every point): the
/// stall watchdog's sign of progress (`crate::sweep::mpi`).
pub static PROGRESS: AtomicU64 = AtomicU64::new(0);

fn progressed() {
    PROGRESS.fetch_add(1, Ordering::Relaxed);
}

/// The communicator of each world size: `Some` on its first `p` ranks, `None` elsewhere.
pub struct Groups(Vec<(usize, Option<SimpleCommunicator>)>);

impl Groups {
    /// Splits `world` once per distinct size (collective over the world, same order on every
    /// rank since every rank expands the same options).
    pub fn split(world: &SimpleCommunicator, sizes: &[usize]) -> Groups {
        let rank = world.rank();
        let mut groups = Vec::new();
        for &p in sizes {
            if groups.iter().any(|(q, _)| *q == p) {
                continue;
            }
            let member = usize::try_from(rank).is_ok_and(|r| r < p);
            let color = if member {
                Color::with_value(0)
            } else {
                Color::undefined()
            };
            groups.push((p, world.split_by_color_with_key(color, rank)));
        }
        Groups(groups)
    }

    pub fn of(&self, p: usize) -> Option<&SimpleCommunicator> {
        self.0.iter().find(|(q, _)| *q == p)?.1.as_ref()
    }
}

/// Every rank's node name, gathered on every rank (64 bytes each; as the host backend names
/// nodes: `COLLBENCH_NODE_NAME`, Slurm's, the host name), as the launch's topology.
pub fn hosts(world: &SimpleCommunicator) -> Topology {
    const LEN: usize = 64;
    let name = crate::launch::rendezvous::node_name();
    let mut mine = [0u8; LEN];
    let n = name.len().min(LEN);
    mine[..n].copy_from_slice(&name.as_bytes()[..n]);
    let mut all = vec![0u8; LEN * world.size() as usize];
    world.all_gather_into(&mine[..], &mut all[..]);
    let names: Vec<String> = all
        .chunks_exact(LEN)
        .map(|c| {
            String::from_utf8_lossy(c)
                .trim_end_matches('\0')
                .to_string()
        })
        .collect();
    Topology::from_hosts(&names)
}

/// This rank's part of one point: `[member, wrong, loop time bits, time bits...]` (zeros
/// where not a member).
pub fn point_payload(
    world: &SimpleCommunicator,
    groups: &Groups,
    point: &Point,
    bufs: (&mut MpiBuffers, &Handles),
) -> Result<Vec<u64>> {
    // Every rank meets here, so rank 0 has written the previous point before this one starts.
    world.barrier();
    progressed();
    let mut payload = vec![0u64; 3 + point.iters];
    if let Some(comm) = groups.of(point.world) {
        let (times, loop_us, wrong) = measure(comm, point, bufs)?;
        payload[0] = 1;
        payload[1] = wrong;
        payload[2] = loop_us.to_bits();
        for (slot, t) in payload[3..].iter_mut().zip(&times) {
            *slot = t.to_bits();
        }
    }
    Ok(payload)
}

/// The members' times, wrong counts and loop times, in rank order, from the gathered payloads.
pub fn members_samples(all: &[u64], len: usize) -> (Vec<Vec<f64>>, Vec<u64>, Vec<f64>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for c in all.chunks_exact(len).filter(|c| c.len() >= 3 && c[0] == 1) {
        out.0
            .push(c[3..].iter().map(|&b| f64::from_bits(b)).collect());
        out.1.push(c[1]);
        out.2.push(f64::from_bits(c[2]));
    }
    out
}

/// Warm-up, timed iterations, nccl-tests' loop, then the correctness check: this rank's time
/// of every timed iteration and of one call of the loop in microseconds, and the wrong
/// elements in its output.
fn measure(
    comm: &SimpleCommunicator,
    p: &Point,
    (bufs, h): (&mut MpiBuffers, &Handles),
) -> Result<(Vec<f64>, f64, u64)> {
    let (size, rank) = (comm.size() as usize, comm.rank() as usize);
    let call = MpiBuffers::prepare(comm, p, h)?;
    bufs.fill(p, size, rank);
    for _ in 0..p.warmup {
        comm.barrier();
        bufs.call(&call, p)?;
        progressed();
    }
    // Allocated before timing so the timed loop never allocates.
    let mut times = Vec::with_capacity(p.iters);
    let agg = p.timing.agg.max(1);
    for _ in 0..p.iters {
        comm.barrier();
        let start = Instant::now();
        // nccl-tests -m: the iteration's calls back to back, each the iteration's share.
        for _ in 0..agg {
            bufs.call(&call, p)?;
        }
        times.push(start.elapsed().as_nanos() as f64 / 1e3 / agg as f64);
        progressed();
    }
    // nccl-tests' timing (`common.cu`, its default): one barrier, then the calls back to back,
    // this rank's wall clock over the loop divided by the calls. A blocking MPI call returns
    // when this rank's part is done, as nccl-tests -z 1 waits.
    let iters = p.iters.max(1);
    comm.barrier();
    let start = Instant::now();
    for _ in 0..iters {
        for _ in 0..agg {
            bufs.call(&call, p)?;
        }
        progressed();
    }
    let loop_us = start.elapsed().as_nanos() as f64 / 1e3 / (iters * agg) as f64;
    bufs.fill(p, size, rank);
    comm.barrier();
    bufs.call(&call, p)?;
    progressed();
    Ok((times, loop_us, bufs.check(p, (size, rank), &call)))
}

#[cfg(test)]
mod tests {
    use super::members_samples;

    #[test]
    fn non_members_are_left_out_in_rank_order() {
        let t = |us: f64| us.to_bits();
        let all = [1, 0, t(1.5), t(2.0), 0, 0, 0, 0, 1, 3, t(4.5), t(5.0)];
        let (times, wrong, loops) = members_samples(&all, 4);
        assert_eq!(times, vec![vec![2.0], vec![5.0]]);
        assert_eq!(wrong, vec![0, 3]);
        assert_eq!(loops, vec![1.5, 4.5]);
    }
}
