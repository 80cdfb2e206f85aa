//! src/backend/nccl/sys.rs against the real nccl.h and cuda.h: every function-pointer type,
//! constant, type alias and `#[repr(C)]` struct declared there is turned into C (static
//! assertions for function types, printed values for the rest), compiled with `cc` against the
//! headers of the NCCL the loader finds (pip's `nvidia-nccl-cu12` in CI, with
//! `nvidia-cuda-runtime-cu12` for cuda.h), and compared. A drifted declaration fails here, not
//! on the first GPU. SKIPPED without the headers or a C compiler.

#![cfg(feature = "nccl")]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use collbench::backend::nccl::search;
use common::skip::can_use;

#[path = "nccl_abi/gen.rs"]
mod gen;
use gen::{c_const, c_program, camel_field, parse, rust_values, struct_layouts, Item};

const SYS_RS: &str = include_str!("../src/backend/nccl/sys.rs");

/// Where nccl.h and cuda.h are: the include folders of a pip-installed NCCL and CUDA runtime
/// under the site folders of the python3 on PATH, or why not.
fn headers() -> Result<(PathBuf, PathBuf), String> {
    let sites = search::python_site_dirs();
    let nccl_h = search::pip_headers(&sites)
        .into_iter()
        .next()
        .ok_or_else(|| format!("no nccl.h: {}", search::describe_sites(&sites)))?;
    let cuda_h = sites
        .iter()
        .map(|s| s.join("nvidia/cuda_runtime/include/cuda.h"))
        .find(|p| p.is_file())
        .ok_or("no cuda.h (pip install nvidia-cuda-runtime-cu12 beside nvidia-nccl-cu12)")?;
    let dir = |p: &Path| p.parent().unwrap_or(p).to_path_buf();
    Ok((dir(&nccl_h), dir(&cuda_h)))
}

/// Builds `program` against the headers and runs it: its `key=value` lines, or the compiler's
/// and program's complaints.
fn compile_and_run(
    program: &str,
    nccl: &Path,
    cuda: &Path,
) -> Result<BTreeMap<String, f64>, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    // nccl.h includes <cuda_runtime.h> for cudaStream_t and cudaEvent_t only; the runtime's own
    // header needs nvcc's crt/ folder, so a stand-in gives the runtime's types as the driver's:
    // driver_types.h declares `typedef struct CUstream_st *cudaStream_t`, cuda.h
    // `typedef struct CUstream_st *CUstream` (likewise CUevent_st).
    let shim = tmp.path().join("shim");
    std::fs::create_dir_all(&shim).map_err(|e| e.to_string())?;
    let runtime =
        "#include <cuda.h>\ntypedef CUstream cudaStream_t;\ntypedef CUevent cudaEvent_t;\n\
                   #define CUDART_VERSION 12090\n";
    for (name, text) in [
        ("cuda_runtime.h", runtime),
        ("cuda_fp16.h", ""),
        ("cuda_bf16.h", ""),
    ] {
        std::fs::write(shim.join(name), text).map_err(|e| e.to_string())?;
    }
    let src = tmp.path().join("abi.c");
    let exe = tmp.path().join("abi");
    std::fs::write(&src, program).map_err(|e| e.to_string())?;
    let out = Command::new("cc")
        .args(["-std=gnu11", "-Werror=incompatible-pointer-types", "-I"])
        .arg(&shim)
        .arg("-I")
        .arg(nccl)
        .arg("-I")
        .arg(cuda)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let out = Command::new(&exe).output().map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect())
}

/// Every difference between what sys.rs says and what the headers say, one line each.
fn drift(items: &[Item], nccl: &Path, cuda: &Path) -> Vec<String> {
    let got = match compile_and_run(&c_program(items), nccl, cuda) {
        Ok(got) => got,
        Err(complaints) => {
            return complaints
                .lines()
                .filter(|l| l.contains("error"))
                .map(String::from)
                .collect()
        }
    };
    rust_values(items)
        .into_iter()
        .filter_map(|(key, want)| match got.get(&key) {
            Some(v) if *v == want => None,
            Some(v) => Some(format!("{key}: sys.rs has {want}, the header {v}")),
            None => Some(format!("{key}: the program printed nothing")),
        })
        .collect()
}

fn headers_or_skip() -> Option<(PathBuf, PathBuf)> {
    let found = headers();
    let cc = common::skip::on_path("cc");
    let missing = match (&found, cc) {
        (Err(why), _) => Some(why.clone()),
        (Ok(_), false) => Some("no C compiler (cc) on PATH".into()),
        _ => None,
    };
    can_use("libnccl", missing).then(|| found.ok()).flatten()
}

