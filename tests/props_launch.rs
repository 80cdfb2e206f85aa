//! Property tests of what a launcher and a user's command line feed collbench: Slurm host
//! lists (held to the real `scontrol show hostnames` where a Slurm is configured), the
//! launcher variables of mpirun, srun and torchrun, and the list-valued flags of `sweep`. Inputs
//! are near-valid: the valid forms with one thing off (a range inverted, a digit dropped, a
//! name misspelt, an item empty), which is where parsers break.

mod common;

use std::collections::HashMap;
use std::process::Command;

use collbench::launch::env::detect;
use collbench::launch::hostlist::{expand, MAX_HOSTS};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// One bracket item: a number or a range, zero-padded at times, inverted at times.
fn bracket_item() -> impl Strategy<Value = String> {
    (0u32..40, 0u32..12, 0usize..3, any::<bool>()).prop_map(|(lo, len, pad, range)| {
        let lo_text = format!("{lo:0pad$}", pad = pad + 1);
        match range {
            // `hi` below `lo` at times: an inverted range.
            true => format!("{lo_text}-{}", (lo + len).saturating_sub(3)),
            false => lo_text,
        }
    })
}

/// A host-list entry: a prefix, perhaps a bracket group (of at least `min` items), perhaps a
/// suffix.
fn entry_of(min: usize) -> impl Strategy<Value = String> {
    (
        "[a-z]{1,3}",
        prop::option::of(prop::collection::vec(bracket_item(), min..3)),
        prop::option::of("[a-z0-9-]{1,2}"),
    )
        .prop_map(|(prefix, group, suffix)| {
            let group = group.map_or(String::new(), |g| format!("[{}]", g.join(",")));
            format!("{prefix}{group}{}", suffix.unwrap_or_default())
        })
}

/// A list of entries, with a stray character at times (an unbalanced or doubled bracket, an
/// empty item).
fn host_list() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(entry_of(0), 1..4),
        prop::option::of((any::<prop::sample::Index>(), "[\\[\\],]")),
    )
        .prop_map(|(entries, stray)| {
            let mut list = entries.join(",");
            if let Some((at, c)) = stray {
                let at = at.index(list.len() + 1);
                let at = (0..=at)
                    .rev()
                    .find(|&i| list.is_char_boundary(i))
                    .unwrap_or(0);
                list.insert_str(at, &c);
            }
            list
        })
}

/// Lists of well-formed entries (ranges may still be inverted), for the comparison with Slurm:
/// on a stray or empty bracket Slurm guesses (`n[1-3` gives `n]`, `a[]` a name with brackets)
/// where collbench refuses.
fn well_formed_list() -> impl Strategy<Value = String> {
    prop::collection::vec(entry_of(1), 1..4).prop_map(|e| e.join(","))
}

/// The hosts `scontrol show hostnames` gives for `list`, or `None` where Slurm refuses it
/// (or no Slurm is configured).
fn scontrol(list: &str) -> Option<Vec<String>> {
    let out = Command::new("scontrol")
        .args(["show", "hostnames", list])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    // Slurm 22.05 says some refusals on stdout, some on stderr, and some by printing nothing.
    let refused = !out.status.success()
        || text.contains("Invalid")
        || err.contains("error")
        || text.trim().is_empty();
    (!refused).then(|| text.lines().map(str::to_string).collect())
}

/// Whether `scontrol` answers here: a Slurm configuration it can read.
fn slurm_configured() -> Option<String> {
    match scontrol("n[1-2]") {
        Some(h) if h == ["n1", "n2"] => None,
        _ => Some("scontrol cannot expand host lists here (no Slurm configuration)".into()),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn host_lists_expand_or_say_why_in_one_line(list in host_list()) {
        match expand(&list) {
            Ok(hosts) => {
                prop_assert!(!hosts.is_empty() && hosts.len() <= MAX_HOSTS);
                prop_assert!(hosts.iter().all(|h| !h.is_empty() && !h.contains([',', '[', ']'])));
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains(&format!("'{list}'")) && !msg.contains('\n'), "{}", msg);
            }
        }
    }
}

#[test]
fn host_lists_slurm_accepts_expand_as_slurm_expands_them() {
    if !common::skip::can_use("slurm", slurm_configured()) {
        return;
    }
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let compared = std::cell::Cell::new(0);
    runner
        .run(&well_formed_list(), |list| {
            if let Some(slurm) = scontrol(&list) {
                compared.set(compared.get() + 1);
                let ours = expand(&list).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(ours, slurm, "{}", list);
            }
            Ok(())
        })
        .unwrap();
    // Most generated lists are valid: a generator that drifted into garbage compares nothing.
    let compared = compared.get();
    assert!(compared >= 24, "only {compared} lists were valid for Slurm");
}

/// A launcher's variables with values near valid: numbers, off-by-one, negative, empty, text.
fn near_number(valid: u32) -> impl Strategy<Value = String> {
    prop_oneof![
        Just(valid.to_string()),
        Just((valid + 1).to_string()),
        Just(format!("-{valid}")),
        Just(String::new()),
        Just(format!(" {valid} ")),
        "[0-9a-z]{1,4}",
        Just("99999999999999999999".to_string()),
    ]
}

