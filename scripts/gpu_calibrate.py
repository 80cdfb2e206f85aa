#!/usr/bin/env python3
"""Compute calibration for collbench's roofline (src/project/roofline.rs) on one GPU.

Times, with CUDA events over warm-up plus timed iterations:

- one Llama-2-7B decoder layer (hidden 4096, 32 heads, SwiGLU ffn 11008, bf16, RMSNorm, rotary
  embedding, causal attention through torch's scaled_dot_product_attention), written with plain
  torch ops (no downloads, random weights), forward and forward+backward, sequence 4096, batch 1;
- the layer's GEMMs alone at the shard shapes of tensor parallelism 1, 2, 4 and 8 (QKV
  T x h x 3h/tp, attention output T x h/tp x h, MLP gate or up T x h x f/tp, down T x f/tp x h,
  T = batch x sequence tokens), forward;
- the fused attention alone (heads/tp heads), forward+backward;
- a device-to-device copy of 1 GiB (HBM bandwidth).

FLOPs are counted as the roofline counts them: a GEMM M x K x N is 2MNK, attention 4*T*s*h/tp
per forward (scores and context, the causal mask not discounted), backward twice forward. So
`efficiency` (TFLOP/s over the GPU's dense bf16 peak) is directly comparable with the hardware
spec's `gemm_efficiency` and `attention_efficiency`. Writes one CSV row per measurement, as soon
as it is measured. Exit 0 measured, 3 skipped (no torch or no GPU; the reason on stdout as
`SKIPPED: ...`), 1 failed.
"""

import argparse
import csv
import os
import statistics
import sys
import time

SKIPPED = 3

COLUMNS = [
    "kind", "name", "tp", "m", "n", "k", "dtype", "flops", "bytes", "iters",
    "time_ms_median", "time_ms_mean", "time_ms_min", "tflops", "tbps",
    "peak_tflops", "efficiency", "device", "torch", "note",
]

# Dense bf16 peak (TFLOP/s) by device name, from NVIDIA's datasheets (sparsity figures halved).
PEAKS = [
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.0),  # SXM5 (H100 80GB HBM3)
    ("H200", 989.0),
    ("H800", 989.0),
    ("A100", 312.0),
]


def peak_for(name, override):
    if override:
        return override
    for key, peak in PEAKS:
        if key in name:
            return peak
    return None


