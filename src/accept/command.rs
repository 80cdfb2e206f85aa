//! The `collbench accept` command: read the criteria, sweep (N repeats) or take the given
//! results folders, judge, write verdict.json and JUnit XML, print the table, pick the exit
//! code (0 pass, 1 fail, 2 could not judge).

use std::path::{Path, PathBuf};

use super::criteria::Criteria;
use super::expect::Expect;
use super::judge::{judge, Header};
use super::measure::read_measured;
use super::verdict::{Outcome, Verdict, VERDICT_FILE};
use super::{junit, table};
use crate::collective::Proto;
use crate::error::{Error, Result};
use crate::output::file::{check_new, write_output};
use crate::report::run_dir::{default_run_id, new_unique_dir};
use crate::sweep::execute::{execute, execute_each, role, Executed, Role};
use crate::sweep::request::SweepRequest;

/// File name of the JUnit XML inside the output folder.
pub const JUNIT_FILE: &str = "junit.xml";

/// What `collbench accept` was asked to do.
#[derive(Debug, Clone)]
pub struct AcceptRequest {
    pub criteria: Option<PathBuf>,
    /// `--expect` profiles, `--margin` and `--nics`.
    pub expect: Vec<String>,
    /// `--baseline-from`: print criteria made from these folders instead of judging.
    pub baseline_from: Vec<PathBuf>,
    pub margin: f64,
    pub nics: Option<usize>,
    /// Sweeps to run (ignored with `runs`).
    pub repeat: usize,
    /// Existing results folders to judge, one per repeat.
    pub runs: Vec<PathBuf>,
    pub out: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    pub json: bool,
    /// `--force`: replace an existing verdict.json or JUnit file.
    pub force: bool,
    pub command_line: Vec<String>,
}

/// Runs the command; `Ok` carries the verdict's exit code.
pub fn run_accept(req: &AcceptRequest) -> Result<u8> {
    if !req.baseline_from.is_empty() {
        return super::baseline::print(&req.baseline_from, req.margin);
    }
    let judged_elsewhere = req.criteria.is_some() || !req.runs.is_empty();
    let mut expect = Expect::from_flags(&req.expect, (req.margin, req.nics), judged_elsewhere)?;
    let mut criteria = match &req.criteria {
        Some(path) => Criteria::load(path)?,
        None => Criteria::empty(Path::new("--expect"), "expect"),
    };
    // The file's [expect], unless --expect replaces it.
    if let (None, Some(spec)) = (&expect, &criteria.expect) {
        expect = Expect::from_file(spec, &criteria.path)?;
    }
    // Refused before any sweep, so that a refusal costs nothing (a default folder is new).
    for path in output_paths(req.out.as_deref(), req.junit.as_deref()) {
        check_new(&path, req.force)?;
    }
    let (out, dirs) = if req.runs.is_empty() {
        let out = match &req.out {
            Some(out) => Out::Given(out.clone()),
            None => Out::Default(
                Path::new("results").to_path_buf(),
                default_run_id(&[], "accept"),
            ),
        };
        match sweep_repeats(req, &criteria, out)? {
            Some((out, dirs)) => (Some(out), dirs),
            // A rank other than 0 of a multi-host launch: rank 0 judges.
            None => return Ok(0),
        }
    } else {
        (req.out.clone(), req.runs.clone())
    };
    let measured = read_measured(&dirs)?;
    let header = Header {
        created: crate::meta::now_rfc3339(),
        command_line: req.command_line.clone(),
    };
    let notes = match &expect {
        Some(e) => {
            let keys: Vec<_> = measured.groups.iter().map(|g| g.key.clone()).collect();
            let (extra, notes) = e.criteria(&keys);
            criteria.criteria.extend(extra);
            notes
        }
        None => Vec::new(),
    };
    let mut verdict = judge(&criteria, &measured, header);
    // On stderr with the verdict's other notes (`explain`).
    verdict.notes.extend(notes);
    let written = write_outputs(&verdict, out.as_deref(), req.junit.as_deref(), req.force)?;
    if req.json {
        crate::output::stdout::println(&to_json(&verdict)?);
    } else {
        crate::output::stdout::print(&table::render(&verdict));
    }
    explain(&verdict, &written);
    Ok(verdict.exit_code)
}

/// Where the repeats' results and the verdict go.
enum Out {
    /// `--out`.
    Given(PathBuf),
    /// A new folder in this parent, named by [`default_out`] from this run id.
    Default(PathBuf, String),
}

