use super::*;
use crate::check::{count_wrong, fill_input, read_value as get, write_value as put, PERIOD};
use crate::collective::{Op, Shape};

const OPS: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min];

/// The reductions the kernels combine with (avg sums and is finished after; mulsum is NCCL's).
const KERNEL_OPS: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min];

fn bytes<T: Pod>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// A buffer with room for `len` bytes starting at an odd address, so no dtype is aligned.
struct Odd(Vec<u8>, usize);

impl Odd {
    fn new(data: &[u8]) -> Odd {
        let mut v = vec![0u8; data.len() + 16];
        let off = (9 - v.as_ptr() as usize % 8) % 8;
        v[off..off + data.len()].copy_from_slice(data);
        Odd(v, off)
    }
    fn get(&mut self, len: usize) -> &mut [u8] {
        &mut self.0[self.1..self.1 + len]
    }
}

/// Runs both kernels on aligned, all-misaligned and mixed buffers and checks each result.
fn check_all(dtype: DType, op: ReduceOp, a: &[u8], b: &[u8], want: &[u8]) {
    let mut d = a.to_vec();
    reduce_into(dtype, op, &mut d, b);
    assert_eq!(d, want, "{dtype} {op} aligned reduce_into");
    let mut d = vec![0u8; a.len()];
    reduce3(dtype, op, &mut d, a, b);
    assert_eq!(d, want, "{dtype} {op} aligned reduce3");
    let (mut od, mut oa, mut ob) = (Odd::new(a), Odd::new(a), Odd::new(b));
    reduce_into(dtype, op, od.get(a.len()), ob.get(b.len()));
    assert_eq!(od.get(a.len()), want, "{dtype} {op} unaligned reduce_into");
    let mut d = vec![0u8; a.len()];
    reduce3(dtype, op, &mut d, oa.get(a.len()), ob.get(b.len()));
    assert_eq!(d, want, "{dtype} {op} mixed reduce3");
    let mut od = Odd::new(&vec![0u8; a.len()]);
    reduce3(dtype, op, od.get(a.len()), oa.get(a.len()), ob.get(b.len()));
    assert_eq!(od.get(a.len()), want, "{dtype} {op} unaligned reduce3");
}

fn hand<T: Pod>(dtype: DType, a: &[T], b: &[T], sum: &[T], max: &[T], min: &[T]) {
    for (op, want) in OPS.into_iter().zip([sum, max, min]) {
        check_all(dtype, op, &bytes(a), &bytes(b), &bytes(want));
    }
}

#[test]
fn f32_f64_hand_computed() {
    let (a, b) = ([1.5f32, -2.0, 3.0, 7.0], [2.25f32, 5.0, -3.0, 7.0]);
    hand(
        DType::F32,
        &a,
        &b,
        &[3.75, 3.0, 0.0, 14.0],
        &[2.25, 5.0, 3.0, 7.0],
        &[1.5, -2.0, -3.0, 7.0],
    );
    let (a, b) = ([1.5f64, -2.0, 1e300, 0.1], [2.25f64, 5.0, 1e300, 0.2]);
    let sum = [3.75, 3.0, 2e300, 0.1 + 0.2];
    hand(
        DType::F64,
        &a,
        &b,
        &sum,
        &[2.25, 5.0, 1e300, 0.2],
        &[1.5, -2.0, 1e300, 0.1],
    );
}

#[test]
fn i32_sum_wraps() {
    let (a, b) = ([1i32, -2, i32::MAX, 7], [2i32, 5, 1, -7]);
    hand(
        DType::I32,
        &a,
        &b,
        &[3, 3, i32::MIN, 0],
        &[2, 5, i32::MAX, 7],
        &[1, -2, 1, -7],
    );
}

#[test]
fn f16_rounds_once_to_nearest_even() {
    let h = |v: &[f32]| v.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
    // Above 2048 f16 steps by 2: 2048 + 1 ties to 2048, 2048 + 3 = 2051 ties to 2052.
    let (a, b) = (h(&[1.5, -2.0, 2048.0, 2048.0]), h(&[2.25, 5.0, 1.0, 3.0]));
    let (sum, max, min) = (
        h(&[3.75, 3.0, 2048.0, 2052.0]),
        h(&[2.25, 5.0, 2048.0, 2048.0]),
        h(&[1.5, -2.0, 1.0, 3.0]),
    );
    hand(DType::F16, &a, &b, &sum, &max, &min);
}

#[test]
fn bf16_rounds_once_to_nearest_even() {
    let h = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
    // Above 256 bf16 steps by 2: 256 + 1 ties to 256, 256 + 3 = 259 ties to 260.
    let (a, b) = (h(&[1.5, -2.0, 256.0, 256.0]), h(&[2.25, 5.0, 1.0, 3.0]));
    let (sum, max, min) = (
        h(&[3.75, 3.0, 256.0, 260.0]),
        h(&[2.25, 5.0, 256.0, 256.0]),
        h(&[1.5, -2.0, 1.0, 3.0]),
    );
    hand(DType::BF16, &a, &b, &sum, &max, &min);
}

