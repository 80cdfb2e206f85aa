//! Model specifications: the shape of a Llama-style decoder (RMSNorm, rotary positions,
//! grouped-query attention, SwiGLU MLP, untied input and output embeddings), its parameter count
//! and its model FLOPs per token.
//!
//! Parameters per layer: attention `h·h` (Q) + `2·h·kv·d` (K, V with `kv` heads of `d = h/a`) +
//! `h·h` (output), MLP `3·h·f` (gate, up, down), two norms `2·h`. Whole model:
//! `L·layer + V·h` (input embedding) `+ V·h` (output head, unless tied) `+ h` (final norm).
//!
//! Model FLOPs per token (PaLM, Chowdhery et al. 2022, appendix B): `6·N + 12·L·h·s`, where the
//! second term is the attention scores and their weighted sum (forward 4·h·s per layer, backward
//! twice that). Here **N is every parameter that takes part in a matrix multiply: all but the
//! input-embedding table** (a lookup, not a matmul); the output projection counts, tied or not.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::physical::Count;

/// The shape of a decoder-only transformer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub name: String,
    /// Transformer layers L.
    pub layers: usize,
    /// Model width h.
    pub hidden: usize,
    /// MLP inner width f (SwiGLU: three matrices of h × f).
    pub ffn: usize,
    /// Attention (query) heads a.
    pub heads: usize,
    /// Key/value heads (grouped-query attention; equal to `heads` for multi-head attention).
    pub kv_heads: usize,
    /// Vocabulary size V.
    pub vocab: usize,
    /// Training sequence length s (the model's context; `--seq-len` overrides it).
    pub seq_len: usize,
    /// Whether the output head shares the input embedding's matrix.
    #[serde(default)]
    pub tied_embeddings: bool,
}

/// Each size field and its range: far beyond any published model (Llama 3 405B has 126 layers,
/// width 16384, MLP 53248, 128 heads, a vocabulary of 128256), small enough that every product
/// the projection forms fits in 64 bits.
pub const SIZE_LIMITS: [(&str, Count); 7] = [
    (
        "layers",
        Count {
            min: 1,
            max: 10_000,
        },
    ),
    (
        "hidden",
        Count {
            min: 1,
            max: 1 << 20,
        },
    ),
    (
        "ffn",
        Count {
            min: 1,
            max: 1 << 22,
        },
    ),
    (
        "heads",
        Count {
            min: 1,
            max: 1 << 16,
        },
    ),
    (
        "kv_heads",
        Count {
            min: 1,
            max: 1 << 16,
        },
    ),
    (
        "vocab",
        Count {
            min: 1,
            max: 1 << 24,
        },
    ),
    (
        "seq_len",
        Count {
            min: 1,
            max: 1 << 24,
        },
    ),
];

/// The bundled models. Numbers are those of each model's Hugging Face `config.json`
/// (`num_hidden_layers`, `hidden_size`, `intermediate_size`, `num_attention_heads`,
/// `num_key_value_heads`, `vocab_size`, `max_position_embeddings`).
pub fn presets() -> Vec<ModelSpec> {
    vec![
        // meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023 (Llama 2), Table 1: 4k context.
        llama("llama2-7b", 32, 4096, 11008, 32, 32, 32000, 4096),
        // meta-llama/Llama-2-13b-hf config.json.
        llama("llama2-13b", 40, 5120, 13824, 40, 40, 32000, 4096),
        // meta-llama/Llama-2-70b-hf config.json; Llama 2 §2.2: the 70B model uses GQA (8 KV heads).
        llama("llama2-70b", 80, 8192, 28672, 64, 8, 32000, 4096),
        // meta-llama/Meta-Llama-3-8B config.json; Dubey et al. 2024 (Llama 3), Table 3.
        llama("llama3-8b", 32, 4096, 14336, 32, 8, 128256, 8192),
        // meta-llama/Meta-Llama-3-70B config.json; Dubey et al. 2024, Table 3.
        llama("llama3-70b", 80, 8192, 28672, 64, 8, 128256, 8192),
    ]
}