fn launcher_env() -> impl Strategy<Value = HashMap<String, String>> {
    (
        0usize..3,
        0u32..8,
        1u32..9,
        near_number(3),
        near_number(4),
        prop::option::of(host_list()),
    )
        .prop_map(|(which, rank, world, r_text, w_text, hosts)| {
            let mut env = HashMap::new();
            let mut set = |k: &str, v: String| env.insert(k.to_string(), v);
            let (r_text, w_text) = match rank % 2 {
                0 => (rank.to_string(), world.to_string()),
                _ => (r_text, w_text),
            };
            match which {
                0 => {
                    set("OMPI_COMM_WORLD_RANK", r_text);
                    set("OMPI_COMM_WORLD_SIZE", w_text);
                    set("COLLBENCH_STORE_ADDR", "127.0.0.1:29517".into());
                }
                1 => {
                    set("SLURM_PROCID", r_text);
                    set("SLURM_STEP_NUM_TASKS", w_text);
                    set("SLURM_STEP_ID", "0".into());
                    if let Some(h) = hosts {
                        set("SLURM_STEP_NODELIST", h);
                    }
                }
                _ => {
                    set("RANK", r_text);
                    set("WORLD_SIZE", w_text);
                    set("MASTER_ADDR", "127.0.0.1".into());
                    set("MASTER_PORT", "29517".into());
                }
            }
            set("COLLBENCH_TOKEN", "00112233445566778899aabbccddeeff".into());
            env
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn launcher_variables_give_a_rank_inside_its_world_or_one_line(env in launcher_env()) {
        let get = |k: &str| env.get(k).cloned();
        match detect(&get) {
            Ok(Some(b)) => {
                prop_assert!(b.world >= 1 && b.rank < b.world, "{:?}", b);
                if let Some(hosts) = &b.hosts {
                    prop_assert!(!hosts.is_empty());
                }
            }
            Ok(None) => {}
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
        }
    }

    #[test]
    fn valid_slurm_variables_read_back_exactly(rank in 0usize..64, extra in 1usize..64) {
        let world = rank + extra;
        let env: HashMap<&str, String> = [
            ("SLURM_PROCID", rank.to_string()),
            ("SLURM_STEP_NUM_TASKS", world.to_string()),
            ("SLURM_STEP_ID", "0".to_string()),
            ("SLURM_STEP_NODELIST", "n[1-2]".to_string()),
            ("COLLBENCH_TOKEN", "00112233445566778899aabbccddeeff".to_string()),
        ]
        .into_iter()
        .collect();
        let b = detect(&|k: &str| env.get(k).cloned()).unwrap().unwrap();
        prop_assert_eq!((b.rank, b.world), (rank, world));
        prop_assert_eq!(b.hosts, Some(vec!["n1".to_string(), "n2".to_string()]));
    }
}

/// A list flag's value: valid names, one misspelt or re-cased at times, items empty or padded.
/// With it: whether every item is a name as written (lower case, perhaps padded), and whether
/// some item is misspelt or empty.
fn name_list(names: &'static [&'static str]) -> impl Strategy<Value = (String, bool, bool)> {
    // (text, exact, broken)
    let item = prop_oneof![
        4 => prop::sample::select(names).prop_map(|n| (n.to_string(), true, false)),
        1 => prop::sample::select(names).prop_map(|n| (n.to_uppercase(), false, false)),
        1 => prop::sample::select(names).prop_map(|n| (format!("{n}x"), false, true)),
        1 => Just((String::new(), false, true)),
        1 => prop::sample::select(names).prop_map(|n| (format!(" {n} "), true, false)),
    ];
    prop::collection::vec(item, 1..5).prop_map(|items| {
        let exact = items.iter().all(|i| i.1);
        let broken = items.iter().any(|i| i.2);
        let text: Vec<String> = items.into_iter().map(|i| i.0).collect();
        (text.join(","), exact, broken)
    })
}

const OPS: &[&str] = &[
    "allreduce",
    "allgather",
    "reducescatter",
    "broadcast",
    "reduce",
    "alltoall",
    "sendrecv",
    "gather",
    "scatter",
];
const DTYPES: &[&str] = &["f32", "f16", "bf16", "f64", "i32"];

/// The list parser every list flag goes through, on one list of `names`.
fn check_list<T>(text: &str, exact: bool, broken: bool) -> Result<(), TestCaseError>
where
    T: std::str::FromStr<Err = collbench::error::Error> + PartialEq + std::fmt::Display,
{
    match collbench::units::parse_list::<T>(text) {
        Ok(values) => {
            prop_assert!(!broken, "accepted {:?}", text);
            // Each item once, in the order first given, each read as written.
            let mut want: Vec<String> = Vec::new();
            for item in text.split(',').map(|i| i.trim().to_lowercase()) {
                if !want.contains(&item) {
                    want.push(item);
                }
            }
            let got: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            prop_assert_eq!(got, want, "{}", text);
        }
        Err(e) => {
            prop_assert!(!exact, "refused {:?}: {}", text, e);
            prop_assert!(!e.to_string().contains('\n'), "{}", e);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn list_flags_read_every_item_as_written_or_refuse_in_one_line(
        (ops, ops_exact, ops_broken) in name_list(OPS),
        (dtypes, dt_exact, dt_broken) in name_list(DTYPES),
    ) {
        check_list::<collbench::collective::Op>(&ops, ops_exact, ops_broken)?;
        check_list::<collbench::collective::DType>(&dtypes, dt_exact, dt_broken)?;
    }
}
