//! Property tests of the parsers that users and files feed: `project --world-sizes` (with
//! `...`), the sweep's `--world-sizes` items (`N` or `NxR`), `--ctas` bounds, `fit --predict`
//! queries, fit.json,
//! acceptance criteria TOML, and model and hardware TOML. Each, on random text and on random
//! mutations of valid documents, never panics, never makes an allocation sized by an unchecked
//! number (a counting allocator watches every allocation of the test's thread), and accepts
//! only values within their documented bounds; fit.json round-trips what `collbench fit` writes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

use proptest::prelude::*;

use collbench::accept::criteria::Criteria;
use collbench::fit::predict::parse_query;
use collbench::fit::schema::FitFile;
use collbench::model::comm_setup::CtaBounds;
use collbench::model::topology::WorldSpec;
use collbench::physical::WORLD;
use collbench::project::args::parse_worlds;
use collbench::project::model::SIZE_LIMITS;
use collbench::project::specs;

/// The system allocator, noting the largest single request of each thread.
struct Watched;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Watched {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

fn note(size: usize) {
    // try_with: the thread-local may be gone while a thread exits.
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

#[global_allocator]
static ALLOC: Watched = Watched;

/// Far above what any of these parsers needs for inputs of a few kilobytes.
const ALLOCATION_LIMIT: usize = 64 << 20;

/// Runs `f`, failing if it made one allocation above [`ALLOCATION_LIMIT`].
fn bounded_alloc<T>(what: &str, f: impl FnOnce() -> T) -> T {
    LARGEST.with(|l| l.set(0));
    let out = f();
    let largest = LARGEST.with(Cell::get);
    assert!(
        largest <= ALLOCATION_LIMIT,
        "{what}: one allocation of {largest} bytes"
    );
    out
}

/// Numbers as users and files give them, the awkward ones most of all.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..5000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| x.to_string()),
        Just("18446744073709551616".to_string()),
        Just("9223372036854775807".to_string()),
        Just("1073741824".to_string()),
        Just("1e300".to_string()),
        Just("-0".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
    ]
}

/// Pieces that break documents in interesting ways.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        number(),
        Just(",".to_string()),
        Just("...".to_string()),
        Just("=".to_string()),
        Just("\"".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("\n".to_string()),
        Just("x".to_string()),
        Just(String::new()),
        "[a-z_]{1,12}",
    ]
}

/// `doc` with each (position fraction, length, token) edit applied at a char boundary.
fn mutate(doc: &str, edits: &[(f64, usize, String)]) -> String {
    let mut s = doc.to_string();
    for (at, len, tok) in edits {
        let mut start = ((s.len() as f64) * at) as usize;
        while !s.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (start + len).min(s.len());
        while !s.is_char_boundary(end) {
            end += 1;
        }
        s.replace_range(start..end, tok);
    }
    s
}