#[allow(clippy::too_many_arguments)]
fn llama(
    name: &str,
    layers: usize,
    hidden: usize,
    ffn: usize,
    heads: usize,
    kv_heads: usize,
    vocab: usize,
    seq_len: usize,
) -> ModelSpec {
    ModelSpec {
        name: name.into(),
        layers,
        hidden,
        ffn,
        heads,
        kv_heads,
        vocab,
        seq_len,
        tied_embeddings: false,
    }
}

impl ModelSpec {
    /// Checks the shape is usable: every size positive and within [`SIZE_LIMITS`] (so that no
    /// product of sizes overflows and nothing sized by one exhausts memory), heads dividing the
    /// width, KV heads dividing the heads.
    pub fn validate(&self) -> Result<()> {
        let sizes = [
            self.layers,
            self.hidden,
            self.ffn,
            self.heads,
            self.kv_heads,
            self.vocab,
            self.seq_len,
        ];
        for ((field, range), value) in SIZE_LIMITS.iter().zip(sizes) {
            range
                .check_usize(field, value)
                .map_err(|m| bad(&self.name, m))?;
        }
        if self.hidden % self.heads != 0 {
            return Err(bad(
                &self.name,
                format!(
                    "hidden {} is not divisible by heads {}",
                    self.hidden, self.heads
                ),
            ));
        }
        if self.heads % self.kv_heads != 0 {
            return Err(bad(
                &self.name,
                format!(
                    "heads {} is not divisible by kv_heads {}",
                    self.heads, self.kv_heads
                ),
            ));
        }
        Ok(())
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    /// Parameters of one transformer layer.
    pub fn layer_params(&self) -> u64 {
        let h = self.hidden as u64;
        let kv = (self.kv_heads * self.head_dim()) as u64;
        let attention = 2 * h * h + 2 * h * kv;
        let mlp = 3 * h * self.ffn as u64;
        attention + mlp + 2 * h
    }

    /// Parameters of the input embedding table.
    pub fn embedding_params(&self) -> u64 {
        (self.vocab * self.hidden) as u64
    }

    /// Parameters of the output unit: final norm plus the output projection (0 extra when tied).
    pub fn head_params(&self) -> u64 {
        let proj = if self.tied_embeddings {
            0
        } else {
            self.embedding_params()
        };
        proj + self.hidden as u64
    }

    /// Every parameter.
    pub fn total_params(&self) -> u64 {
        self.layers as u64 * self.layer_params() + self.embedding_params() + self.head_params()
    }

    /// N of `6N`: the parameters that take part in a matrix multiply (all but the input table;
    /// the output projection counts even when tied).
    pub fn flop_params(&self) -> u64 {
        self.layers as u64 * self.layer_params() + self.embedding_params() + self.hidden as u64
    }

    /// Forward FLOPs per token of one layer at sequence length `seq`: `2·layer + 4·h·s`.
    pub fn layer_fwd_flops(&self, seq: usize) -> f64 {
        2.0 * self.layer_params() as f64 + 4.0 * (self.hidden * seq) as f64
    }

    /// Forward FLOPs per token of the output unit (final norm and projection).
    pub fn head_fwd_flops(&self) -> f64 {
        2.0 * (self.embedding_params() + self.hidden as u64) as f64
    }

    /// Model FLOPs per token for training (forward and backward): `6N + 12·L·h·s`.
    pub fn flops_per_token(&self, seq: usize) -> f64 {
        6.0 * self.flop_params() as f64 + 12.0 * (self.layers * self.hidden * seq) as f64
    }
}

fn bad(name: &str, msg: String) -> Error {
    Error::usage(format!("model {name}: {msg}"))
}

#[cfg(test)]
mod tests {
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
}
