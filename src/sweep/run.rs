//! The launcher side of a sweep on this host: checks the request, creates the results folder and
//! the shared segment, starts the rank processes, then for every point waits for the ranks,
//! reads their samples, writes the point to disk and prints it, before letting them go on.
//! Any failure (a rank that dies or stalls, Ctrl-C) stops every rank and keeps what was written.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::backend::host::layout::{Layout, Shared};
use crate::backend::host::wait::{futex_wait, notify};
use crate::backend::BackendKind;
use crate::error::{Error, Result};
use crate::launch::local::{LocalRanks, RankExit};
use crate::meta::{Meta, RunStatus};
use crate::model::record::{IterSample, PointRecord, RankSummary};
use crate::report::run_dir::{run_dir_or_default, RunDir};
use crate::sweep::console::Console;
use crate::sweep::plan::{Plan, Point, SweepOptions};
use crate::sweep::summarize::summarize;
use crate::sweep::topology::WorldSpec;
use crate::sweep::watchdog::{blame, Watchdog};
use crate::units::format_size;

/// A sweep as the user asked for it.
pub struct SweepRequest {
    pub opts: SweepOptions,
    pub backend: BackendKind,
    pub timeout: Duration,
    pub out: Option<PathBuf>,
    /// Whether `--ranks` was given (a multi-host launch takes its world from the launcher).
    pub ranks_given: bool,
    /// `--world-sizes` as given (empty: the default).
    pub world_specs: Vec<WorldSpec>,
    /// `--pairs`: measure every node pair (multi-host launches only).
    pub pairs: bool,
    pub progress: bool,
    pub command_line: Vec<String>,
    /// `--proto` (NCCL protocols; empty for the other backends).
    pub protos: Vec<crate::collective::Proto>,
    /// `--cuda-graph` (NCCL only): time one CUDA-graph launch of the call per iteration.
    pub cuda_graph: bool,
}

