//! Property tests of the parsers that users and files feed: size flags, durations, the CSV
//! files of a results folder and meta.json. They read back exactly what the writers write, and
//! random text, mutations and truncations never panic (an error or a shorter read instead).

use std::path::Path;
use std::time::Duration;

use collbench::collective::{Algo, DType, Op};
use collbench::meta::Meta;
use collbench::model::record::{IterSample, PointRecord, RankSummary};
use collbench::report::pairs_csv::{read_pairs, PairRow, PairsWriter, PAIRS_COLUMNS};
use collbench::report::ranks_csv::{read_ranks, RanksWriter, RANKS_COLUMNS};
use collbench::report::samples_csv::{read_samples, SamplesWriter, SAMPLES_COLUMNS};
use collbench::report::summary_csv::{read_summary, SummaryWriter, SUMMARY_COLUMNS};
use collbench::report::telemetry_csv::{
    read_telemetry, EnergySource, GpuLabel, PointTelemetry, PowerSource, TelemetryRow,
    TelemetryWriter, TELEMETRY_COLUMNS, TELEMETRY_FILE,
};
use collbench::units::{format_size, parse_duration, parse_size};
use proptest::prelude::*;

#[path = "parsers_prop/strategies.rs"]
mod strategies;
use strategies::{comm_setup, host_algo, near_valid};

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(256)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sizes_with_suffixes_parse_to_their_bytes(v in 0usize..1 << 20, unit in 0usize..4,
                                                 tail in prop::sample::select(vec!["", "B", "iB"]),
                                                 lower in any::<bool>()) {
        let suffix = ["", "K", "M", "G"][unit];
        let tail = if suffix.is_empty() { "" } else { tail };
        let mut text = format!("{v}{suffix}{tail}");
        if lower {
            text = text.to_ascii_lowercase();
        }
        prop_assert_eq!(parse_size(&text).unwrap(), v << (10 * unit));
    }

    #[test]
    fn any_size_text_is_a_size_or_one_line(s in prop_oneof![near_valid("64MiB"), near_valid("1.5G"), "\\PC{0,24}"]) {
        match parse_size(&s) {
            Ok(n) => { format_size(n); }
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
    }

    #[test]
    fn durations_parse_to_their_value(n in 1u64..10_000_000, unit in 0usize..4) {
        let (suffix, d) = [
            ("s", Duration::from_secs(n)),
            ("ms", Duration::from_millis(n)),
            ("m", Duration::from_secs(n * 60)),
            ("", Duration::from_secs(n)),
        ][unit];
        prop_assert_eq!(parse_duration(&format!("{n}{suffix}")).unwrap(), d);
    }

    #[test]
    fn any_duration_text_is_a_positive_duration_or_an_error(s in prop_oneof![near_valid("250ms"), near_valid("1.5m"), "\\PC{0,24}"]) {
        if let Ok(d) = parse_duration(&s) {
            prop_assert!(!d.is_zero());
        }
    }

    #[test]
    fn summary_rows_read_back_as_written(recs in prop::collection::vec(record(), 0..6)) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SummaryWriter::create(dir.path()).unwrap();
        for r in &recs {
            w.append(r).unwrap();
        }
        prop_assert_eq!(read_summary(&dir.path().join("summary.csv")).unwrap(), recs);
    }

    #[test]
    fn samples_read_back_as_written(rec in record(), times in prop::collection::vec(time(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SamplesWriter::create(dir.path()).unwrap();
        let samples: Vec<IterSample> = times
            .iter()
            .enumerate()
            .map(|(i, &t)| IterSample { time_us: t, slowest_rank: i % 3, fastest_us: t / 2.0 })
            .collect();
        w.append(3, &rec.key, &samples).unwrap();
        let back = read_samples(&dir.path().join("samples.csv")).unwrap();
        prop_assert_eq!(back.iter().map(|(p, _)| *p).collect::<Vec<_>>(), vec![3; samples.len()]);
        prop_assert_eq!(back.into_iter().map(|(_, s)| s).collect::<Vec<_>>(), samples);
    }

    #[test]
    fn pairs_read_back_as_written(a in 0usize..64, b in 0usize..64, host in "[a-z0-9.-]{1,12}") {
        let dir = tempfile::tempdir().unwrap();
        let mut w = PairsWriter::create(dir.path()).unwrap();
        let row = PairRow {
            point: a + b,
            node_a: a,
            node_b: b,
            host_a: host.clone(),
            host_b: format!("{host}x"),
            rank_a: a * 8,
            rank_b: b * 8,
        };
        w.append(&row).unwrap();
        prop_assert_eq!(read_pairs(&dir.path().join("pairs.csv")).unwrap(), vec![row]);
    }

    #[test]
    fn ranks_read_back_as_written(points in prop::collection::vec((record(), prop::collection::vec(rank_summary(), 0..6)), 0..5)) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RanksWriter::create(dir.path()).unwrap();
        let mut want = Vec::new();
        for (point, (rec, ranks)) in points.iter().enumerate() {
            w.append(point, &rec.key, ranks).unwrap();
            want.extend(ranks.iter().map(|r| (point, *r)));
        }
        prop_assert_eq!(read_ranks(w.path()).unwrap(), want);
    }

    #[test]
    fn telemetry_reads_back_as_written(points in prop::collection::vec(prop::collection::vec(telemetry_row(), 0..5), 0..5)) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = TelemetryWriter::create(dir.path()).unwrap();
        let mut want = Vec::new();
        for (point, rows) in points.iter().enumerate() {
            w.append(point, rows).unwrap();
            want.extend(rows.iter().map(|r| TelemetryRow { point, ..r.clone() }));
        }
        prop_assert_eq!(read_telemetry(&dir.path().join(TELEMETRY_FILE)).unwrap(), want);
    }

    #[test]
    fn any_gpu_name_reads_back_with_csv_breaking_characters_as_spaces(name in "\\PC{0,32}", bus in "[,\"\r\n0-9A-F:.]{0,16}") {
        let dir = tempfile::tempdir().unwrap();
        let mut w = TelemetryWriter::create(dir.path()).unwrap();
        let gpu = GpuLabel { index: Some(0), name: name.clone(), pci_bus_id: bus.clone() };
        w.append(0, &[TelemetryRow { gpu, ..TelemetryRow::default() }]).unwrap();
        let back = read_telemetry(&dir.path().join(TELEMETRY_FILE)).unwrap();
        let plain = |s: &str| s.replace([',', '"', '\n', '\r'], " ");
        prop_assert_eq!(back.len(), 1);
        prop_assert_eq!(&back[0].gpu.name, &plain(&name));
        prop_assert_eq!(&back[0].gpu.pci_bus_id, &plain(&bus));
    }

    #[test]
    fn written_files_cut_or_mutated_never_panic(recs in prop::collection::vec(record(), 1..4),
                                                cut in any::<prop::sample::Index>(),
                                                flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4)) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SummaryWriter::create(dir.path()).unwrap();
        let mut s = SamplesWriter::create(dir.path()).unwrap();
        for (i, r) in recs.iter().enumerate() {
            w.append(r).unwrap();
            let one = IterSample { time_us: r.time_us_min, slowest_rank: 0, fastest_us: r.time_us_min };
            s.append(i, &r.key, &[one]).unwrap();
        }
        for name in ["summary.csv", "samples.csv"] {
            let path = dir.path().join(name);
            let mut bytes = std::fs::read(&path).unwrap();
            bytes.truncate(cut.index(bytes.len() + 1));
            for (at, b) in &flips {
                if !bytes.is_empty() {
                    let i = at.index(bytes.len());
                    bytes[i] = *b;
                }
            }
            std::fs::write(&path, &bytes).unwrap();
        }
        let rows = read_summary(&dir.path().join("summary.csv"));
        if let Ok(rows) = rows {
            prop_assert!(rows.len() <= recs.len());
        }
        let _ = read_samples(&dir.path().join("samples.csv"));
    }

    #[test]
    fn random_rows_under_every_header_never_panic(which in 0usize..5, body in "[0-9a-z,.:+\\- \\n\\r]{0,300}") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.csv");
        let header = match which {
            0 => SUMMARY_COLUMNS.join(","),
            1 => SAMPLES_COLUMNS.join(","),
            2 => RANKS_COLUMNS.join(","),
            3 => PAIRS_COLUMNS.join(","),
            _ => TELEMETRY_COLUMNS.join(","),
        };
        std::fs::write(&path, format!("{header}\n{body}")).unwrap();
        read_any(which, &path);
    }

    #[test]
    fn meta_json_reads_back_and_mutations_never_panic(ranks in 1usize..256,
                                                      cut in any::<prop::sample::Index>(),
                                                      flip in any::<(prop::sample::Index, u8)>()) {
        let dir = tempfile::tempdir().unwrap();
        let opts = serde_json::json!({ "iters": ranks });
        let meta = Meta::new(vec!["collbench".into(), "sweep".into()], "host", "shm", ranks, 1, opts);
        meta.write(dir.path()).unwrap();
        let path = dir.path().join("meta.json");
        prop_assert_eq!(Meta::read(&path).unwrap(), meta);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(cut.index(bytes.len() + 1));
        if !bytes.is_empty() {
            let i = flip.0.index(bytes.len());
            bytes[i] = flip.1;
        }
        std::fs::write(&path, &bytes).unwrap();
        let _ = Meta::read(&path);
    }
}

