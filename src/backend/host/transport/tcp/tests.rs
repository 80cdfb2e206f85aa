//! Real loopback sockets and real threads, one per rank: the data path (collectives, message
//! boundaries, partial elements). Refusals and failures are in `fault_tests`.

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Barrier};
use std::thread;

use super::flow::Inflow;
use super::*;
use crate::backend::host::algo::{self, Buffers, Elements, Group};
use crate::backend::host::run;
use crate::backend::host::transport::Combine;
use crate::check::{count_wrong, fill_input};
use crate::collective::{Algo, DType, Layout, Op, ReduceOp, Shape};
use crate::model::call::Call;

pub(super) const TOKEN: u64 = 0x5eed_cafe_f00d_0001;
pub(super) const TIMEOUT: Duration = Duration::from_secs(10);

pub(super) fn listeners(n: usize) -> (Vec<TcpListener>, Vec<SocketAddr>) {
    let ls: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let addrs = ls.iter().map(|l| l.local_addr().unwrap()).collect();
    (ls, addrs)
}

/// A connected mesh of `n` ranks, each connecting from its own thread.
pub(super) fn mesh(n: usize, timeout: Duration) -> Vec<TcpTransport> {
    let (ls, addrs) = listeners(n);
    thread::scope(|s| {
        let handles: Vec<_> = ls
            .into_iter()
            .enumerate()
            .map(|(r, l)| {
                let addrs = &addrs;
                s.spawn(move || TcpTransport::connect(r, n, l, addrs, TOKEN, timeout))
            })
            .collect();
        let ts: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        ts.into_iter().map(|t| t.unwrap()).collect()
    })
}

