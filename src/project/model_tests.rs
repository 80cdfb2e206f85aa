//! Parameter counts and FLOPs of the presets against their published sizes, and bad shapes.

use super::*;

fn preset(name: &str) -> ModelSpec {
    presets().into_iter().find(|m| m.name == name).unwrap()
}

#[test]
fn parameter_counts_match_the_published_ones() {
    // Published sizes: Llama 2 paper (6.74B, 13.0B, 69.0B as the HF model cards give them),
    // Llama 3 model cards (8.03B, 70.6B).
    let published = [
        ("llama2-7b", 6.74e9),
        ("llama2-13b", 13.0e9),
        ("llama2-70b", 69.0e9),
        ("llama3-8b", 8.03e9),
        ("llama3-70b", 70.6e9),
    ];
    for (name, n) in published {
        let m = preset(name);
        m.validate().unwrap();
        let got = m.total_params() as f64;
        assert!((got / n - 1.0).abs() < 0.01, "{name}: {got} vs {n}");
    }
    // Exact, by hand: 32 × (4·4096² + 3·4096·11008 + 2·4096) + 2·32000·4096 + 4096.
    assert_eq!(preset("llama2-7b").total_params(), 6_738_415_616);
}

#[test]
fn flops_per_token_is_palm_formula() {
    let m = preset("llama2-7b");
    // N = 6,738,415,616 − 32000·4096 = 6,607,343,616; 6N = 39,644,061,696;
    // 12·32·4096·4096 = 6,442,450,944; sum 46,086,512,640.
    assert_eq!(m.flop_params(), 6_607_343_616);
    assert_eq!(m.flops_per_token(4096), 46_086_512_640.0);
    // The per-unit forward FLOPs add up to a third of it.
    let units = 32.0 * m.layer_fwd_flops(4096) + m.head_fwd_flops();
    assert!((3.0 * units - m.flops_per_token(4096)).abs() < 1.0);
}

#[test]
fn bad_shapes_are_named() {
    let mut m = preset("llama2-7b");
    m.heads = 30;
    let e = m.validate().unwrap_err().to_string();
    assert!(
        e.contains("hidden 4096 is not divisible by heads 30"),
        "{e}"
    );
    m.heads = 32;
    m.kv_heads = 5;
    assert!(m.validate().unwrap_err().to_string().contains("kv_heads 5"));
}

#[test]
fn mixtral_counts_match_the_published_total_and_active() {
    // Mixtral 8x7B: 46.7B parameters, 12.9B active per token (Jiang et al. 2024; Mistral
    // AI's announcement).
    let m = preset("mixtral-8x7b");
    m.validate().unwrap();
    assert!(m.is_moe() && (m.experts, m.top_k) == (8, 2));
    let (total, active) = (m.total_params() as f64, m.active_params() as f64);
    assert!((total / 46.7e9 - 1.0).abs() < 0.01, "{total}");
    assert!((active / 12.9e9 - 1.0).abs() < 0.01, "{active}");
    // By hand, per layer: attention 2·4096² + 2·4096·1024 = 41,943,040; router 4096·8 =
    // 32,768; norms 8,192; one expert 3·4096·14336 = 176,160,768.
    assert_eq!(m.layer_dense_params(), 41_984_000);
    assert_eq!(m.expert_params(), 176_160_768);
    assert_eq!(m.layer_expert_params(), 1_409_286_144);
    assert_eq!(m.layer_params(), 1_451_270_144);
    assert_eq!(m.layer_active_params(), 394_305_536);
    // 32 layers + 2·32000·4096 (embedding, head) + 4096 (final norm).
    assert_eq!(m.total_params(), 46_702_792_704);
    assert_eq!(m.active_params(), 12_879_925_248);
    // N of 6N: the active parameters but the input table; 6N + 12·L·h·s at s = 4096.
    assert_eq!(m.flop_params(), 12_748_853_248);
    assert_eq!(m.flops_per_token(4096), 82_935_570_432.0);
    // Dense presets: active = total, as before.
    let dense = preset("llama2-7b");
    assert_eq!(dense.active_params(), dense.total_params());
    assert_eq!(dense.layer_dense_params(), dense.layer_params());
}

#[test]
fn bad_expert_shapes_are_named() {
    let mut m = preset("mixtral-8x7b");
    m.top_k = 9;
    let e = m.validate().unwrap_err().to_string();
    assert!(
        e.contains("top_k 9 with 8 experts") && e.contains("1 to 8"),
        "{e}"
    );
    m.top_k = 0;
    assert!(m.validate().unwrap_err().to_string().contains("top_k 0"));
    let mut d = preset("llama2-7b");
    d.top_k = 2;
    let e = d.validate().unwrap_err().to_string();
    assert!(e.contains("top_k 2 without experts"), "{e}");
    d.top_k = 1;
    d.experts = 1 << 17;
    let e = d.validate().unwrap_err().to_string();
    assert!(e.contains("experts = 131072"), "{e}");
    // Within every range yet too large to count in 64 bits.
    let mut huge = preset("mixtral-8x7b");
    (huge.layers, huge.hidden, huge.heads, huge.kv_heads) = (10_000, 1 << 20, 1, 1);
    (huge.ffn, huge.experts) = (1 << 22, 1 << 16);
    let e = huge.validate().unwrap_err().to_string();
    assert!(e.contains("beyond 2^60"), "{e}");
}
