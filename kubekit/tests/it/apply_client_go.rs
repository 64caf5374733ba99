//! kubekit's typed apply against client-go's `applyconfigurations`, on the real server.
//!
//! The Go program in `testenv/go-apply` (client-go at the pinned server's version) builds
//! each case's apply configurations with client-go's builders and applies them in one
//! namespace; this file builds the same cases with kubekit's and applies them in another.
//! For every case: each request body kubekit sends equals client-go's as JSON; the object
//! the last apply returns is the same (once what the server makes unique — uid,
//! resourceVersion, timestamps, allocated cluster IPs — and the namespace are set aside),
//! `managedFields` included; and kubekit's `extract_from` gives, from client-go's stored
//! object and from its own, what client-go's `Extract<Kind>From` gives for each manager
//! and subresource. The cases cover every field family: associative lists with one key
//! and with several, sets, atomic lists, granular and atomic maps, `IntOrString`,
//! `Quantity`, `RawExtension`, `Time` and `MicroTime`, embedded objects, atomic list items,
//! two managers sharing a list, map or set, a reapply that drops fields, and status.
//! What the server's controllers write on their own is set aside: other managers'
//! `managedFields` entries, and the status where a case applies none. No case has owner
//! references: the garbage collector removes those whose owner does not exist.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubekit::applyconfigurations::api::admissionregistration::v1 as admissionregistration;
use kubekit::applyconfigurations::api::apps::v1 as apps;
use kubekit::applyconfigurations::api::autoscaling::v2 as autoscaling;
use kubekit::applyconfigurations::api::batch::v1 as batch;
use kubekit::applyconfigurations::api::coordination::v1 as coordination;
use kubekit::applyconfigurations::api::core::v1 as core;
use kubekit::applyconfigurations::api::discovery::v1 as discovery;
use kubekit::applyconfigurations::api::events::v1 as events;
use kubekit::applyconfigurations::api::networking::v1 as networking;
use kubekit::applyconfigurations::api::node::v1 as node;
use kubekit::applyconfigurations::api::policy::v1 as policy;
use kubekit::applyconfigurations::api::rbac::v1 as rbac;
use kubekit::applyconfigurations::api::scheduling::v1 as scheduling;
use kubekit::applyconfigurations::api::storage::v1 as storage;
use kubekit::applyconfigurations::apimachinery::pkg::apis::meta::v1 as meta;
use kubekit::applyconfigurations::{ApplyConfiguration, Configurable, extract_from};
use kubekit::clientset::{KnownScope, PatchOptions, ResourceClient};
use kubekit::rest::RestClient;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::common::{admin_client, namespace};

/// One apply of a case: by `manager`, to `subresource` (`""` or `"status"`).
struct Step<C> {
    manager: &'static str,
    subresource: &'static str,
    config: C,
}

fn spec<C>(manager: &'static str, config: C) -> Step<C> {
    Step {
        manager,
        subresource: "",
        config,
    }
}

fn status<C>(manager: &'static str, config: C) -> Step<C> {
    Step {
        manager,
        subresource: "status",
        config,
    }
}

/// What the Go program reports of one case.
#[derive(Deserialize)]
struct GoReport {
    name: String,
    bodies: Vec<Value>,
    stored: Value,
    extracted: Vec<GoExtract>,
}

/// What client-go's `Extract<Kind>From` gave: a configuration, or why it failed.
#[derive(Deserialize)]
struct GoExtract {
    manager: String,
    subresource: String,
    #[serde(default)]
    config: Value,
    #[serde(default)]
    error: Option<String>,
}

/// The two namespaces, and the client kubekit applies with.
struct Sides {
    rest: RestClient,
    go_ns: String,
    kubekit_ns: String,
}

/// The differences a case finds, once compared.
type Check<'a> = Pin<Box<dyn Future<Output = Vec<String>> + 'a>>;

/// How a case compares itself with the Go program's report of it.
type Compare = Box<dyn for<'a> Fn(&'a Sides, &'a GoReport) -> Check<'a>>;

/// A case: its name and its comparison.
struct Case {
    name: &'static str,
    compare: Compare,
}

/// A kind the cases apply: a k8s-openapi type with its generated configuration.
trait Kind:
    kube::Resource<DynamicType = (), Scope: KnownScope>
    + Configurable<Configuration: ApplyConfiguration>
    + serde::Serialize
    + DeserializeOwned
    + Clone
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Kind for K where
    K: kube::Resource<DynamicType = (), Scope: KnownScope>
        + Configurable<Configuration: ApplyConfiguration>
        + serde::Serialize
        + DeserializeOwned
        + Clone
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// The case `name` applying the steps `build(namespace)` gives to objects of kind `K`.
fn case<K: Kind>(name: &'static str, build: fn(&str) -> Vec<Step<K::Configuration>>) -> Case {
    Case {
        name,
        compare: Box::new(move |sides, go| Box::pin(compare::<K>(sides, go, build))),
    }
}

/// The differences between kubekit's run of a case and client-go's, as messages.
async fn compare<K: Kind>(
    sides: &Sides,
    go: &GoReport,
    build: fn(&str) -> Vec<Step<K::Configuration>>,
) -> Vec<String> {
    let mut differences = Vec::new();
    // The bodies, built for the Go side's namespace.
    let bodies: Vec<Value> = build(&sides.go_ns)
        .iter()
        .map(|s| serde_json::to_value(&s.config).expect("a configuration serializes"))
        .collect();
    if bodies.len() != go.bodies.len() {
        return vec![format!(
            "{} steps here, {} in client-go's run",
            bodies.len(),
            go.bodies.len()
        )];
    }
    for (i, (kubekit, client_go)) in bodies.iter().zip(&go.bodies).enumerate() {
        differences.extend(difference(format!("request body {i}"), kubekit, client_go));
    }
    // The same steps applied in kubekit's namespace.
    let client = ResourceClient::<K>::new(sides.rest.clone(), &sides.kubekit_ns);
    let mut stored = None;
    for s in build(&sides.kubekit_ns) {
        let opts = PatchOptions::apply(s.manager).force();
        let applied = match s.subresource {
            "" => client.apply(&s.config, &opts).await,
            _ => client.apply_status(&s.config, &opts).await,
        };
        match applied {
            Ok(object) => stored = Some(object),
            Err(e) => return vec![format!("kubekit's apply by {} failed: {e}", s.manager)],
        }
    }
    let Some(stored) = stored else {
        return vec!["no steps".into()];
    };
    let go_stored: K = match serde_json::from_value(go.stored.clone()) {
        Ok(object) => object,
        Err(e) => return vec![format!("client-go's stored object does not decode: {e}")],
    };
    let managers: Vec<&str> = go.extracted.iter().map(|e| e.manager.as_str()).collect();
    let status = go.extracted.iter().any(|e| e.subresource == "status");
    let ours = comparable(&stored, &sides.kubekit_ns, &sides.go_ns, &managers, status);
    let theirs = comparable(&go_stored, &sides.go_ns, &sides.go_ns, &managers, status);
    differences.extend(difference("the stored object".into(), &ours, &theirs));
    // Extract, from both stored objects, what client-go extracted from its own.
    for want in &go.extracted {
        let from =
            |object: &K, ns: &str| match extract_from(object, &want.manager, &want.subresource) {
                Ok(config) => renamed(
                    &serde_json::to_value(config).expect("a configuration serializes"),
                    ns,
                    &sides.go_ns,
                ),
                Err(e) => Value::String(format!("extract failed: {e}")),
            };
        let what = format!("{}'s extract ({:?})", want.manager, want.subresource);
        // client-go's fails where the object lacks a field the manager owns (a Secret's
        // `stringData`, which the server stores as `data`); kubekit's gives what the
        // manager owns that the object has, here only what identifies the object.
        let expected = match &want.error {
            None => want.config.clone(),
            Some(_) => identity::<K::Configuration>(&go.stored),
        };
        for (whose, object, ns) in [
            ("client-go's", &go_stored, &sides.go_ns),
            ("kubekit's", &stored, &sides.kubekit_ns),
        ] {
            let what = format!("{what} from {whose} object");
            differences.extend(difference(what, &from(object, ns), &expected));
        }
    }
    differences
}