fn edits() -> impl Strategy<Value = Vec<(f64, usize, String)>> {
    prop::collection::vec((0.0..1.0f64, 0usize..8, token()), 1..6)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Every accepted world list is sorted, unique and within [`WORLD`].
fn check_worlds(text: &str) {
    if let Ok(worlds) = bounded_alloc(text, || parse_worlds(text)) {
        assert!(!worlds.is_empty());
        assert!(worlds.windows(2).all(|w| w[0] < w[1]), "{text}: {worlds:?}");
        assert!(
            worlds.iter().all(|&w| w >= 1 && w as u64 <= WORLD.max),
            "{text}"
        );
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn project_world_lists(items in prop::collection::vec(token(), 0..8)) {
        check_worlds(&items.concat());
        check_worlds(&items.join(","));
    }

    #[test]
    fn project_world_progressions(a in number(), b in number(), end in number()) {
        check_worlds(&format!("{a},{b},...,{end}"));
        check_worlds(&format!("{a},...,{end}"));
    }

    #[test]
    fn cta_bounds_read_back_as_written(min in 1u32..=64, extra in 0u32..64) {
        let b = CtaBounds { min, max: (min + extra).min(64) };
        prop_assert_eq!(b.to_string().parse::<CtaBounds>().unwrap(), b);
    }

    #[test]
    fn near_valid_cta_bounds_are_bounds_or_one_line(a in -3i64..70, b in -3i64..70,
                                                    sep in prop::sample::select(vec![":", "::", "-", ",", " : ", ""]),
                                                    noise in "\\PC{0,3}") {
        let text = format!("{a}{sep}{b}{noise}");
        match text.parse::<CtaBounds>() {
            Ok(c) => prop_assert!(1 <= c.min && c.min <= c.max && c.max <= 64, "{text} -> {c}"),
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(!msg.contains('\n') && msg.contains("CTA bounds"), "{msg}");
            }
        }
    }

    #[test]
    fn sweep_world_items(n in number(), r in number(), text in "\\PC{0,20}") {
        for item in [format!("{n}x{r}"), format!("{n}X{r}"), n.clone(), text] {
            let parsed = bounded_alloc(&item, || item.parse::<WorldSpec>());
            if let Ok(spec) = parsed {
                match spec {
                    WorldSpec::Ranks(p) => prop_assert!(p > 0),
                    WorldSpec::Shape(s) => prop_assert!(s.nodes > 0 && s.per_node > 0),
                }
            }
        }
    }

    #[test]
    fn predict_queries(
        pairs in prop::collection::vec(
            (prop_oneof![
                Just("op"), Just("algo"), Just("proto"), Just("dtype"),
                Just("world"), Just("nodes"), Just("bytes"), Just("size"),
            ], prop_oneof![token(), Just("allgather".to_string()), Just("64M".to_string())]),
            0..9,
        ),
        text in "\\PC{0,40}",
    ) {
        let spec: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let spec = spec.join(",");
        for s in [spec.as_str(), text.as_str()] {
            if let Ok(q) = bounded_alloc(s, || parse_query(s)) {
                prop_assert!(q.world >= 1 && q.world as u64 <= WORLD.max, "{s}");
                prop_assert!(q.world % q.nodes == 0, "{s}");
            }
        }
        let keys: Vec<&str> = pairs.iter().map(|(k, _)| *k).collect();
        let repeated = keys.iter().enumerate().any(|(i, k)| keys[..i].contains(k));
        if repeated {
            prop_assert!(parse_query(&spec).is_err(), "{spec}");
        }
    }
}

/// The bundled profile as fit.json text, the form `collbench fit` writes.
fn profile_text() -> String {
    let fit = specs::profile("h100-ib400").unwrap();
    serde_json::to_string_pretty(&fit).unwrap()
}

fn read_fit_text(dir: &Path, text: &str) -> collbench::error::Result<FitFile> {
    let p = dir.join("fit.json");
    std::fs::write(&p, text).unwrap();
    bounded_alloc(text, || FitFile::read(&p))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fit_json_mutations(e in edits(), text in "\\PC{0,200}") {
        let tmp = tempfile::tempdir().unwrap();
        let _ = read_fit_text(tmp.path(), &mutate(&profile_text(), &e));
        let _ = read_fit_text(tmp.path(), &text);
    }

    #[test]
    fn fit_json_round_trips(
        alpha in 0.0..1e6f64,
        beta in 0.0..1e3f64,
        stderr in 0.0..1e3f64,
        world in 1usize..=1 << 20,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let mut fit = specs::profile("h100-ib400").unwrap();
        let m = &mut fit.models[0];
        m.params[0].param.value = alpha;
        m.params[0].param.stderr = stderr;
        m.params[1].param.value = beta;
        m.worlds = vec![world];
        let path = tmp.path().join("fit.json");
        fit.write(&path).unwrap();
        prop_assert_eq!(FitFile::read(&path).unwrap(), fit);
    }

    #[test]
    fn fit_json_refuses_negative_and_non_finite_parameters(
        model in 0usize..3,
        param in 0usize..4,
        value in prop_oneof![-1e300..-1e-300f64, Just(1e300), Just(f64::MAX)],
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let mut fit = specs::profile("h100-ib400").unwrap();
        fit.models[model].params[param].param.value = value;
        let text = serde_json::to_string(&fit).unwrap();
        prop_assert!(read_fit_text(tmp.path(), &text).is_err(), "{value}");
    }
}

const CRITERIA: [&str; 3] = [
    include_str!("../bench-configs/acceptance/host-2ranks.toml"),
    include_str!("../bench-configs/acceptance/mpi-2nodes.toml"),
    include_str!("../bench-configs/acceptance/nccl-8gpu-node.toml"),
];

fn spec_file(dir: &Path, text: &str) -> String {
    let p = dir.join("spec.toml");
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// A model TOML from a base and fields set to arbitrary numbers.
fn model_doc() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        Just("layers"),
        Just("hidden"),
        Just("ffn"),
        Just("heads"),
        Just("kv_heads"),
        Just("vocab"),
        Just("seq_len"),
    ];
    prop::collection::vec((field, number()), 0..5).prop_map(|fields| {
        let mut doc = "base = \"llama2-7b\"\n".to_string();
        for (k, v) in fields {
            doc.push_str(&format!("{k} = {v}\n"));
        }
        doc
    })
}