/// Reads `path` with the reader of file kind `which`; only a panic fails.
fn read_any(which: usize, path: &Path) {
    match which {
        0 => drop(read_summary(path)),
        1 => drop(read_samples(path)),
        2 => drop(read_ranks(path)),
        3 => drop(read_pairs(path)),
        _ => drop(read_telemetry(path)),
    }
}

/// A time from 1 µs to 10 s with a few digits (full precision), inside the physical ranges
/// summary rows are checked against.
fn time() -> impl Strategy<Value = f64> {
    (1000u32..10_000_000, 0u32..4).prop_map(|(m, e)| f64::from(m) / 10f64.powi(e as i32))
}

/// A summary row with consistent statistics (min <= median <= p95 <= p99 <= max).
fn record() -> impl Strategy<Value = PointRecord> {
    let ops = vec![Op::AllReduce, Op::AllGather, Op::ReduceScatter];
    let algos = vec![Algo::Ring, Algo::Tree];
    let dtypes = vec![DType::F32, DType::F64, DType::BF16];
    (
        (
            prop::sample::select(ops),
            prop::sample::select(algos),
            prop::sample::select(dtypes),
        ),
        (1usize..64, 0usize..38, any::<bool>()),
        prop::collection::vec(time(), 5),
        (0u64..3, 1usize..2000),
        comm_setup(),
    )
        .prop_map(
            |((op, algo, dtype), (world, shift, in_place), mut t, (wrong, iters), comm)| {
                t.sort_by(f64::total_cmp);
                let bytes = 8usize << shift;
                PointRecord {
                    iters,
                    warmup: iters / 10,
                    time_us_mean: (t[1] + t[2]) / 2.0,
                    time_us_median: t[1],
                    time_us_min: t[0],
                    time_us_p95: t[2],
                    time_us_p99: t[3],
                    time_us_max: t[4],
                    time_us_stddev: t[0] / 3.0,
                    time_cv: 0.25,
                    time_us_mad: t[0] / 4.0,
                    algbw_gbps: bytes as f64 / t[1] / 1e3,
                    busbw_gbps: bytes as f64 / t[1] / 1e3 * 1.5,
                    busbw_gbps_mean: bytes as f64 / t[1] / 1e3 * 1.4,
                    wrong,
                    slowest_rank: world - 1,
                    skew_us_median: t[0] / 5.0,
                    ..PointRecord::example(op, bytes, world)
                        .with_algo(host_algo(op, algo))
                        .with_dtype(dtype)
                        .with_in_place(in_place)
                        .with_comm(comm)
                }
            },
        )
}

