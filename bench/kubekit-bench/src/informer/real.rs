//! The confirmation mode: instead of the replay server, N pods made from the fixture's
//! templates in a real cluster, in namespaces `bench-<i mod 10>` that are deleted at the
//! end (and beforehand, if a previous run left them).
//!
//! Each pod is created from its template without what the server or the controllers set
//! (uid, resourceVersion, creationTimestamp, managedFields, ownerReferences, generateName,
//! spec.nodeName: no node exists, and the pod garbage collector deletes pods bound to a
//! missing node), then given the template's status by a status update, as a kubelet
//! would: each pod carries a status and the managedFields the server writes for both.
//!
//! The watch updates are merge patches of a label, each a new value: every patch is one
//! MODIFIED event for each informer watching.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, Pod, PodStatus};
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, ListOptions, PatchBody, PatchOptions,
    UpdateOptions,
};
use kubekit::rest::RestConfig;

use informer_protocol::Kind;
use informer_protocol::widget::{self, Widget};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubekit::dynamic::{DynamicClient, Unstructured};
use kubekit::meta::GroupVersionResource;
use kubekit::meta::Object;

use super::fixture::Fixture;

/// Creates, and patches, in flight at once.
const CONCURRENT_CREATES: usize = 32;
/// Namespaces the pods are spread over.
const NAMESPACES: usize = 10;
/// How long a namespace may take to go away.
const NAMESPACE_DELETION: Duration = Duration::from_secs(300);

/// The pods made in a real cluster; [`Cluster::clean_up`] deletes them.
pub struct Cluster {
    clientset: Clientset,
    /// What the objects are.
    kind: Kind,
    namespaces: Vec<String>,
    /// The objects made, (namespace, name).
    pods: Vec<(String, String)>,
    /// Patches written so far: the next patch's label value, and which pod it goes to.
    patches: AtomicUsize,
}

/// A template of the fixture as a pod to create, and the status to give it.
fn creatable(item: &serde_json::Value) -> Result<(Pod, Option<PodStatus>), String> {
    let mut pod: Pod = serde_json::from_value(item.clone())
        .map_err(|e| format!("a fixture item is not a Pod: {e}"))?;
    let meta = &mut pod.metadata;
    meta.uid = None;
    meta.resource_version = None;
    meta.creation_timestamp = None;
    meta.managed_fields = None;
    meta.owner_references = None;
    meta.generate_name = None;
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = None;
    }
    let status = pod.status.take();
    Ok((pod, status))
}

impl Cluster {
    /// Creates `pods` pods from `fixture` in the cluster of `kubeconfig`.
    pub async fn populate(
        kubeconfig: &Path,
        fixture: &Fixture,
        pods: usize,
    ) -> Result<Self, String> {
        let names = (0..pods).map(|i| fixture.pod_name(i)).collect();
        let cluster = Self::empty(kubeconfig, Kind::Pods, names).await?;
        let filled = cluster.fill(fixture, pods).await;
        cluster.kept_if(filled).await
    }

    /// Creates `widgets` Widgets (the custom resource of `--resource widgets`, its CRD
    /// installed first) in the cluster of `kubeconfig`, each with a spec and a status.
    pub async fn populate_widgets(kubeconfig: &Path, widgets: usize) -> Result<Self, String> {
        let names = (0..widgets).map(|i| format!("widget-{i}")).collect();
        let cluster = Self::empty(kubeconfig, Kind::Widgets, names).await?;
        let crd: CustomResourceDefinition =
            serde_json::from_value(widget_crd()).map_err(|e| format!("the Widget CRD: {e}"))?;
        cluster
            .clientset
            .install_crd(crd, "kubekit-bench")
            .await
            .map_err(|e| format!("installing the Widget CRD: {e}"))?;
        let filled = cluster.fill_widgets().await;
        cluster.kept_if(filled).await
    }