/// A hardware TOML from a base and fields set to arbitrary numbers.
fn hardware_doc() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        Just("peak_tflops"),
        Just("hbm_gb"),
        Just("hbm_tbps"),
        Just("nvlink_gbps"),
        Just("gpus_per_node"),
        Just("node_network_gbps"),
        Just("idle_w"),
        Just("max_w"),
        Just("comm_w"),
    ];
    prop::collection::vec((field, number()), 0..5).prop_map(|fields| {
        let mut doc = "base = \"h100\"\n".to_string();
        for (k, v) in fields {
            doc.push_str(&format!("{k} = {v}\n"));
        }
        doc
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn criteria_toml(which in 0usize..3, e in edits(), text in "\\PC{0,200}") {
        let path = Path::new("/nonexistent/criteria.toml");
        let mutated = mutate(CRITERIA[which], &e);
        for doc in [mutated.as_str(), text.as_str()] {
            let _ = bounded_alloc(doc, || Criteria::parse(doc, path));
        }
    }

    #[test]
    fn model_toml(doc in model_doc(), e in edits()) {
        let tmp = tempfile::tempdir().unwrap();
        for text in [doc.clone(), mutate(&doc, &e)] {
            let arg = spec_file(tmp.path(), &text);
            if let Ok(m) = bounded_alloc(&text, || specs::model(&arg)) {
                let sizes = [m.layers, m.hidden, m.ffn, m.heads, m.kv_heads, m.vocab, m.seq_len];
                for ((field, range), v) in SIZE_LIMITS.iter().zip(sizes) {
                    prop_assert!(range.check_usize(field, v).is_ok(), "{text}");
                }
                // Every count the projection forms from the shape fits in 64 bits.
                prop_assert!(m.total_params() > 0 && m.flops_per_token(m.seq_len).is_finite());
            }
        }
    }

    #[test]
    fn hardware_toml(doc in hardware_doc(), e in edits()) {
        let tmp = tempfile::tempdir().unwrap();
        for text in [doc.clone(), mutate(&doc, &e)] {
            let arg = spec_file(tmp.path(), &text);
            if let Ok(h) = bounded_alloc(&text, || specs::hardware(&arg)) {
                let rates = [h.peak_tflops, h.hbm_gb, h.hbm_tbps, h.nvlink_gbps,
                    h.node_network_gbps, h.max_w];
                prop_assert!(rates.iter().all(|x| x.is_finite() && *x > 0.0), "{text}");
                prop_assert!(h.idle_w >= 0.0 && h.idle_w <= h.max_w && h.gpus_per_node > 0);
                prop_assert!(h.comm_w() >= 0.0 && h.comm_w() <= h.max_w, "{text}");
            }
        }
    }
}
