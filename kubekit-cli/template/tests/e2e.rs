//! The controller against kubekit's local control plane (a real etcd and kube-apiserver,
//! built and started by `testenv`; the first run builds them, about 10 minutes on 2
//! cores).

mod common;

use kubekit::rest::RestConfig;

#[tokio::test]
async fn a_sample_gets_its_config_map_ready_condition_and_cleanup_on_a_real_server() {
    let cp = testenv::control_plane();
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .expect("the config");
    let ns = format!("__NAME__-e2e-{}", std::process::id());
    common::scenario(config, &ns).await;
}
