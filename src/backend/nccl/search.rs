//! Where libnccl is looked for beyond the dynamic linker's own search: where pip puts it for
//! PyTorch users (`nvidia/nccl/lib/libnccl.so.2` of the wheels `nvidia-nccl-cu12`/`-cu13`,
//! which every CUDA build of PyTorch on PyPI depends on) under the site-packages of the
//! `python3` on PATH. Asked of that python3 itself, so virtual environments, conda, pyenv and
//! user installs all count, and bounded in time: a python3 that hangs is given up on.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The interpreter asked for its package folders.
pub const PYTHON: &str = "python3";
/// Prints every folder python3 imports from: `sys.path` (PYTHONPATH, virtual environments)
/// and the site folders, one per line.
const SITE_SCRIPT: &str = "import site, sys\n\
     dirs = list(sys.path) + list(getattr(site, 'getsitepackages', lambda: [])())\n\
     dirs.append(site.getusersitepackages())\n\
     print('\\n'.join(d for d in dirs if d))";
/// Where a pip-installed NCCL keeps its library, under a site folder.
pub const PIP_NCCL_LIB: &str = "nvidia/nccl/lib/libnccl.so.2";
/// Where it keeps its header, under a site folder.
pub const PIP_NCCL_HEADER: &str = "nvidia/nccl/include/nccl.h";
/// How long python3 may take to answer; a slow import of site is well under a second.
const PYTHON_HANG_LIMIT: Duration = Duration::from_secs(20);
/// At most this much of python3's answer is read (folders are short; a path list is small).
const ANSWER_LIMIT: u64 = 1 << 20;

/// The folders the `python3` on PATH imports from, in its order, without repeats; empty where
/// there is no python3, it fails, or it does not answer within [`PYTHON_HANG_LIMIT`].
pub fn python_site_dirs() -> Vec<PathBuf> {
    let mut cmd = Command::new(PYTHON);
    cmd.args(["-c", SITE_SCRIPT])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // A rank stopped while it searches leaves no python3 behind.
    crate::launch::local::die_with(&mut cmd, std::process::id() as libc::pid_t);
    let Ok(mut child) = cmd.spawn() else {
        return Vec::new();
    };
    let answer = read_bounded(&mut child);
    match answer {
        Some(text) => unique_dirs(&text),
        None => Vec::new(),
    }
}

/// python3's answer, or `None` when it failed or hung (then it is killed).
fn read_bounded(child: &mut std::process::Child) -> Option<String> {
    let deadline = Instant::now() + PYTHON_HANG_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut text = String::new();
    let out = child.stdout.take()?;
    out.take(ANSWER_LIMIT).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The absolute folders of `text`, one per line, first occurrence kept.
pub fn unique_dirs(text: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| l.starts_with('/')) {
        let dir = PathBuf::from(line);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// The pip-installed libnccl files under `sites` that exist, in the order of `sites`.
pub fn pip_libraries(sites: &[PathBuf]) -> Vec<PathBuf> {
    existing(sites, PIP_NCCL_LIB)
}

/// The pip-installed nccl.h files under `sites` that exist.
pub fn pip_headers(sites: &[PathBuf]) -> Vec<PathBuf> {
    existing(sites, PIP_NCCL_HEADER)
}

fn existing(sites: &[PathBuf], rel: &str) -> Vec<PathBuf> {
    sites
        .iter()
        .map(|s| s.join(rel))
        .filter(|p| p.is_file())
        .collect()
}

/// The files at `rel` (a wheel's library, such as [`PIP_NCCL_LIB`]) under `sites` that exist,
/// in the order of `sites`.
pub fn pip_files(sites: &[PathBuf], rel: &str) -> Vec<PathBuf> {
    existing(sites, rel)
}

/// What a failed search says it looked at: the site folders asked of python3, or that there
/// was none to ask.
pub fn describe_sites(sites: &[PathBuf]) -> String {
    describe_sites_for(sites, PIP_NCCL_LIB)
}

/// [`describe_sites`] for the wheel file at `rel`.
pub fn describe_sites_for(sites: &[PathBuf], rel: &str) -> String {
    if sites.is_empty() {
        return format!("no {PYTHON} on PATH answered with its site-packages");
    }
    let shown: Vec<String> = sites.iter().map(|s| s.display().to_string()).collect();
    format!("no {rel} under {}", shown.join(", "))
}

/// The site folder a pip-installed library path lies under (`<site>/nvidia/nccl/lib/x`).
pub fn site_of(lib: &Path) -> Option<PathBuf> {
    lib.ancestors().nth(4).map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_lines_keep_absolute_folders_once_in_order() {
        let text =
            "\n/usr/lib/python311.zip\n/a/site-packages\nrelative\n \n/a/site-packages\n/b\n";
        assert_eq!(
            unique_dirs(text),
            ["/usr/lib/python311.zip", "/a/site-packages", "/b"].map(PathBuf::from)
        );
        assert!(unique_dirs("").is_empty());
    }

    #[test]
    fn a_pip_library_is_found_under_a_site_folder_and_its_site_is_recovered() {
        let tmp = tempfile::tempdir().unwrap();
        let site = tmp.path().join("site-packages");
        let lib = site.join(PIP_NCCL_LIB);
        std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
        std::fs::write(&lib, b"").unwrap();
        let sites = vec![tmp.path().join("empty"), site.clone()];
        assert_eq!(pip_libraries(&sites), vec![lib.clone()]);
        assert!(pip_headers(&sites).is_empty());
        assert_eq!(site_of(&lib), Some(site));
        assert!(describe_sites(&sites).contains("empty"));
        assert!(describe_sites(&[]).contains("no python3"));
    }
}