/// What a finished sweep produced.
pub struct Outcome {
    pub dir: PathBuf,
    pub points: usize,
    /// Points where some element was wrong.
    pub wrong_points: usize,
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Makes Ctrl-C and SIGTERM stop the sweep cleanly instead of killing the launcher outright.
fn install_interrupt_handler() {
    // An error means a handler is already installed (a second sweep in one process): keep it.
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
}

/// Runs a whole sweep on the host backend.
pub fn run_sweep(req: &SweepRequest) -> Result<Outcome> {
    req.backend.availability().map_err(Error::Usage)?;
    if req.backend != BackendKind::Host {
        // The other backends start their own processes from `collbench sweep`.
        return Err(Error::usage(format!(
            "the {0} backend sweeps only from `collbench sweep --backend {0}`; run that, then \
             judge its folder with `collbench accept --run DIR`",
            req.backend
        )));
    }
    if let Some(WorldSpec::Shape(s)) = req
        .world_specs
        .iter()
        .find(|w| matches!(w, WorldSpec::Shape(s) if s.nodes > 1))
    {
        return Err(Error::usage(format!(
            "--world-sizes {s} spans {} nodes, but this launch is one host; start collbench on \
             every host with mpirun, srun or torchrun (see the README), or give plain sizes",
            s.nodes
        )));
    }
    if req.pairs {
        return Err(Error::usage(
            "--pairs measures between nodes, but this launch is one host; start collbench on \
             every host with mpirun, srun or torchrun (see the README)",
        ));
    }
    req.opts.validate()?;
    // Checked here so that a bad value is one line from the launcher, not one per rank.
    crate::backend::host::transport::single_copy::CopyMode::from_env()?;
    let plan = req.opts.plan();
    if plan.points.is_empty() {
        return Err(Error::usage(format!(
            "nothing to measure: {}",
            plan.notes.first().map_or("no points", |n| n.as_str())
        )));
    }
    check_memory(&plan, req.opts.ranks)?;
    let dir = run_dir_or_default(req.out.as_deref(), &req.opts.ops, req.backend.name())?;
    let options = crate::backend::host::transport::single_copy::options_json(&req.opts);
    let meta = Meta::new(
        req.command_line.clone(),
        "host",
        req.opts.transport.name(),
        req.opts.ranks,
        1,
        options,
    );
    let mut out = RunDir::create(&dir, &meta)?;
    install_interrupt_handler();
    let console = open_console(&plan, req.progress);
    let result = launch_and_measure(req, &plan, &mut out, &console);
    console.finish();
    close_run(out, dir, result)
}

/// Records how a run ended in meta.json and turns the measuring's result (points with wrong
/// elements) into the outcome.
pub(crate) fn close_run(mut out: RunDir, dir: PathBuf, result: Result<usize>) -> Result<Outcome> {
    let (status, error) = match &result {
        Ok(_) => (RunStatus::Complete, None),
        Err(e @ Error::Interrupted(_)) => (RunStatus::Interrupted, Some(e.to_string())),
        Err(e) => (RunStatus::Failed, Some(e.to_string())),
    };
    let finished = out.finish(status, error);
    // The measuring's error first: it names the file whose write failed (a full disk fails
    // meta.json's rewrite as well).
    let wrong_points = result?;
    finished?;
    Ok(Outcome {
        dir,
        points: out.points(),
        wrong_points,
    })
}

/// The console of a sweep, with the plan's notes shown once and the table's header printed.
pub(crate) fn open_console(plan: &Plan, progress: bool) -> Console {
    let console = Console::new(plan.points.len(), progress);
    // The plan repeats a note for every curve it applies to (each algorithm and placement).
    let mut shown: Vec<&str> = Vec::new();
    for note in &plan.notes {
        if !shown.contains(&note.as_str()) {
            shown.push(note);
            console.note(note);
        }
    }
    console.header();
    console
}

/// Refuses sizes and iteration counts whose buffers and per-iteration samples would not fit in
/// available memory, before anything is allocated.
fn check_memory(plan: &Plan, ranks: usize) -> Result<()> {
    let Some(avail) = crate::meta::mem_available_bytes() else {
        return Ok(());
    };
    let need = memory_need(plan, ranks);
    // Leave a quarter of what is free for the system, the segment and the page cache.
    if need > avail as u128 * 3 / 4 {
        let largest = plan
            .points
            .iter()
            .map(|p| p.call.shape.bytes)
            .max()
            .unwrap_or(0);
        let iters = plan.points.iter().map(|p| p.iters).max().unwrap_or(0);
        return Err(Error::usage(format!(
            "the largest points need {} of buffers and samples across {ranks} ranks but only {} \
             of memory is available; lower -e (largest size now {}), --iters (now up to {iters}) \
             or --ranks",
            format_size(need.min(usize::MAX as u128) as usize),
            format_size(avail as usize),
            format_size(largest)
        )));
    }
    Ok(())
}

/// Bytes the launch needs at its largest: every rank's buffers for its largest point, plus the
/// per-iteration samples of the point with the most iterations.
fn memory_need(plan: &Plan, ranks: usize) -> u128 {
    let buffers: u128 = (0..ranks)
        .map(|r| {
            let member = plan.points.iter().filter(|p| r < p.world);
            member.map(Point::bytes_per_rank).max().unwrap_or(0) as u128
        })
        .sum();
    let max_iters = plan.points.iter().map(|p| p.iters).max().unwrap_or(0);
    buffers + crate::sweep::limits::sample_bytes(ranks, max_iters)
}

fn launch_and_measure(
    req: &SweepRequest,
    plan: &Plan,
    out: &mut RunDir,
    console: &Console,
) -> Result<usize> {
    let max_iters = plan.points.iter().map(|p| p.iters).max().unwrap_or(1);
    let layout = Layout::new(req.opts.ranks, max_iters);
    let shared = Shared::create(layout)?;
    shared
        .token()
        .store(crate::launch::store::random_token(), Ordering::SeqCst);
    shared.segment().make_inheritable()?;
    let fd = shared.segment().fd();
    let opts_json = serde_json::to_string(&req.opts).unwrap_or_default();
    let args = |r: usize| {
        let a = [
            "--rank",
            &r.to_string(),
            "--fd",
            &fd.to_string(),
            "--layout",
            &layout.encode(),
        ];
        a.iter().map(|s| s.to_string()).collect()
    };
    let mut ranks = LocalRanks::spawn(req.opts.ranks, args, &opts_json)?;
    let pids: Vec<Option<u32>> = (0..req.opts.ranks).map(|r| ranks.pid(r)).collect();
    let mut sup = Supervisor {
        shared: &shared,
        ranks: &mut ranks,
        pids,
        timeout: req.timeout,
    };
    let result = sup
        .measure_all(plan, out, console)
        .and_then(|w| sup.wait_exit().map(|_| w));
    if result.is_err() {
        shared.abort_flag().store(1, Ordering::SeqCst);
        ranks.kill_all();
    }
    result
}

/// Watches the ranks of one launch.
struct Supervisor<'a> {
    shared: &'a Shared,
    ranks: &'a mut LocalRanks,
    pids: Vec<Option<u32>>,
    timeout: Duration,
}

