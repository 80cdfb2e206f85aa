//! Where a rank's process is, so that rank 0 can look at it after a stall: the machine (the
//! kernel's boot id and the pid namespace, equal only for processes that share a pid space)
//! and the pid. A stopped (`T`) or gone process is the cause of a stall however its neighbours
//! failed; ranks on other machines cannot be inspected and are listed as such.

/// How a rank is found on its machine: (machine id, pid).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Whereabouts {
    /// boot id and pid namespace: equal only for processes that share a pid space.
    pub machine: String,
    pub pid: u32,
}

/// The longest machine id kept (a boot id and a namespace link are about 50 bytes).
pub const MAX_MACHINE: usize = 96;

impl Whereabouts {
    /// This process's.
    pub fn mine() -> Whereabouts {
        Whereabouts {
            machine: machine_id(),
            pid: std::process::id(),
        }
    }

    /// One line for a store value: "pid machine".
    pub fn encode(&self) -> String {
        format!("{} {}", self.pid, self.machine)
    }

    /// What [`encode`](Self::encode) wrote; a peer's bytes, so bounded and never trusted: an
    /// unreadable value is a rank that cannot be inspected (pid 0 on no machine).
    pub fn decode(text: &str) -> Whereabouts {
        let (pid, machine) = text.trim().split_once(' ').unwrap_or(("", ""));
        let machine: String = machine.chars().take(MAX_MACHINE).collect();
        match pid.parse() {
            Ok(pid) if pid > 0 => Whereabouts { machine, pid },
            _ => Whereabouts {
                machine: String::new(),
                pid: 0,
            },
        }
    }
}

/// This process's machine id: the kernel's boot id and this process's pid namespace.
pub fn machine_id() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let ns = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = format!("{}/{ns}", boot.trim());
    id.chars().take(MAX_MACHINE).collect()
}

/// What `ranks` (index = rank; rank 0 is this process) look like from here: the ranks on this
/// machine whose process is stopped or gone ("rank 1 (pid 11) is stopped"), and the ranks on
/// other machines, which cannot be inspected.
pub fn inspect(
    ranks: &[Whereabouts],
    state: impl Fn(u32) -> Option<char>,
) -> (Vec<(usize, String)>, Vec<usize>) {
    let here = ranks.first().map(|w| w.machine.clone()).unwrap_or_default();
    let mut found = Vec::new();
    let mut elsewhere = Vec::new();
    for (r, w) in ranks.iter().enumerate().skip(1) {
        if w.machine != here || here.is_empty() || w.pid == 0 {
            elsewhere.push(r);
            continue;
        }
        match state(w.pid) {
            Some('T') | Some('t') => {
                found.push((r, format!("rank {r} (pid {}) is stopped", w.pid)))
            }
            Some('Z') | None => found.push((r, format!("rank {r} (pid {}) has exited", w.pid))),
            _ => {}
        }
    }
    (found, elsewhere)
}

/// The state letter of a process from /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...).
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces; the state follows it.
    let after = stat.rsplit_once(')')?.1;
    after.trim_start().chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(machine: &str, pid: u32) -> Whereabouts {
        Whereabouts {
            machine: machine.into(),
            pid,
        }
    }

    #[test]
    fn only_ranks_on_this_machine_are_looked_at() {
        let ranks = [at("a", 10), at("a", 11), at("a", 12), at("b", 11)];
        let state = |pid| match pid {
            11 => Some('T'),
            _ => Some('S'),
        };
        // Rank 3's pid is 11 too, on another machine: never taken for rank 1.
        let (found, elsewhere) = inspect(&ranks, state);
        assert_eq!(found, vec![(1, "rank 1 (pid 11) is stopped".to_string())]);
        assert_eq!(elsewhere, vec![3]);
        let gone = |pid| (pid != 12).then_some('S');
        assert_eq!(inspect(&ranks, gone).0[0].1, "rank 2 (pid 12) has exited");
        assert!(inspect(&ranks, |_| Some('R')).0.is_empty());
    }

    #[test]
    fn this_machine_is_known_by_boot_and_pid_namespace() {
        let id = machine_id();
        assert!(id.contains("pid:[") && id.len() > 40, "{id}");
        assert_eq!(id, machine_id());
        assert!(process_state(std::process::id()).is_some());
    }

    #[test]
    fn a_peer_s_whereabouts_round_trip_and_garbage_is_uninspectable() {
        let me = Whereabouts::mine();
        assert_eq!(Whereabouts::decode(&me.encode()), me);
        for bad in ["", "x y", "0 m", "-3 m", "99999999999 m", "12"] {
            let w = Whereabouts::decode(bad);
            assert_eq!(w.pid, 0, "{bad}");
            assert!(inspect(&[me.clone(), w], |_| None).0.is_empty(), "{bad}");
        }
        let long = format!("5 {}", "m".repeat(10_000));
        assert_eq!(Whereabouts::decode(&long).machine.len(), MAX_MACHINE);
    }
}
