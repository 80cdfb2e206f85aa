//! sys.rs read as declarations and turned into a C program that checks them against nccl.h
//! and cuda.h: static assertions for function types, printed sizes, offsets and values for the
//! rest, and what collbench's side of each printed value must be.

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};

use collbench::backend::nccl::sys;

/// One declaration of sys.rs.
#[derive(Debug, PartialEq)]
pub enum Item {
    /// `pub type X_t = unsafe extern "C" fn(..) -> R;`: the C function `X` must have this type.
    Function { name: String, c_type: String },
    /// `pub type X = T;`: a C typedef `X` of T's size.
    Alias { name: String, c_type: String },
    /// `pub const X: T = V;`
    Const { name: String, value: f64 },
    /// `#[repr(C)] pub struct X { .. }` with its fields.
    Struct { name: String, fields: Vec<String> },
}

/// The declarations of a sys.rs text (comments and attributes dropped).
pub fn parse(src: &str) -> Result<Vec<Item>, String> {
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
        return Ok(Some(Item::Struct { name, fields }));
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
pub fn c_const(name: &str) -> String {
    if name == "NCCL_SIM_INFO_MAGIC" {
        return "((ncclSimInfo_t)NCCL_SIM_INFO_INITIALIZER).magic".into();
    }
    // The nccl.h whose ncclConfig_t layout sys.rs declares.
    if name == "NCCL_CONFIG_LAYOUT_VERSION" {
        return "NCCL_VERSION_CODE".into();
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
pub fn camel_field(name: &str) -> String {
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
pub fn c_program(items: &[Item]) -> String {
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
            Item::Struct { name, fields } => {
                print(&format!("sizeof {name}"), &format!("sizeof({name})"));
                for f in fields {
                    let expr = format!("offsetof({name}, {})", camel_field(f));
                    print(&format!("offsetof {name}.{f}"), &expr);
                }
            }
        }
    }
    for (field, expr, _) in config_initializer_checks() {
        let expr = format!("((ncclConfig_t)NCCL_CONFIG_INITIALIZER).{expr}");
        print(&format!("initializer ncclConfig_t.{field}"), &expr);
    }
    format!(
        "#include <stdio.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <cuda.h>\n\
         #include <nccl.h>\n{asserts}int main(void) {{\n{prints}  return 0;\n}}\n"
    )
}

/// What each printed key must be on the Rust side.
pub fn rust_values(items: &[Item]) -> BTreeMap<String, f64> {
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
            Item::Function { .. } => {}
        }
    }
    for (field, _, value) in config_initializer_checks() {
        want.insert(format!("initializer ncclConfig_t.{field}"), value);
    }
    want
}

type Layout = (usize, Vec<(&'static str, usize)>);

/// A struct's Rust size and the offset of each named field.
macro_rules! layout {
    ($t:ty, $($f:ident),+ $(,)?) => {
        (size_of::<$t>(), vec![$((stringify!($f), offset_of!($t, $f))),+])
    };
}

/// The Rust layout of every `#[repr(C)]` struct of sys.rs.
pub fn struct_layouts() -> BTreeMap<&'static str, Layout> {
    use sys::{ncclConfig_t as Config, ncclSimInfo_t as Sim, ncclUniqueId as Id};
    BTreeMap::from([
        ("ncclUniqueId", layout!(Id, internal)),
        (
            "ncclSimInfo_t",
            layout!(Sim, size, magic, version, estimated_time),
        ),
        (
            "ncclConfig_t",
            layout!(
                Config,
                size,
                magic,
                version,
                blocking,
                cgaClusterSize,
                minCTAs,
                maxCTAs,
                netName,
                splitShare,
                trafficClass,
                commName,
                collnetEnable,
                CTAPolicy,
                shrinkShare,
                nvlsCTAs,
                nChannelsPerNetPeer,
                nvlinkCentricSched,
                graphUsageMode,
                numRmaCtx,
                maxP2pPeers,
                graphStreamOrdering,
                launchOrderImplicit,
                numRmaSig,
                rmaEagerInit,
                hostCftMode,
                nvlsHostMode,
            ),
        ),
    ])
}

/// `NCCL_CONFIG_INITIALIZER` field by field: the field, C's expression of it and collbench's
/// value ([`collbench::backend::nccl::config::initializer`]).
fn config_initializer_checks() -> Vec<(String, String, f64)> {
    let c = collbench::backend::nccl::config::initializer();
    let ints = [
        ("blocking", c.blocking),
        ("cgaClusterSize", c.cgaClusterSize),
        ("minCTAs", c.minCTAs),
        ("maxCTAs", c.maxCTAs),
        ("splitShare", c.splitShare),
        ("trafficClass", c.trafficClass),
        ("collnetEnable", c.collnetEnable),
        ("CTAPolicy", c.CTAPolicy),
        ("shrinkShare", c.shrinkShare),
        ("nvlsCTAs", c.nvlsCTAs),
        ("nChannelsPerNetPeer", c.nChannelsPerNetPeer),
        ("nvlinkCentricSched", c.nvlinkCentricSched),
        ("graphUsageMode", c.graphUsageMode),
        ("numRmaCtx", c.numRmaCtx),
        ("maxP2pPeers", c.maxP2pPeers),
        ("graphStreamOrdering", c.graphStreamOrdering),
        ("launchOrderImplicit", c.launchOrderImplicit),
        ("numRmaSig", c.numRmaSig),
        ("rmaEagerInit", c.rmaEagerInit),
        ("hostCftMode", c.hostCftMode),
        ("nvlsHostMode", c.nvlsHostMode),
    ];
    let mut out: Vec<(String, String, f64)> = ints
        .iter()
        .map(|(f, v)| (f.to_string(), f.to_string(), f64::from(*v)))
        .collect();
    let set = |p: bool| f64::from(u8::from(p));
    out.extend([
        ("size".into(), "size".into(), c.size as f64),
        ("magic".into(), "magic".into(), f64::from(c.magic)),
        ("version".into(), "version".into(), f64::from(c.version)),
        (
            "netName".into(),
            "netName != 0".into(),
            set(!c.netName.is_null()),
        ),
        (
            "commName".into(),
            "commName != 0".into(),
            set(!c.commName.is_null()),
        ),
    ]);
    out
}
