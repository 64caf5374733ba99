//! The smallest useful controller on the manager: a `Greeting` custom resource
//! (`examples.kubekit.dev/v1`) owns a ConfigMap holding its message, written with
//! server-side apply and applied again every 300 s.
//!
//! ```text
//! cargo run -p kubekit-examples --bin greeting-controller -- [--kubeconfig PATH] [--master URL]
//! kubectl apply -f - <<EOF
//! apiVersion: examples.kubekit.dev/v1
//! kind: Greeting
//! metadata: {name: hello}
//! spec: {message: world}
//! EOF
//! kubectl get configmap hello -o jsonpath='{.data.message}'
//! ```
//!
//! It installs its CustomResourceDefinition (server-side apply, so starting it again changes
//! nothing) and waits until the API server serves it, then runs until SIGINT or SIGTERM. Deleting a Greeting deletes its ConfigMap
//! through garbage collection (the ConfigMap has a controller reference to it).
//!
//! The guide's table of examples (docs/getting-started.md) counts its lines of logic
//! (rustfmt's lines less `use` lines, comments and blank lines): the `#[derive]`d type,
//! the constant, `reconcile` and `main`.

use std::sync::Arc;
use std::time::Duration;

use kube::CustomResource;
use kube::core::CustomResourceExt;
use kubekit::applyconfigurations::api::core::v1::ConfigMap as ConfigMapApply;
use kubekit::k8s_openapi::api::core::v1::ConfigMap;
use kubekit::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The field manager of every apply, and the controller's name.
const MANAGER: &str = "greeting-controller";

/// A ConfigMap whose `message` key holds `message`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "examples.kubekit.dev",
    version = "v1",
    kind = "Greeting",
    namespaced
)]
pub struct GreetingSpec {
    /// What the ConfigMap's `message` key holds.
    pub message: String,
}

/// Applies the Greeting's ConfigMap (its name, owned by it) and comes back in 300 s.
async fn reconcile(
    hello: Arc<Greeting>,
    cs: Arc<Clientset>,
) -> Result<ReconcileAction, ReconcileError> {
    let ns = hello.namespace().unwrap_or_default();
    let config =
        ConfigMapApply::new(hello.name_any(), &ns).data([("message", hello.spec.message.clone())]);
    let config_maps = cs.core_v1().config_maps(&ns);
    config_maps.apply_owned(&*hello, config, MANAGER).await?;
    Ok(ReconcileAction::RequeueAfter(Duration::from_secs(300)))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = kubekit_examples::Flags::parse()?.config().await?;
    let mut mgr = Manager::builder(config).build()?;
    let cs = Arc::new(mgr.clientset().clone());
    cs.install_crd(Greeting::crd(), MANAGER).await?;
    mgr.controller::<Greeting>(MANAGER)
        .owns::<ConfigMap>()
        .build(reconcile, cs)?;
    mgr.start(shutdown_signal()).await?;
    Ok(())
}
