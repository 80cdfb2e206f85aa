//! Property tests of the reader every command uses on a results folder (`read_run`: fit,
//! accept, compare, plot, report): a real sweep's folder with one file cut, a byte flipped, a
//! row duplicated or two rows swapped. Never a panic; a refusal is one line naming the file; a
//! cut file gives back exactly the points before the cut.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use collbench::report::run_reader::{read_run, Run};
use proptest::prelude::*;

const FILES: [&str; 4] = ["summary.csv", "samples.csv", "meta.json", "ranks.csv"];

/// One real sweep shared by every case: 2 ops × 4 sizes at 2 ranks.
fn real_run() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, dir) = DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        #[rustfmt::skip]
        let args = [
            "--op", "allreduce,allgather", "--ranks", "2", "-b", "1K", "-e", "64K", "-f", "4",
            "--iters", "5", "--warmup", "1",
        ];
        common::sweep_ok(&args, &out, common::hang_limit(Duration::from_secs(120)));
        (tmp, out)
    });
    dir
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Keep this fraction of the file's bytes.
    Cut(f64),
    /// Replace the byte at this fraction of the file.
    Flip(f64, u8),
    /// Write the line at this fraction twice.
    Duplicate(f64),
    /// Swap the line at this fraction with the next.
    Swap(f64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![
        Just(b','),
        Just(b'\n'),
        Just(b'"'),
        Just(b'-'),
        Just(b'9'),
        Just(b'x'),
        any::<u8>()
    ];
    prop_oneof![
        (0.0f64..1.0).prop_map(Mutation::Cut),
        (0.0f64..1.0, byte).prop_map(|(at, b)| Mutation::Flip(at, b)),
        (0.0f64..1.0).prop_map(Mutation::Duplicate),
        (0.0f64..1.0).prop_map(Mutation::Swap),
    ]
}

fn apply(text: &[u8], m: &Mutation) -> Vec<u8> {
    let at = |f: f64, len: usize| ((f * len as f64) as usize).min(len.saturating_sub(1));
    match *m {
        Mutation::Cut(f) => text[..at(f, text.len() + 1)].to_vec(),
        Mutation::Flip(f, b) => {
            let mut t = text.to_vec();
            if !t.is_empty() {
                let i = at(f, t.len());
                t[i] = b;
            }
            t
        }
        Mutation::Duplicate(f) | Mutation::Swap(f) => {
            let mut lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
            if lines.len() >= 2 {
                let i = at(f, lines.len() - 1);
                match m {
                    Mutation::Duplicate(_) => lines.insert(i, lines[i]),
                    _ => lines.swap(i, i + 1),
                }
            }
            lines.concat()
        }
    }
}

/// A copy of the real run with `file` mutated by `m`.
fn mutated(file: &str, m: &Mutation) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    fs::create_dir(&dir).unwrap();
    for e in fs::read_dir(real_run()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_owned();
        let bytes = fs::read(&p).unwrap();
        let bytes = match name.to_str() == Some(file) {
            true => apply(&bytes, m),
            false => bytes,
        };
        fs::write(dir.join(name), bytes).unwrap();
    }
    (tmp, dir)
}

fn original() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| read_run(real_run()).expect("the real run reads"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_damaged_folder_reads_as_a_prefix_or_is_refused_in_one_line(
        which in 0usize..FILES.len(),
        m in mutation(),
    ) {
        let file = FILES[which];
        let (_tmp, dir) = mutated(file, &m);
        let got = std::panic::catch_unwind(|| read_run(&dir));
        let got = match got {
            Ok(r) => r,
            Err(_) => return Err(TestCaseError::fail(format!("read_run panicked on {file} {m:?}"))),
        };
        let all = &original().points;
        match got {
            Ok(run) => {
                if let Mutation::Cut(_) = m {
                    // Exactly the points before the cut, as they were written.
                    prop_assert!(run.points.len() <= all.len());
                    for (p, q) in run.points.iter().zip(all) {
                        prop_assert_eq!(&p.record.key, &q.record.key);
                        prop_assert_eq!(&p.samples, &q.samples);
                    }
                }
                prop_assert!(run.points.len() <= all.len() + 1, "{} points", run.points.len());
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(!msg.contains('\n') && msg.len() < 2000, "{}", msg);
            }
        }
    }
}

#[test]
fn the_undamaged_folder_reads_whole() {
    let run = original();
    assert_eq!(run.points.len(), 8);
    assert!(run.points.iter().all(|p| p.samples.len() == 5));
}
