//! NVML for telemetry: opening the library, finding GPUs, reading samples and counters. Part of
//! the thin unsafe layer: the one raw NVML call (field values with a scope id, which nvml-wrapper
//! cannot pass) is made here, behind a safe function.

use std::fmt;
use std::os::raw::c_int;
use std::path::Path;

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::sys_exports::field_id::{
    NVML_FI_DEV_NVLINK_LINK_COUNT, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVML_FI_DEV_POWER_INSTANT,
};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{nvmlFieldValue_t, nvmlReturn_enum_NVML_SUCCESS};

use super::aggregate::{Counters, Sample};
use crate::report::telemetry_csv::{GpuLabel, PowerSource};

/// The environment variable that points collbench at a specific libnvidia-ml.
pub const NVML_LIB_ENV: &str = "COLLBENCH_NVML_LIB";
/// What to do when NVML cannot be opened.
pub const NVML_FIX: &str = "install the NVIDIA driver's libnvidia-ml.so.1 or set \
     COLLBENCH_NVML_LIB=/path/to/libnvidia-ml.so.1";

/// The most NVLink links a GPU has (`NVML_NVLINK_MAX_LINKS`).
const MAX_LINKS: u32 = 18;
/// The scope id that asks for NVLink counters summed over all links (`UINT_MAX`, nvml.h).
const ALL_LINKS: u32 = u32::MAX;

/// A GPU as the caller knows it. Prefer the PCI bus id or UUID that CUDA reports for the rank's
/// device: NVML numbers GPUs in PCI order regardless of `CUDA_VISIBLE_DEVICES`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceRef {
    /// NVML index, as nvidia-smi numbers GPUs.
    Index(u32),
    /// PCI bus id, e.g. `0000:18:00.0` (CUDA's `cuDeviceGetPCIBusId`).
    PciBusId(String),
    /// UUID, e.g. `GPU-5d9c...`.
    Uuid(String),
}

impl From<u32> for DeviceRef {
    fn from(index: u32) -> Self {
        DeviceRef::Index(index)
    }
}

impl fmt::Display for DeviceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceRef::Index(i) => write!(f, "index {i}"),
            DeviceRef::PciBusId(id) => write!(f, "PCI bus id {id}"),
            DeviceRef::Uuid(id) => write!(f, "UUID {id}"),
        }
    }
}

impl DeviceRef {
    /// What the reference itself says about the GPU, for rows written without NVML.
    pub fn label(&self) -> GpuLabel {
        match self {
            DeviceRef::Index(i) => GpuLabel {
                index: Some(*i),
                ..GpuLabel::default()
            },
            DeviceRef::PciBusId(id) => GpuLabel {
                pci_bus_id: id.clone(),
                ..GpuLabel::default()
            },
            DeviceRef::Uuid(_) => GpuLabel::default(),
        }
    }
}

/// Opens NVML from `path` (the override) or libnvidia-ml.so.1; the error is the reason alone.
pub fn open(path: Option<&Path>) -> Result<Nvml, String> {
    let mut builder = Nvml::builder();
    if let Some(path) = path {
        builder.lib_path(path.as_os_str());
    }
    builder.init().map_err(|e| match path {
        Some(path) => format!("{NVML_LIB_ENV}={}: {}", path.display(), reason(&e)),
        None => reason(&e),
    })
}

/// An NVML error as one line, without nvml-wrapper's "a libloading error occurred" prefix.
fn reason(e: &NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(inner) => inner.to_string(),
        other => other.to_string(),
    }
}

/// The GPU `r` names.
pub fn find<'n>(nvml: &'n Nvml, r: &DeviceRef) -> Result<Device<'n>, String> {
    let found = match r {
        DeviceRef::Index(i) => nvml.device_by_index(*i),
        DeviceRef::PciBusId(id) => nvml.device_by_pci_bus_id(id.as_str()),
        DeviceRef::Uuid(id) => nvml.device_by_uuid(id.as_str()),
    };
    found.map_err(|e| format!("no GPU with {r}: {}", reason(&e)))
}

/// Index, name and bus id of a GPU, each empty where NVML refuses it.
pub fn label(dev: &Device) -> GpuLabel {
    GpuLabel {
        index: dev.index().ok(),
        name: dev.name().unwrap_or_default(),
        pci_bus_id: dev.pci_info().map(|p| p.bus_id).unwrap_or_default(),
    }
}

/// How a GPU's NVLink traffic can be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NvlinkScope {
    /// No NVLink, or no counters for it.
    Unsupported,
    /// One read summed over links by NVML.
    AllLinks,
    /// A driver that refuses the summed read: these links, summed here.
    Links(Vec<u32>),
}

/// What a GPU can report, found once when telemetry starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    pub power: Option<PowerSource>,
    pub nvlink: NvlinkScope,
}

/// Probes the power reading and the NVLink counters of a GPU.
pub fn capabilities(dev: &Device) -> Capabilities {
    let power = if instant_power_mw(dev).is_some() {
        Some(PowerSource::Instant)
    } else {
        dev.power_usage().ok().map(|_| PowerSource::Usage)
    };
    Capabilities {
        power,
        nvlink: nvlink_scope(dev),
    }
}

