use super::*;
use crate::fit::export::testfit::{curve, fit, line, model};
use crate::fit::forms::Form;

/// A fit with one curve and one model per protocol in `protos` (None: no protocol).
fn fit_with(protos: &[Option<Proto>]) -> FitFile {
    let mut curves = Vec::new();
    let mut models = Vec::new();
    for &proto in protos {
        let mut c = curve(
            Op::AllReduce,
            Algo::Ring,
            4,
            1,
            vec![line(8, 1 << 20, 5.0, 0.1)],
        );
        c.key.proto = proto;
        curves.push(c);
        let mut m = model(
            Op::AllReduce,
            Algo::Ring,
            Form::Ring,
            &[5.0, 0.1],
            &[(2, 1), (4, 1)],
        );
        m.proto = proto;
        models.push(m);
    }
    fit(models, curves)
}

fn round_trip(f: &FitFile) -> (FitFile, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fit.json");
    f.write(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    (
        FitFile::read(&path).unwrap(),
        serde_json::from_str(&text).unwrap(),
    )
}

#[test]
fn curves_and_models_keep_their_protocol_through_a_file() {
    let f = fit_with(&[Some(Proto::Ll), Some(Proto::Ll128), Some(Proto::Simple)]);
    let (back, json) = round_trip(&f);
    assert_eq!(back, f);
    let names = |what: &str| -> Vec<String> {
        json[what]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["proto"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names("curves"), ["ll", "ll128", "simple"]);
    assert_eq!(names("models"), ["ll", "ll128", "simple"]);
    assert_eq!(back.curves[1].key.algo_label(), "ring/ll128");
}

#[test]
fn without_a_protocol_the_field_is_absent_and_older_files_read_as_none() {
    let f = fit_with(&[None]);
    let (back, json) = round_trip(&f);
    assert_eq!(back, f);
    assert!(json["curves"][0].get("proto").is_none(), "{json}");
    assert!(json["models"][0].get("proto").is_none(), "{json}");
    assert_eq!(back.curves[0].key.algo_label(), "ring");
    // A bundled profile predates protocols: it reads, every key without one.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("bench-configs/profiles/h100-ib400.json");
    let profile = FitFile::read(&path).unwrap();
    assert!(profile.models.iter().all(|m| m.proto.is_none()));
}

#[test]
fn an_unknown_protocol_in_a_file_is_refused_naming_it() {
    let f = fit_with(&[Some(Proto::Ll)]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fit.json");
    f.write(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"ll\"", "\"ll64\"")).unwrap();
    let msg = FitFile::read(&path).unwrap_err().to_string();
    assert!(msg.contains("unknown protocol 'll64'"), "{msg}");
}

#[test]
fn a_reader_picking_one_model_prefers_the_library_choice() {
    let f = fit_with(&[Some(Proto::Ll), Some(Proto::Auto), Some(Proto::Simple)]);
    let m = f.model(Op::AllReduce, Algo::Ring, None).unwrap();
    assert_eq!(m.proto, Some(Proto::Auto));
    assert_eq!(proto_rank(None), proto_rank(Some(Proto::Auto)));
    assert!(proto_rank(Some(Proto::Ll128)) > proto_rank(None));
}

#[test]
fn extrapolation_errors_round_trip_and_damaged_ones_are_refused() {
    let mut f = fit_with(&[None]);
    f.models[0].extrapolation = Some(Extrapolation {
        world: 4,
        nodes: 1,
        from_world: 2,
        rel_err_mean: 0.125,
        rel_err_max: 0.25,
        anchored_rel_err_mean: Some(0.0625),
        naive_rel_err_mean: None,
    });
    f.models[0].selection = Some("lowest mean error".into());
    let (back, json) = round_trip(&f);
    assert_eq!(back, f);
    assert_eq!(json["models"][0]["selected"], true);
    assert!(json["models"][0]["extrapolation"]
        .get("naive_rel_err_mean")
        .is_none());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fit.json");
    f.write(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("0.0625", "-0.0625")).unwrap();
    let msg = FitFile::read(&path).unwrap_err().to_string();
    assert!(msg.contains("anchored_rel_err_mean"), "{msg}");
    // A file written before candidates existed has no `selected`: its one model per key is.
    let old = text.replace("\"selected\": true,", "");
    assert_ne!(old, text);
    std::fs::write(&path, old).unwrap();
    assert!(FitFile::read(&path).unwrap().models[0].selected);
}

#[test]
fn a_size_takes_the_regime_that_reaches_it_and_the_ends_extend() {
    let small = line(64, 4096, 2.0, 0.5);
    let large = line(8192, 1 << 20, 10.0, 0.1);
    let c = curve(Op::AllGather, Algo::Ring, 4, 1, vec![small, large]);
    // 2 + 0.5 ns/B × 1 kB; below the first and between regimes, the next one up.
    assert_eq!(c.regime(1000.0).time_us(1000.0), 2.5);
    assert_eq!(c.regime(8.0).min_bytes, 64);
    assert_eq!(c.regime(6000.0).min_bytes, 8192);
    assert_eq!(c.regime(1e9).time_us(1e6), 10.0 + 100.0);
    let mut bare = c.clone();
    bare.segments.clear();
    assert_eq!(bare.regime(1000.0), &bare.line);
}