/// `<results>/<run id>-<name>` (`results/<date>-<time>-accept-<name>`), the name reduced to
/// safe characters, created here exclusively as [`new_unique_dir`] does for every command's
/// default folder: two accepts started in the same second get `…-<name>` and `…-<name>-2`,
/// never one folder between them.
fn new_default_out(results: &Path, run_id: &str, name: &str) -> Result<PathBuf> {
    new_unique_dir(&results.join(default_out(run_id, name)))
}

/// `<run id>-<name>`, the name reduced to safe characters.
fn default_out(run_id: &str, name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{run_id}-{safe}")
}

/// Runs the criteria's sweep `req.repeat` times into `<out>/repeat-<i>`; every request is parsed
/// and every criterion checked against the plan before the first measurement, and a default
/// folder is created only then (by rank 0 alone under a launcher), so a refusal leaves nothing
/// behind. Under mpirun, srun or torchrun every rank takes part and only rank 0 gets the output
/// folder and the repeats' folders (`None` elsewhere).
fn sweep_repeats(
    req: &AcceptRequest,
    criteria: &Criteria,
    out: Out,
) -> Result<Option<(PathBuf, Vec<PathBuf>)>> {
    let in_file = |msg: String| Error::Input {
        path: criteria.path.clone(),
        msg,
    };
    let spec = criteria.sweep.as_ref().ok_or_else(|| {
        in_file("has no [sweep] table; add one, or judge existing results with --run DIR".into())
    })?;
    let requests_in = |out: &Path| -> Result<Vec<(PathBuf, SweepRequest)>> {
        let request = |i: usize| {
            let dir = out.join(format!("repeat-{i}"));
            let r = spec
                .request(&dir, req.command_line.clone())
                .map_err(|e| match e {
                    Error::Usage(m) => in_file(m),
                    other => other,
                })?;
            Ok((dir, r))
        };
        (1..=req.repeat).map(request).collect()
    };
    // Checked against a provisional folder; the requests are remade for the one created.
    let provisional = match &out {
        Out::Given(dir) => dir.clone(),
        Out::Default(results, id) => results.join(default_out(id, &criteria.name)),
    };
    let mut requests = requests_in(&provisional)?;
    if let Some((_, first)) = requests.first() {
        first.backend.availability().map_err(Error::Usage)?;
        check_plan(criteria, first).map_err(in_file)?;
    }
    let role = match requests.first() {
        Some((_, r)) => role(r)?,
        None => Role::Lead,
    };
    if let Role::LaunchedRank(dir) = role {
        // The launcher re-ran this command line: measure the repeat it names; it judges.
        let r = spec.request(&dir, req.command_line.clone())?;
        let _quiet = StdoutToStderr::new();
        execute(&r)?;
        return Ok(None);
    }
    let lead = role == Role::Lead;
    let out = match out {
        Out::Default(results, id) if lead => {
            let created = new_default_out(&results, &id, &criteria.name)?;
            requests = requests_in(&created)?;
            created
        }
        _ => provisional,
    };
    let (dirs, reqs): (Vec<PathBuf>, Vec<SweepRequest>) = requests.into_iter().unzip();
    let announce = |i: usize| {
        crate::say!(
            "collbench: acceptance sweep {}/{} into {}",
            i + 1,
            dirs.len(),
            dirs[i].display()
        )
    };
    let executed = {
        let _quiet = StdoutToStderr::new();
        execute_each(&reqs, announce)?
    };
    let mut leader = true;
    for (dir, e) in dirs.iter().zip(&executed) {
        match e {
            Executed::Follower => leader = false,
            // 1: some point computed wrong results, which the judge reads from the folder.
            Executed::Launcher(0 | 1) | Executed::Lead(_) => {}
            Executed::Launcher(code) => {
                return Err(Error::Rank(format!(
                    "the NCCL ranks measuring {} exited with code {code}; their messages are above",
                    dir.display()
                )))
            }
        }
    }
    Ok(leader.then_some((out, dirs)))
}

/// Refuses a criterion that no planned point could match, before anything is measured.
fn check_plan(criteria: &Criteria, r: &SweepRequest) -> Result<(), String> {
    let plan = r.opts.plan_for(r.backend);
    let protos: Vec<Option<Proto>> = if r.protos.is_empty() {
        vec![None]
    } else {
        r.protos.iter().copied().map(Some).collect()
    };
    for c in &criteria.criteria {
        let hit = plan.points.iter().any(|p| {
            protos.iter().any(|&proto| {
                c.select.matches(
                    p.call.op,
                    p.call.algo,
                    proto,
                    p.call.dtype,
                    p.world,
                    None,
                    p.call.shape.bytes,
                    p.in_place,
                )
            })
        });
        if !hit {
            return Err(format!(
                "criterion '{}' matches no point the [sweep] measures ({}); widen its window or \
                 sweep what it selects",
                c.name,
                c.select.describe()
            ));
        }
    }
    Ok(())
}

