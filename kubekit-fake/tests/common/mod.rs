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

/// The directory of the pinned control-plane binaries, built if need be.
pub fn bin_dir() -> std::path::PathBuf {
    testenv::bin_dir().unwrap_or_else(|e| panic!("the control-plane binaries: {e}"))
}
