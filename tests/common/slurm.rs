//! A real Slurm for the tests: the four-node cluster of scripts/slurm-local.sh (nodes n1 to n4
//! on this machine), reached through `SLURM_CONF` (else the script's default place). Tests that
//! need it say SKIPPED without it, or fail where `COLLBENCH_TEST_REQUIRE` names `slurm`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{exe, Run, Spawned, LAUNCHER_VARS};

/// The job's secret for the ranks srun starts.
pub const TOKEN: &str = "00112233445566778899aabbccddeeff";

/// Where scripts/slurm-local.sh writes its slurm.conf unless told otherwise.
const DEFAULT_CONF: &str = "/tmp/collbench-slurm/slurm.conf";

/// The cluster's slurm.conf, once nodes n1 and n2 answer; else `None` after SKIPPED (or a
/// failure where the cluster is required).
pub fn cluster() -> Option<PathBuf> {
    cluster_of(&["n1", "n2"])
}

/// [`cluster`], once every node of `names` answers.
pub fn cluster_of(names: &[&str]) -> Option<PathBuf> {
    let conf = std::env::var_os("SLURM_CONF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONF));
    let missing = nodes_up(&conf, names).err();
    super::skip::can_use("slurm", missing).then_some(conf)
}

/// Whether `sinfo` under `conf` shows the nodes `names` able to run tasks (a node still
/// completing the last job counts: srun waits for it).
fn nodes_up(conf: &Path, names: &[&str]) -> Result<(), String> {
    if !conf.exists() {
        return Err(format!(
            "no Slurm cluster ({} missing; start one with scripts/slurm-local.sh start)",
            conf.display()
        ));
    }
    let out = Command::new("sinfo")
        .args(["-h", "-N", "-o", "%N %T"])
        .env("SLURM_CONF", conf)
        .output()
        .map_err(|e| format!("sinfo: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ready = |n: &str| {
        text.lines().any(|l| {
            l.starts_with(&format!("{n} "))
                && ["idle", "mixed", "alloc", "completing"]
                    .iter()
                    .any(|s| l.contains(s))
        })
    };
    match names.iter().all(|n| ready(n)) {
        true => Ok(()),
        false => Err(format!(
            "the Slurm nodes {} are not up: sinfo says {text:?}",
            names.join(", ")
        )),
    }
}

/// `srun <srun_args> collbench <args>` under `conf`, started with the job's token, a job name
/// of its own (for `scancel --name`) and output captured.
pub fn srun(conf: &Path, srun_args: &[&str], args: &[&str], name: &str) -> Spawned {
    srun_through(conf, srun_args, &[], args, name)
}

/// [`srun`] with every task started through `wrapper` (a program and its first arguments,
/// given collbench's path and then `args`).
pub fn srun_through(
    conf: &Path,
    srun_args: &[&str],
    wrapper: &[&str],
    args: &[&str],
    name: &str,
) -> Spawned {
    let mut cmd = Command::new("srun");
    for var in LAUNCHER_VARS {
        cmd.env_remove(var);
    }
    cmd.env("SLURM_CONF", conf)
        .env("COLLBENCH_TOKEN", TOKEN)
        .arg(format!("--job-name={name}"))
        .args(srun_args)
        .args(wrapper)
        .arg(exe())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Spawned::start(cmd)
}

/// [`srun`] to the end, killed after `limit` (a hang).
pub fn srun_to_end(conf: &Path, srun_args: &[&str], args: &[&str], limit: Duration) -> Run {
    let name = format!("cb-test-{}", std::process::id());
    srun(conf, srun_args, args, &name).finish(Instant::now(), limit)
}

/// The pid of the task of rank `rank` of the job step named `name` (from its environment),
/// once it runs.
pub fn task_pid(name: &str, rank: usize) -> Option<u32> {
    let want_name = format!("SLURM_JOB_NAME={name}");
    let want_rank = format!("SLURM_PROCID={rank}");
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|&pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let has = |v: &str| env.split(|&b| b == 0).any(|x| x == v.as_bytes());
            let exe_ok = std::fs::read_link(format!("/proc/{pid}/exe"))
                .is_ok_and(|p| p.file_name().is_some_and(|f| f == "collbench"));
            exe_ok && has(&want_name) && has(&want_rank)
        })
}

/// `scancel --name=<name>` under `conf`.
pub fn scancel(conf: &Path, name: &str) {
    let st = Command::new("scancel")
        .arg(format!("--name={name}"))
        .env("SLURM_CONF", conf)
        .status()
        .expect("scancel runs");
    assert!(st.success(), "scancel --name={name}: {st}");
}