impl Supervisor<'_> {
    fn measure_all(&mut self, plan: &Plan, out: &mut RunDir, console: &Console) -> Result<usize> {
        let mut wrong_points = 0;
        let mut dog = Watchdog::new(self.timeout);
        for (k, point) in plan.points.iter().enumerate() {
            console.running(&point.describe());
            let last = k + 1 == plan.points.len();
            self.wait_published(k as u32 + 1, point, last, &mut dog)?;
            let (rec, samples, per_rank) = self.collect(point)?;
            out.append_point(&rec, &samples, &per_rank)?;
            console.point(&rec);
            wrong_points += usize::from(rec.wrong > 0);
            self.shared
                .points_consumed()
                .store(k as u32 + 1, Ordering::SeqCst);
            notify(self.shared.doorbell(0), self.shared.sleeping(0));
            dog.kick();
        }
        Ok(wrong_points)
    }

    /// Waits until the ranks publish point `want` (1-based); `last` when it is the last point.
    fn wait_published(
        &mut self,
        want: u32,
        point: &Point,
        last: bool,
        dog: &mut Watchdog,
    ) -> Result<()> {
        let published = self.shared.points_published();
        loop {
            let now = published.load(Ordering::Acquire);
            if now >= want {
                return Ok(());
            }
            self.check_health(&point.describe(), last, dog)?;
            // Rank 0 publishes before it exits, so once every rank has been reaped the count is
            // final: waiting longer would only wait for the watchdog.
            if self.ranks.all_exited() && published.load(Ordering::Acquire) < want {
                return Err(Error::Rank(format!(
                    "every rank exited before finishing {}",
                    point.describe()
                )));
            }
            futex_wait(published, now, Duration::from_millis(20));
        }
    }

    /// Errors if the user interrupted, a rank ended, or the ranks stalled past the timeout.
    /// During the `last` point a rank may finish cleanly: the others leave the final barrier
    /// and exit before rank 0 has published the point, so exit code 0 is no failure then.
    fn check_health(&mut self, during: &str, last: bool, dog: &mut Watchdog) -> Result<()> {
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(Error::Interrupted(format!("stopped during {during}")));
        }
        if let Some(first) = self.ranks.poll_exited() {
            let (r, exit) = self.cause(first);
            // Ctrl-C or SIGTERM sent to the whole process group reaches the ranks too, and one
            // of them may be seen dead before the launcher's own handler has run.
            if let RankExit::Signal(sig @ (libc::SIGINT | libc::SIGTERM)) = exit {
                return Err(Error::Interrupted(format!(
                    "rank {r} (pid {}) received {} during {during}",
                    self.pid_text(r),
                    RankExit::Signal(sig).describe()
                )));
            }
            if last && exit == RankExit::Code(0) {
                return Ok(());
            }
            return Err(Error::Rank(format!(
                "rank {r} (pid {}) ended with {} during {during}{}; the other ranks were stopped",
                self.pid_text(r),
                exit.describe(),
                self.rank_error(r)
            )));
        }
        if dog.expired(self.shared) {
            let stuck = blame(self.shared, &self.pids);
            // A stopped or dead process explains itself; a live one may be in a long warm-up.
            let hint = if stuck.reason.starts_with("process is") {
                ""
            } else {
                " (a point's warm-up must end within --timeout: raise it, or lower --warmup)"
            };
            return Err(Error::Rank(format!(
                "rank {} (pid {}) made no progress for {} during {during} ({}); all ranks were \
                 stopped{hint}",
                stuck.rank,
                self.pid_text(stuck.rank),
                humantime::format_duration(self.timeout),
                stuck.reason
            )));
        }
        Ok(())
    }

    fn pid_text(&self, r: usize) -> String {
        self.pids
            .get(r)
            .copied()
            .flatten()
            .map_or("?".into(), |p| p.to_string())
    }

    /// Reads the member ranks' samples and wrong counts from the segment.
    fn collect(&self, p: &Point) -> Result<(PointRecord, Vec<IterSample>, Vec<RankSummary>)> {
        let iters = p.iters.min(self.shared.layout.max_iters);
        let rank_times: Vec<Vec<f64>> = (0..p.world)
            .map(|r| {
                // SAFETY: the ranks wrote `iters` samples and published the point; they do not
                // touch the area again until we store points_consumed.
                unsafe { std::slice::from_raw_parts(self.shared.samples_ptr(r), iters) }.to_vec()
            })
            .collect();
        let wrong: Vec<u64> = (0..p.world)
            .map(|r| self.shared.wrong(r).load(Ordering::Relaxed))
            .collect();
        let key = p.key("host");
        summarize(key, p.warmup, &rank_times, &wrong).ok_or_else(|| {
            Error::Rank(format!(
                "invalid samples from the ranks for {}",
                p.describe()
            ))
        })
    }

    /// The rank whose exit is the cause, given the first exit seen. A rank that dies takes its
    /// peers down within milliseconds (over TCP they see the connection close), and any of them
    /// may be reaped first; so exits are gathered for a moment and a death by signal is blamed
    /// before an exit with an error code.
    fn cause(&mut self, first: (usize, RankExit)) -> (usize, RankExit) {
        if first.1 == RankExit::Code(0) {
            return first;
        }
        let mut seen = vec![first];
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until && !self.ranks.all_exited() {
            match self.ranks.poll_exited() {
                Some(e) => seen.push(e),
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        let by_signal = seen.iter().find(|(_, e)| matches!(e, RankExit::Signal(_)));
        by_signal.copied().unwrap_or(first)
    }

    /// ": <message>" when rank `r` left an error message in the segment, else "".
    fn rank_error(&self, r: usize) -> String {
        match self.shared.error(r) {
            Some(msg) => format!(": {}", msg.trim_start_matches(&format!("rank {r}: "))),
            None => String::new(),
        }
    }

    /// After the last point every rank must exit cleanly within the timeout.
    fn wait_exit(&mut self) -> Result<()> {
        let start = Instant::now();
        while !self.ranks.all_exited() {
            if let Some((r, exit)) = self.ranks.poll_exited() {
                if exit != RankExit::Code(0) {
                    return Err(Error::Rank(format!(
                        "rank {r} (pid {}) ended with {} after the last point{}",
                        self.pid_text(r),
                        exit.describe(),
                        self.rank_error(r)
                    )));
                }
                continue;
            }
            if start.elapsed() > self.timeout {
                let left: Vec<String> = self
                    .ranks
                    .running()
                    .into_iter()
                    .map(|r| format!("{r} (pid {})", self.pid_text(r)))
                    .collect();
                return Err(Error::Rank(format!(
                    "rank(s) {} did not exit within {} after the last point; all ranks were stopped",
                    left.join(", "),
                    humantime::format_duration(self.timeout)
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }
}