#[test]
fn float_max_min_ignore_nan_like_f32_max() {
    let h = |v: &[f32]| v.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
    let (a, b) = ([f32::NAN, 1.0], [2.0f32, f32::NAN]);
    let (ha, hb) = (h(&a), h(&b));
    for op in [ReduceOp::Max, ReduceOp::Min] {
        check_all(
            DType::F32,
            op,
            &bytes(&a),
            &bytes(&b),
            &bytes(&[2.0f32, 1.0]),
        );
        check_all(
            DType::F16,
            op,
            &bytes(&ha),
            &bytes(&hb),
            &bytes(&h(&[2.0, 1.0])),
        );
    }
}

/// Element-by-element reference through f64 (f32 for the half types, then f16 for fp8),
/// rounded per element; integers wrap.
fn reference(dtype: DType, op: ReduceOp, x: f64, y: f64) -> f64 {
    let f = |a: f64, b: f64| match op {
        ReduceOp::Prod => a * b,
        ReduceOp::Max => a.max(b),
        ReduceOp::Min => a.min(b),
        ReduceOp::Sum | ReduceOp::Avg | ReduceOp::MulSum => a + b,
    };
    let v = f(x, y);
    match dtype {
        DType::F16 => f16::from_f32(v as f32).to_f64(),
        DType::BF16 => bf16::from_f32(v as f32).to_f64(),
        DType::F32 => v as f32 as f64,
        DType::F8E4M3 | DType::F8E5M2 => {
            let f8 = dtype.fp8().unwrap();
            f8.decode(f8.encode(f16::from_f32(v as f32).to_f64()))
        }
        DType::F64 => v,
        DType::I8 => v as i128 as i8 as f64,
        DType::U8 => v as i128 as u8 as f64,
        DType::I32 => v as i128 as i32 as f64,
        DType::U32 => v as i128 as u32 as f64,
        DType::I64 => v as i128 as i64 as f64,
        DType::U64 => v as i128 as u64 as f64,
    }
}

/// 1000 elements cross several staging blocks and end in a partial one.
#[test]
fn long_buffers_match_reference_every_dtype_and_op() {
    let n = 1000;
    for &dtype in DType::ALL {
        let value = |i: usize, k: usize| ((i * 37 + k * 11) % 101) as f64 / 4.0 - 12.0;
        let (mut a, mut b) = (vec![0u8; n * dtype.size()], vec![0u8; n * dtype.size()]);
        for i in 0..n {
            put(dtype, &mut a, i, value(i, 1));
            put(dtype, &mut b, i, value(i, 2));
        }
        for op in KERNEL_OPS {
            let mut want = vec![0u8; a.len()];
            for i in 0..n {
                put(
                    dtype,
                    &mut want,
                    i,
                    reference(dtype, op, get(dtype, &a, i), get(dtype, &b, i)),
                );
            }
            check_all(dtype, op, &a, &b, &want);
        }
    }
}

/// The branch-free bf16 rounding agrees bit for bit with `half` over a spread of f32 bit
/// patterns (every sign, exponent and rounding case, NaN and infinity).
#[test]
fn bf16_rounding_matches_half() {
    let edges = [
        0u32,
        0x8000,
        0x7FFF,
        0x1_8000,
        0x1_7FFF,
        0x7F7F_FFFF,
        0x7F80_0000,
        0x7F80_0001,
        0x7FC0_0000,
        0xFFFF_FFFF,
        0xFF7F_8000,
    ];
    let spread = (0..u32::MAX / 7919).map(|k| k * 7919);
    for bits in edges.into_iter().chain(spread) {
        for b in [bits, bits ^ 0x8000_0000] {
            let x = f32::from_bits(b);
            assert_eq!(
                f32_to_bf16_bits(x),
                bf16::from_f32(x).to_bits(),
                "{b:#010x}"
            );
        }
    }
    for b in 0..=u16::MAX {
        let (mut wide, h) = ([0f32; 1], bf16::from_bits(b));
        <bf16 as Half>::widen(&[h], &mut wide);
        assert!(
            wide[0].to_bits() == h.to_f32().to_bits() || (h.is_nan() && wide[0].is_nan()),
            "{b:#06x}"
        );
    }
}

