//! Validation against the kernel and an independent tool: "nodes" in private network
//! namespaces, their links shaped by tbf to a known rate, collbench run across them as a
//! torchrun-style launch, its results fitted, and the fit held against the shaper's rate and
//! against sockperf's latency over the same link. See docs/METHODOLOGY.md, "Validating the
//! TCP path", for the margins and why they are what they are.
//!
//! Needs root and iproute2 (CI installs them, and sockperf); elsewhere each test prints why it
//! skips and passes.
#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::netlab::NetLab;
use common::{Run, Spawned};

const TOKEN: &str = "feedfacecafebeef0123456789abcdef";
/// The shaped rate of a healthy node's link.
const RATE_MBIT: u32 = 400;
/// Payload of a full TCP segment at MTU 1500: 1500 - 20 (IPv4) - 20 (TCP) - 12 (timestamps).
const MSS: f64 = 1448.0;
/// Bytes tbf counts for a full segment: the MSS plus 52 B of TCP/IP headers and 14 B Ethernet.
const FULL_FRAME: f64 = 1514.0;
/// Bytes tbf counts for a pure ACK (14 + 20 + 32).
const ACK_FRAME: f64 = 66.0;

/// Whether the lab can run here; says SKIPPED (or fails where CI requires it) when not.
fn lab_or_skip() -> bool {
    common::skip::can_use("netns", NetLab::unavailable())
}

/// Rank processes of one launch across the lab; killed if the test fails half way.
struct Launch(Vec<Option<Spawned>>);

impl Launch {
    /// Starts `collbench sweep args...` as rank i on lab node `node_of[i]`.
    fn start(lab: &NetLab, node_of: &[usize], port: u16, args: &[&str]) -> Launch {
        let master = lab.nodes[node_of[0]].ip.clone();
        let ranks = node_of.iter().enumerate().map(|(r, &n)| {
            let mut cmd = lab.command(n, common::exe(), args);
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .env("RANK", r.to_string())
                .env("WORLD_SIZE", node_of.len().to_string())
                .env("MASTER_ADDR", &master)
                .env("MASTER_PORT", port.to_string())
                .env("COLLBENCH_TOKEN", TOKEN)
                .env("COLLBENCH_NODE_NAME", format!("node{n}"))
                // Store and data listener bind the lab address only.
                .env("COLLBENCH_LISTEN_ADDR", &lab.nodes[n].ip);
            Some(Spawned::start(cmd))
        });
        Launch(ranks.collect())
    }

