//! Build script: with the `nccl` feature the collbench executable is its own NCCL profiler
//! plugin (src/backend/nccl/profiler.rs). NCCL, told `NCCL_PROFILER_PLUGIN=STATIC_PLUGIN`,
//! looks `ncclProfiler_v1` up in the running program, so the symbol must be in the
//! executable's dynamic symbol table (and linked in although no code of the program calls it).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_NCCL").is_some() {
        println!("cargo:rustc-link-arg-bins=-Wl,--undefined=ncclProfiler_v1");
        println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol=ncclProfiler_v1");
    }
}