fn nvlink_scope(dev: &Device) -> NvlinkScope {
    let links = field_values(dev, &[(NVML_FI_DEV_NVLINK_LINK_COUNT, 0)])[0].unwrap_or(0);
    if links == 0 {
        return NvlinkScope::Unsupported;
    }
    let all = field_values(dev, &[(TX, ALL_LINKS), (RX, ALL_LINKS)]);
    if all.iter().all(Option::is_some) {
        return NvlinkScope::AllLinks;
    }
    let ids: Vec<(u32, u32)> = (0..MAX_LINKS).map(|link| (TX, link)).collect();
    let per_link = field_values(dev, &ids);
    let readable: Vec<u32> = (0..MAX_LINKS)
        .zip(per_link)
        .filter_map(|(link, v)| v.map(|_| link))
        .collect();
    if readable.is_empty() {
        NvlinkScope::Unsupported
    } else {
        NvlinkScope::Links(readable)
    }
}

const TX: u32 = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
const RX: u32 = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;

/// One sampler reading of power, SM clock and temperature.
pub fn sample(dev: &Device, power: Option<PowerSource>) -> Sample {
    let power_mw = match power {
        Some(PowerSource::Instant) => instant_power_mw(dev),
        Some(PowerSource::Usage) => dev.power_usage().ok(),
        None => None,
    };
    Sample {
        power_mw,
        sm_clock_mhz: dev.clock_info(Clock::SM).ok(),
        temp_c: dev.temperature(TemperatureSensor::Gpu).ok(),
    }
}

/// The energy and NVLink counters at a point's mark.
pub fn counters(dev: &Device, nvlink: &NvlinkScope) -> Counters {
    let (nvlink_tx_kib, nvlink_rx_kib) = match nvlink {
        NvlinkScope::Unsupported => (None, None),
        NvlinkScope::AllLinks => {
            let v = field_values(dev, &[(TX, ALL_LINKS), (RX, ALL_LINKS)]);
            (v[0], v[1])
        }
        NvlinkScope::Links(links) => {
            let tx: Vec<_> = links.iter().map(|&l| (TX, l)).collect();
            let rx: Vec<_> = links.iter().map(|&l| (RX, l)).collect();
            (sum(field_values(dev, &tx)), sum(field_values(dev, &rx)))
        }
    };
    Counters {
        energy_mj: dev.total_energy_consumption().ok(),
        nvlink_tx_kib,
        nvlink_rx_kib,
    }
}

/// The sum over links, or `None` if any link failed (a partial sum would understate traffic).
fn sum(values: Vec<Option<u64>>) -> Option<u64> {
    values
        .into_iter()
        .try_fold(0u64, |acc, v| acc.checked_add(v?))
}

/// `NVML_FI_DEV_POWER_INSTANT` (scope 0: the GPU), mW.
fn instant_power_mw(dev: &Device) -> Option<u32> {
    let v = field_values(dev, &[(NVML_FI_DEV_POWER_INSTANT, 0)])[0]?;
    u32::try_from(v).ok()
}

/// Reads `(field id, scope id)` pairs in one `nvmlDeviceGetFieldValues` call; an entry is `None`
/// where NVML refused that field. The ids used here are below 251, so they need none of the
/// renumbering nvml-wrapper applies for newer drivers.
fn field_values(dev: &Device, ids: &[(u32, u32)]) -> Vec<Option<u64>> {
    let missing = || vec![None; ids.len()];
    let Ok(get) = dev.nvml().lib().nvmlDeviceGetFieldValues.as_ref() else {
        return missing();
    };
    let Ok(count) = c_int::try_from(ids.len()) else {
        return missing();
    };
    let mut raw: Vec<nvmlFieldValue_t> = ids
        .iter()
        .map(|&(field, scope)| {
            // SAFETY: nvmlFieldValue_t is a C struct of integers and a union of numbers, for
            // which all-zero bytes are a valid value.
            let mut v: nvmlFieldValue_t = unsafe { std::mem::zeroed() };
            v.fieldId = field;
            v.scopeId = scope;
            v
        })
        .collect();
    // SAFETY: `get` is nvmlDeviceGetFieldValues of the library `dev` came from, which stays
    // loaded while `dev` borrows its Nvml; the handle is valid for that borrow; `raw` holds
    // `count` initialised entries, which NVML fills in place and does not keep.
    let rc = unsafe { get(dev.handle(), count, raw.as_mut_ptr()) };
    if rc != nvmlReturn_enum_NVML_SUCCESS {
        return missing();
    }
    raw.into_iter().map(whole_number).collect()
}

/// A field value as a non-negative integer, `None` where NVML reported an error.
fn whole_number(raw: nvmlFieldValue_t) -> Option<u64> {
    match FieldValueSample::try_from(raw).ok()?.value.ok()? {
        SampleValue::U32(x) => Some(u64::from(x)),
        SampleValue::U64(x) => Some(x),
        SampleValue::I64(x) => u64::try_from(x).ok(),
        // Truncation is intended: no field read here is fractional.
        SampleValue::F64(x) => (x.is_finite() && x >= 0.0).then_some(x as u64),
    }
}

/// Whether telemetry can run here, for `collbench backends`: what NVML sees, or why it cannot.
pub fn status(path: Option<&Path>) -> Result<String, String> {
    let nvml = open(path)?;
    let driver = nvml
        .sys_driver_version()
        .unwrap_or_else(|_| "unknown".into());
    let gpus = nvml.device_count().map_err(|e| reason(&e))?;
    Ok(format!("NVML sees {gpus} GPU(s), driver {driver}"))
}
