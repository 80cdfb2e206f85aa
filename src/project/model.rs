//! Model specifications: the shape of a Llama-style decoder (RMSNorm, rotary positions,
//! grouped-query attention, SwiGLU MLP, untied input and output embeddings), optionally with
//! mixture-of-experts MLPs, its parameter count and its model FLOPs per token.
//!
//! Parameters per layer: attention `h·h` (Q) + `2·h·kv·d` (K, V with `kv` heads of `d = h/a`) +
//! `h·h` (output), MLP `3·h·f` (gate, up, down), two norms `2·h`. Whole model:
//! `L·layer + V·h` (input embedding) `+ V·h` (output head, unless tied) `+ h` (final norm).
//!
//! **Mixture of experts** (`experts` E > 0, Mixtral-style: every layer's MLP is E SwiGLU experts
//! of width f and a router `h·E`, each token goes to its `top_k` k experts): the MLP term becomes
//! `E·3·h·f + h·E` in the parameter count, and `k·3·h·f + h·E` in the *active* parameters that
//! one token's compute uses (Jiang et al. 2024, "Mixtral of Experts", arXiv:2401.04088, §2.1).
//!
//! Model FLOPs per token (PaLM, Chowdhery et al. 2022, appendix B): `6·N + 12·L·h·s`, where the
//! second term is the attention scores and their weighted sum (forward 4·h·s per layer, backward
//! twice that). Here **N is every parameter that takes part in a matrix multiply: all but the
//! input-embedding table** (a lookup, not a matmul); the output projection counts, tied or not.
//! For a mixture of experts N counts the active parameters (the k experts a token uses).

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
    /// Experts per MoE layer (0: a dense model, the default; every layer's MLP is then one
    /// SwiGLU of width `ffn`). Hugging Face `num_local_experts`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub experts: usize,
    /// Experts each token is routed to (top-k routing), 1..=experts; 0 for a dense model.
    /// Hugging Face `num_experts_per_tok`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub top_k: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Experts per MoE layer: far beyond published models (DeepSeek-V3 has 256 routed experts).
pub const EXPERTS: Count = Count {
    min: 1,
    max: 1 << 16,
};

/// Parameters a model may have: no dense shape within [`SIZE_LIMITS`] comes near it, and every
/// product the projection forms from a model below it fits in 64 bits.
pub const MAX_PARAMS: u128 = 1 << 60;

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
        // mistralai/Mixtral-8x7B-v0.1 config.json (num_local_experts 8, num_experts_per_tok 2,
        // max_position_embeddings 32768); Jiang et al. 2024, "Mixtral of Experts"
        // (arXiv:2401.04088), Table 1: 8 experts, top-2, 32k context; 46.7B parameters, 12.9B
        // active per token (mistral.ai/news/mixtral-of-experts).
        ModelSpec {
            experts: 8,
            top_k: 2,
            ..llama("mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, 32768)
        },
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
        experts: 0,
        top_k: 0,
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
        self.validate_experts()
    }

    /// `experts` within [`EXPERTS`] with `top_k` in 1..=experts, or both 0 (dense); the whole
    /// model below [`MAX_PARAMS`].
    fn validate_experts(&self) -> Result<()> {
        match (self.experts, self.top_k) {
            (0, 0) => {}
            (0, k) => {
                return Err(bad(
                    &self.name,
                    format!(
                        "top_k {k} without experts; give experts (per layer), or top_k = 0 for \
                         a dense model"
                    ),
                ))
            }
            (e, k) => {
                EXPERTS
                    .check_usize("experts", e)
                    .map_err(|m| bad(&self.name, m))?;
                if k == 0 || k > e {
                    return Err(bad(
                        &self.name,
                        format!("top_k {k} with {e} experts; give top_k from 1 to {e}"),
                    ));
                }
            }
        }
        let total = self.total_params_wide();
        if total > MAX_PARAMS {
            return Err(bad(
                &self.name,
                format!(
                    "{total} parameters is beyond 2^60; give fewer layers, experts or a \
                     smaller width"
                ),
            ));
        }
        Ok(())
    }

    /// Every parameter, in 128 bits, for the check that the total is below [`MAX_PARAMS`]: one
    /// layer's count fits in 64 bits for any size within [`SIZE_LIMITS`] and [`EXPERTS`]
    /// (at most `2^16·3·2^20·2^22` for the experts), `layers` times it may not.
    fn total_params_wide(&self) -> u128 {
        self.layers as u128 * self.layer_params() as u128
            + self.embedding_params() as u128
            + self.head_params() as u128
    }

    /// Whether the MLPs are mixtures of experts.
    pub fn is_moe(&self) -> bool {
        self.experts > 0
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    /// Parameters of one transformer layer (every expert of a MoE layer).
    pub fn layer_params(&self) -> u64 {
        self.layer_dense_params() + self.layer_expert_params()
    }

    /// Parameters of one layer outside the experts: attention, norms, and the MLP of a dense
    /// model or the router `h·E` of a MoE one (what FSDP gathers over the whole data-parallel
    /// group).
    pub fn layer_dense_params(&self) -> u64 {
        let h = self.hidden as u64;
        let kv = (self.kv_heads * self.head_dim()) as u64;
        let attention = 2 * h * h + 2 * h * kv;
        let mlp = if self.is_moe() {
            h * self.experts as u64
        } else {
            self.expert_params()
        };
        attention + mlp + 2 * h
    }

    /// Parameters of one SwiGLU MLP (one expert of a MoE layer): `3·h·f`.
    pub fn expert_params(&self) -> u64 {
        3 * self.hidden as u64 * self.ffn as u64
    }

    /// Parameters of one layer's experts, `E·3·h·f` (0 for a dense model).
    pub fn layer_expert_params(&self) -> u64 {
        self.experts as u64 * self.expert_params()
    }

    /// Parameters of one layer that one token's compute uses: all but the experts it is not
    /// routed to (all of a dense layer).
    pub fn layer_active_params(&self) -> u64 {
        self.layer_dense_params() + self.top_k as u64 * self.expert_params()
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

    /// Every parameter: the 128-bit count, which fits in 64 bits once [`Self::validate`] has
    /// passed (saturated otherwise, where a 64-bit sum would wrap).
    pub fn total_params(&self) -> u64 {
        u64::try_from(self.total_params_wide()).unwrap_or(u64::MAX)
    }

    /// Parameters one token's compute uses: every parameter of a dense model; of a MoE model
    /// all but the experts a token is not routed to.
    pub fn active_params(&self) -> u64 {
        self.layers as u64 * self.layer_active_params()
            + self.embedding_params()
            + self.head_params()
    }

    /// N of `6N`: the parameters that take part in a matrix multiply (all but the input table;
    /// the output projection counts even when tied), of a MoE model the active ones.
    pub fn flop_params(&self) -> u64 {
        self.layers as u64 * self.layer_active_params()
            + self.embedding_params()
            + self.hidden as u64
    }

    /// Forward FLOPs per token of one layer at sequence length `seq`: `2·layer + 4·h·s` (the
    /// layer's active parameters).
    pub fn layer_fwd_flops(&self, seq: usize) -> f64 {
        2.0 * self.layer_active_params() as f64 + 4.0 * (self.hidden * seq) as f64
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
#[path = "model_tests.rs"]
mod tests;