#[test]
fn nccl_sys_rs_matches_the_real_nccl_h_and_cuda_h() {
    let Some((nccl, cuda)) = headers_or_skip() else {
        return;
    };
    let items = parse(SYS_RS).expect("sys.rs parses");
    let count = |f: fn(&Item) -> bool| items.iter().filter(|i| f(i)).count();
    // Everything the loader resolves is covered (a parser that dropped items would pass).
    assert!(
        count(|i| matches!(i, Item::Function { .. })) >= 30,
        "{items:?}"
    );
    assert!(
        count(|i| matches!(i, Item::Const { .. })) >= 20,
        "{items:?}"
    );
    assert_eq!(
        count(|i| matches!(i, Item::Struct { .. })),
        struct_layouts().len()
    );
    let problems = drift(&items, &nccl, &cuda);
    assert!(
        problems.is_empty(),
        "sys.rs disagrees with {}/nccl.h or {}/cuda.h:\n{}",
        nccl.display(),
        cuda.display(),
        problems.join("\n")
    );
}

#[test]
fn nccl_abi_check_catches_a_drifted_signature_constant_and_layout() {
    let Some((nccl, cuda)) = headers_or_skip() else {
        return;
    };
    let drifted = SYS_RS
        .replace(
            "pub const NCCL_FLOAT32: ncclDataType_t = 7;",
            "pub const NCCL_FLOAT32: ncclDataType_t = 6;",
        )
        .replace(
            "pub type ncclCommDestroy_t = unsafe extern \"C\" fn(comm: ncclComm_t)",
            "pub type ncclCommDestroy_t = unsafe extern \"C\" fn(comm: *mut ncclComm_t)",
        )
        .replace(
            "pub estimated_time: f32,",
            "pub estimated_time: f32, pub spare: f32,",
        );
    assert_ne!(drifted, SYS_RS);
    let mut items = parse(&drifted).expect("parses");
    // The layout check reads Rust's real layout: a field sys.rs gained that C lacks fails to
    // compile (offsetof of a missing member).
    let compile = drift(&items, &nccl, &cuda);
    assert!(compile.iter().any(|l| l.contains("spare")), "{compile:?}");
    // Without it, the signature and the constant are named.
    for it in &mut items {
        if let Item::Struct { fields, .. } = it {
            fields.retain(|f| f != "spare");
        }
    }
    let problems = drift(&items, &nccl, &cuda).join("\n");
    assert!(problems.contains("ncclCommDestroy"), "{problems}");
    let items = parse(&SYS_RS.replace("= 7;", "= 6;")).unwrap();
    let problems = drift(&items, &nccl, &cuda).join("\n");
    assert!(
        problems.contains("NCCL_FLOAT32: sys.rs has 6, the header 7"),
        "{problems}"
    );
    assert!(
        problems.contains("NCCL_IN_PROGRESS: sys.rs has 6, the header 7"),
        "{problems}"
    );
}

#[test]
fn nccl_sys_parser_reads_functions_constants_aliases_and_structs() {
    let src = "/// doc\npub type f_t = unsafe extern \"C\" fn(\n a: *const c_void,\n b: *mut *const c_char,\n) -> c_int;\n\
               pub type g_t = unsafe extern \"C\" fn() -> ncclResult_t;\n\
               pub const NCCL_X: c_uint = 0x7468_5283;\npub const Y: f32 = -1.0;\n\
               pub type h = *mut c_void;\n#[repr(C)]\npub struct S {\n    pub estimated_time: f32,\n}\n";
    let items = parse(src).unwrap();
    assert_eq!(
        items,
        vec![
            Item::Function {
                name: "f".into(),
                c_type: "int (*)(void const*, char const**)".into()
            },
            Item::Function {
                name: "g".into(),
                c_type: "ncclResult_t (*)(void)".into()
            },
            Item::Const {
                name: "NCCL_X".into(),
                value: 1952993923.0
            },
            Item::Const {
                name: "Y".into(),
                value: -1.0
            },
            Item::Alias {
                name: "h".into(),
                c_type: "void*".into()
            },
            Item::Struct {
                name: "S".into(),
                fields: vec!["estimated_time".into()]
            },
        ]
    );
    assert_eq!(camel_field("estimated_time"), "estimatedTime");
    assert!(c_const("NCCL_BFLOAT16").contains("ncclBfloat16"));
    assert_eq!(c_const("CUDA_SUCCESS"), "CUDA_SUCCESS");
    assert!(parse("pub const Z: c_int = OTHER;").is_err());
}
