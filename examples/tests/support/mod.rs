//! What the examples' end-to-end tests share: an example's process and kubectl.

use std::process::{Child, Command, Stdio};

use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::clientset::{Clientset, ResourceClient};
use kubekit::rest::RestConfig;
use testenv::ControlPlane;

/// An example's process against `cp`'s kubeconfig, killed when dropped.
pub struct Example(Child);

impl Example {
    /// Starts the example binary at `path` with `--kubeconfig` and `args`, its stdout
    /// dropped.
    pub fn start(path: &str, cp: &ControlPlane, args: &[&str]) -> Example {
        let child = Command::new(path)
            .arg("--kubeconfig")
            .arg(cp.kubeconfig_path())
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {path}: {e}"));
        Example(child)
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `kubectl` with `args`, `stdin` piped in; its stdout, after asserting it succeeded.
pub fn kubectl(cp: &ControlPlane, args: &[&str], stdin: &str) -> String {
    let out = cp.kubectl_with_stdin(args, stdin);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl {args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits (up to 60 s) for the CustomResourceDefinition `name`, which an example installs
/// when it starts, to exist and be established.
pub async fn wait_for_crd(cp: &ControlPlane, name: &str) {
    let crd = format!("crd/{name}");
    testenv::eventually(60, "the CRD created", || async {
        let out = cp
            .kubectl()
            .args(["get", &crd, "-o", "name"])
            .output()
            .ok()?;
        out.status.success().then_some(())
    })
    .await;
    kubectl(cp, &["wait", "--for=condition=Established", &crd], "");
}

/// A new namespace named after `prefix`, and a client of its ConfigMaps (what the examples
/// write).
pub async fn namespace_config_maps(
    cp: &ControlPlane,
    prefix: &str,
) -> (String, ResourceClient<ConfigMap>) {
    let ns = cp.create_namespace(&cp.client().await, prefix).await;
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .unwrap();
    let config_maps = Clientset::new(&config).unwrap().core_v1().config_maps(&ns);
    (ns, config_maps)
}