/// The configuration of `C` that only identifies the object `stored`.
fn identity<C: ApplyConfiguration>(stored: &Value) -> Value {
    let mut meta = serde_json::Map::new();
    for key in ["name", "namespace"] {
        if let Some(v) = stored["metadata"].get(key) {
            meta.insert(key.into(), v.clone());
        }
    }
    serde_json::json!({ "apiVersion": C::API_VERSION, "kind": C::KIND, "metadata": meta })
}

/// Says how `kubekit` and `client_go` differ, if they do.
fn difference(what: String, kubekit: &Value, client_go: &Value) -> Option<String> {
    (kubekit != client_go)
        .then(|| format!("{what}:\n  kubekit:   {kubekit}\n  client-go: {client_go}"))
}

/// `value` with the namespace `from` renamed `to` wherever it appears (cluster-scoped
/// objects carry it in their names).
fn renamed(value: &Value, from: &str, to: &str) -> Value {
    let text = value.to_string().replace(from, to);
    serde_json::from_str(&text).expect("renaming keeps JSON")
}

/// The object as both sides can compare it: as k8s-openapi reads it, in the namespace
/// `to`, without what the server makes unique to each object, nor the `managedFields`
/// entries of other managers than the case's `managers`, nor the `status` unless the case
/// applied one (the server's own controllers, such as the admission policies' type checker
/// or the PersistentVolume binder, may or may not have written it by the last step).
fn comparable<K: serde::Serialize>(
    object: &K,
    ns: &str,
    to: &str,
    managers: &[&str],
    status: bool,
) -> Value {
    let value = serde_json::to_value(object).expect("an object serializes");
    let uid = value["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut value = renamed(&value, ns, to);
    if !uid.is_empty() {
        value = renamed(&value, &uid, "<uid>");
    }
    if let Some(meta) = value["metadata"].as_object_mut() {
        for unique in ["resourceVersion", "creationTimestamp"] {
            meta.remove(unique);
        }
        if let Some(entries) = meta.get_mut("managedFields").and_then(Value::as_array_mut) {
            entries.retain(|e| managers.contains(&e["manager"].as_str().unwrap_or_default()));
            for entry in entries.iter_mut().filter_map(Value::as_object_mut) {
                entry.remove("time");
            }
        }
    }
    if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
        for allocated in ["clusterIP", "clusterIPs"] {
            spec.remove(allocated);
        }
    }
    if !status && let Some(fields) = value.as_object_mut() {
        fields.remove("status");
    }
    value
}

