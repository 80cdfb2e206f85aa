//! Binding rank processes to cores, as MPI launchers do by default. Unbound ranks migrate
//! between cores, and on an oversubscribed host the scheduler may stack the two ranks of an
//! exchange on one core while the other idles. Rank r goes to the r-th allowed CPU (cyclic), so
//! ring neighbours land on different cores and every core carries the same number of ranks.

use crate::model::plan::Bind;

/// The CPUs this process may run on, in ascending order.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// The CPU rank `rank` is bound to under `bind`, from the CPUs allowed to the launch.
pub fn cpu_for_rank(bind: Bind, rank: usize, allowed: &[usize]) -> Option<usize> {
    match bind {
        Bind::None => None,
        Bind::Core if allowed.is_empty() => None,
        Bind::Core => Some(allowed[rank % allowed.len()]),
    }
}

/// Pins the calling process to `cpu`. A refusal (e.g. a cgroup that forbids it) is not fatal:
/// the rank runs unbound and the caller may say so.
pub fn bind_to(cpu: usize) -> std::io::Result<()> {
    // SAFETY: as above; sched_setaffinity only reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_go_round_robin_over_allowed_cpus() {
        let allowed = [2, 3, 5];
        let cpus: Vec<_> = (0..5)
            .map(|r| cpu_for_rank(Bind::Core, r, &allowed))
            .collect();
        assert_eq!(cpus, [Some(2), Some(3), Some(5), Some(2), Some(3)]);
        assert_eq!(cpu_for_rank(Bind::None, 0, &allowed), None);
        assert_eq!(cpu_for_rank(Bind::Core, 0, &[]), None);
    }

    #[test]
    fn parses_bind_names() {
        assert_eq!("core".parse::<Bind>().unwrap(), Bind::Core);
        assert_eq!(" NONE ".parse::<Bind>().unwrap(), Bind::None);
        assert!("socket".parse::<Bind>().is_err());
    }

    #[test]
    fn this_process_has_allowed_cpus() {
        assert!(!allowed_cpus().is_empty());
    }
}
