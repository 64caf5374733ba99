//! The confirmation mode: instead of the replay server, N objects in a real cluster — Pods
//! made from the fixture's templates, or objects of a [`Shape`] of the corpus — in
//! namespaces `bench-<i mod 10>` that are deleted at the end (and beforehand, if a previous
//! run left them); Nodes, which have no namespace, are deleted by their label.
//!
//! Each fixture pod is created from its template without what the server or the
//! controllers set (uid, resourceVersion, creationTimestamp, managedFields,
//! ownerReferences, generateName, spec.nodeName: no node exists, and the pod garbage
//! collector deletes pods bound to a missing node), then given the template's status by a
//! status update, as a kubelet would: each pod carries a status and the managedFields the
//! server writes for both. A shape's objects are created the same way, a status write
//! following the create where the shape has a status.
//!
//! The watch updates are merge patches of a label, each a new value: every patch is one
//! MODIFIED event for each informer watching.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, Pod, PodStatus};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, ListOptions, PatchBody, PatchOptions,
    UpdateOptions,
};
use kubekit::dynamic::{DynamicClient, DynamicResourceClient, Unstructured};
use kubekit::meta::GroupVersionResource;
use kubekit::metadata::{MetadataClient, PartialObjectMetadata};
use kubekit::rest::RestConfig;

use informer_protocol::Kind;
use informer_protocol::widget;

use super::fixture::Fixture;
use super::shapes::{NODE_LABEL, Shape};

/// Creates, and patches, in flight at once.
const CONCURRENT_CREATES: usize = 32;
/// Namespaces the objects are spread over.
const NAMESPACES: usize = 10;
/// How long a namespace may take to go away, at the least.
const NAMESPACE_DELETION: Duration = Duration::from_secs(300);
/// How much longer for each object in it: kube-apiserver deletes a namespace's objects one
/// at a time (`--delete-collection-workers` is 1), and 100,000 Pods took over 300 s.
const DELETION_PER_OBJECT: Duration = Duration::from_millis(10);

/// The objects made in a real cluster; [`Cluster::clean_up`] deletes them.
pub struct Cluster {
    clientset: Clientset,
    dynamic: DynamicClient,
    /// What the objects are.
    kind: Kind,
    namespaces: Vec<String>,
    /// The objects made, (namespace, name); the namespace is empty for Nodes.
    objects: Vec<(String, String)>,
    /// Patches written so far: the next patch's label value, and which object it goes to.
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

    /// Creates `count` objects of `shape` (not [`Shape::Fixture`]) in the cluster of
    /// `kubeconfig`, each given its status; for Widgets, their CRD is installed first.
    pub async fn populate_shape(
        kubeconfig: &Path,
        shape: Shape,
        count: usize,
    ) -> Result<Self, String> {
        let names = (0..count).map(|i| shape.object_name(i)).collect();
        let cluster = Self::empty(kubeconfig, shape.kind(), names).await?;
        if shape == Shape::Widgets {
            let crd: CustomResourceDefinition =
                serde_json::from_value(widget_crd()).map_err(|e| format!("the Widget CRD: {e}"))?;
            cluster
                .clientset
                .install_crd(crd, "kubekit-bench")
                .await
                .map_err(|e| format!("installing the Widget CRD: {e}"))?;
        }
        let filled = cluster.fill_shape(shape).await;
        cluster.kept_if(filled).await
    }

    /// The cluster of `kubeconfig` without the benchmark's objects (deleted if a run
    /// left them), about to hold objects of `kind` named `names` (the i-th in namespace
    /// `bench-<i mod 10>` if the kind has namespaces).
    async fn empty(kubeconfig: &Path, kind: Kind, names: Vec<String>) -> Result<Self, String> {
        let config = RestConfig::from_kubeconfig(kubeconfig)
            .await
            .map_err(|e| e.to_string())?
            .with_rate_limit(-1.0, 0);
        let clientset = Clientset::new(&config).map_err(|e| e.to_string())?;
        let namespace = |i: usize| match kind.namespaced() {
            true => format!("bench-{}", i % NAMESPACES),
            false => String::new(),
        };
        let cluster = Self {
            dynamic: DynamicClient::from_rest_client(clientset.rest_client().clone()),
            clientset,
            kind,
            namespaces: (0..NAMESPACES).map(|k| format!("bench-{k}")).collect(),
            objects: names
                .into_iter()
                .enumerate()
                .map(|(i, name)| (namespace(i), name))
                .collect(),
            patches: AtomicUsize::new(0),
        };
        cluster.clean_up().await?;
        Ok(cluster)
    }

    /// The dynamic client of the objects' resource, in `namespace` (`""`: every one).
    fn resource(&self, namespace: &str) -> DynamicResourceClient {
        self.dynamic.resource(&self.gvr()).namespace(namespace)
    }