class Writer:
    def __init__(self, path, device, torch_version, peak):
        self.f = open(path, "w", newline="", encoding="utf-8")
        self.w = csv.DictWriter(self.f, fieldnames=COLUMNS, lineterminator="\n")
        self.w.writeheader()
        self.f.flush()
        self.device, self.torch, self.peak = device, torch_version, peak

    def row(self, kind, name, times_ms, flops=0, nbytes=0, tp="", m="", n="", k="", note=""):
        med = statistics.median(times_ms)
        tflops = flops / (med * 1e-3) / 1e12 if flops else None
        tbps = nbytes / (med * 1e-3) / 1e12 if nbytes else None
        eff = tflops / self.peak if (tflops and self.peak) else None
        r = {
            "kind": kind, "name": name, "tp": tp, "m": m, "n": n, "k": k, "dtype": "bf16",
            "flops": flops or "", "bytes": nbytes or "", "iters": len(times_ms),
            "time_ms_median": f"{med:.6f}",
            "time_ms_mean": f"{statistics.fmean(times_ms):.6f}",
            "time_ms_min": f"{min(times_ms):.6f}",
            "tflops": f"{tflops:.2f}" if tflops else "",
            "tbps": f"{tbps:.3f}" if tbps else "",
            "peak_tflops": self.peak or "",
            "efficiency": f"{eff:.3f}" if eff else "",
            "device": self.device, "torch": self.torch, "note": note,
        }
        self.w.writerow(r)
        self.f.flush()
        shown = f"{tflops:8.1f} TFLOP/s" if tflops else f"{tbps:8.3f} TB/s"
        extra = f"  eff {eff:.3f}" if eff else ""
        print(f"{kind:10s} {name:28s} tp {str(tp):2s} {med:9.3f} ms {shown}{extra}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="CSV file to write")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--ffn", type=int, default=11008)
    ap.add_argument("--tp", default="1,2,4,8", help="tensor-parallel degrees of the GEMM shards")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10, help="timed iterations of the layer")
    ap.add_argument("--gemm-iters", type=int, default=20)
    ap.add_argument("--budget", type=float, default=120.0,
                    help="seconds; sections not started within it are left out")
    ap.add_argument("--peak-tflops", type=float, default=None,
                    help="dense bf16 peak [default: from the device name]")
    a = ap.parse_args()
    t0 = time.monotonic()

    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any import failure means: no torch here
        print(f"SKIPPED: python3 cannot import torch ({type(e).__name__}: {e})")
        return SKIPPED
    if not torch.cuda.is_available():
        print(f"SKIPPED: torch {torch.__version__} sees no CUDA GPU "
              f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")
        return SKIPPED
    tps = [int(x) for x in a.tp.split(",") if x.strip()]
    h, heads, f, s, b = a.hidden, a.heads, a.ffn, a.seq, a.batch
    if h % heads or any(h % t or f % t or heads % t for t in tps):
        print(f"hidden {h}, heads {heads} and ffn {f} must divide by every tp in {tps}")
        return 1
    d = h // heads
    T = b * s
    dev = torch.device("cuda", 0)
    prop = torch.cuda.get_device_properties(dev)
    peak = peak_for(prop.name, a.peak_tflops)
    print(f"device: {prop.name}, {prop.multi_processor_count} SMs, "
          f"{prop.total_memory / 2**30:.1f} GiB; torch {torch.__version__}, CUDA {torch.version.cuda}; "
          f"dense bf16 peak {peak or 'unknown'} TFLOP/s", flush=True)
    out = Writer(a.out, prop.name, torch.__version__, peak)
    torch.manual_seed(0)
    bf16 = torch.bfloat16

    def timed(fn, warmup, iters):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(iters)]
        for start, end in ev:
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in ev]

    def over_budget(what):
        left = a.budget - (time.monotonic() - t0)
        if left < 5:
            print(f"budget: {what} left out ({a.budget:.0f} s spent)", flush=True)
            return True
        return False

    # --- HBM: one device-to-device copy of 1 GiB (read + write counted) ----------------------
    src = torch.empty(2**30, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    out.row("hbm", "copy_1GiB", timed(lambda: dst.copy_(src), 3, 10), nbytes=2 * 2**30,
            note="device-to-device copy; bytes read plus written")
    del src, dst

    # --- one decoder layer --------------------------------------------------------------------
    def linear(n_in, n_out):
        return (torch.randn(n_out, n_in, device=dev, dtype=bf16) / n_in**0.5).requires_grad_()

    w = {
        "norm1": torch.ones(h, device=dev, dtype=bf16, requires_grad=True),
        "qkv": linear(h, 3 * h),
        "o": linear(h, h),
        "norm2": torch.ones(h, device=dev, dtype=bf16, requires_grad=True),
        "gate": linear(h, f),
        "up": linear(h, f),
        "down": linear(f, h),
    }
    pos = torch.arange(s, device=dev, dtype=torch.float32)
    inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))
    ang = torch.outer(pos, inv)
    cos = torch.cat([ang.cos(), ang.cos()], dim=-1).to(bf16)  # [s, d]
    sin = torch.cat([ang.sin(), ang.sin()], dim=-1).to(bf16)

    def rmsnorm(x, weight, eps=1e-5):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(bf16) * weight

    def rope(x):  # x: [b, heads, s, d]
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return x * cos + torch.cat([-x2, x1], dim=-1) * sin

    def layer(x):  # x: [b, s, h]
        y = rmsnorm(x, w["norm1"])
        q, k, v = F.linear(y, w["qkv"]).view(b, s, 3, heads, d).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
        x = x + F.linear(att.transpose(1, 2).reshape(b, s, h), w["o"])
        y = rmsnorm(x, w["norm2"])
        return x + F.linear(F.silu(F.linear(y, w["gate"])) * F.linear(y, w["up"]), w["down"])

    gemm_fwd = 2 * T * h * 3 * h + 2 * T * h * h + 2 * (2 * T * h * f) + 2 * T * f * h
    attn_fwd = 4 * T * s * h
    layer_fwd = gemm_fwd + attn_fwd
    x = torch.randn(b, s, h, device=dev, dtype=bf16, requires_grad=True)
    grad = torch.randn(b, s, h, device=dev, dtype=bf16)
    with torch.no_grad():
        out.row("layer", "llama2-7b_fwd", timed(lambda: layer(x), a.warmup, a.iters),
                flops=layer_fwd, tp=1, m=T, note=f"batch {b} seq {s}; no autograd")

    def fwd_bwd():
        layer(x).backward(grad)

    out.row("layer", "llama2-7b_fwd_bwd", timed(fwd_bwd, a.warmup, a.iters), flops=3 * layer_fwd,
            tp=1, m=T, note=f"batch {b} seq {s}; gradients accumulate across iterations")
    del w, x, grad
    torch.cuda.empty_cache()

    # --- the GEMMs at tensor-parallel shard shapes --------------------------------------------
    for tp in tps:
        if over_budget(f"GEMMs at tp {tp} and after"):
            break
        shapes = [  # (name, K, N): activations T x K times weights K x N
            ("qkv", h, 3 * h // tp),
            ("attn_out", h // tp, h),
            ("mlp_gate_or_up", h, f // tp),
            ("mlp_down", f // tp, h),
        ]
        for name, k, n in shapes:
            act = torch.randn(T, k, device=dev, dtype=bf16)
            wt = torch.randn(n, k, device=dev, dtype=bf16)  # as nn.Linear stores it
            times = timed(lambda act=act, wt=wt: F.linear(act, wt), 3, a.gemm_iters)
            out.row("gemm", name, times, flops=2 * T * n * k, tp=tp, m=T, n=n, k=k,
                    note="forward, x @ W^T")

    # --- fused attention alone ------------------------------------------------------------------
    for tp in tps:
        if over_budget(f"attention at tp {tp} and after"):
            break
        hh = heads // tp
        q, k, v = (torch.randn(b, hh, s, d, device=dev, dtype=bf16, requires_grad=True)
                   for _ in range(3))
        go = torch.randn(b, hh, s, d, device=dev, dtype=bf16)

        def attn(q=q, k=k, v=v, go=go):
            F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(go)

        out.row("attention", "sdpa_causal_fwd_bwd", timed(attn, 3, a.iters),
                flops=3 * 4 * T * s * h // tp, tp=tp, m=T,
                note=f"{hh} heads of {d}; FLOPs not discounted for the causal mask")
    print(f"done in {time.monotonic() - t0:.1f} s; wrote {a.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