    /// The cluster of `kubeconfig` without the benchmark's namespaces (deleted if a run
    /// left them), about to hold objects of `kind` named `names` (the i-th in namespace
    /// `bench-<i mod 10>`).
    async fn empty(kubeconfig: &Path, kind: Kind, names: Vec<String>) -> Result<Self, String> {
        let config = RestConfig::from_kubeconfig(kubeconfig)
            .await
            .map_err(|e| e.to_string())?
            .with_rate_limit(-1.0, 0);
        let cluster = Self {
            clientset: Clientset::new(&config).map_err(|e| e.to_string())?,
            kind,
            namespaces: (0..NAMESPACES).map(|k| format!("bench-{k}")).collect(),
            pods: names
                .into_iter()
                .enumerate()
                .map(|(i, name)| (format!("bench-{}", i % NAMESPACES), name))
                .collect(),
            patches: AtomicUsize::new(0),
        };
        cluster.delete_namespaces().await?;
        Ok(cluster)
    }

    /// The cluster once `filled`; if filling failed, its error, the namespaces deleted.
    async fn kept_if(self, filled: Result<(), String>) -> Result<Self, String> {
        match filled {
            Ok(()) => Ok(self),
            Err(e) => {
                if let Err(cleanup) = self.clean_up().await {
                    eprintln!("{cleanup}");
                }
                Err(e)
            }
        }
    }

    /// Creates the namespaces.
    async fn create_namespaces(&self) -> Result<(), String> {
        let namespaces = self.clientset.core_v1().namespaces();
        for name in &self.namespaces {
            let mut namespace = Namespace::default();
            namespace.metadata.name = Some(name.clone());
            namespaces
                .create(&namespace, &CreateOptions::default())
                .await
                .map_err(|e| format!("creating namespace {name}: {e}"))?;
        }
        Ok(())
    }

    /// Creates the namespaces and the Widgets, each then given its status, and waits
    /// until the API server lists them all.
    async fn fill_widgets(&self) -> Result<(), String> {
        self.create_namespaces().await?;
        let dynamic = DynamicClient::from_rest_client(self.clientset.rest_client().clone());
        let gvr = GroupVersionResource::new(widget::GROUP, widget::VERSION, widget::PLURAL);
        let (dynamic, gvr) = (&dynamic, &gvr);
        let started = Instant::now();
        stream::iter(self.pods.iter().enumerate())
            .map(|(i, (namespace, name))| {
                // Written as JSON: a typed Widget serializes no apiVersion and kind, which
                // the create of a custom resource needs.
                let client = dynamic.resource(gvr).namespace(namespace);
                async move {
                    let body: Unstructured = serde_json::from_value(widget(i, namespace, name))
                        .map_err(|e| format!("a Widget: {e}"))?;
                    client
                        .create(&body, &CreateOptions::default())
                        .await
                        .map_err(|e| format!("creating widget {namespace}/{name}: {e}"))?;
                    let status = PatchBody::Merge(serde_json::json!({"status": widget_status(i)}));
                    client
                        .patch_status(name, &status, &PatchOptions::default())
                        .await
                        .map_err(|e| {
                            format!("writing the status of widget {namespace}/{name}: {e}")
                        })?;
                    Ok::<(), String>(())
                }
            })
            .buffer_unordered(CONCURRENT_CREATES)
            .try_for_each(|()| async { Ok(()) })
            .await?;
        eprintln!(
            "created {} widgets in {} namespaces in {:.1?}",
            self.pods.len(),
            self.namespaces.len(),
            started.elapsed()
        );
        self.wait_for_watch_cache::<Widget>().await
    }

