//! Finding the processes of a launch through /proc: a marker in the launch's environment that its
//! ranks inherit, and the rank processes of one launcher.

/// A unique marker put in the environment of a launch; rank processes inherit it, so the test
/// finds exactly its own processes in /proc even while other tests run.
pub fn marker() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// Name of the environment variable that carries [`marker`].
pub const MARKER_ENV: &str = "COLLBENCH_TEST_MARKER";

/// A process seen in /proc.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    /// State letter: R, S, D, T, t, Z, ...
    pub state: char,
    pub cmdline: Vec<String>,
}

#[cfg(target_os = "linux")]
impl Proc {
    /// The `--rank N` of a rank process's command line.
    pub fn rank(&self) -> Option<usize> {
        let at = self.cmdline.iter().position(|a| a == "--rank")?;
        self.cmdline.get(at + 1)?.parse().ok()
    }

    /// Whether this is a rank process of a sweep or a replay: `<exe> __rank --rank N --fd F
    /// --layout L` (`__replay-rank` for a replay).
    pub fn is_rank(&self) -> bool {
        let sub = self.cmdline.get(1).map(String::as_str);
        matches!(sub, Some("__rank" | "__replay-rank")) && self.rank().is_some()
    }

    /// A zombie or dead process is gone for our purposes (only its parent can reap it).
    pub fn is_alive(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Reads one process from /proc; None once it is gone.
#[cfg(target_os = "linux")]
pub fn proc_info(pid: u32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: state and ppid follow the last ')'.
    let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmdline = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    Some(Proc {
        pid,
        ppid,
        state,
        cmdline,
    })
}

/// Every process id in /proc.
#[cfg(target_os = "linux")]
fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Live processes whose environment holds `MARKER_ENV=marker` (the launcher and its ranks).
#[cfg(target_os = "linux")]
pub fn marked(marker: &str) -> Vec<Proc> {
    let needle = format!("{MARKER_ENV}={marker}");
    all_pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
                .unwrap_or(false)
        })
        .filter_map(proc_info)
        .filter(Proc::is_alive)
        .collect()
}

/// Live rank processes whose parent is `launcher`, ordered by rank.
#[cfg(target_os = "linux")]
pub fn ranks_of(launcher: u32) -> Vec<Proc> {
    let mut ranks: Vec<Proc> = all_pids()
        .into_iter()
        .filter_map(proc_info)
        .filter(|p| p.ppid == launcher && p.is_rank() && p.is_alive())
        .collect();
    ranks.sort_by_key(|p| p.rank());
    ranks
}
