//! One reader per launcher: Open MPI's, Slurm's and torchrun's variables turned into a
//! [`Bootstrap`], each checked against the others of its launcher.

use super::*;

pub(super) fn open_mpi(v: &Vars) -> Result<Option<Bootstrap>> {
    const RANK: &str = "OMPI_COMM_WORLD_RANK";
    const SIZE: &str = "OMPI_COMM_WORLD_SIZE";
    const LOCAL_RANK: &str = "OMPI_COMM_WORLD_LOCAL_RANK";
    const LOCAL_SIZE: &str = "OMPI_COMM_WORLD_LOCAL_SIZE";
    if !v.has(RANK) && !v.has(SIZE) {
        return Ok(None);
    }
    let l = Launcher::OpenMpi;
    let rank = v.required(RANK, SIZE, l)?;
    let world = v.required(SIZE, RANK, l)?;
    let local_rank = v.number(LOCAL_RANK, l)?;
    let local_world = v.number(LOCAL_SIZE, l)?;
    check_ids(
        l,
        (RANK, rank),
        (SIZE, world),
        local_rank.map(|x| (LOCAL_RANK, x)),
        local_world.map(|x| (LOCAL_SIZE, x)),
    )?;
    let (master, master_origin) = store_address(v, l, world, None)?;
    Ok(Some(Bootstrap {
        launcher: l,
        rank,
        world,
        local_rank,
        local_world,
        node: None,
        hosts: None,
        master,
        master_origin,
        token: None,
        job_id: v.raw("PMIX_NAMESPACE"),
    }))
}

pub(super) fn slurm(v: &Vars) -> Result<Option<Bootstrap>> {
    const RANK: &str = "SLURM_PROCID";
    const LOCAL_RANK: &str = "SLURM_LOCALID";
    const NODE: &str = "SLURM_NODEID";
    const PER_NODE: &str = "SLURM_STEP_TASKS_PER_NODE";
    let step = v.raw("SLURM_STEP_ID").or_else(|| v.raw("SLURM_STEPID"));
    if !v.has(RANK) || step.is_none() {
        return Ok(None); // not a task of an srun job step (see the module notes)
    }
    let l = Launcher::Slurm;
    let world_var = ["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"]
        .into_iter()
        .find(|var| v.has(var))
        .unwrap_or("SLURM_NTASKS");
    let rank = v.required(RANK, world_var, l)?;
    let world = v.required(world_var, RANK, l)?;
    let local_rank = v.number(LOCAL_RANK, l)?;
    let node = v.number(NODE, l)?;
    let local_world = match (v.raw(PER_NODE), node) {
        (Some(text), Some(n)) => {
            let counts = tasks_per_node(&text).ok_or_else(|| {
                Error::usage(format!(
                    "{PER_NODE}='{text}' is not a task count list such as 2(x3),1; {}",
                    l.hint()
                ))
            })?;
            Some(*counts.get(n).ok_or_else(|| {
                Error::usage(format!(
                    "{NODE}={n} but {PER_NODE}='{text}' describes only {} nodes; {}",
                    counts.len(),
                    l.hint()
                ))
            })?)
        }
        _ => None,
    };
    check_ids(
        l,
        (RANK, rank),
        (world_var, world),
        local_rank.map(|x| (LOCAL_RANK, x)),
        local_world.map(|x| (PER_NODE, x)),
    )?;
    let host_var = [
        "SLURM_STEP_NODELIST",
        "SLURM_JOB_NODELIST",
        "SLURM_NODELIST",
    ]
    .into_iter()
    .find(|var| v.has(var));
    let hosts = match host_var {
        Some(var) => {
            let text = v.raw(var).unwrap_or_default();
            let hosts = hostlist::expand(&text)
                .map_err(|e| Error::usage(format!("{var}: {e}; {}", l.hint())))?;
            if let Some(n) = node.filter(|&n| var == "SLURM_STEP_NODELIST" && n >= hosts.len()) {
                return Err(Error::usage(format!(
                    "{NODE}={n} but {var}='{text}' names only {} hosts; {}",
                    hosts.len(),
                    l.hint()
                )));
            }
            Some(hosts)
        }
        None => None,
    };
    let first = host_var.zip(hosts.as_deref());
    let (master, master_origin) = store_address(v, l, world, first)?;
    let job_id = v
        .raw("SLURM_JOB_ID")
        .map(|j| format!("{j}.{}", step.unwrap_or_default()));
    Ok(Some(Bootstrap {
        launcher: l,
        rank,
        world,
        local_rank,
        local_world,
        node,
        hosts,
        master,
        master_origin,
        token: None,
        job_id,
    }))
}

/// Expands Slurm's compressed task counts per node, `2(x3),1` → [2, 2, 2, 1].
pub(super) fn tasks_per_node(text: &str) -> Option<Vec<usize>> {
    let mut counts = Vec::new();
    for item in text.split(',') {
        let (count, reps) = match item.trim().split_once("(x") {
            Some((c, r)) => (c, r.strip_suffix(')')?.parse::<usize>().ok()?),
            None => (item.trim(), 1),
        };
        let count: usize = count.parse().ok()?;
        if reps == 0 || counts.len() + reps > hostlist::MAX_HOSTS {
            return None;
        }
        counts.extend(std::iter::repeat(count).take(reps));
    }
    Some(counts)
}

pub(super) fn torchrun(v: &Vars) -> Result<Option<Bootstrap>> {
    if !v.has("RANK") && !v.has("WORLD_SIZE") {
        return Ok(None);
    }
    let l = Launcher::Torchrun;
    let rank = v.required("RANK", "WORLD_SIZE", l)?;
    let world = v.required("WORLD_SIZE", "RANK", l)?;
    let local_rank = v.number("LOCAL_RANK", l)?;
    let local_world = v.number("LOCAL_WORLD_SIZE", l)?;
    let node = match v.number("GROUP_RANK", l)? {
        Some(n) => Some(n),
        None => v.number("NODE_RANK", l)?,
    };
    check_ids(
        l,
        ("RANK", rank),
        ("WORLD_SIZE", world),
        local_rank.map(|x| ("LOCAL_RANK", x)),
        local_world.map(|x| ("LOCAL_WORLD_SIZE", x)),
    )?;
    let (master, master_origin) = store_address(v, l, world, None)?;
    Ok(Some(Bootstrap {
        launcher: l,
        rank,
        world,
        local_rank,
        local_world,
        node,
        hosts: None,
        master,
        master_origin,
        token: None,
        job_id: v.raw("TORCHELASTIC_RUN_ID"),
    }))
}