    /// Creates the namespaces and the pods, and waits until the API server lists them all.
    async fn fill(&self, fixture: &Fixture, pods: usize) -> Result<(), String> {
        self.create_namespaces().await?;
        let templates = fixture
            .items()
            .iter()
            .map(creatable)
            .collect::<Result<Vec<_>, _>>()?;
        let started = Instant::now();
        stream::iter(0..pods)
            .map(|i| {
                let (mut pod, status) = templates[i % templates.len()].clone();
                let namespace = format!("bench-{}", i % NAMESPACES);
                pod.metadata.name = Some(fixture.pod_name(i));
                pod.metadata.namespace = Some(namespace.clone());
                let client = self.clientset.core_v1().pods(&namespace);
                async move {
                    let what = || format!("pod {namespace}/{}", fixture.pod_name(i));
                    let mut created = client
                        .create(&pod, &CreateOptions::default())
                        .await
                        .map_err(|e| format!("creating {}: {e}", what()))?;
                    if status.is_some() {
                        created.status = status;
                        client
                            .update_status(&created, &UpdateOptions::default())
                            .await
                            .map_err(|e| format!("writing the status of {}: {e}", what()))?;
                    }
                    Ok::<(), String>(())
                }
            })
            .buffer_unordered(CONCURRENT_CREATES)
            .try_for_each(|_| async { Ok(()) })
            .await?;
        eprintln!(
            "created {pods} pods in {} namespaces in {:.1?}",
            self.namespaces.len(),
            started.elapsed()
        );
        self.wait_for_watch_cache::<Pod>().await
    }

    /// Waits until a list served from the API server's watch cache (resourceVersion 0, the
    /// first list of kubekit's and kube-rs's informers) holds every object created: right
    /// after the creates it may still lag behind them.
    async fn wait_for_watch_cache<K: Object<Scope = NamespaceResourceScope>>(
        &self,
    ) -> Result<(), String> {
        let pods = self.pods.len();
        let all = self.clientset.resource::<K>("");
        let options = ListOptions {
            resource_version: Some("0".into()),
            ..ListOptions::default()
        };
        let started = Instant::now();
        loop {
            let list = all
                .list(&options)
                .await
                .map_err(|e| format!("listing: {e}"))?;
            let ours = list
                .items
                .iter()
                .filter(|object| {
                    let namespace = object.meta().namespace.as_deref().unwrap_or_default();
                    self.namespaces.iter().any(|ns| ns == namespace)
                })
                .count();
            if ours >= pods {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(60) {
                return Err(format!(
                    "the API server's watch cache still lists {ours} of the {pods} objects"
                ));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Patches a label of `count` objects, the objects in turn, each patch a new value.
    pub async fn patch(&self, count: usize) -> Result<(), String> {
        match self.kind {
            Kind::Pods => self.patch_objects::<Pod>(count).await,
            Kind::Widgets => self.patch_objects::<Widget>(count).await,
        }
    }

    async fn patch_objects<K: Object<Scope = NamespaceResourceScope>>(
        &self,
        count: usize,
    ) -> Result<(), String> {
        let first = self.patches.fetch_add(count, Ordering::Relaxed);
        stream::iter(first..first + count)
            .map(|n| async move {
                let (namespace, name) = &self.pods[n % self.pods.len()];
                let patch =
                    serde_json::json!({"metadata": {"labels": {"bench-update": n.to_string()}}});
                self.clientset
                    .resource::<K>(namespace)
                    .patch(name, &PatchBody::Merge(patch), &PatchOptions::default())
                    .await
                    .map(drop)
                    .map_err(|e| format!("patching {namespace}/{name}: {e}"))
            })
            .buffer_unordered(CONCURRENT_CREATES)
            .try_for_each(|()| async { Ok(()) })
            .await
    }

    /// Deletes the namespaces (and so the pods) and waits until they are gone.
    pub async fn clean_up(&self) -> Result<(), String> {
        self.delete_namespaces().await
    }

    async fn delete_namespaces(&self) -> Result<(), String> {
        let namespaces = self.clientset.core_v1().namespaces();
        for name in &self.namespaces {
            if let Err(e) = namespaces.delete(name, &DeleteOptions::default()).await
                && !e.is_not_found()
            {
                return Err(format!("deleting namespace {name}: {e}"));
            }
        }
        let started = Instant::now();
        for name in &self.namespaces {
            loop {
                match namespaces.get(name, &GetOptions::default()).await {
                    Err(e) if e.is_not_found() => break,
                    Err(e) => return Err(format!("waiting for namespace {name} to go: {e}")),
                    Ok(_) if started.elapsed() > NAMESPACE_DELETION => {
                        return Err(format!(
                            "namespace {name} still exists {NAMESPACE_DELETION:?} after its deletion"
                        ));
                    }
                    Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                }
            }
        }
        Ok(())
    }
}

/// The Widget CRD: its schema types the spec and the status (the server prunes nothing
/// of what [`widget()`] writes).
fn widget_crd() -> serde_json::Value {
    let string = serde_json::json!({"type": "string"});
    let strings = serde_json::json!({"type": "array", "items": string});
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", widget::PLURAL, widget::GROUP)},
        "spec": {
            "group": widget::GROUP,
            "scope": "Namespaced",
            "names": {"plural": widget::PLURAL, "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": widget::VERSION, "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "image": string, "replicas": {"type": "integer"}, "command": strings,
                        "env": {"type": "array", "items": {"type": "object", "properties": {
                            "name": string, "value": string}}},
                        "ports": {"type": "array", "items": {"type": "object", "properties": {
                            "name": string, "port": {"type": "integer"}, "protocol": string}}},
                        "settings": {"type": "object", "additionalProperties": string},
                        "paused": {"type": "boolean"},
                    }},
                    "status": {"type": "object", "properties": {
                        "phase": string, "observedGeneration": {"type": "integer"},
                        "readyReplicas": {"type": "integer"},
                        "conditions": {"type": "array", "items": {"type": "object", "properties": {
                            "type": string, "status": string, "reason": string,
                            "message": string, "lastTransitionTime": string}}},
                    }},
                }}},
            }],
        },
    })
}