/// Builds the Go program and runs it against the shared control plane in `ns`.
async fn client_go_reports(ns: &str) -> Vec<GoReport> {
    let cp = testenv::control_plane();
    let source = testenv::repo_root().join("testenv/go-apply");
    let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("go-apply");
    let built = tokio::process::Command::new("go")
        .args(["build", "-trimpath", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(&source)
        .output()
        .await
        .expect("run `go build` (Go is needed to build the client-go side)");
    assert!(
        built.status.success(),
        "go build in {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = tokio::process::Command::new(&binary)
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .args(["--namespace", ns])
        .output()
        .await
        .expect("run the client-go side");
    assert!(
        ran.status.success(),
        "the client-go side failed:\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    serde_json::from_slice(&ran.stdout).expect("the client-go side's report")
}

#[tokio::test]
async fn typed_apply_sends_stores_and_extracts_what_client_go_does() {
    let go_ns = namespace("apply-go").await;
    let kubekit_ns = namespace("apply-kubekit").await;
    let rest = admin_client().await;
    // Pods need their namespace's default ServiceAccount, which a controller creates.
    for ns in [&go_ns, &kubekit_ns] {
        let accounts =
            ResourceClient::<k8s_openapi::api::core::v1::ServiceAccount>::new(rest.clone(), ns);
        testenv::eventually(30, "the default ServiceAccount", || async {
            accounts
                .get_opt("default", &Default::default())
                .await
                .ok()
                .flatten()
        })
        .await;
    }
    let reports = client_go_reports(&go_ns).await;
    let sides = Sides {
        rest,
        go_ns,
        kubekit_ns,
    };
    let cases = cases();
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let go_names: Vec<&str> = reports.iter().map(|r| r.name.as_str()).collect();
    let names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    assert_eq!(names, go_names, "the two sides' cases");
    let mut failures = Vec::new();
    for (case, report) in cases.iter().zip(&reports) {
        for difference in (case.compare)(&sides, report).await {
            failures.push(format!("{}: {difference}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// The cases, in the Go program's order (testenv/go-apply/cases.go), built the same way.

fn strings<const N: usize>(items: [&str; N]) -> [String; N] {
    items.map(String::from)
}

fn map<const N: usize>(entries: [(&'static str, &str); N]) -> [(&'static str, String); N] {
    entries.map(|(k, v)| (k, v.to_string()))
}

fn quantities<const N: usize>(entries: [(&'static str, &str); N]) -> [(&'static str, Quantity); N] {
    entries.map(|(k, v)| (k, Quantity(v.to_string())))
}

fn time() -> Time {
    Time("2026-11-30T12:00:00Z".parse().expect("a timestamp"))
}

fn micro_time() -> MicroTime {
    MicroTime("2026-11-30T12:00:00.123456Z".parse().expect("a timestamp"))
}

/// A container `name` with an image nobody pulls.
fn container(name: &str) -> core::Container {
    core::Container::default()
        .name(name)
        .image(format!("kubekit.invalid/{name}"))
}

/// A pod spec of one container that mounts no service account token.
fn pod_spec(name: &str) -> core::PodSpec {
    core::PodSpec::default()
        .automount_service_account_token(false)
        .containers([container(name)])
}

/// A pod template labelled `app=<name>` running `pod_spec(name)`.
fn template(name: &str) -> core::PodTemplateSpec {
    core::PodTemplateSpec::default()
        .metadata(meta::ObjectMeta::default().labels([("app", name.to_string())]))
        .spec(pod_spec(name))
}

/// Selects `app=<name>`.
fn selector(name: &str) -> meta::LabelSelector {
    meta::LabelSelector::default().match_labels([("app", name.to_string())])
}

/// `config` with `change` made to its metadata.
fn with_meta<C: ApplyConfiguration>(
    mut config: C,
    change: impl FnOnce(meta::ObjectMeta) -> meta::ObjectMeta,
) -> C {
    let meta = std::mem::take(config.metadata_mut());
    *config.metadata_mut() = change(meta);
    config
}

fn cases() -> Vec<Case> {
    use k8s_openapi::api::admissionregistration::v1 as admissionregistration_v1;
    use k8s_openapi::api::apps::v1 as apps_v1;
    use k8s_openapi::api::autoscaling::v2 as autoscaling_v2;
    use k8s_openapi::api::batch::v1 as batch_v1;
    use k8s_openapi::api::coordination::v1 as coordination_v1;
    use k8s_openapi::api::core::v1 as core_v1;
    use k8s_openapi::api::discovery::v1 as discovery_v1;
    use k8s_openapi::api::events::v1 as events_v1;
    use k8s_openapi::api::networking::v1 as networking_v1;
    use k8s_openapi::api::node::v1 as node_v1;
    use k8s_openapi::api::policy::v1 as policy_v1;
    use k8s_openapi::api::rbac::v1 as rbac_v1;
    use k8s_openapi::api::scheduling::v1 as scheduling_v1;
    use k8s_openapi::api::storage::v1 as storage_v1;

    vec![
        case::<core_v1::ConfigMap>("configmap-maps", |ns| {
            vec![spec(
                "alice",
                core::ConfigMap::new("settings", ns)
                    .labels(map([("app", "web"), ("tier", "front")]))
                    .annotations(map([("kubekit.dev/note", "compared")]))
                    .data(map([("mode", "fast"), ("level", "3")]))
                    .binary_data([("blob", ByteString(vec![0, 1, 2, 255]))])
                    .immutable(false),
            )]
        }),
        case::<core_v1::ConfigMap>("configmap-two-managers", |ns| {
            vec![
                spec(
                    "alice",
                    core::ConfigMap::new("shared", ns).data(map([("a", "1"), ("b", "2")])),
                ),
                spec(
                    "bob",
                    core::ConfigMap::new("shared", ns).data(map([("b", "20"), ("c", "3")])),
                ),
            ]
        }),
        case::<core_v1::ConfigMap>("configmap-reapply-drops-fields", |ns| {
            vec![
                spec(
                    "alice",
                    core::ConfigMap::new("shrinking", ns)
                        .labels(map([("gone", "soon")]))
                        .data(map([("a", "1"), ("b", "2")])),
                ),
                spec(
                    "alice",
                    core::ConfigMap::new("shrinking", ns).data(map([("a", "10")])),
                ),
            ]
        }),
        case::<core_v1::ConfigMap>("configmap-finalizers-set", |ns| {
            let finalized = |items| {
                with_meta(core::ConfigMap::new("finalized", ns), |m| {
                    m.finalizers(strings(items))
                })
            };
            vec![
                spec("alice", finalized(["kubekit.dev/a", "kubekit.dev/b"])),
                spec("bob", finalized(["kubekit.dev/b", "kubekit.dev/c"])),
            ]
        }),
        case::<core_v1::Secret>("secret-data", |ns| {
            vec![spec(
                "alice",
                core::Secret::new("credentials", ns).type_("Opaque").data([
                    ("user", ByteString(b"admin".to_vec())),
                    ("key", ByteString(vec![0, 159, 146, 150])),
                ]),
            )]
        }),
        case::<core_v1::Secret>("secret-string-data", |ns| {
            vec![spec(
                "alice",
                core::Secret::new("written", ns).string_data(map([("token", "t0ken")])),
            )]
        }),
        case::<core_v1::ServiceAccount>("serviceaccount", |ns| {
            vec![spec(
                "alice",
                core::ServiceAccount::new("robot", ns)
                    .automount_service_account_token(false)
                    .secrets([
                        core::ObjectReference::default().name("robot-token"),
                        core::ObjectReference::default().name("robot-extra"),
                    ])
                    .image_pull_secrets([core::LocalObjectReference::default().name("registry")]),
            )]
        }),
        case::<core_v1::Pod>("pod-containers", |ns| {
            vec![spec(
                "alice",
                core::Pod::new("web", ns).spec(
                    core::PodSpec::default()
                        .automount_service_account_token(false)
                        .restart_policy("Always")
                        .termination_grace_period_seconds(5)
                        .containers([
                            container("web")
                                .command(strings(["/bin/web"]))
                                .args(strings(["--port", "8080", "--verbose"]))
                                .env([
                                    core::EnvVar::default().name("MODE").value("fast"),
                                    core::EnvVar::default().name("POD").value_from(
                                        core::EnvVarSource::default().field_ref(
                                            core::ObjectFieldSelector::default()
                                                .field_path("metadata.name"),
                                        ),
                                    ),
                                ])
                                .ports([
                                    core::ContainerPort::default()
                                        .name("http")
                                        .container_port(8080)
                                        .protocol("TCP"),
                                    core::ContainerPort::default()
                                        .name("http-udp")
                                        .container_port(8080)
                                        .protocol("UDP"),
                                ])
                                .resources(
                                    core::ResourceRequirements::default()
                                        .requests(quantities([("cpu", "100m"), ("memory", "64Mi")]))
                                        .limits(quantities([("memory", "128Mi")])),
                                ),
                            container("sidecar").image_pull_policy("IfNotPresent"),
                        ]),
                ),
            )]
        }),
        case::<core_v1::Pod>("pod-volumes", |ns| {
            vec![spec(
                "alice",
                core::Pod::new("volumes", ns).spec(
                    pod_spec("volumes").volumes([
                        core::Volume::default().name("config").config_map(
                            core::ConfigMapVolumeSource::default()
                                .name("settings")
                                .default_mode(0o440)
                                .items([core::KeyToPath::default().key("mode").path("mode.txt")]),
                        ),
                        core::Volume::default().name("cache").empty_dir(
                            core::EmptyDirVolumeSource::default()
                                .medium("Memory")
                                .size_limit(Quantity("1Gi".into())),
                        ),
                        core::Volume::default().name("all").projected(
                            core::ProjectedVolumeSource::default().sources([
                                core::VolumeProjection::default()
                                    .secret(core::SecretProjection::default().name("credentials")),
                                core::VolumeProjection::default().downward_api(
                                    core::DownwardAPIProjection::default().items([
                                        core::DownwardAPIVolumeFile::default()
                                            .path("labels")
                                            .field_ref(
                                                core::ObjectFieldSelector::default()
                                                    .field_path("metadata.labels"),
                                            ),
                                    ]),
                                ),
                            ]),
                        ),
                    ]),
                ),
            )]
        }),
        case::<core_v1::Pod>("pod-probes", |ns| {
            vec![spec(
                "alice",
                core::Pod::new("probed", ns).spec(
                    core::PodSpec::default()
                        .automount_service_account_token(false)
                        .containers([container("probed")
                            .ports([core::ContainerPort::default()
                                .name("http")
                                .container_port(8080)])
                            .liveness_probe(
                                core::Probe::default()
                                    .http_get(
                                        core::HTTPGetAction::default()
                                            .path("/healthz")
                                            .port(IntOrString::Int(8080))
                                            .http_headers([core::HTTPHeader::default()
                                                .name("X-Probe")
                                                .value("live")]),
                                    )
                                    .period_seconds(7),
                            )
                            .readiness_probe(
                                core::Probe::default().tcp_socket(
                                    core::TCPSocketAction::default()
                                        .port(IntOrString::String("http".into())),
                                ),
                            )
                            .startup_probe(
                                core::Probe::default()
                                    .exec(
                                        core::ExecAction::default()
                                            .command(strings(["cat", "/tmp/started"])),
                                    )
                                    .failure_threshold(30),
                            )]),
                ),
            )]
        }),
        case::<core_v1::Pod>("pod-affinity", |ns| {
            let term = |requirement: core::NodeSelectorRequirement| {
                core::NodeSelectorTerm::default().match_expressions([requirement])
            };
            let requirement = |key: &str, operator: &str| {
                core::NodeSelectorRequirement::default()
                    .key(key)
                    .operator(operator)
            };
            vec![spec(
                "alice",
                core::Pod::new("placed", ns).spec(
                    pod_spec("placed").affinity(
                        core::Affinity::default()
                            .node_affinity(
                                core::NodeAffinity::default()
                                    .required_during_scheduling_ignored_during_execution(
                                        core::NodeSelector::default().node_selector_terms([term(
                                            requirement("zone", "In").values(strings(["a", "b"])),
                                        )]),
                                    )
                                    .preferred_during_scheduling_ignored_during_execution([
                                        core::PreferredSchedulingTerm::default()
                                            .weight(10)
                                            .preference(term(requirement("disk", "Exists"))),
                                    ]),
                            )
                            .pod_anti_affinity(
                                core::PodAntiAffinity::default()
                                    .preferred_during_scheduling_ignored_during_execution([
                                        core::WeightedPodAffinityTerm::default()
                                            .weight(50)
                                            .pod_affinity_term(
                                                core::PodAffinityTerm::default()
                                                    .label_selector(selector("placed"))
                                                    .topology_key("kubernetes.io/hostname"),
                                            ),
                                    ]),
                            ),
                    ),
                ),
            )]
        }),
        case::<core_v1::Pod>("pod-tolerations-node-selector", |ns| {
            vec![spec(
                "alice",
                core::Pod::new("tolerant", ns).spec(
                    pod_spec("tolerant")
                        .node_selector(map([("disk", "ssd"), ("zone", "a")]))
                        .tolerations([
                            core::Toleration::default()
                                .key("dedicated")
                                .operator("Equal")
                                .value("web")
                                .effect("NoSchedule"),
                            core::Toleration::default()
                                .operator("Exists")
                                .effect("NoExecute")
                                .toleration_seconds(30),
                        ]),
                ),
            )]
        }),
        case::<core_v1::Pod>("pod-security-context", |ns| {
            vec![spec(
                "alice",
                core::Pod::new("secured", ns).spec(
                    core::PodSpec::default()
                        .automount_service_account_token(false)
                        .security_context(
                            core::PodSecurityContext::default()
                                .run_as_user(1000)
                                .run_as_non_root(true)
                                .supplemental_groups([2000, 3000])
                                .sysctls([core::Sysctl::default()
                                    .name("net.ipv4.ip_unprivileged_port_start")
                                    .value("0")])
                                .seccomp_profile(
                                    core::SeccompProfile::default().type_("RuntimeDefault"),
                                ),
                        )
                        .containers([container("secured").security_context(
                            core::SecurityContext::default()
                                .allow_privilege_escalation(false)
                                .read_only_root_filesystem(true)
                                .capabilities(
                                    core::Capabilities::default()
                                        .add(strings(["NET_BIND_SERVICE"]))
                                        .drop(strings(["ALL"])),
                                ),
                        )]),
                ),
            )]
        }),
        case::<core_v1::Pod>("pod-topology-spread", |ns| {
            vec![spec(
                "alice",
                core::Pod::new("spread", ns)
                    .labels(map([("app", "spread")]))
                    .spec(
                        pod_spec("spread").topology_spread_constraints([
                            core::TopologySpreadConstraint::default()
                                .max_skew(1)
                                .topology_key("zone")
                                .when_unsatisfiable("DoNotSchedule")
                                .label_selector(selector("spread")),
                            core::TopologySpreadConstraint::default()
                                .max_skew(2)
                                .topology_key("zone")
                                .when_unsatisfiable("ScheduleAnyway")
                                .label_selector(selector("spread"))
                                .match_label_keys(strings(["pod-template-hash"])),
                        ]),
                    ),
            )]
        }),
        case::<core_v1::Pod>("pod-host-aliases-dns", |ns| {
            vec![spec(
                "alice",
                core::Pod::new("resolving", ns).spec(
                    pod_spec("resolving")
                        .host_aliases([
                            core::HostAlias::default()
                                .ip("10.0.0.1")
                                .hostnames(strings(["db", "db.local"])),
                            core::HostAlias::default()
                                .ip("10.0.0.2")
                                .hostnames(strings(["cache"])),
                        ])
                        .dns_policy("None")
                        .dns_config(
                            core::PodDNSConfig::default()
                                .nameservers(strings(["192.0.2.53"]))
                                .searches(strings(["svc.cluster.local"]))
                                .options([core::PodDNSConfigOption::default()
                                    .name("ndots")
                                    .value("2")]),
                        ),
                ),
            )]
        }),
        case::<core_v1::Pod>("pod-status", |ns| {
            vec![
                spec(
                    "alice",
                    core::Pod::new("reported", ns).spec(pod_spec("reported")),
                ),
                status(
                    "bob",
                    core::Pod::new("reported", ns).status(
                        core::PodStatus::default()
                            .conditions([
                                core::PodCondition::default()
                                    .type_("kubekit.dev/Compared")
                                    .status("True")
                                    .reason("Applied")
                                    .message("by bob")
                                    .last_transition_time(time()),
                                core::PodCondition::default()
                                    .type_("kubekit.dev/Other")
                                    .status("False"),
                            ])
                            .message("reported by bob"),
                    ),
                ),
            ]
        }),
        case::<core_v1::PodTemplate>("podtemplate-two-managers", |ns| {
            let merged = |containers| {
                core::PodTemplate::new("merged", ns).template(
                    core::PodTemplateSpec::default()
                        .spec(core::PodSpec::default().containers(containers)),
                )
            };
            vec![
                spec(
                    "alice",
                    merged(vec![
                        container("a").env([core::EnvVar::default().name("X").value("1")]),
                    ]),
                ),
                spec(
                    "bob",
                    merged(vec![
                        core::Container::default()
                            .name("a")
                            .env([core::EnvVar::default().name("Y").value("2")]),
                        container("b"),
                    ]),
                ),
            ]
        }),
        case::<core_v1::Service>("service-ports", |ns| {
            let port = |name: &str, port: i32, target: IntOrString, protocol: &str| {
                core::ServicePort::default()
                    .name(name)
                    .port(port)
                    .target_port(target)
                    .protocol(protocol)
            };
            vec![spec(
                "alice",
                core::Service::new("web", ns).spec(
                    core::ServiceSpec::default()
                        .type_("ClusterIP")
                        .selector(map([("app", "web")]))
                        .ports([
                            port("http", 80, IntOrString::Int(8080), "TCP"),
                            port("dns", 53, IntOrString::String("dns".into()), "UDP"),
                            port("dns-tcp", 53, IntOrString::String("dns".into()), "TCP"),
                        ])
                        .session_affinity("ClientIP")
                        .session_affinity_config(
                            core::SessionAffinityConfig::default()
                                .client_ip(core::ClientIPConfig::default().timeout_seconds(600)),
                        ),
                ),
            )]
        }),
        case::<core_v1::Service>("service-two-managers", |ns| {
            let split = |name: &str, port: i32| {
                core::Service::new("split", ns).spec(
                    core::ServiceSpec::default()
                        .ports([core::ServicePort::default().name(name).port(port)]),
                )
            };
            vec![
                spec("alice", split("http", 80)),
                spec("bob", split("https", 443)),
            ]
        }),
        case::<core_v1::Service>("service-status", |ns| {
            vec![
                spec(
                    "alice",
                    core::Service::new("balanced", ns).spec(
                        core::ServiceSpec::default()
                            .type_("LoadBalancer")
                            .allocate_load_balancer_node_ports(false)
                            .ports([core::ServicePort::default().name("http").port(80)]),
                    ),
                ),
                status(
                    "bob",
                    core::Service::new("balanced", ns).status(
                        core::ServiceStatus::default()
                            .load_balancer(
                                core::LoadBalancerStatus::default().ingress([
                                    core::LoadBalancerIngress::default().ip("192.0.2.10"),
                                    core::LoadBalancerIngress::default()
                                        .hostname("web.kubekit.invalid"),
                                ]),
                            )
                            .conditions([meta::Condition::default()
                                .type_("kubekit.dev/Exposed")
                                .status("True")
                                .reason("Compared")
                                .message("by bob")
                                .last_transition_time(time())]),
                    ),
                ),
            ]
        }),
        case::<core_v1::Namespace>("namespace-status", |ns| {
            let name = format!("{ns}-extra");
            vec![
                spec(
                    "alice",
                    core::Namespace::new(&name).labels(map([("kubekit.dev/compare", "yes")])),
                ),
                status(
                    "bob",
                    core::Namespace::new(&name).status(
                        core::NamespaceStatus::default().conditions([
                            core::NamespaceCondition::default()
                                .type_("kubekit.dev/Checked")
                                .status("True")
                                .reason("Compared")
                                .last_transition_time(time()),
                        ]),
                    ),
                ),
            ]
        }),
        case::<discovery_v1::EndpointSlice>("endpointslice", |ns| {
            vec![spec(
                "alice",
                discovery::EndpointSlice::new("web-1", ns)
                    .labels(map([("kubernetes.io/service-name", "web")]))
                    .address_type("IPv4")
                    .endpoints([
                        discovery::Endpoint::default()
                            .addresses(strings(["10.0.0.1"]))
                            .conditions(discovery::EndpointConditions::default().ready(true))
                            .hostname("web-0")
                            .zone("a"),
                        discovery::Endpoint::default()
                            .addresses(strings(["10.0.0.2"]))
                            .conditions(
                                discovery::EndpointConditions::default()
                                    .ready(false)
                                    .terminating(true),
                            ),
                    ])
                    .ports([discovery::EndpointPort::default()
                        .name("http")
                        .port(80)
                        .protocol("TCP")]),
            )]
        }),
        case::<core_v1::LimitRange>("limitrange", |ns| {
            vec![spec(
                "alice",
                core::LimitRange::new("limits", ns).spec(
                    core::LimitRangeSpec::default().limits([
                        core::LimitRangeItem::default()
                            .type_("Container")
                            .max(quantities([("cpu", "2"), ("memory", "1Gi")]))
                            .min(quantities([("cpu", "10m")]))
                            .default_(quantities([("cpu", "500m")]))
                            .default_request(quantities([("cpu", "100m")])),
                        core::LimitRangeItem::default()
                            .type_("PersistentVolumeClaim")
                            .max(quantities([("storage", "10Gi")])),
                    ]),
                ),
            )]
        }),
        case::<core_v1::ResourceQuota>("resourcequota", |ns| {
            vec![spec(
                "alice",
                core::ResourceQuota::new("quota", ns).spec(
                    core::ResourceQuotaSpec::default()
                        .hard(quantities([
                            ("pods", "100"),
                            ("requests.cpu", "40"),
                            ("limits.memory", "80Gi"),
                        ]))
                        .scopes(strings(["NotBestEffort"])),
                ),
            )]
        }),
        case::<core_v1::PersistentVolumeClaim>("persistentvolumeclaim", |ns| {
            vec![spec(
                "alice",
                core::PersistentVolumeClaim::new("data", ns).spec(
                    core::PersistentVolumeClaimSpec::default()
                        .access_modes(strings(["ReadWriteOnce", "ReadOnlyMany"]))
                        .storage_class_name("kubekit-none")
                        .volume_mode("Filesystem")
                        .resources(
                            core::VolumeResourceRequirements::default()
                                .requests(quantities([("storage", "1Gi")])),
                        )
                        .selector(
                            meta::LabelSelector::default().match_expressions([
                                meta::LabelSelectorRequirement::default()
                                    .key("tier")
                                    .operator("In")
                                    .values(strings(["fast", "faster"])),
                            ]),
                        ),
                ),
            )]
        }),
        case::<core_v1::PersistentVolume>("persistentvolume", |ns| {
            vec![spec(
                "alice",
                core::PersistentVolume::new(format!("{ns}-disk")).spec(
                    core::PersistentVolumeSpec::default()
                        .capacity(quantities([("storage", "5Gi")]))
                        .access_modes(strings(["ReadWriteOnce"]))
                        .persistent_volume_reclaim_policy("Retain")
                        .storage_class_name("kubekit-none")
                        .mount_options(strings(["ro", "noatime"]))
                        .host_path(
                            core::HostPathVolumeSource::default()
                                .path("/tmp/kubekit-compare")
                                .type_("DirectoryOrCreate"),
                        )
                        .node_affinity(
                            core::VolumeNodeAffinity::default().required(
                                core::NodeSelector::default().node_selector_terms([
                                    core::NodeSelectorTerm::default().match_expressions([
                                        core::NodeSelectorRequirement::default()
                                            .key("kubernetes.io/hostname")
                                            .operator("In")
                                            .values(strings(["node-a"])),
                                    ]),
                                ]),
                            ),
                        ),
                ),
            )]
        }),
        case::<apps_v1::Deployment>("deployment-rolling", |ns| {
            vec![spec(
                "alice",
                apps::Deployment::new("web", ns).spec(
                    apps::DeploymentSpec::default()
                        .replicas(2)
                        .selector(selector("web"))
                        .template({
                            let mut t = template("web");
                            t.metadata = t
                                .metadata
                                .map(|m| m.annotations(map([("kubekit.dev/rev", "1")])));
                            t
                        })
                        .strategy(
                            apps::DeploymentStrategy::default()
                                .type_("RollingUpdate")
                                .rolling_update(
                                    apps::RollingUpdateDeployment::default()
                                        .max_surge(IntOrString::String("25%".into()))
                                        .max_unavailable(IntOrString::Int(1)),
                                ),
                        )
                        .min_ready_seconds(3)
                        .revision_history_limit(4)
                        .progress_deadline_seconds(120),
                ),
            )]
        }),
        case::<apps_v1::Deployment>("deployment-recreate-paused", |ns| {
            vec![spec(
                "alice",
                apps::Deployment::new("paused", ns).spec(
                    apps::DeploymentSpec::default()
                        .replicas(0)
                        .paused(true)
                        .selector(
                            meta::LabelSelector::default()
                                .match_labels(map([("app", "paused")]))
                                .match_expressions([meta::LabelSelectorRequirement::default()
                                    .key("track")
                                    .operator("NotIn")
                                    .values(strings(["canary"]))]),
                        )
                        .template(template("paused"))
                        .strategy(apps::DeploymentStrategy::default().type_("Recreate")),
                ),
            )]
        }),
        case::<apps_v1::StatefulSet>("statefulset", |ns| {
            vec![spec(
                "alice",
                apps::StatefulSet::new("db", ns).spec(
                    apps::StatefulSetSpec::default()
                        .replicas(0)
                        .service_name("db")
                        .selector(selector("db"))
                        .template(template("db"))
                        .pod_management_policy("Parallel")
                        .update_strategy(
                            apps::StatefulSetUpdateStrategy::default()
                                .type_("RollingUpdate")
                                .rolling_update(
                                    apps::RollingUpdateStatefulSetStrategy::default().partition(0),
                                ),
                        )
                        .persistent_volume_claim_retention_policy(
                            apps::StatefulSetPersistentVolumeClaimRetentionPolicy::default()
                                .when_deleted("Delete")
                                .when_scaled("Retain"),
                        )
                        .ordinals(apps::StatefulSetOrdinals::default().start(1))
                        .volume_claim_templates([core::PersistentVolumeClaim::new("data", "")
                            .labels(map([("app", "db")]))
                            .spec(
                                core::PersistentVolumeClaimSpec::default()
                                    .access_modes(strings(["ReadWriteOnce"]))
                                    .resources(
                                        core::VolumeResourceRequirements::default()
                                            .requests(quantities([("storage", "2Gi")])),
                                    ),
                            )]),
                ),
            )]
        }),
        case::<apps_v1::DaemonSet>("daemonset", |ns| {
            vec![spec(
                "alice",
                apps::DaemonSet::new("agent", ns).spec(
                    apps::DaemonSetSpec::default()
                        .selector(selector("agent"))
                        .template(template("agent").spec(
                            pod_spec("agent").node_selector(map([("kubekit.dev/none", "true")])),
                        ))
                        .update_strategy(
                            apps::DaemonSetUpdateStrategy::default()
                                .type_("RollingUpdate")
                                .rolling_update(
                                    apps::RollingUpdateDaemonSet::default()
                                        .max_surge(IntOrString::Int(1))
                                        .max_unavailable(IntOrString::Int(0)),
                                ),
                        ),
                ),
            )]
        }),
        case::<apps_v1::ReplicaSet>("replicaset", |ns| {
            vec![spec(
                "alice",
                apps::ReplicaSet::new("rs", ns).spec(
                    apps::ReplicaSetSpec::default()
                        .replicas(0)
                        .selector(selector("rs"))
                        .template(template("rs")),
                ),
            )]
        }),
        case::<apps_v1::ControllerRevision>("controllerrevision-raw", |ns| {
            vec![spec(
                "alice",
                apps::ControllerRevision::new("rev", ns).revision(3).data(
                    k8s_openapi::apimachinery::pkg::runtime::RawExtension(serde_json::json!({
                        "spec": { "template": { "replicas": [1, 2] }, "note": "raw" }
                    })),
                ),
            )]
        }),
        case::<batch_v1::Job>("job", |ns| {
            vec![spec(
                "alice",
                batch::Job::new("batch", ns).spec(
                    batch::JobSpec::default()
                        .suspend(true)
                        .parallelism(2)
                        .completions(4)
                        .backoff_limit(3)
                        .ttl_seconds_after_finished(60)
                        .pod_failure_policy(
                            batch::PodFailurePolicy::default().rules([
                                batch::PodFailurePolicyRule::default()
                                    .action("FailJob")
                                    .on_exit_codes(
                                        batch::PodFailurePolicyOnExitCodesRequirement::default()
                                            .container_name("batch")
                                            .operator("In")
                                            .values([42, 43]),
                                    ),
                                batch::PodFailurePolicyRule::default()
                                    .action("Ignore")
                                    .on_pod_conditions([
                                        batch::PodFailurePolicyOnPodConditionsPattern::default()
                                            .type_("DisruptionTarget")
                                            .status("True"),
                                    ]),
                            ]),
                        )
                        .template(
                            core::PodTemplateSpec::default()
                                .spec(pod_spec("batch").restart_policy("Never")),
                        ),
                ),
            )]
        }),
        case::<batch_v1::CronJob>("cronjob", |ns| {
            vec![spec(
                "alice",
                batch::CronJob::new("nightly", ns).spec(
                    batch::CronJobSpec::default()
                        .schedule("*/5 * * * *")
                        .time_zone("Etc/UTC")
                        .concurrency_policy("Forbid")
                        .suspend(true)
                        .successful_jobs_history_limit(2)
                        .job_template(
                            batch::JobTemplateSpec::default()
                                .metadata(
                                    meta::ObjectMeta::default().labels(map([("app", "nightly")])),
                                )
                                .spec(
                                    batch::JobSpec::default().template(
                                        core::PodTemplateSpec::default()
                                            .spec(pod_spec("nightly").restart_policy("OnFailure")),
                                    ),
                                ),
                        ),
                ),
            )]
        }),
        case::<autoscaling_v2::HorizontalPodAutoscaler>("horizontalpodautoscaler", |ns| {
            let policy = |type_: &str, value: i32| {
                autoscaling::HPAScalingPolicy::default()
                    .type_(type_)
                    .value(value)
                    .period_seconds(60)
            };
            vec![spec(
                "alice",
                autoscaling::HorizontalPodAutoscaler::new("web", ns).spec(
                    autoscaling::HorizontalPodAutoscalerSpec::default()
                        .scale_target_ref(
                            autoscaling::CrossVersionObjectReference::default()
                                .api_version("apps/v1")
                                .kind("Deployment")
                                .name("web"),
                        )
                        .min_replicas(1)
                        .max_replicas(5)
                        .metrics([
                            autoscaling::MetricSpec::default()
                                .type_("Resource")
                                .resource(
                                    autoscaling::ResourceMetricSource::default()
                                        .name("cpu")
                                        .target(
                                            autoscaling::MetricTarget::default()
                                                .type_("Utilization")
                                                .average_utilization(70),
                                        ),
                                ),
                            autoscaling::MetricSpec::default().type_("Pods").pods(
                                autoscaling::PodsMetricSource::default()
                                    .metric(
                                        autoscaling::MetricIdentifier::default().name("packets"),
                                    )
                                    .target(
                                        autoscaling::MetricTarget::default()
                                            .type_("AverageValue")
                                            .average_value(Quantity("1k".into())),
                                    ),
                            ),
                        ])
                        .behavior(
                            autoscaling::HorizontalPodAutoscalerBehavior::default().scale_down(
                                autoscaling::HPAScalingRules::default()
                                    .stabilization_window_seconds(300)
                                    .select_policy("Min")
                                    .policies([policy("Percent", 10), policy("Pods", 2)]),
                            ),
                        ),
                ),
            )]
        }),
        case::<policy_v1::PodDisruptionBudget>("poddisruptionbudget-percent", |ns| {
            vec![spec(
                "alice",
                policy::PodDisruptionBudget::new("half", ns).spec(
                    policy::PodDisruptionBudgetSpec::default()
                        .min_available(IntOrString::String("50%".into()))
                        .selector(selector("web"))
                        .unhealthy_pod_eviction_policy("AlwaysAllow"),
                ),
            )]
        }),
        case::<policy_v1::PodDisruptionBudget>("poddisruptionbudget-count", |ns| {
            vec![spec(
                "alice",
                policy::PodDisruptionBudget::new("one", ns).spec(
                    policy::PodDisruptionBudgetSpec::default()
                        .max_unavailable(IntOrString::Int(1))
                        .selector(selector("web")),
                ),
            )]
        }),
        case::<networking_v1::NetworkPolicy>("networkpolicy", |ns| {
            let block = |cidr: &str| networking::IPBlock::default().cidr(cidr);
            vec![spec(
                "alice",
                networking::NetworkPolicy::new("web", ns).spec(
                    networking::NetworkPolicySpec::default()
                        .pod_selector(selector("web"))
                        .policy_types(strings(["Ingress", "Egress"]))
                        .ingress([networking::NetworkPolicyIngressRule::default()
                            .from([
                                networking::NetworkPolicyPeer::default()
                                    .pod_selector(selector("client")),
                                networking::NetworkPolicyPeer::default().namespace_selector(
                                    meta::LabelSelector::default()
                                        .match_labels(map([("team", "web")])),
                                ),
                                networking::NetworkPolicyPeer::default().ip_block(
                                    block("10.0.0.0/8")
                                        .except(strings(["10.1.0.0/16", "10.2.0.0/16"])),
                                ),
                            ])
                            .ports([
                                networking::NetworkPolicyPort::default()
                                    .protocol("TCP")
                                    .port(IntOrString::Int(80)),
                                networking::NetworkPolicyPort::default()
                                    .port(IntOrString::String("http".into())),
                                networking::NetworkPolicyPort::default()
                                    .port(IntOrString::Int(8000))
                                    .end_port(9000),
                            ])])
                        .egress([networking::NetworkPolicyEgressRule::default()
                            .to([networking::NetworkPolicyPeer::default()
                                .ip_block(block("0.0.0.0/0"))])]),
                ),
            )]
        }),
        case::<networking_v1::Ingress>("ingress", |ns| {
            let backend = |port: networking::ServiceBackendPort| {
                networking::IngressBackend::default().service(
                    networking::IngressServiceBackend::default()
                        .name("web")
                        .port(port),
                )
            };
            let number = || networking::ServiceBackendPort::default().number(80);
            vec![spec(
                "alice",
                networking::Ingress::new("web", ns).spec(
                    networking::IngressSpec::default()
                        .ingress_class_name("kubekit")
                        .default_backend(backend(number()))
                        .rules([networking::IngressRule::default()
                            .host("web.kubekit.invalid")
                            .http(
                                networking::HTTPIngressRuleValue::default().paths([
                                    networking::HTTPIngressPath::default()
                                        .path("/")
                                        .path_type("Prefix")
                                        .backend(backend(number())),
                                    networking::HTTPIngressPath::default()
                                        .path("/api")
                                        .path_type("Exact")
                                        .backend(backend(
                                            networking::ServiceBackendPort::default().name("http"),
                                        )),
                                ]),
                            )])
                        .tls([networking::IngressTLS::default()
                            .hosts(strings(["web.kubekit.invalid"]))
                            .secret_name("web-tls")]),
                ),
            )]
        }),
        case::<networking_v1::IngressClass>("ingressclass", |ns| {
            vec![spec(
                "alice",
                networking::IngressClass::new(format!("{ns}-ingress")).spec(
                    networking::IngressClassSpec::default()
                        .controller("kubekit.dev/ingress")
                        .parameters(
                            networking::IngressClassParametersReference::default()
                                .api_group("k8s.example.com")
                                .kind("IngressParameters")
                                .name("external")
                                .scope("Cluster"),
                        ),
                ),
            )]
        }),
        case::<rbac_v1::ClusterRole>("clusterrole", |ns| {
            vec![spec(
                "alice",
                rbac::ClusterRole::new(format!("{ns}-reader")).rules([
                    rbac::PolicyRule::default()
                        .api_groups(strings([""]))
                        .resources(strings(["configmaps", "secrets"]))
                        .verbs(strings(["get", "list", "watch"])),
                    rbac::PolicyRule::default()
                        .non_resource_urls(strings(["/healthz"]))
                        .verbs(strings(["get"])),
                ]),
            )]
        }),
        case::<rbac_v1::Role>("role", |ns| {
            vec![spec(
                "alice",
                rbac::Role::new("editor", ns).rules([rbac::PolicyRule::default()
                    .api_groups(strings(["apps"]))
                    .resources(strings(["deployments"]))
                    .resource_names(strings(["web"]))
                    .verbs(strings(["get", "update", "patch"]))]),
            )]
        }),
        case::<rbac_v1::RoleBinding>("rolebinding", |ns| {
            vec![spec(
                "alice",
                rbac::RoleBinding::new("editors", ns)
                    .role_ref(
                        rbac::RoleRef::default()
                            .api_group("rbac.authorization.k8s.io")
                            .kind("Role")
                            .name("editor"),
                    )
                    .subjects([
                        rbac::Subject::default()
                            .kind("ServiceAccount")
                            .name("robot")
                            .namespace(ns),
                        rbac::Subject::default()
                            .kind("User")
                            .name("alice")
                            .api_group("rbac.authorization.k8s.io"),
                    ]),
            )]
        }),
        case::<scheduling_v1::PriorityClass>("priorityclass", |ns| {
            vec![spec(
                "alice",
                scheduling::PriorityClass::new(format!("{ns}-high"))
                    .value(1000)
                    .global_default(false)
                    .description("compared")
                    .preemption_policy("Never"),
            )]
        }),
        case::<storage_v1::StorageClass>("storageclass", |ns| {
            vec![spec(
                "alice",
                storage::StorageClass::new(format!("{ns}-fast"))
                    .provisioner("kubekit.dev/none")
                    .parameters(map([("type", "fast"), ("zone", "a")]))
                    .reclaim_policy("Retain")
                    .volume_binding_mode("WaitForFirstConsumer")
                    .allow_volume_expansion(true)
                    .mount_options(strings(["ro", "noatime"]))
                    .allowed_topologies([core::TopologySelectorTerm::default()
                        .match_label_expressions([
                            core::TopologySelectorLabelRequirement::default()
                                .key("zone")
                                .values(strings(["a", "b"])),
                        ])]),
            )]
        }),
        case::<storage_v1::CSIDriver>("csidriver-set", |ns| {
            let driver = |spec| storage::CSIDriver::new(format!("{ns}-csi.kubekit.dev")).spec(spec);
            vec![
                spec(
                    "alice",
                    driver(
                        storage::CSIDriverSpec::default()
                            .attach_required(false)
                            .pod_info_on_mount(true)
                            .volume_lifecycle_modes(strings(["Persistent", "Ephemeral"]))
                            .fs_group_policy("File")
                            .requires_republish(false)
                            .token_requests([storage::TokenRequest::default()
                                .audience("kubekit")
                                .expiration_seconds(3600)]),
                    ),
                ),
                spec(
                    "bob",
                    driver(
                        storage::CSIDriverSpec::default()
                            .volume_lifecycle_modes(strings(["Ephemeral"])),
                    ),
                ),
            ]
        }),
        case::<node_v1::RuntimeClass>("runtimeclass", |ns| {
            vec![spec(
                "alice",
                node::RuntimeClass::new(format!("{ns}-sandboxed"))
                    .handler("runsc")
                    .overhead(
                        node::Overhead::default()
                            .pod_fixed(quantities([("cpu", "10m"), ("memory", "16Mi")])),
                    )
                    .scheduling(
                        node::Scheduling::default()
                            .node_selector(map([("sandbox", "true")]))
                            .tolerations([core::Toleration::default()
                                .key("sandbox")
                                .operator("Exists")]),
                    ),
            )]
        }),
        case::<coordination_v1::Lease>("lease-micro-time", |ns| {
            vec![spec(
                "alice",
                coordination::Lease::new("leader", ns).spec(
                    coordination::LeaseSpec::default()
                        .holder_identity("replica-0")
                        .lease_duration_seconds(15)
                        .acquire_time(micro_time())
                        .renew_time(micro_time())
                        .lease_transitions(2),
                ),
            )]
        }),
        case::<events_v1::Event>("event", |ns| {
            vec![spec(
                "alice",
                events::Event::new("compared.1", ns)
                    .event_time(micro_time())
                    .reporting_controller("kubekit.dev/compare")
                    .reporting_instance("compare-0")
                    .action("Apply")
                    .reason("Compared")
                    .type_("Normal")
                    .note("the same on both sides")
                    .regarding(
                        core::ObjectReference::default()
                            .api_version("v1")
                            .kind("ConfigMap")
                            .namespace(ns)
                            .name("settings"),
                    )
                    .series(
                        events::EventSeries::default()
                            .count(2)
                            .last_observed_time(micro_time()),
                    ),
            )]
        }),
        case::<admissionregistration_v1::ValidatingAdmissionPolicy>(
            "validatingadmissionpolicy",
            |ns| {
                let policy = || {
                    admissionregistration::ValidatingAdmissionPolicy::new(format!("{ns}-replicas"))
                };
                vec![
                    spec(
                        "alice",
                        policy().spec(
                            admissionregistration::ValidatingAdmissionPolicySpec::default()
                                .failure_policy("Fail")
                                .match_constraints(
                                    admissionregistration::MatchResources::default()
                                        .resource_rules(
                                        [admissionregistration::NamedRuleWithOperations::default()
                                            .api_groups(strings(["kubekit.dev"]))
                                            .api_versions(strings(["v1"]))
                                            .operations(strings(["CREATE", "UPDATE"]))
                                            .resources(strings(["widgets"]))],
                                    ),
                                )
                                .variables([admissionregistration::Variable::default()
                                    .name("replicas")
                                    .expression("object.spec.replicas")])
                                .validations([admissionregistration::Validation::default()
                                    .expression("variables.replicas <= 5")
                                    .message("at most 5 replicas")]),
                        ),
                    ),
                    // Variables are a list of atomic items keyed by name: each manager owns its
                    // items whole.
                    spec(
                        "bob",
                        policy().spec(
                            admissionregistration::ValidatingAdmissionPolicySpec::default()
                                .variables([admissionregistration::Variable::default()
                                    .name("limit")
                                    .expression("5")]),
                        ),
                    ),
                ]
            },
        ),
        case::<admissionregistration_v1::ValidatingWebhookConfiguration>(
            "validatingwebhookconfiguration",
            |ns| {
                let webhook = |name: &str, url: &str| {
                    admissionregistration::ValidatingWebhook::default()
                        .name(name)
                        .client_config(
                            admissionregistration::WebhookClientConfig::default().url(url),
                        )
                };
                vec![spec(
                    "alice",
                    admissionregistration::ValidatingWebhookConfiguration::new(format!(
                        "{ns}-widgets"
                    ))
                    .webhooks([
                        webhook("widgets.kubekit.dev", "https://kubekit.invalid/validate")
                            .rules([admissionregistration::RuleWithOperations::default()
                                .operations(strings(["CREATE"]))
                                .api_groups(strings(["kubekit.dev"]))
                                .api_versions(strings(["v1"]))
                                .resources(strings(["widgets"]))
                                .scope("Namespaced")])
                            .failure_policy("Ignore")
                            .side_effects("None")
                            .admission_review_versions(strings(["v1"]))
                            .timeout_seconds(5)
                            .match_conditions([admissionregistration::MatchCondition::default()
                                .name("not-kube-system")
                                .expression("request.namespace != 'kube-system'")]),
                        webhook("gadgets.kubekit.dev", "https://kubekit.invalid/gadgets")
                            .side_effects("None")
                            .admission_review_versions(strings(["v1", "v1beta1"])),
                    ]),
                )]
            },
        ),
    ]
}