/// Sums every rank's input in the dtype itself, with the real kernel, in three orders; the
/// result must be the exact sum each time.
fn sum_in_dtype_is_exact(dtype: DType, p: usize) {
    let shape = Shape::new(Op::AllReduce, dtype, PERIOD * dtype.size(), p);
    let ins: Vec<Vec<u8>> = (0..p)
        .map(|r| {
            let mut buf = vec![0u8; shape.in_bytes];
            fill_input(&sum_call(dtype, shape), p, r, &mut buf);
            buf
        })
        .collect();
    let ascending: Vec<usize> = (0..p).collect();
    let descending: Vec<usize> = (0..p).rev().collect();
    for order in [ascending, descending] {
        let mut acc = ins[order[0]].clone();
        for &r in &order[1..] {
            reduce_into(dtype, ReduceOp::Sum, &mut acc, &ins[r]);
        }
        assert_eq!(count_wrong(&sum_call(dtype, shape), p, 0, &acc), 0);
    }
    // Pairwise (tree) order: partial sums of different shapes.
    let mut level = ins;
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| {
                let mut a = pair[0].clone();
                if let Some(b) = pair.get(1) {
                    reduce_into(dtype, ReduceOp::Sum, &mut a, b);
                }
                a
            })
            .collect();
    }
    assert_eq!(count_wrong(&sum_call(dtype, shape), p, 0, &level[0]), 0);
}

#[test]
fn bf16_and_f16_sums_stay_exact_in_any_order() {
    sum_in_dtype_is_exact(DType::BF16, 64);
    sum_in_dtype_is_exact(DType::BF16, 300);
    sum_in_dtype_is_exact(DType::F16, 64);
    sum_in_dtype_is_exact(DType::F16, 3);
    sum_in_dtype_is_exact(DType::F8E4M3, 3);
    sum_in_dtype_is_exact(DType::F8E5M2, 8);
    sum_in_dtype_is_exact(DType::F8E4M3, 40);
    sum_in_dtype_is_exact(DType::I8, 200);
}

/// The host's avg (a sum, then [`finish_avg`]) leaves what the check expects of NCCL's (each
/// input multiplied by 1/p, then summed) where one rank gave `x`: every dtype, worlds that
/// are and are not powers of two, values across each type's exact range.
#[test]
fn finished_avg_is_nccls_avg_of_one_input() {
    for &dtype in DType::ALL {
        for p in [1, 2, 3, 5, 7, 8, 24, 100, 1000] {
            let limit = crate::check::exact_limit(dtype).min(65535);
            for x in [0, 1, 2, 3, 5, 7, limit / 3, limit / 2 + 1, limit] {
                let mut buf = vec![0u8; dtype.size()];
                put(dtype, &mut buf, 0, x as f64);
                finish_avg(dtype, p, &mut buf);
                let want = crate::check::avg_of_one(dtype, x as f64, p);
                assert_eq!(get(dtype, &buf, 0), want, "{dtype} p={p} x={x}");
            }
        }
    }
    // Hand-computed: 7/3 truncates to 2; f32 7 × fl(1/3) rounds to 2.3333333; i8 -7/2 is -3.
    let mut b = 7i32.to_ne_bytes();
    finish_avg(DType::I32, 3, &mut b);
    assert_eq!(i32::from_ne_bytes(b), 2);
    let mut b = 7f32.to_ne_bytes();
    finish_avg(DType::F32, 3, &mut b);
    assert_eq!(f32::from_ne_bytes(b), 7.0f32 * (1.0f32 / 3.0));
    let mut b = (-7i8).to_ne_bytes();
    finish_avg(DType::I8, 2, &mut b);
    assert_eq!(i8::from_ne_bytes(b), -3);
}

/// Products of the check's prod pattern in the dtype itself, in two orders: exact each time.
#[test]
fn products_stay_exact_in_any_order() {
    for &dtype in DType::ALL {
        for p in [2, 7, 40, 300] {
            let shape = Shape::new(Op::AllReduce, dtype, 64 * dtype.size(), p);
            let call = crate::model::call::Call {
                redop: ReduceOp::Prod,
                ..sum_call(dtype, shape)
            };
            let ins: Vec<Vec<u8>> = (0..p)
                .map(|r| {
                    let mut buf = vec![0u8; shape.in_bytes];
                    fill_input(&call, p, r, &mut buf);
                    buf
                })
                .collect();
            for order in [(0..p).collect::<Vec<_>>(), (0..p).rev().collect()] {
                let mut acc = ins[order[0]].clone();
                for &r in &order[1..] {
                    reduce_into(dtype, ReduceOp::Prod, &mut acc, &ins[r]);
                }
                assert_eq!(count_wrong(&call, p, 0, &acc), 0, "{dtype} p={p}");
            }
        }
    }
}

/// A summing AllReduce of `shape`, as the exact check takes it.
fn sum_call(dtype: DType, shape: crate::collective::Shape) -> crate::model::call::Call {
    crate::model::call::Call {
        op: Op::AllReduce,
        algo: crate::collective::Algo::Ring,
        dtype,
        redop: ReduceOp::Sum,
        shape,
        root: 0,
    }
}
