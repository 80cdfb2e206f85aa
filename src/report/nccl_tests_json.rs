//! nccl-tests' `-J` JSON (its src/util.cu, `JSON_FILE_VERSION` 3) written from collbench's
//! points: one document per test, as nccl-tests writes one per run, concatenated in one file
//! (`collbench import` reads such files). The numbers are those of the nccl-tests table
//! ([`super::nccl_tests_text`]).

use serde_json::{json, Map, Value};

use super::nccl_tests_text::{half_bandwidths, preamble_fields, Device, Settings, Step};
use crate::model::record::PointRecord;

/// The document of one test, before its results: `version`, the command line, `config` with
/// the settings and devices, and an empty `results` list.
pub fn document(test: &str, args: &[String], s: &Settings, devices: &[Device]) -> Value {
    let mut config = Map::new();
    config.insert("nthreads".into(), json!(1));
    config.insert("ngpus".into(), json!(1));
    config.insert("minimum_bytes".into(), json!(s.min_bytes));
    config.insert("maximum_bytes".into(), json!(s.max_bytes));
    match s.step {
        Step::Factor(f) => config.insert("step_factor".into(), json!(f)),
        Step::Bytes(b) => config.insert("step_bytes".into(), json!(b)),
    };
    for (key, value) in [
        ("warmup_iters", json!(s.warmup)),
        ("iterations", json!(s.iters)),
        ("aggregated_iterations", json!(s.agg)),
        ("validation", json!(1)),
        ("graph", json!(u8::from(s.graph))),
        ("blocking_collectives", json!("false")),
        ("per_iter_timing", json!("false")),
        ("per_iter_skip", json!(0)),
        ("parallel_init", json!("false")),
    ] {
        config.insert(key.into(), value);
    }
    let devices: Vec<Value> = devices.iter().map(device).collect();
    config.insert("devices".into(), Value::Array(devices));
    json!({
        "version": 3,
        "args": std::iter::once(test.to_string()).chain(args.iter().cloned()).collect::<Vec<_>>(),
        "env": [],
        "config": config,
        "results": [],
    })
}

/// A device as `jsonRankInfo` writes it.
fn device(d: &Device) -> Value {
    json!({
        "rank": d.rank,
        "group": 0,
        "pid": d.pid,
        "hostname": d.host,
        "device": d.device,
        "device_hex": "0000:00:00",
        "device_info": d.name,
    })
}

/// One size's result: the row's first columns, then each half measured (null where a half
/// was not).
pub fn result(out: Option<&PointRecord>, inp: Option<&PointRecord>) -> Value {
    let Some(rec) = out.or(inp) else {
        return Value::Null;
    };
    let (size, count, type_name, redop, root) = preamble_fields(rec);
    json!({
        "size": size,
        "count": count,
        "type": type_name,
        "redop": redop,
        "root": format!("{root:>6}"),
        "out_of_place": out.map_or(Value::Null, half),
        "in_place": inp.map_or(Value::Null, half),
        "actual_iterations": rec.iters,
        "experiment_name": "",
    })
}

/// A half as `writeBenchmarkLineBody` writes it.
fn half(rec: &PointRecord) -> Value {
    let (alg, bus) = half_bandwidths(rec);
    json!({
        "time": rec.loop_time_us.unwrap_or(rec.time_us_mean),
        "alg_bw": alg,
        "bus_bw": bus,
        "nwrong": rec.wrong as f64,
    })
}

/// Closes `doc` as `writeResultFooter` does: the wrong elements and the mean busbw.
pub fn finish(doc: &mut Value, wrong: u64, avg_busbw: f64) {
    if let Some(map) = doc.as_object_mut() {
        map.insert(
            "out_of_bounds".into(),
            json!({"count": wrong, "okay": c_bool(wrong == 0)}),
        );
        map.insert(
            "average_bus_bandwidth".into(),
            json!({"bandwidth": avg_busbw, "okay": "unchecked"}),
        );
    }
}

/// nccl-tests' `jsonBool`: the strings "true" and "false".
fn c_bool(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

/// Appends a result to `doc`'s list.
pub fn push(doc: &mut Value, result: Value) {
    if let Some(list) = doc.get_mut("results").and_then(Value::as_array_mut) {
        list.push(result);
    }
}
