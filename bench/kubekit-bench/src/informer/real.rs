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
    namespaces: Vec<String>,
    /// The pods made, (namespace, name).
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
        let config = RestConfig::from_kubeconfig(kubeconfig)
            .await
            .map_err(|e| e.to_string())?
            .with_rate_limit(-1.0, 0);
        let cluster = Self {
            clientset: Clientset::new(&config).map_err(|e| e.to_string())?,
            namespaces: (0..NAMESPACES).map(|k| format!("bench-{k}")).collect(),
            pods: (0..pods)
                .map(|i| (format!("bench-{}", i % NAMESPACES), fixture.pod_name(i)))
                .collect(),
            patches: AtomicUsize::new(0),
        };
        cluster.delete_namespaces().await?;
        match cluster.fill(fixture, pods).await {
            Ok(()) => Ok(cluster),
            Err(e) => {
                if let Err(cleanup) = cluster.clean_up().await {
                    eprintln!("{cleanup}");
                }
                Err(e)
            }
        }
    }

    /// Creates the namespaces and the pods, and waits until the API server lists them all.
    async fn fill(&self, fixture: &Fixture, pods: usize) -> Result<(), String> {
        let namespaces = self.clientset.core_v1().namespaces();
        for name in &self.namespaces {
            let mut namespace = Namespace::default();
            namespace.metadata.name = Some(name.clone());
            namespaces
                .create(&namespace, &CreateOptions::default())
                .await
                .map_err(|e| format!("creating namespace {name}: {e}"))?;
        }
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
        self.wait_for_watch_cache(pods).await
    }

    /// Waits until a list served from the API server's watch cache (resourceVersion 0, the
    /// first list of kubekit's and kube-rs's informers) holds every pod created: right after
    /// the creates it may still lag behind them.
    async fn wait_for_watch_cache(&self, pods: usize) -> Result<(), String> {
        let all = self.clientset.core_v1().pods("");
        let options = ListOptions {
            resource_version: Some("0".into()),
            ..ListOptions::default()
        };
        let started = Instant::now();
        loop {
            let list = all
                .list(&options)
                .await
                .map_err(|e| format!("listing pods: {e}"))?;
            let ours = list
                .items
                .iter()
                .filter(|pod| {
                    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
                    self.namespaces.iter().any(|ns| ns == namespace)
                })
                .count();
            if ours >= pods {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(60) {
                return Err(format!(
                    "the API server's watch cache still lists {ours} of the {pods} pods"
                ));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Patches a label of `count` pods, the pods in turn, each patch a new value.
    pub async fn patch_pods(&self, count: usize) -> Result<(), String> {
        let first = self.patches.fetch_add(count, Ordering::Relaxed);
        stream::iter(first..first + count)
            .map(|n| async move {
                let (namespace, name) = &self.pods[n % self.pods.len()];
                let patch =
                    serde_json::json!({"metadata": {"labels": {"bench-update": n.to_string()}}});
                self.clientset
                    .core_v1()
                    .pods(namespace)
                    .patch(name, &PatchBody::Merge(patch), &PatchOptions::default())
                    .await
                    .map(drop)
                    .map_err(|e| format!("patching pod {namespace}/{name}: {e}"))
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