    /// Waits for every rank; all must succeed. Returns rank 0's run.
    fn finish(mut self, limit: Duration) -> Run {
        let since = Instant::now();
        let runs: Vec<Run> = self
            .0
            .iter_mut()
            .map(|s| s.take().unwrap().finish(since, limit))
            .collect();
        for (r, run) in runs.iter().enumerate() {
            assert_eq!(run.code(), 0, "rank {r}: {}", run.stderr);
        }
        runs.into_iter().next().unwrap()
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        for s in self.0.iter_mut().flatten() {
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
    }
}

/// The single-line fit of the one curve in `run`: (alpha_us, beta_ns_per_byte).
fn fit_line(run: &Path) -> (f64, f64) {
    let fit = run.join("fit.json");
    let out = common::run(
        &["fit", run.to_str().unwrap(), "-o", fit.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(out.code(), 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&fit).unwrap()).unwrap();
    let line = &v["curves"][0]["line"];
    let alpha = line["alpha_us"]["value"].as_f64().unwrap();
    let beta = line["beta_ns_per_byte"]["value"].as_f64().unwrap();
    (alpha, beta)
}

/// The least-squares slope (ns per byte) through each size's fastest iteration in `run`'s
/// samples.csv: what the link allows, whatever else slowed the other iterations.
fn fastest_slope(run: &Path) -> f64 {
    let mut fastest: std::collections::BTreeMap<u64, f64> = Default::default();
    for row in common::csv_rows(&run.join("samples.csv")) {
        let t: f64 = row["time_us"].parse().unwrap();
        let min = fastest.entry(row["bytes"].parse().unwrap()).or_insert(t);
        *min = min.min(t);
    }
    let n = fastest.len() as f64;
    let (sx, sy) = fastest
        .iter()
        .fold((0.0, 0.0), |(sx, sy), (&b, &t)| (sx + b as f64, sy + t));
    let (mx, my) = (sx / n, sy / n);
    let cov: f64 = fastest
        .iter()
        .map(|(&b, &t)| (b as f64 - mx) * (t - my))
        .sum();
    let var: f64 = fastest.keys().map(|&b| (b as f64 - mx).powi(2)).sum();
    1e3 * cov / var
}

/// Payload bytes per byte tbf counted, from its counters over the sweep: full segments and
/// pure ACKs solve `full + acks = packets`, `1514 full + 66 acks = bytes`.
fn payload_share(bytes: f64, packets: f64) -> f64 {
    let full = (bytes - ACK_FRAME * packets) / (FULL_FRAME - ACK_FRAME);
    MSS * full / bytes
}

/// sockperf's median one-way TCP latency (half the round trip) between lab nodes 0 and 1, in
/// µs. The median, like collbench's fit, is not dragged by the rare scheduling outlier that
/// sockperf's average includes.
/// sockperf's median and minimum one-way TCP latency, µs.
fn sockperf_latency_us(lab: &NetLab) -> Option<(f64, f64)> {
    let ip = lab.nodes[1].ip.clone();
    let mut server = lab
        .command(
            1,
            "sockperf",
            &["server", "--tcp", "-i", &ip, "-p", "11211"],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    std::thread::sleep(Duration::from_millis(500));
    let args = [
        "ping-pong",
        "--tcp",
        "-i",
        &ip,
        "-p",
        "11211",
        "-t",
        "2",
        "-m",
        "16",
    ];
    let out = lab.command(0, "sockperf", &args).output().ok();
    let _ = server.kill();
    let _ = server.wait();
    let out = out?;
    // sockperf writes its report to stdout or stderr depending on the version.
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let value = |label: &str| -> Option<f64> {
        let after = text.split(label).nth(1)?;
        after.split_whitespace().next()?.parse().ok()
    };
    Some((value("percentile 50.000 =")?, value("<MIN> observation =")?))
}

fn found_sockperf() -> bool {
    Command::new("sockperf").arg("--version").output().is_ok()
}

#[test]
fn a_shaped_link_carries_what_the_ring_must_send_and_is_fitted() {
    shaped_link(None);
}

/// The quiet-machine benchmark of docs/PERFORMANCE.md: the fastest iterations within 10% of the
/// shaped rate, the fitted latency against sockperf's. Run alone on an idle machine:
/// `cargo test --release --test netns -- --ignored --nocapture`.
#[test]
#[ignore = "a benchmark: needs an idle machine (load slows the transfer)"]
fn on_a_quiet_machine_a_shaped_link_is_measured_within_10_percent() {
    shaped_link(Some(0.9));
}

/// Sweeps across a link shaped to [`RATE_MBIT`]. Always: the results exact and the bytes on
/// the wire at least what a ring AllGather must send (a factor-2 slip in the bytes each rank
/// sends shows here, whatever the load). With `min_ratio` (the benchmark, on a quiet machine
/// only: load slows a transfer and can tilt a least-squares slope either way), the fit against
/// the shaper's rate (the fastest iteration of each size at least `min_ratio` of it) and
/// sockperf's latency.
fn shaped_link(min_ratio: Option<f64>) {
    let _guard = common::serial();
    if !lab_or_skip() {
        return;
    }
    let lab = NetLab::new(&[RATE_MBIT, RATE_MBIT], "32kb");
    let (_tmp, dir) = common::tempdir();
    // Bandwidth: sizes far above the 32 KiB bucket, so the burst is under 1% of a transfer.
    let bw_run = dir.join("bandwidth");
    let (iters, warmup) = (6, 1);
    let args = [
        "sweep",
        "--no-progress",
        "--op",
        "allgather",
        "-b",
        "2M",
        "-e",
        "16M",
        "--iters",
        "6",
        "--warmup",
        "1",
        "--out",
        bw_run.to_str().unwrap(),
    ];
    let before = lab.sent(0);
    Launch::start(&lab, &[0, 1], 29581, &args).finish(Duration::from_secs(240));
    let after = lab.sent(0);
    let bytes = (after.0 - before.0) as f64;
    let share = payload_share(bytes, (after.1 - before.1) as f64);
    let rows = common::summary(&bw_run);
    assert!(rows.iter().all(|r| r.wrong == 0), "{rows:?}");
    // Ring AllGather over 2 ranks: rank 0 sends its half, S/2, in every call.
    let must_send: f64 = rows
        .iter()
        .map(|r| r.key.bytes as f64 / 2.0 * (iters + warmup) as f64)
        .sum();
    // Frame headers only add to what tc counted: no estimate of them enters this bound.
    assert!(
        bytes >= must_send,
        "{bytes:.0} bytes left node 0, the ring must send {must_send:.0}"
    );
    // Ring AllGather over 2 ranks moves S/2 over the link each way: T = alpha + S / (2 BW).
    let rate = |beta_ns_per_byte: f64| 1e9 / (2.0 * beta_ns_per_byte);
    let expected = RATE_MBIT as f64 * 1e6 / 8.0 * share;
    let fitted = rate(fit_line(&bw_run).1) / expected;
    let fastest = rate(fastest_slope(&bw_run)) / expected;
    eprintln!(
        "shaped {RATE_MBIT} Mbit/s, payload share {share:.4}, expected {:.2} MB/s: fitted {fitted:.3}, fastest iterations {fastest:.3} of it",
        expected / 1e6,
    );
    assert!(fitted.is_finite() && fitted > 0.0 && fastest.is_finite() && fastest > 0.0);
    let Some(min_ratio) = min_ratio else { return };
    assert!(fitted <= 1.1, "fitted/expected bandwidth {fitted:.3}");
    assert!(
        (min_ratio..=1.1).contains(&fastest),
        "fastest-iteration/expected bandwidth {fastest:.3}, below {min_ratio}"
    );

    // Latency: sizes far below the bucket, so the shaper never delays them.
    let lat_run = dir.join("latency");
    let args = [
        "sweep",
        "--no-progress",
        "--op",
        "allgather",
        "-b",
        "8",
        "-e",
        "1K",
        "-f",
        "4",
        "--iters",
        "300",
        "--out",
        lat_run.to_str().unwrap(),
    ];
    Launch::start(&lab, &[0, 1], 29582, &args).finish(Duration::from_secs(120));
    let (alpha, _) = fit_line(&lat_run);
    let sockperf_missing = (!found_sockperf())
        .then(|| "sockperf is not installed (apt-get install sockperf)".to_string());
    if !common::skip::can_use("sockperf", sockperf_missing) {
        return;
    }
    let (one_way, fastest) = sockperf_latency_us(&lab).expect("sockperf ping-pong gave no latency");
    eprintln!(
        "fitted alpha {alpha:.2} us, sockperf one-way latency {one_way:.2} us (fastest {fastest:.2} us)"
    );
    // The floor is half of sockperf's fastest exchange: sockperf's ends sleep in a blocking
    // receive while our ranks poll briefly before they block, so even sockperf's fastest
    // exchange carries a wake-up ours does not (medians 13-20 us, fastest 13.5 us, against our
    // fitted 10-12 us on this machine). Below half of it would be a mis-measurement.
    assert!(
        alpha >= 0.5 * fastest && alpha <= 3.0 * one_way + 20.0,
        "alpha {alpha:.2} us against sockperf's {one_way:.2} us"
    );
}

#[test]
fn pairs_name_the_node_with_the_slow_link() {
    let _guard = common::serial();
    if !lab_or_skip() {
        return;
    }
    // Node 2's link runs at a quarter of the others': its pairs at well under the 0.8 mark.
    let lab = NetLab::new(&[RATE_MBIT, RATE_MBIT, RATE_MBIT / 4], "32kb");
    let (_tmp, dir) = common::tempdir();
    let out = dir.join("pairs");
    let args = [
        "sweep",
        "--no-progress",
        "--pairs",
        "--op",
        "allgather",
        "-b",
        "4M",
        "-e",
        "4M",
        "--iters",
        "4",
        "--warmup",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    let run = Launch::start(&lab, &[0, 1, 2], 29583, &args).finish(Duration::from_secs(240));
    let notes: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("# note: "))
        .collect();
    eprintln!("{}", notes.join("\n"));
    assert!(
        notes
            .iter()
            .any(|l| l.contains("slow link: node0 <-> node2")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|l| l.contains("slow link: node1 <-> node2")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|l| l.contains("slow node: node2")),
        "{notes:?}"
    );
    assert!(
        !notes.iter().any(|l| l.contains("node0 <-> node1")),
        "{notes:?}"
    );
}

#[test]
fn bisect_names_the_node_with_the_slow_link_in_two_rounds() {
    let _guard = common::serial();
    if !lab_or_skip() {
        return;
    }
    // Node 3's link runs at a quarter of the others': the halves 0,1 and 2,3, then 2 and 3
    // each beside node 0.
    let lab = NetLab::new(&[RATE_MBIT, RATE_MBIT, RATE_MBIT, RATE_MBIT / 4], "32kb");
    let (_tmp, dir) = common::tempdir();
    let out = dir.join("bisect");
    let args = [
        "sweep",
        "--no-progress",
        "--bisect",
        "--op",
        "allgather",
        "-b",
        "4M",
        "-e",
        "4M",
        "--iters",
        "4",
        "--warmup",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    let run = Launch::start(&lab, &[0, 1, 2, 3], 29587, &args).finish(Duration::from_secs(240));
    let notes: Vec<&str> = (run.stdout.lines())
        .filter(|l| l.starts_with("# note: bisect"))
        .collect();
    eprintln!("{}", notes.join("\n"));
    assert!(
        notes.iter().any(|l| l.contains("bisect: slow node node3")),
        "{notes:?}"
    );
    let b = common::meta(&out).bisect.unwrap();
    assert_eq!(
        (b.verdict.as_str(), b.nodes.clone()),
        ("slow-node", vec![3])
    );
    let groups: Vec<Vec<Vec<usize>>> = b.rounds.iter().map(|r| r.groups.clone()).collect();
    assert_eq!(
        groups,
        [vec![vec![0, 1], vec![2, 3]], vec![vec![2, 0], vec![3, 0]]]
    );
}
