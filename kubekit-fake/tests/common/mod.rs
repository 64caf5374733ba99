//! Helpers shared by the test binaries.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs the repository's kubectl (built with the control plane,
/// `scripts/build-control-plane.sh`) against `kubeconfig` with `args` and `stdin`.
pub fn kubectl_output(kubeconfig: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(bin_dir().join("kubectl"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubectl");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), stdin.as_bytes())
        .expect("write");
    child.wait_with_output().expect("kubectl")
}

/// The directory of the pinned control-plane binaries, built if need be
/// (`scripts/build-control-plane.sh` prints it last).
pub fn bin_dir() -> std::path::PathBuf {
    let root = testenv::repo_root();
    let bin = Command::new("bash")
        .arg(root.join("scripts/build-control-plane.sh"))
        .output()
        .expect("run build-control-plane.sh");
    assert!(
        bin.status.success(),
        "{}",
        String::from_utf8_lossy(&bin.stderr)
    );
    let dir = String::from_utf8_lossy(&bin.stdout);
    std::path::PathBuf::from(dir.lines().last().unwrap_or_default())
}