/// The `i`-th Widget, `namespace/name`, as an operator's user would write one: an image,
/// replicas, a command, six env vars, two ports, four settings, three labels.
fn widget(i: usize, namespace: &str, name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": format!("{}/{}", widget::GROUP, widget::VERSION),
        "kind": "Widget",
        "metadata": {
            "name": name, "namespace": namespace,
            "labels": {"app": format!("shop-{}", i % 50), "tier": "backend", "team": format!("team-{}", i % 7)},
            "annotations": {"bench.kubekit.dev/owner": format!("owner-{}@example.com", i % 13)},
        },
        "spec": {
            "image": format!("registry.example.com/shop/service-{}:v1.{}.{}", i % 50, i % 10, i % 4),
            "replicas": 1 + i % 5,
            "command": ["/bin/service", "--config=/etc/service/config.yaml", format!("--shard={}", i % 16)],
            "env": (0..6).map(|k| serde_json::json!({"name": format!("SERVICE_OPTION_{k}"), "value": format!("value-{}-{k}", i % 100)})).collect::<Vec<_>>(),
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "metrics", "port": 9090, "protocol": "TCP"}],
            "settings": {"logLevel": "info", "timeout": format!("{}s", 10 + i % 20), "retries": "3", "region": format!("region-{}", i % 4)},
            "paused": false,
        },
    })
}

/// The `i`-th Widget's status: running, with three conditions.
fn widget_status(i: usize) -> serde_json::Value {
    let condition = |kind: &str, reason: &str| {
        serde_json::json!({"type": kind, "status": "True", "reason": reason,
            "message": format!("{kind} since the last rollout of generation {}", 1 + i % 3),
            "lastTransitionTime": "2026-12-01T10:00:00Z"})
    };
    serde_json::json!({
        "phase": "Running", "observedGeneration": 1, "readyReplicas": 1 + i % 5,
        "conditions": [condition("Ready", "AllReplicasReady"), condition("Available", "MinimumReplicasAvailable"), condition("Progressing", "RolloutComplete")],
    })
}
