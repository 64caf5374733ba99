//! A controller of a custom resource on the manager: a `ConfigMapGenerator`
//! (`examples.kubekit.dev/v1`) asks for a ConfigMap with its data; the controller applies
//! it (server-side apply, owned by the generator), reports a `Ready` condition in the
//! generator's status, and, through a finalizer, deletes the ConfigMap before the
//! generator goes.
//!
//! ```text
//! cargo run -p kubekit-examples --bin config-map-generator -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS]
//! ```
//!
//! It installs its CustomResourceDefinition first (server-side apply, so running it again
//! changes nothing), then runs until Ctrl-C. Try it with
//!
//! ```text
//! kubectl apply -f - <<EOF
//! apiVersion: examples.kubekit.dev/v1
//! kind: ConfigMapGenerator
//! metadata: {name: greeting}
//! spec: {data: {hello: world}}
//! EOF
//! kubectl get configmapgenerators greeting -o jsonpath='{.status.conditions}'
//! kubectl get configmap greeting -o jsonpath='{.data}'
//! kubectl delete configmapgenerator greeting   # the ConfigMap goes first
//! ```
//!
//! Garbage collection would delete an owned ConfigMap too, after its owner is gone and
//! only where kube-controller-manager runs; the finalizer shows the pattern for what
//! garbage collection cannot reach (objects in other namespaces, things outside the
//! cluster): the generator stays, marked for deletion, until its cleanup succeeded, and a
//! controller restarted in the middle of a cleanup runs it again.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::CustomResource;
use kube::core::CustomResourceExt;
use kubekit::applyconfigurations::api::core::v1::ConfigMap as ConfigMapApply;
use kubekit::applyconfigurations::{ApplyConfiguration, configuration_of};
use kubekit::k8s_openapi::api::core::v1::ConfigMap;
use kubekit::prelude::*;
use kubekit::rest::Error;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The field manager of every apply and the controller's name.
const CONTROLLER: &str = "config-map-generator";
/// The finalizer that keeps a generator until its ConfigMap is deleted.
const FINALIZER: &str = "examples.kubekit.dev/config-map";
/// The condition type the status reports.
const READY: &str = "Ready";

/// The ConfigMap a generator asks for.
#[derive(
    CustomResource,
    ApplyConfiguration,
    Serialize,
    Deserialize,
    Clone,
    Debug,
    Default,
    PartialEq,
    JsonSchema,
)]
#[kube(
    group = "examples.kubekit.dev",
    version = "v1",
    kind = "ConfigMapGenerator",
    doc = "A ConfigMap of the given data, kept in line with it by the config-map-generator example.",
    namespaced,
    status = "ConfigMapGeneratorStatus",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#
)]
pub struct ConfigMapGeneratorSpec {
    /// The name of the ConfigMap; the generator's own name when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The ConfigMap's data.
    #[serde(default)]
    pub data: BTreeMap<String, String>,
}

/// What the controller observed.
#[derive(
    ApplyConfiguration, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
)]
pub struct ConfigMapGeneratorStatus {
    /// `Ready`: whether the ConfigMap holds the generator's data.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

/// The name of the ConfigMap `generator` asks for.
fn config_map_name(generator: &ConfigMapGenerator) -> String {
    match generator.spec.name.as_str() {
        "" => generator.name_any(),
        name => name.to_string(),
    }
}

/// Applies the ConfigMap and reports it in the `Ready` condition.
async fn apply(
    generator: &ConfigMapGenerator,
    clientset: &Clientset,
) -> Result<ReconcileAction, Error> {
    let namespace = generator.namespace().unwrap_or_default();
    let name = config_map_name(generator);
    let desired = ConfigMapApply::new(&name, &namespace).data(generator.spec.data.clone());
    let config_maps = clientset.core_v1().config_maps(&namespace);
    let applied = config_maps
        .apply_owned(generator, desired, CONTROLLER)
        .await;
    let ready = condition(READY).observed_generation(generator.metadata.generation);
    let ready = match &applied {
        Ok(_) => ready
            .status(true)
            .reason("Applied")
            .message(format!("ConfigMap {name} holds the data")),
        Err(e) => ready
            .status(false)
            .reason("ApplyFailed")
            .message(e.to_string()),
    };
    let mut conditions = generator.status.clone().unwrap_or_default().conditions;
    if set_status_condition(&mut conditions, ready) {
        // Only the condition this controller sets: `conditions` is a map by `type`, the
        // others stay their managers'.
        let ours = conditions.iter().filter(|c| c.type_ == READY);
        let ours: Vec<_> = ours
            .map(configuration_of)
            .collect::<Result<_, _>>()
            .map_err(|e| {
                Error::Request(format!(
                    "the Ready condition as an apply configuration: {e}"
                ))
            })?;
        let status = ConfigMapGeneratorStatusApply::default().conditions(ours);
        let config = ConfigMapGeneratorApply::default().status(status);
        let generators = clientset.for_object(generator);
        generators
            .apply_status_of(generator, config, CONTROLLER)
            .await?;
    }
    applied.map(|_| ReconcileAction::Done)
}

/// Deletes the ConfigMap (done already when it is gone).
async fn cleanup(
    generator: &ConfigMapGenerator,
    clientset: &Clientset,
) -> Result<ReconcileAction, Error> {
    let namespace = generator.namespace().unwrap_or_default();
    let config_maps = clientset.core_v1().config_maps(&namespace);
    match config_maps
        .delete(&config_map_name(generator), &DeleteOptions::default())
        .await
    {
        Err(e) if !e.is_not_found() => Err(e),
        _ => Ok(ReconcileAction::Done),
    }
}

async fn reconcile(
    generator: Arc<ConfigMapGenerator>,
    clientset: Arc<Clientset>,
) -> Result<ReconcileAction, FinalizerError<Error>> {
    let clientset: &Clientset = &clientset;
    finalizer(clientset, FINALIZER, generator, |event| async move {
        match event {
            FinalizerEvent::Apply(generator) => apply(&generator, clientset).await,
            FinalizerEvent::Cleanup(generator) => cleanup(&generator, clientset).await,
        }
    })
    .await
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let config = flags.config().await?;
    let admin = Clientset::new(&config)?;
    let crd = admin
        .install_crd(ConfigMapGenerator::crd(), CONTROLLER)
        .await?;
    let crd_name = crd.name_any();
    println!("installed {crd_name}");

    let mut mgr = Manager::builder(config)
        .namespace(flags.namespace.as_deref().unwrap_or_default())
        .build()?;
    let clientset = Arc::new(mgr.clientset().clone());
    mgr.controller::<ConfigMapGenerator>(CONTROLLER)
        .owns::<ConfigMap>()
        .with_event_filter(Predicate::resource_version_changed())
        .build(reconcile, clientset)?;
    mgr.start(shutdown_signal()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_config_map_is_named_by_the_spec_or_after_the_generator() {
        let mut generator = ConfigMapGenerator::new("greeting", ConfigMapGeneratorSpec::default());
        assert_eq!(config_map_name(&generator), "greeting");
        generator.spec.name = "settings".into();
        assert_eq!(config_map_name(&generator), "settings");
    }

    #[test]
    fn the_crd_serves_the_status_subresource_and_merges_conditions_by_type() {
        let crd = serde_json::to_value(ConfigMapGenerator::crd()).unwrap();
        let version = &crd["spec"]["versions"][0];
        assert!(version["subresources"]["status"].is_object(), "{version}");
        let conditions = &version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
            ["conditions"];
        assert_eq!(conditions["x-kubernetes-list-type"], "map", "{conditions}");
        assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
    }
}
