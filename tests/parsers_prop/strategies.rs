//! Strategies of the NCCL communicator setups and host algorithms a summary row may hold.

use collbench::collective::{Algo, Op};
use collbench::model::call::{CtaPolicy, Register};
use collbench::model::comm_setup::{CommSetup, CtaBounds};
use proptest::prelude::*;

/// `algo` where `op` has it on the host backend, else the op's first (a summary row names an
/// algorithm its backend has).
pub fn host_algo(op: Op, algo: Algo) -> Algo {
    match op.host_algos().contains(&algo) {
        true => algo,
        false => op.host_algos()[0],
    }
}

/// An NCCL communicator setup as the writers store it (`none` registration is the default).
pub fn comm_setup() -> impl Strategy<Value = CommSetup> {
    let registers = vec![None, Some(Register::Local), Some(Register::Symmetric)];
    let policies = vec![None, Some(CtaPolicy::Default), Some(CtaPolicy::Zero)];
    (
        prop::sample::select(registers),
        prop::sample::select(policies),
        prop::option::of((1u32..=64, 0u32..64)),
    )
        .prop_map(|(register, cta_policy, ctas)| CommSetup {
            register,
            cta_policy,
            ctas: ctas.map(|(min, extra)| CtaBounds {
                min,
                max: (min + extra).min(64),
            }),
        })
}

/// `valid` with one or two edits from the alphabet sizes and durations are written in (a digit,
/// a unit letter, a point, a sign, a space): the near misses a typo makes, which random
/// Unicode text almost never hits.
pub fn near_valid(valid: &'static str) -> impl Strategy<Value = String> {
    let alphabet: Vec<char> = "0123456789.kKmMgGtTbBiIsS -+eE_,hx".chars().collect();
    let edit = (
        0usize..3,
        any::<prop::sample::Index>(),
        prop::sample::select(alphabet),
    );
    prop::collection::vec(edit, 1..3).prop_map(move |edits| {
        let mut chars: Vec<char> = valid.chars().collect();
        for (kind, at, c) in edits {
            let i = at.index(chars.len() + 1);
            match kind {
                0 => chars.insert(i, c),
                1 if i < chars.len() => {
                    chars.remove(i);
                }
                _ if i < chars.len() => chars[i] = c,
                _ => chars.push(c),
            }
        }
        chars.into_iter().collect()
    })
}