/// A float with arbitrary low bits, log-uniform in `[lo, hi]` (both > 0), or exactly `lo`.
fn spread(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => Just(lo),
        9 => (0.0..=1.0f64).prop_map(move |u| (lo * (hi / lo).powf(u)).clamp(lo, hi)),
    ]
}

/// A rank's summary within the physical ranges (collbench::physical): world and node below
/// `WORLD`'s 2^20, times in 1 ns ..= 10^12 µs (`TIME_US`), wrong elements up to `BYTES`' 2^40.
/// The reader itself checks only that numbers parse and are finite.
fn rank_summary() -> impl Strategy<Value = RankSummary> {
    let ids = (0usize..1 << 20, 0usize..1 << 20, 0usize..1 << 20);
    let times = (spread(1e-3, 1e12), spread(1e-3, 1e12), spread(1e-3, 1e12));
    (ids, times, 0u64..=1 << 40).prop_map(|((rank, global_rank, node), (a, b, c), wrong)| {
        RankSummary {
            rank,
            global_rank,
            node,
            time_us_median: a,
            time_us_mean: b,
            time_us_max: c,
            wrong,
        }
    })
}

/// A telemetry row, each value present or not, within the physical ranges: power in `POWER_W`
/// ([0, 10^5] W), link rates in `RATE_GBPS_OR_ZERO` ([0, 10^5] GB/s), windows from 1 µs to a day,
/// clocks to 10^5 MHz, temperatures from −50 to 200 °C. Names hold no comma, quote or line
/// break (the writer turns those into spaces: see the property above). The reader itself checks
/// only that numbers parse and are finite and that source names are known.
fn telemetry_row() -> impl Strategy<Value = TelemetryRow> {
    let opt = |lo: f64, hi: f64| prop::option::of(prop_oneof![Just(0.0), spread(lo, hi)]);
    let gpu = (
        prop::option::of(any::<u32>()),
        "[^,\"\r\n]{0,24}",
        "[0-9A-F:.]{0,16}",
    )
        .prop_map(|(index, name, pci_bus_id)| GpuLabel {
            index,
            name,
            pci_bus_id,
        });
    let power = (
        opt(1e-3, 1e5),
        opt(1e-3, 1e5),
        prop::option::of(prop::sample::select(vec![
            PowerSource::Instant,
            PowerSource::Usage,
        ])),
    );
    let energy = (
        opt(1e-9, 1e10),
        opt(1e-12, 1e6),
        prop::option::of(prop::sample::select(vec![
            EnergySource::Counter,
            EnergySource::Power,
        ])),
    );
    let other = (
        prop::option::of(spread(1e-6, 86_400.0)),
        opt(1.0, 1e5),
        prop::option::of(-50.0..=200.0f64),
        opt(1e-6, 1e5),
        opt(1e-6, 1e5),
    );
    (
        0usize..1 << 20,
        0usize..1_000_000,
        gpu,
        power,
        energy,
        other,
    )
        .prop_map(
            |(rank, samples, gpu, (pw_mean, pw_max, power_source), (e, e_op, energy_source), o)| {
                let (window_s, sm_clock_mhz_mean, temp_c_max, nvlink_tx_gbps, nvlink_rx_gbps) = o;
                TelemetryRow {
                    point: 0,
                    rank,
                    gpu,
                    telemetry: PointTelemetry {
                        samples,
                        window_s,
                        power_w_mean: pw_mean,
                        power_w_max: pw_max,
                        power_source,
                        energy_j: e,
                        energy_j_per_op: e_op,
                        energy_source,
                        sm_clock_mhz_mean,
                        temp_c_max,
                        nvlink_tx_gbps,
                        nvlink_rx_gbps,
                    },
                }
            },
        )
}
