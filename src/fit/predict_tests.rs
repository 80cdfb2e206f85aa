use super::*;
use crate::fit::export::testfit::{fit, model};
use crate::fit::forms::Form;

/// Ring AllReduce models of `protos`, alpha 1, 2, 3, ... µs in that order.
fn fit_of(protos: &[Option<Proto>]) -> FitFile {
    let models = protos
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let mut m = model(
                Op::AllReduce,
                Algo::Ring,
                Form::Ring,
                &[i as f64 + 1.0, 0.0],
                &[(2, 1), (4, 1)],
            );
            m.proto = p;
            m
        })
        .collect();
    fit(models, vec![])
}

#[test]
fn without_algo_the_fit_s_own_algorithm_is_used_and_said() {
    // An imported NCCL fit: AllReduce only as `auto`, in and out of place; SendRecv direct.
    let auto = |in_place| {
        let mut m = model(
            Op::AllReduce,
            Algo::Auto,
            Form::Ring,
            &[2.0, 0.001],
            &[(2, 1), (8, 1)],
        );
        m.in_place = in_place;
        m
    };
    let direct = model(
        Op::SendRecv,
        Algo::Direct,
        Form::Direct,
        &[3.0, 0.002],
        &[(2, 1), (8, 1)],
    );
    let f = fit(vec![auto(false), auto(true), direct], vec![]);
    let p = predict(&f, &parse_query("op=allreduce,world=8,bytes=1M").unwrap()).unwrap();
    assert_eq!(p.algo, Algo::Auto);
    let note = p.algo_default.clone().unwrap();
    assert_eq!(
        note,
        "algo not given and the fit has no ring model of allreduce: used auto"
    );
    assert!(
        describe(&p).ends_with(&format!("; {note})")),
        "{}",
        describe(&p)
    );
    let p = predict(&f, &parse_query("op=sendrecv,world=2,bytes=1K").unwrap()).unwrap();
    assert_eq!(p.algo, Algo::Direct);
    // Asked for, a missing algorithm is still an error, naming what the fit has apart.
    let e = predict(
        &f,
        &parse_query("op=allreduce,algo=ring,world=8,bytes=1M").unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("allreduce auto f32 (ring), allreduce auto f32 in place (ring)"),
        "{e}"
    );
}

#[test]
fn auto_takes_the_fastest_algorithm_model_at_each_size() {
    // ring: 2(p-1)·1 µs + 2(p-1)/p·S·0.001; tree: 2·ceil(log2 p)·5 µs + S·0.004 (kB, ns/B).
    let ring = model(
        Op::AllReduce,
        Algo::Ring,
        Form::Ring,
        &[1.0, 0.001],
        &[(2, 1), (64, 1)],
    );
    let tree = model(
        Op::AllReduce,
        Algo::Tree,
        Form::Tree,
        &[5.0, 0.004],
        &[(2, 1), (64, 1)],
    );
    let f = fit(vec![ring, tree], vec![]);
    let at = |bytes: &str| {
        let q = parse_query(&format!("op=allreduce,algo=auto,world=64,bytes={bytes}"));
        predict(&f, &q.unwrap()).unwrap()
    };
    // 8 B: ring 126 µs, tree 60 µs; 1 GB: ring 126 + 1968.75 µs, tree 60 + 4000 µs.
    let small = at("8");
    assert_eq!(small.algo, Algo::Tree);
    assert!((small.time_us - (60.0 + 0.008 * 0.004)).abs() < 1e-9);
    assert!(small
        .auto_choice
        .as_deref()
        .unwrap()
        .starts_with("tree is the fastest"));
    let large = at("1000000000");
    assert_eq!(large.algo, Algo::Ring, "{:?}", large.auto_choice);
    assert!(describe(&large).contains("; auto: ring is the fastest model (then tree"));
    // A fit of runs left to the library answers auto from its own models.
    let own = model(
        Op::AllReduce,
        Algo::Auto,
        Form::Ring,
        &[2.0, 0.0],
        &[(2, 1), (4, 1)],
    );
    let f = fit(vec![own], vec![]);
    let q = parse_query("op=allreduce,algo=auto,world=2,bytes=8").unwrap();
    let p = predict(&f, &q).unwrap();
    assert_eq!((p.algo, p.time_us, p.auto_choice), (Algo::Auto, 4.0, None));
}

#[test]
fn a_protocol_is_chosen_by_name_or_auto_first() {
    let f = fit_of(&[Some(Proto::Ll), Some(Proto::Auto), Some(Proto::Simple)]);
    let mut q = parse_query("op=allreduce,world=2,bytes=8").unwrap();
    // Ring AllReduce at p = 2: 2·alpha.
    let p = predict(&f, &q).unwrap();
    assert_eq!((p.proto, p.time_us), (Some(Proto::Auto), 4.0));
    q = parse_query("op=allreduce,world=2,bytes=8,proto=simple").unwrap();
    let p = predict(&f, &q).unwrap();
    assert_eq!((p.proto, p.time_us), (Some(Proto::Simple), 6.0));
    assert!(
        describe(&p).starts_with("allreduce ring/simple f32 world 2"),
        "{}",
        describe(&p)
    );
    q.proto = Some(Proto::Ll128);
    let e = predict(&f, &q).unwrap_err().to_string();
    assert!(e.contains("no model for allreduce ring/ll128"), "{e}");
    let bad = parse_query("op=allreduce,world=2,bytes=8,proto=ll64").unwrap_err();
    assert!(bad.to_string().contains("unknown protocol 'll64'"), "{bad}");
    // Without protocols the answer says nothing of them.
    let p = predict(
        &fit_of(&[None]),
        &parse_query("op=allreduce,world=2,bytes=8").unwrap(),
    );
    let json = serde_json::to_value(p.unwrap()).unwrap();
    assert!(json.get("proto").is_none(), "{json}");
}
