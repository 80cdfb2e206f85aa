//! src/backend/nccl/sys.rs against the real nccl.h and cuda.h: every function-pointer type,
//! constant, type alias and `#[repr(C)]` struct declared there is turned into C (static
//! assertions for function types, printed values for the rest), compiled with `cc` against the
//! headers of the NCCL the loader finds (pip's `nvidia-nccl-cu12` in CI, with
//! `nvidia-cuda-runtime-cu12` for cuda.h), and compared. A drifted declaration fails here, not
//! on the first GPU. SKIPPED without the headers or a C compiler.

#![cfg(feature = "nccl")]

mod common;

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use collbench::backend::nccl::{search, sys};
use common::skip::can_use;

const SYS_RS: &str = include_str!("../src/backend/nccl/sys.rs");

/// One declaration of sys.rs.
#[derive(Debug, PartialEq)]
enum Item {
    /// `pub type X_t = unsafe extern "C" fn(..) -> R;`: the C function `X` must have this type.
    Function { name: String, c_type: String },
    /// `pub type X = T;`: a C typedef `X` of T's size.
    Alias { name: String, c_type: String },
    /// `pub const X: T = V;`
    Const { name: String, value: f64 },
    /// `#[repr(C)] pub struct X { .. }` with its fields.
    Struct { name: String, fields: Vec<String> },
    /// A struct with no public field: opaque, seen through pointers only; the C type must exist.
    Opaque { name: String },
}

/// The declarations of a sys.rs text (comments and attributes dropped).
fn parse(src: &str) -> Result<Vec<Item>, String> {
    let code: String = src
        .lines()
        .map(|l| l.trim())
        .filter(|l| !l.starts_with("//") && !l.starts_with("#"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut items = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("pub ") {
        rest = &rest[at + 4..];
        let end = if rest.starts_with("struct ") {
            rest.find('}').map(|e| e + 1)
        } else {
            rest.find(';')
        }
        .ok_or_else(|| format!("unterminated item: {rest}"))?;
        if let Some(item) = item(&rest[..end])? {
            items.push(item);
        }
        rest = &rest[end..];
    }
    Ok(items)
}

fn item(text: &str) -> Result<Option<Item>, String> {
    if let Some(t) = text.strip_prefix("type ") {
        let (name, rhs) = t.split_once('=').ok_or(format!("bad type: {text}"))?;
        let (name, rhs) = (name.trim().to_string(), rhs.trim());
        return Ok(Some(match rhs.strip_prefix("unsafe extern \"C\" fn") {
            Some(sig) => Item::Function {
                name: name
                    .strip_suffix("_t")
                    .ok_or(format!("{name}: no _t"))?
                    .into(),
                c_type: c_function(sig)?,
            },
            None => Item::Alias {
                name,
                c_type: c_type(rhs),
            },
        }));
    }
    if let Some(t) = text.strip_prefix("const ") {
        let (lhs, value) = t.split_once('=').ok_or(format!("bad const: {text}"))?;
        let name = lhs.split(':').next().unwrap_or_default().trim().to_string();
        let value = literal(value.trim()).ok_or(format!("{name}: not a literal: {value}"))?;
        return Ok(Some(Item::Const { name, value }));
    }
    if let Some(t) = text.strip_prefix("struct ") {
        let (name, body) = t.split_once('{').ok_or(format!("bad struct: {text}"))?;
        let fields: Vec<String> = body
            .trim_end_matches('}')
            .split(',')
            .filter_map(|f| f.trim().strip_prefix("pub "))
            .filter_map(|f| f.split(':').next())
            .map(|f| f.trim().to_string())
            .collect();
        let name = name.trim().to_string();
        return Ok(Some(match fields.is_empty() {
            true => Item::Opaque { name },
            false => Item::Struct { name, fields },
        }));
    }
    Ok(None)
}

/// A Rust numeric literal (`128`, `-1`, `0x7468_5283`, `-1.0`).
fn literal(text: &str) -> Option<f64> {
    let t = text.replace('_', "");
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest.to_string()),
        None => (false, t),
    };
    let v = match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()? as f64,
        None => t.parse::<f64>().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// The C spelling of a Rust FFI type.
fn c_type(rust: &str) -> String {
    let t = rust.trim();
    if let Some(inner) = t.strip_prefix("*const ") {
        return format!("{} const*", c_type(inner));
    }
    if let Some(inner) = t.strip_prefix("*mut ") {
        return format!("{}*", c_type(inner));
    }
    match t {
        "c_void" => "void",
        "c_char" => "char",
        "c_int" | "i32" => "int",
        "c_uint" | "u32" => "unsigned int",
        "usize" => "size_t",
        "u64" => "uint64_t",
        "f32" => "float",
        other => other,
    }
    .to_string()
}

/// `(a: T, b: U) -> R` as the C type of a pointer to such a function.
fn c_function(sig: &str) -> Result<String, String> {
    let (args, ret) = sig.rsplit_once("->").ok_or(format!("no return: {sig}"))?;
    let args = args.trim().trim_start_matches('(').trim_end_matches(')');
    let params: Vec<String> = args
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| a.split_once(':').map(|(_, t)| c_type(t)))
        .collect::<Option<_>>()
        .ok_or(format!("unnamed parameter: {sig}"))?;
    let params = if params.is_empty() {
        "void".to_string()
    } else {
        params.join(", ")
    };
    Ok(format!("{} (*)({params})", c_type(ret)))
}