/// Where the verdict went.
struct Written {
    verdict: Option<PathBuf>,
    junit: Option<PathBuf>,
}

/// The verdict file and the JUnit file this request writes, in that order.
fn output_paths(out: Option<&Path>, junit: Option<&Path>) -> Vec<PathBuf> {
    let verdict = out.map(|d| d.join(VERDICT_FILE));
    let junit = junit
        .map(Path::to_path_buf)
        .or_else(|| out.map(|d| d.join(JUNIT_FILE)));
    verdict.into_iter().chain(junit).collect()
}

fn write_outputs(
    v: &Verdict,
    out: Option<&Path>,
    junit_path: Option<&Path>,
    force: bool,
) -> Result<Written> {
    let mut written = Written {
        verdict: None,
        junit: None,
    };
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(VERDICT_FILE);
        write_output(&path, (to_json(v)? + "\n").as_bytes(), force)?;
        written.verdict = Some(path);
    }
    let junit_path = junit_path
        .map(Path::to_path_buf)
        .or_else(|| out.map(|d| d.join(JUNIT_FILE)));
    if let Some(path) = junit_path {
        write_output(&path, junit::render(v).as_bytes(), force)?;
        written.junit = Some(path);
    }
    Ok(written)
}

fn to_json(v: &Verdict) -> Result<String> {
    serde_json::to_string_pretty(v)
        .map_err(|e| Error::usage(format!("cannot encode the verdict: {e}")))
}

/// One line per thing the user must know on stderr: criteria without data, incomplete runs,
/// where the files went.
fn explain(v: &Verdict, written: &Written) {
    for cv in v.criteria.iter().filter(|c| c.points.is_empty()) {
        crate::say!(
            "collbench: criterion '{}' {}",
            cv.name,
            cv.note.as_deref().unwrap_or("matched no measured point")
        );
    }
    for note in &v.notes {
        crate::say!("collbench: {note}");
    }
    let runs_complete = v.runs.iter().all(|r| r.status == "complete");
    if v.result == Outcome::NoData && v.counts.criteria_no_data == 0 && runs_complete {
        crate::say!("collbench: some thresholds could not be judged (see the table's notes)");
    }
    let files: Vec<String> = [&written.verdict, &written.junit]
        .into_iter()
        .flatten()
        .map(|p| p.display().to_string())
        .collect();
    if !files.is_empty() {
        crate::say!("collbench: verdict written to {}", files.join(" and "));
    }
}

/// While alive, the process's stdout goes to stderr: the sweep's live table must not mix with
/// the verdict (or the `--json` object) on stdout. Does nothing if the descriptors cannot be
/// duplicated.
struct StdoutToStderr {
    saved: Option<libc::c_int>,
}

impl StdoutToStderr {
    fn new() -> StdoutToStderr {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // SAFETY: dup/dup2/close on the process's own standard descriptors; no memory is shared.
        let saved = unsafe {
            let saved = libc::dup(1);
            if saved >= 0 && libc::dup2(2, 1) < 0 {
                libc::close(saved);
                -1
            } else {
                saved
            }
        };
        StdoutToStderr {
            saved: (saved >= 0).then_some(saved),
        }
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        if let Some(fd) = self.saved {
            // SAFETY: `fd` is the duplicate made in `new`, still open and owned by us.
            unsafe {
                libc::dup2(fd, 1);
                libc::close(fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_folders_of_accepts_started_in_the_same_second_differ() {
        let tmp = tempfile::tempdir().unwrap();
        let results = tmp.path().join("results");
        let id = "20261122-081500-accept";
        let first = new_default_out(&results, id, "NIC check/2").unwrap();
        let second = new_default_out(&results, id, "NIC check/2").unwrap();
        assert_eq!(first, results.join("20261122-081500-accept-NIC-check-2"));
        assert_eq!(second, results.join("20261122-081500-accept-NIC-check-2-2"));
        assert!(first.is_dir() && second.is_dir());
        // A folder an earlier accept left (with its verdict) is never reused.
        std::fs::write(second.join(VERDICT_FILE), "{}").unwrap();
        let third = new_default_out(&results, id, "NIC check/2").unwrap();
        assert_eq!(third, results.join("20261122-081500-accept-NIC-check-2-3"));
    }
}
