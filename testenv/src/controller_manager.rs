//! The pinned kube-controller-manager run against any API server, kubekit-fake above all:
//! a controller's tests then meet the real Deployment, ReplicaSet, StatefulSet, DaemonSet,
//! Job, CronJob and EndpointSlice controllers, and (with the fake's own turned off by
//! `FakeApiServer::set_own_garbage_collection(false)`) the real garbage collector and
//! namespace controller.
//!
//! Cost: its controllers' informers list and watch every resource they follow, and its
//! garbage collector acts once it has synced its view of every resource. The two tests of
//! `cargo test -p kubekit-fake --test controller_manager`, each starting a fake and a
//! kube-controller-manager, making workloads and deleting some, take 7.2 s in parallel
//! (2026-12-06). The binary is built with the control plane
//! (`scripts/build-control-plane.sh`, once per machine).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running kube-controller-manager, killed when dropped.
#[derive(Debug)]
pub struct ControllerManager {
    child: Child,
    log: PathBuf,
}

impl ControllerManager {
    /// Starts kube-controller-manager with its default controllers (leader election off)
    /// against the server of `kubeconfig`, in `dir` (its log, and a service-account key and
    /// root CA made there by openssl for the token and root-CA controllers).
    ///
    /// # Errors
    ///
    /// The binaries cannot be built, openssl fails, or the process does not start.
    pub fn start(kubeconfig: &Path, dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl").args(args).current_dir(dir).output();
            match out {
                Ok(o) if o.status.success() => Ok(()),
                Ok(o) => Err(format!(
                    "openssl {args:?}: {}",
                    String::from_utf8_lossy(&o.stderr)
                )),
                Err(e) => Err(format!("openssl {args:?}: {e}")),
            }
        };
        openssl(&["genrsa", "-out", "sa.key", "2048"])?;
        openssl(&[
            "req", "-x509", "-new", "-key", "sa.key", "-subj", "/CN=ca", "-days", "1", "-out",
            "ca.crt",
        ])?;
        let log = dir.join("kube-controller-manager.log");
        let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(crate::bin_dir()?.join("kube-controller-manager"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--bind-address", "127.0.0.1", "--secure-port", "0"])
            .args(["--leader-elect=false", "--v", "1"])
            .args(["--service-account-private-key-file", "sa.key"])
            .args(["--root-ca-file", "ca.crt"])
            .args(["--service-cluster-ip-range", "10.0.0.0/24"])
            .args(["--cluster-name", "kubekit-fake"])
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .map_err(|e| format!("start kube-controller-manager: {e}"))?;
        Ok(Self { child, log })
    }

    /// Its log as written so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The error lines of its log, but those it logs against the real kube-apiserver too:
    /// its consistency check's requeue of a key whose informer has not yet seen the
    /// controller's own write (`read version: N is not as new as written version: M`),
    /// and its note on an empty static manifest.
    pub fn errors(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.starts_with('E'))
            .filter(|l| !l.contains("is not as new as written version"))
            .filter(|l| !l.contains("The manifest file is empty"))
            .map(str::to_string)
            .collect()
    }
}

impl Drop for ControllerManager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