/// Runs `f` on every rank in its own thread; results in rank order.
pub(super) fn on_ranks<R: Send>(
    ts: &mut [TcpTransport],
    f: impl Fn(&mut TcpTransport) -> R + Sync,
) -> Vec<R> {
    thread::scope(|s| {
        let f = &f;
        let hs: Vec<_> = ts.iter_mut().map(|t| s.spawn(move || f(t))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Runs `call` with the exact-result pattern of `check`, returns the count of wrong elements.
fn run_checked(
    t: &mut TcpTransport,
    n: usize,
    call: &Call,
    in_place: bool,
    scratch: &mut Vec<u8>,
) -> Result<u64> {
    let g = Group::first(n, t.rank()).unwrap();
    let (op, sh) = (call.op, &call.shape);
    let own = |b: usize| g.me * b..(g.me + 1) * b;
    if in_place {
        let mut buf = vec![0u8; sh.in_bytes.max(sh.out_bytes)];
        let target = match op.layout() {
            Layout::Collect => &mut buf[own(sh.in_bytes)],
            Layout::Whole | Layout::Distribute | Layout::Exchange | Layout::Uneven => &mut buf[..],
        };
        fill_input(call, n, g.me, target);
        run(t, &g, (call, None), Buffers::InPlace(&mut buf), scratch)?;
        let out = match op.layout() {
            Layout::Distribute => &buf[own(sh.out_bytes)],
            Layout::Whole | Layout::Collect | Layout::Exchange | Layout::Uneven => &buf[..],
        };
        Ok(count_wrong(call, n, g.me, out))
    } else {
        let mut input = vec![0u8; sh.in_bytes];
        let mut output = vec![0u8; sh.out_bytes];
        fill_input(call, n, g.me, &mut input);
        let bufs = Buffers::OutOfPlace {
            input: &input,
            output: &mut output,
        };
        run(t, &g, (call, None), bufs, scratch)?;
        Ok(count_wrong(call, n, g.me, &output))
    }
}

/// Every (op, algorithm) of the host backend for `n` ranks, in and out of place: f32 and i32 with
/// 0, 1, 7 and 1001 elements, f32 also with 1 MiB + 3 elements (four staging buffers, more than
/// one ring slice); per rank where the op splits the buffer; the rooted ops from the first and
/// the last rank. The exact check's pattern costs more than the transfer, so the large size
/// runs once per shape. AllToAllV runs with its traffic in `uneven_tests`.
fn cases(n: usize) -> Vec<(Call, bool)> {
    let mut v = Vec::new();
    let uniform = |op: &&Op| op.runs_at(n) && op.layout() != Layout::Uneven;
    for &op in Op::ALL.iter().filter(uniform) {
        for &algo in op.host_algos() {
            for dtype in [DType::F32, DType::I32] {
                let el = dtype.size();
                let per = match op.layout() {
                    Layout::Collect | Layout::Distribute => n,
                    Layout::Whole | Layout::Exchange | Layout::Uneven => 1,
                };
                let large = (dtype == DType::F32).then_some((1 << 20) / el + 3);
                let roots = if op.rooted() { vec![0, n - 1] } else { vec![0] };
                for elems in [0, 1, 7, 1001].into_iter().chain(large) {
                    for (in_place, &root) in [false, true]
                        .into_iter()
                        .flat_map(|i| roots.iter().map(move |r| (i, r)))
                    {
                        let shape = Shape::new(op, dtype, elems * el * per, n);
                        let redop = ReduceOp::Sum;
                        let call = Call {
                            op,
                            algo,
                            dtype,
                            redop,
                            shape,
                            root,
                        };
                        v.push((call, in_place));
                    }
                }
            }
        }
    }
    v
}

#[test]
fn every_host_algorithm_is_exact_over_tcp() {
    for n in [2, 3, 4] {
        let abort = Arc::new(AtomicBool::new(false));
        let mut ts: Vec<_> = mesh(n, TIMEOUT)
            .into_iter()
            .map(|t| t.with_abort(abort.clone()))
            .collect();
        let sync = Barrier::new(n);
        let failures = on_ranks(&mut ts, |t| {
            let mut scratch = Vec::new();
            let mut failures = Vec::new();
            for (call, in_place) in cases(n) {
                let t0 = Instant::now();
                let res = run_checked(t, n, &call, in_place, &mut scratch);
                if t.rank() == 0 && t0.elapsed() > Duration::from_millis(40) {
                    eprintln!(
                        "SLOW {n} {} {} {} {} {in_place} {:?}",
                        call.op,
                        call.algo,
                        call.dtype,
                        call.shape.bytes,
                        t0.elapsed()
                    );
                }
                if res.is_err() {
                    abort.store(true, Ordering::Relaxed);
                }
                // Between calls every stream must be empty: nothing sent that was not received.
                sync.wait();
                let idle = t.expect_idle();
                if idle.is_err() {
                    abort.store(true, Ordering::Relaxed);
                }
                sync.wait();
                if !matches!((&res, &idle), (Ok(0), Ok(()))) {
                    let (op, algo, dtype) = (call.op, call.algo, call.dtype);
                    let what = format!("{op} {algo} {dtype} {} B", call.shape.bytes);
                    failures.push(format!(
                        "{n} ranks, rank {}, {what} in_place={in_place}: {res:?} {idle:?}",
                        t.rank()
                    ));
                }
                if abort.load(Ordering::Relaxed) {
                    break;
                }
            }
            failures
        });
        let failures: Vec<String> = failures.into_iter().flatten().collect();
        assert!(failures.is_empty(), "{failures:#?}");
    }
}

#[test]
fn allreduce_sums_known_integers() {
    let n = 3;
    let count = (3 << 20) / 4 + 5;
    let mut ts = mesh(n, TIMEOUT);
    on_ranks(&mut ts, |t| {
        let g = Group::first(n, t.rank()).unwrap();
        let e = Elements {
            dtype: DType::I32,
            redop: ReduceOp::Sum,
        };
        let input: Vec<i32> = (0..count).map(|i| (g.me * 1000 + i) as i32).collect();
        let want: Vec<i32> = (0..count).map(|i| (1000 * 3 + 3 * i) as i32).collect();
        let mut scratch = Vec::new();
        for algo in [Algo::Ring, Algo::Tree, Algo::RecursiveDoubling] {
            let mut out = vec![0i32; count];
            let bufs = Buffers::OutOfPlace {
                input: bytemuck::cast_slice(&input),
                output: bytemuck::cast_slice_mut(&mut out),
            };
            match algo {
                Algo::Ring => algo::ring::allreduce(t, &g, bufs, count, e),
                Algo::Tree => algo::tree::allreduce(t, &g, bufs, e),
                Algo::RecursiveDoubling => algo::doubling::allreduce(t, &g, bufs, e, &mut scratch),
                _ => unreachable!("not in the list above"),
            }
            .unwrap();
            assert!(out == want, "{algo}: rank {} got a wrong sum", g.me);
        }
    });
}

#[test]
fn reductions_combine_whole_elements_across_any_cut() {
    let count = 1001;
    let a: Vec<f64> = (0..count).map(|i| i as f64 * 0.5).collect();
    let b: Vec<f64> = (0..count).map(|i| (i * 3) as f64).collect();
    let local = vec![2.0f64; count];
    let local_bytes: &[u8] = bytemuck::cast_slice(&local);
    let (dtype, op) = (DType::F64, ReduceOp::Sum);
    let hows = [
        Combine::Copy,
        Combine::Reduce { dtype, op },
        Combine::ReduceWith {
            dtype,
            op,
            local: local_bytes,
        },
    ];
    for (k, how) in hows.into_iter().enumerate() {
        let want: Vec<f64> = match k {
            0 => b.clone(),
            1 => a.iter().zip(&b).map(|(x, y)| x + y).collect(),
            _ => b.iter().map(|y| 2.0 + y).collect(),
        };
        for cuts in [&[1usize][..], &[3], &[5, 2, 13, 1], &[4096]] {
            let mut out = a.clone();
            let incoming: &[u8] = bytemuck::cast_slice(&b);
            // 60 bytes: not even a multiple of the element size.
            let mut staging = vec![0u8; 60];
            let mut inflow = Inflow::new(bytemuck::cast_slice_mut(&mut out), how);
            let mut step = 0;
            while !inflow.finished() {
                let cap = staging.len().min(inflow.out.len() - inflow.done);
                let at = inflow.done + inflow.pend;
                let take = cuts[step % cuts.len()].min(cap - inflow.pend);
                staging[inflow.pend..inflow.pend + take].copy_from_slice(&incoming[at..at + take]);
                inflow.absorb(&mut staging, take);
                assert!(inflow.pend < 8);
                step += 1;
            }
            assert!(out == want, "combine {k} with cuts {cuts:?}");
        }
    }
}

#[test]
fn messages_keep_their_boundaries_and_extra_bytes_are_caught() {
    let mut ts = mesh(2, TIMEOUT);
    let sizes = [5usize, 0, 300_001, 12];
    let msg = |k: usize, len: usize| -> Vec<u8> { (0..len).map(|i| (i * 7 + k) as u8).collect() };
    let ints: Vec<i32> = (0..1001).collect();
    on_ranks(&mut ts, |t| {
        if t.rank() == 0 {
            for (k, &len) in sizes.iter().enumerate() {
                t.send(1, &msg(k, len)).unwrap();
            }
            t.send(1, bytemuck::cast_slice(&ints)).unwrap();
            t.send(1, bytemuck::cast_slice(&ints)).unwrap();
            t.send(1, &[1, 2, 3]).unwrap();
            return;
        }
        for (k, &len) in sizes.iter().enumerate() {
            let mut buf = vec![0u8; len];
            t.recv(0, &mut buf, Combine::Copy).unwrap();
            assert!(buf == msg(k, len), "message {k}");
        }
        let (dtype, op) = (DType::I32, ReduceOp::Sum);
        let mut acc = vec![1i32; 1001];
        let how = Combine::Reduce { dtype, op };
        t.recv(0, bytemuck::cast_slice_mut(&mut acc), how).unwrap();
        assert!(acc.iter().enumerate().all(|(i, &v)| v == i as i32 + 1));
        let local = vec![10i32; 1001];
        let how = Combine::ReduceWith {
            dtype,
            op,
            local: bytemuck::cast_slice(&local),
        };
        let mut out = vec![0i32; 1001];
        t.recv(0, bytemuck::cast_slice_mut(&mut out), how).unwrap();
        assert!(out.iter().enumerate().all(|(i, &v)| v == i as i32 + 10));
        // Three bytes nobody asked for.
        let start = Instant::now();
        let err = loop {
            match t.expect_idle() {
                Err(e) => break e.to_string(),
                // Loopback delivers them at once; the bound only catches a hang.
                Ok(()) if start.elapsed() < Duration::from_secs(30) => {
                    thread::sleep(Duration::from_millis(5))
                }
                Ok(()) => panic!("the extra bytes were never noticed"),
            }
        };
        assert!(
            err.contains("rank 0") && err.contains("no receive asked for"),
            "{err}"
        );
    });
}

/// 64 MiB over TCP, exact on every element of every rank; what loopback gives is printed for
/// the record (`--nocapture`), never asserted.
#[test]
fn loopback_ring_allreduce_of_64_mib_is_exact() {
    let (n, bytes) = (2, 64 << 20);
    let mut ts = mesh(n, TIMEOUT);
    let times = on_ranks(&mut ts, |t| {
        let g = Group::first(n, t.rank()).unwrap();
        let e = Elements {
            dtype: DType::F32,
            redop: ReduceOp::Sum,
        };
        let ones = vec![1.0f32; bytes / 4];
        let input: &[u8] = bytemuck::cast_slice(&ones);
        let mut sums = vec![0f32; bytes / 4];
        let mut best = Duration::MAX;
        for _ in 0..4 {
            algo::barrier(t, &g).unwrap();
            let start = Instant::now();
            let bufs = Buffers::OutOfPlace {
                input,
                output: bytemuck::cast_slice_mut(&mut sums),
            };
            algo::ring::allreduce(t, &g, bufs, bytes / 4, e).unwrap();
            best = best.min(start.elapsed());
            let wrong = sums.iter().filter(|&&v| v != n as f32).count();
            assert_eq!(
                wrong,
                0,
                "rank {}: {wrong} of {} elements wrong",
                t.rank(),
                sums.len()
            );
            sums.fill(0.0);
        }
        best
    });
    let t = times.into_iter().max().unwrap();
    let algbw = bytes as f64 / t.as_secs_f64() / 1e9;
    let sizes = ts[0].buffer_sizes(1).unwrap();
    println!(
        "tcp loopback: {n} ranks, 64 MiB f32 ring allreduce best of 4: {:.1} ms, algbw \
         {algbw:.2} GB/s, busbw {:.2} GB/s; socket buffers (snd, rcv) {sizes:?}",
        t.as_secs_f64() * 1e3,
        algbw * Op::AllReduce.busbw_factor(n)
    );
}
