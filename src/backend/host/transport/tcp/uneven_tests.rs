//! AllToAllV over real loopback sockets, one thread per rank: every traffic pattern (uniform,
//! nccl-tests' spread, a bytes matrix with empty pairs, a routing model's fractions), element
//! size and placement, checked element by element.

use std::sync::atomic::AtomicBool;

use super::tests::{mesh, on_ranks, TIMEOUT};
use super::*;
use crate::backend::host::algo::{Buffers, Group};
use crate::backend::host::run;
use crate::check::{count_wrong_uneven, fill_input};
use crate::collective::routing::Routing;
use crate::collective::traffic::{parse_bytes_matrix, Traffic};
use crate::collective::uneven::{self, RankCounts};
use crate::collective::{Algo, DType, Op, ReduceOp};
use crate::model::call::Call;

/// Patterns at `n` ranks; the matrix leaves pairs (and a rank's own block) empty.
fn patterns(n: usize) -> Vec<Traffic> {
    let matrix = "0 48 160 16\n32 0 0 400\n0 0 64 1000\n16 1600 0 0\n";
    let moe = Routing {
        tokens: 64,
        experts: 2,
        top_k: 2,
        zipf: 1.2,
        seed: 7,
    };
    let mut v = vec![
        Traffic::Spread(0.0),
        Traffic::Spread(1.0),
        Traffic::Spread(0.4),
    ];
    v.push(parse_bytes_matrix(matrix, 1.0).unwrap());
    v.push(moe.traffic(n).unwrap());
    v
}

/// One rank's call of `traffic` at `requested` bytes: wrong elements, or the error.
fn run_one(t: &mut TcpTransport, traffic: &Traffic, call: &Call, in_place: bool) -> Result<u64> {
    let (n, dtype) = (t.nranks(), call.dtype);
    let g = Group::first(n, t.rank()).unwrap();
    let total = uneven::total_of(&call.shape, dtype);
    let counts = RankCounts::of(traffic, (n, g.me), total, dtype.size());
    let sh = &call.shape;
    let mut scratch = Vec::new();
    let (mut input, mut output) = (vec![0u8; sh.in_bytes], vec![0u8; sh.out_bytes]);
    if in_place {
        let mut buf = vec![0u8; sh.in_bytes.max(sh.out_bytes)];
        fill_input(call, n, g.me, &mut buf);
        run(
            t,
            &g,
            (call, Some(&counts)),
            Buffers::InPlace(&mut buf),
            &mut scratch,
        )?;
        return Ok(count_wrong_uneven(call, n, &counts, &buf));
    }
    fill_input(call, n, g.me, &mut input);
    let bufs = Buffers::OutOfPlace {
        input: &input,
        output: &mut output,
    };
    run(t, &g, (call, Some(&counts)), bufs, &mut scratch)?;
    Ok(count_wrong_uneven(call, n, &counts, &output))
}

#[test]
fn alltoallv_is_exact_for_every_pattern_over_tcp() {
    for n in [1, 2, 3, 4] {
        let abort = Arc::new(AtomicBool::new(false));
        let mut ts: Vec<_> = (mesh(n, TIMEOUT).into_iter())
            .map(|t| t.with_abort(abort.clone()))
            .collect();
        let failures = on_ranks(&mut ts, |t| {
            let mut failures = Vec::new();
            for traffic in patterns(n).iter().filter(|p| p.check_ranks(n).is_ok()) {
                for dtype in [DType::I8, DType::F32, DType::F64] {
                    for requested in [0, 16 * n, 4096, (1 << 20) + 48] {
                        let shape = uneven::shape(traffic, dtype, requested, n);
                        let call = Call {
                            op: Op::AllToAllV,
                            algo: Algo::Pairwise,
                            dtype,
                            redop: ReduceOp::Sum,
                            shape,
                            root: 0,
                        };
                        for in_place in [false, true] {
                            let res = run_one(t, traffic, &call, in_place);
                            if !matches!(res, Ok(0)) {
                                abort.store(true, Ordering::Relaxed);
                                failures.push(format!(
                                    "{n} ranks, rank {}, {traffic:?} {dtype} {requested} B \
                                     in_place={in_place}: {res:?}",
                                    t.rank()
                                ));
                                return failures;
                            }
                        }
                    }
                }
            }
            failures
        });
        let failures: Vec<String> = failures.into_iter().flatten().collect();
        assert!(failures.is_empty(), "{failures:#?}");
    }
}