/// The C expression for a constant named in sys.rs: the macro of the same name where the
/// header defines one, else nccl.h's enumerator (`NCCL_FLOAT32` -> `ncclFloat32`); CUDA's
/// names are cuda.h's own.
fn c_const(name: &str) -> String {
    if name == "NCCL_SIM_INFO_MAGIC" {
        return "((ncclSimInfo_t)NCCL_SIM_INFO_INITIALIZER).magic".into();
    }
    let Some(rest) = name.strip_prefix("NCCL_") else {
        return name.into();
    };
    let camel: String = rest
        .split('_')
        .map(|w| {
            let lower = w.to_ascii_lowercase();
            let mut c = lower.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    format!("\n#ifdef {name}\n{name}\n#else\nnccl{camel}\n#endif\n")
}

/// `estimated_time` -> `estimatedTime`.
fn camel_field(name: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for ch in name.chars() {
        match (ch, up) {
            ('_', _) => up = true,
            (c, true) => {
                out.push(c.to_ascii_uppercase());
                up = false
            }
            (c, false) => out.push(c),
        }
    }
    out
}

/// The C program: static assertions for function types, printed `key=value` for the rest.
fn c_program(items: &[Item]) -> String {
    let mut asserts = String::new();
    let mut prints = String::new();
    let mut print = |key: &str, expr: &str| {
        prints += &format!("  printf(\"%s=%.17g\\n\", \"{key}\", (double)({expr}));\n");
    };
    for it in items {
        match it {
            Item::Function { name, c_type } => {
                asserts += &format!(
                    "_Static_assert(__builtin_types_compatible_p(__typeof__(&{name}), {c_type}), \
                     \"{name}: sys.rs declares {c_type}\");\n"
                );
            }
            Item::Alias { name, c_type } => {
                print(
                    &format!("sizeof {name}"),
                    &format!("sizeof({name}) - sizeof({c_type})"),
                );
            }
            Item::Const { name, .. } => print(name, &c_const(name)),
            Item::Opaque { name } => {
                print(&format!("sizeof {name}"), &format!("sizeof({name}) > 0"))
            }
            Item::Struct { name, fields } => {
                print(&format!("sizeof {name}"), &format!("sizeof({name})"));
                for f in fields {
                    let expr = format!("offsetof({name}, {})", camel_field(f));
                    print(&format!("offsetof {name}.{f}"), &expr);
                }
            }
        }
    }
    format!(
        "#include <stdio.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <cuda.h>\n\
         #include <nccl.h>\n{asserts}int main(void) {{\n{prints}  return 0;\n}}\n"
    )
}

/// What each printed key must be on the Rust side.
fn rust_values(items: &[Item]) -> BTreeMap<String, f64> {
    let layouts = struct_layouts();
    let mut want = BTreeMap::new();
    for it in items {
        match it {
            Item::Alias { name, .. } => {
                // The typedef has the size of the type sys.rs aliases it to: difference 0.
                want.insert(format!("sizeof {name}"), 0.0);
            }
            Item::Const { name, value } => {
                want.insert(name.clone(), *value);
            }
            Item::Struct { name, fields } => {
                let (size, offsets) = layouts.get(name.as_str()).unwrap_or_else(|| {
                    panic!("struct {name} of sys.rs has no layout here: add it to struct_layouts")
                });
                want.insert(format!("sizeof {name}"), *size as f64);
                for f in fields {
                    let off = offsets
                        .iter()
                        .find(|(n, _)| n == f)
                        .unwrap_or_else(|| panic!("{name}.{f}: add it to struct_layouts"));
                    want.insert(format!("offsetof {name}.{f}"), off.1 as f64);
                }
            }
            Item::Opaque { name } => {
                want.insert(format!("sizeof {name}"), 1.0);
            }
            Item::Function { .. } => {}
        }
    }
    want
}

type Layout = (usize, Vec<(&'static str, usize)>);

/// The Rust layout of every `#[repr(C)]` struct of sys.rs.
fn struct_layouts() -> BTreeMap<&'static str, Layout> {
    use sys::{ncclSimInfo_t as Sim, ncclUniqueId as Id};
    BTreeMap::from([
        (
            "ncclUniqueId",
            (
                size_of::<Id>(),
                vec![("internal", offset_of!(Id, internal))],
            ),
        ),
        (
            "ncclSimInfo_t",
            (
                size_of::<Sim>(),
                vec![
                    ("size", offset_of!(Sim, size)),
                    ("magic", offset_of!(Sim, magic)),
                    ("version", offset_of!(Sim, version)),
                    ("estimated_time", offset_of!(Sim, estimated_time)),
                ],
            ),
        ),
    ])
}

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