    /// The resource of the objects.
    fn gvr(&self) -> GroupVersionResource {
        let (group, version) = self.kind.group_version();
        GroupVersionResource::new(group, version, self.kind.resource())
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

    /// Creates the namespaces and the objects of `shape`, each then given its status,
    /// and waits until the API server lists them all.
    async fn fill_shape(&self, shape: Shape) -> Result<(), String> {
        self.create_namespaces().await?;
        let started = Instant::now();
        stream::iter(self.objects.iter().enumerate())
            .map(|(i, (namespace, name))| {
                // Written as JSON: a typed object serializes no apiVersion and kind, which
                // the create of a custom resource needs.
                let client = self.resource(namespace);
                let what = format!("{} {namespace}/{name}", shape.name());
                async move {
                    let body = shape
                        .object(i, namespace, name)
                        .ok_or_else(|| format!("{what}: the shape has no objects of its own"))?;
                    let body: Unstructured =
                        serde_json::from_value(body).map_err(|e| format!("{what}: {e}"))?;
                    client
                        .create(&body, &CreateOptions::default())
                        .await
                        .map_err(|e| format!("creating {what}: {e}"))?;
                    if let Some(status) = shape.status(i) {
                        let status = PatchBody::Merge(serde_json::json!({"status": status}));
                        client
                            .patch_status(name, &status, &PatchOptions::default())
                            .await
                            .map_err(|e| format!("writing the status of {what}: {e}"))?;
                    }
                    Ok::<(), String>(())
                }
            })
            .buffer_unordered(CONCURRENT_CREATES)
            .try_for_each(|()| async { Ok(()) })
            .await?;
        eprintln!(
            "created {} {} in {:.1?}",
            self.objects.len(),
            shape.name(),
            started.elapsed()
        );
        self.wait_for_watch_cache().await
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
        self.wait_for_watch_cache().await
    }

    /// Waits until a list served from the API server's watch cache (resourceVersion 0, the
    /// first list of kubekit's and kube-rs's informers) holds every object created: right
    /// after the creates it may still lag behind them. The list is of the objects' metadata:
    /// the watch cache serves it whole, and 100,000 whole Pods as JSON values took 6 GiB.
    async fn wait_for_watch_cache(&self) -> Result<(), String> {
        let expected = self.objects.len();
        let all = MetadataClient::from_rest_client(self.clientset.rest_client().clone())
            .resource(&self.gvr())
            .namespace("");
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
            let ours = list.items.iter().filter(|o| self.is_ours(o)).count();
            if ours >= expected {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(60) {
                return Err(format!(
                    "the API server's watch cache still lists {ours} of the {expected} objects"
                ));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Whether `object` is one the benchmark made.
    fn is_ours(&self, object: &PartialObjectMetadata) -> bool {
        let meta = &object.metadata;
        match meta.namespace.as_deref() {
            Some(namespace) => self.namespaces.iter().any(|ns| ns == namespace),
            None => meta
                .labels
                .as_ref()
                .is_some_and(|labels| labels.contains_key(NODE_LABEL)),
        }
    }

    /// Patches a label of `count` objects, the objects in turn, each patch a new value.
    pub async fn patch(&self, count: usize) -> Result<(), String> {
        let first = self.patches.fetch_add(count, Ordering::Relaxed);
        stream::iter(first..first + count)
            .map(|n| async move {
                let (namespace, name) = &self.objects[n % self.objects.len()];
                let patch =
                    serde_json::json!({"metadata": {"labels": {"bench-update": n.to_string()}}});
                self.resource(namespace)
                    .patch(name, &PatchBody::Merge(patch), &PatchOptions::default())
                    .await
                    .map(drop)
                    .map_err(|e| format!("patching {namespace}/{name}: {e}"))
            })
            .buffer_unordered(CONCURRENT_CREATES)
            .try_for_each(|()| async { Ok(()) })
            .await
    }

    /// Deletes the namespaces (and so the objects in them) and the benchmark's Nodes, and
    /// waits until the namespaces are gone.
    pub async fn clean_up(&self) -> Result<(), String> {
        if !self.kind.namespaced() {
            let nodes = ListOptions {
                label_selector: Some(format!("{NODE_LABEL}=true")),
                ..ListOptions::default()
            };
            self.resource("")
                .delete_collection(&DeleteOptions::default(), &nodes)
                .await
                .map_err(|e| format!("deleting the nodes labelled {NODE_LABEL}: {e}"))?;
        }
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
        let patience = NAMESPACE_DELETION + DELETION_PER_OBJECT * self.objects.len() as u32;
        for name in &self.namespaces {
            loop {
                match namespaces.get(name, &GetOptions::default()).await {
                    Err(e) if e.is_not_found() => break,
                    Err(e) => return Err(format!("waiting for namespace {name} to go: {e}")),
                    Ok(_) if started.elapsed() > patience => {
                        return Err(format!(
                            "namespace {name} still exists {patience:?} after its deletion"
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
/// of what the shape writes).
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
