//! `#[derive(ApplyConfiguration)]` on custom resources as kube's users declare them.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DeploymentStatus;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use kubekit_applyconfigurations::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use kubekit_applyconfigurations::{ApplyConfiguration, Configurable, configuration_of};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A database.
#[derive(
    CustomResource, ApplyConfiguration, Serialize, Deserialize, Clone, Debug, Default, JsonSchema,
)]
#[kube(
    group = "db.example.com",
    version = "v1alpha1",
    kind = "Database",
    namespaced,
    status = "DatabaseStatus",
    printcolumn = r#"{"name":"Size","type":"string","jsonPath":".spec.storageSize"}"#,
    annotation("example.com/owner", "team-a"),
    shortname = "db"
)]
#[apply(crate = "kubekit_applyconfigurations")]
#[serde(rename_all = "camelCase")]
pub struct DatabaseSpec {
    /// The engine's version.
    pub engine_version: String,
    /// How many replicas.
    pub replicas: i32,
    /// The volume's size.
    pub storage_size: Option<Quantity>,
    /// Per-user settings.
    pub users: Vec<User>,
    /// Extra parameters.
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
    /// The pods' template: a k8s-openapi type, configured by its generated configuration.
    pub template: Option<k8s_openapi::api::core::v1::PodTemplateSpec>,
    /// The tier.
    pub tier: Tier,
    /// Named otherwise in JSON.
    #[serde(rename = "backupURL")]
    pub backup_url: Option<String>,
    /// Never sent.
    #[serde(skip)]
    pub cache: Option<String>,
    /// Its fields are the spec's own.
    #[serde(flatten)]
    pub placement: Placement,
}

/// Where the database runs: flattened into the spec.
#[derive(ApplyConfiguration, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[apply(crate = "kubekit_applyconfigurations")]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// The zone.
    pub zone_name: Option<String>,
}

/// A user of the database.
#[derive(ApplyConfiguration, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[apply(crate = "kubekit_applyconfigurations")]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// Its name.
    pub user_name: String,
    /// Whether it may write.
    pub read_write: bool,
}

/// A service tier: applied whole.
#[derive(
    ApplyConfiguration, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
)]
#[apply(crate = "kubekit_applyconfigurations")]
pub enum Tier {
    /// The default.
    #[default]
    Standard,
    /// More of everything.
    Premium,
}

/// What the controller observed.
#[derive(ApplyConfiguration, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[apply(crate = "kubekit_applyconfigurations")]
#[serde(rename_all = "camelCase")]
pub struct DatabaseStatus {
    /// The status of the Deployment it runs in.
    pub deployment: Option<DeploymentStatus>,
    /// Ready replicas.
    pub ready_replicas: Option<i32>,
}

/// A cluster-scoped kind.
#[derive(CustomResource, ApplyConfiguration, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Region",
    root = "RegionObject"
)]
#[apply(crate = "kubekit_applyconfigurations")]
pub struct RegionSpec {
    /// Its zones.
    pub zones: Vec<String>,
}

#[test]
fn a_custom_resource_configuration_sends_only_the_fields_it_sets_under_their_json_names() {
    let config = DatabaseApply::new("orders", "shop").spec(
        DatabaseSpecApply::default()
            .engine_version("16.2")
            .storage_size(Quantity("10Gi".into()))
            .users([UserApply::default().user_name("app")])
            .users([UserApply::default().user_name("admin").read_write(true)])
            .parameters([("max_connections", "200".to_string())])
            .template(
                PodTemplateSpec::default().spec(
                    PodSpec::default()
                        .containers([Container::default().name("db").image("postgres:16")]),
                ),
            )
            .tier(Tier::Premium)
            .backup_url("s3://backups")
            .placement(PlacementApply::default().zone_name("eu-1")),
    );
    assert_eq!(
        serde_json::to_value(&config).unwrap(),
        json!({
            "apiVersion": "db.example.com/v1alpha1",
            "kind": "Database",
            "metadata": { "name": "orders", "namespace": "shop" },
            "spec": {
                "engineVersion": "16.2",
                "storageSize": "10Gi",
                "users": [{ "userName": "app" }, { "userName": "admin", "readWrite": true }],
                "parameters": { "max_connections": "200" },
                "template": { "spec": { "containers": [{ "name": "db", "image": "postgres:16" }] } },
                "tier": "Premium",
                "backupURL": "s3://backups",
                "zoneName": "eu-1"
            }
        })
    );
}

#[test]
fn a_custom_resource_configuration_is_an_apply_configuration_of_its_kind() {
    assert_eq!(DatabaseApply::API_VERSION, "db.example.com/v1alpha1");
    assert_eq!(DatabaseApply::KIND, "Database");
    const { assert!(DatabaseApply::NAMESPACED) };
    let config = DatabaseApply::new("orders", "shop").labels([("tier", "gold".to_string())]);
    assert_eq!(config.name(), Some("orders"));
    assert_eq!(config.namespace(), Some("shop"));
    assert_eq!(
        config
            .metadata
            .as_ref()
            .and_then(|m| m.labels.as_ref())
            .map(|l| l["tier"].as_str()),
        Some("gold")
    );
    // The kind's own type names its configuration.
    let _: <Database as Configurable>::Configuration = config;
}

#[test]
fn a_cluster_scoped_kind_is_made_from_a_name_alone_under_its_root_name() {
    const { assert!(!RegionObjectApply::NAMESPACED) };
    let config =
        RegionObjectApply::new("emea").spec(RegionSpecApply::default().zones(["a".to_string()]));
    assert_eq!(
        serde_json::to_value(&config).unwrap(),
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Region",
            "metadata": { "name": "emea" },
            "spec": { "zones": ["a"] }
        })
    );
}

#[test]
fn a_status_copied_from_an_observed_object_sets_what_it_had_and_nothing_else() {
    let observed = DatabaseStatus {
        deployment: Some(DeploymentStatus {
            replicas: Some(3),
            ready_replicas: Some(3),
            ..Default::default()
        }),
        ready_replicas: None,
    };
    let status = configuration_of(&observed).unwrap();
    let config = DatabaseApply::new("orders", "shop").status(status);
    assert_eq!(
        serde_json::to_value(&config).unwrap(),
        json!({
            "apiVersion": "db.example.com/v1alpha1",
            "kind": "Database",
            "metadata": { "name": "orders", "namespace": "shop" },
            "status": { "deployment": { "replicas": 3, "readyReplicas": 3 } }
        })
    );
}

#[test]
fn a_configuration_reads_back_what_it_wrote() {
    let config = DatabaseApply::new("orders", "shop").spec(
        DatabaseSpecApply::default()
            .replicas(2)
            .users([UserApply::default().user_name("app")]),
    );
    let json = serde_json::to_string(&config).unwrap();
    assert_eq!(
        serde_json::from_str::<DatabaseApply>(&json).unwrap(),
        config
    );
}
