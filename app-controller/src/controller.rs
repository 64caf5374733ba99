//! The App controller: for every App, a Deployment and a Service that it owns, kept in line
//! with the App's spec, and their status copied into the App's status.
//!
//! # Behaviour
//!
//! - Watches Apps, and Deployments and Services *controlled by* an App (their changes
//!   enqueue the owning App); one rate-limited work queue of `namespace/name` keys, 5
//!   workers by default, at most 10 retries per key.
//! - Reconciling an App: create the Deployment (and Service) named in its spec when
//!   missing, with a controller ownerReference to the App and selector labels unique to
//!   the App ([`APP_LABEL`]`=<app name>`); update them when the spec's image, replicas or
//!   labels differ from what runs; a deleted child is re-created. A same-named object the
//!   App does not control is never adopted: a Warning `ErrResourceExists` event is
//!   recorded and the key retried with backoff.
//! - Then the children's status is written into the App through the status subresource
//!   (only when it changed) and a Normal `Synced` event is recorded.
//! - An App that no longer exists is logged and forgotten: its children go with it through
//!   the garbage collector (ownerReferences).
//! - An empty Deployment or Service name in the spec is reported in the log and that child
//!   skipped; it is not retried (a spec change enqueues the App again).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, PodSpec, PodTemplateSpec, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::Resource;
use kubekit::cache::{MaybeTombstone, ResourceEventHandlerFuncs, split_meta_namespace_key};
use kubekit::clientset::{Clientset, CreateOptions, ResourceClient, UpdateOptions};
use kubekit::controller::{Action, ReconcileError, Reconciler, Runner, enqueue, enqueue_handler};
use kubekit::informers::SharedInformerFactory;
use kubekit::listers::{Lister, NamespaceLister};
use kubekit::record::{ClientsetSink, EventBroadcaster, EventRecorder, EventSource, EventType};
use kubekit::workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::{App, AppStatus};

/// The controller's name: its event source and its field manager.
pub const CONTROLLER_NAME: &str = "app-controller";

/// The label that ties pods and Services to their App (its value is the App's name).
pub const APP_LABEL: &str = "appcontroller.k8s.io/app";

/// Reason of the event recorded after a successful sync.
pub const SUCCESS_SYNCED: &str = "Synced";
/// Reason of the event recorded when a child exists but is not controlled by the App.
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";

/// How the controller runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Worker tasks reconciling Apps.
    pub workers: usize,
    /// Retries of a failing key before it is dropped.
    pub max_retries: usize,
    /// Namespace to watch (`""`: all).
    pub namespace: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            workers: 5,
            max_retries: 10,
            namespace: String::new(),
        }
    }
}

/// The labels of an App's pods, and the selector of its Deployment and Service.
pub fn selector_labels(app: &App) -> BTreeMap<String, String> {
    BTreeMap::from([(
        APP_LABEL.to_string(),
        app.metadata.name.clone().unwrap_or_default(),
    )])
}

/// The controller ownerReference naming `app`.
pub fn controller_ref(app: &App) -> OwnerReference {
    OwnerReference {
        api_version: App::api_version(&()).into_owned(),
        kind: App::kind(&()).into_owned(),
        name: app.metadata.name.clone().unwrap_or_default(),
        uid: app.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Whether `obj` has a controller ownerReference to `app`.
pub fn is_controlled_by(obj: &ObjectMeta, app: &App) -> bool {
    obj.owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && Some(&r.uid) == app.metadata.uid.as_ref())
}

/// The Deployment `app` asks for.
pub fn new_deployment(app: &App) -> Deployment {
    let template = &app.spec.deployment_template;
    let labels = selector_labels(app);
    Deployment {
        metadata: ObjectMeta {
            name: Some(template.name.clone()),
            namespace: app.metadata.namespace.clone(),
            labels: Some(labels.clone()),
            owner_references: Some(vec![controller_ref(app)]),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(template.replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app-deploy-container".into(),
                        image: Some(template.image.clone()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The Service `app` asks for: port 8080 to the App's pods.
pub fn new_service(app: &App) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(app.spec.service_template.name.clone()),
            namespace: app.metadata.namespace.clone(),
            labels: Some(selector_labels(app)),
            owner_references: Some(vec![controller_ref(app)]),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(selector_labels(app)),
            ports: Some(vec![ServicePort {
                name: Some("app-service".into()),
                port: 8080,
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The running Deployment with what `app` specifies applied; `None` when it matches.
fn deployment_update(app: &App, current: &Deployment) -> Option<Deployment> {
    let desired = new_deployment(app);
    let mut next = current.clone();
    let spec = next.spec.get_or_insert_with(Default::default);
    let want = desired.spec.expect("new_deployment sets a spec");
    let mut changed = false;
    if spec.replicas != want.replicas {
        spec.replicas = want.replicas;
        changed = true;
    }
    let pod = spec.template.spec.get_or_insert_with(Default::default);
    let want_image = app.spec.deployment_template.image.clone();
    match pod.containers.first_mut() {
        Some(c) if c.image.as_deref() != Some(want_image.as_str()) => {
            c.image = Some(want_image);
            changed = true;
        }
        Some(_) => {}
        None => {
            pod.containers = want.template.spec.expect("pod spec").containers;
            changed = true;
        }
    }
    changed.then_some(next)
}

/// The running Service with the App's selector restored; `None` when it matches.
fn service_update(app: &App, current: &Service) -> Option<Service> {
    let want = selector_labels(app);
    let selector = current.spec.as_ref().and_then(|s| s.selector.as_ref());
    if selector == Some(&want) {
        return None;
    }
    let mut next = current.clone();
    next.spec.get_or_insert_with(Default::default).selector = Some(want);
    Some(next)
}

/// The error of a reconcile that found a child it does not control.
#[derive(Debug, thiserror::Error)]
#[error("{kind} {name:?} already exists and is not managed by App")]
pub struct ResourceExists {
    kind: String,
    name: String,
}

/// The reconciler; see the [module docs](self).
pub struct AppReconciler {
    clientset: Clientset,
    apps: Lister<App>,
    deployments: Lister<Deployment>,
    services: Lister<Service>,
    recorder: EventRecorder,
}

impl AppReconciler {
    fn not_controlled(&self, app: &App, kind: String, name: &str) -> ReconcileError {
        let err = ResourceExists {
            kind,
            name: name.to_string(),
        };
        self.recorder.event(
            app,
            EventType::Warning,
            ERR_RESOURCE_EXISTS,
            &err.to_string(),
        );
        err.into()
    }

    /// Brings the child `name` of kind `K` in line with `app`: creates it from `new` when
    /// missing, refuses it when `app` does not control it, and applies `update`'s changes
    /// when there are any. `None` when the spec names no such child.
    async fn sync_child<K>(
        &self,
        app: &App,
        name: &str,
        lister: NamespaceLister<K>,
        client: ResourceClient<K>,
        new: fn(&App) -> K,
        update: fn(&App, &K) -> Option<K>,
    ) -> Result<Option<K>, ReconcileError>
    where
        K: Resource<DynamicType = ()>
            + Serialize
            + DeserializeOwned
            + Clone
            + Send
            + Sync
            + 'static,
    {
        let kind = K::kind(&());
        if name.is_empty() {
            tracing::warn!(app = ?app.metadata.name, "{} name must be specified", kind.to_lowercase());
            return Ok(None);
        }
        let current = match lister.get(name) {
            Ok(current) => current,
            Err(e) if e.is_not_found() => {
                let created = client.create(&new(app), &write_options()).await?;
                tracing::info!(app = ?app.metadata.name, child = %name, "created {kind}");
                return Ok(Some(created));
            }
            Err(e) => return Err(e.into()),
        };
        if !is_controlled_by(current.meta(), app) {
            return Err(self.not_controlled(app, kind.into_owned(), name));
        }
        match update(app, &current) {
            Some(next) => {
                tracing::info!(app = ?app.metadata.name, child = %name, "updating {kind} to the App's spec");
                Ok(Some(client.update(&next, &write_options()).await?))
            }
            None => Ok(Some(K::clone(&current))),
        }
    }

    async fn sync(&self, key: &str) -> Result<(), ReconcileError> {
        let Ok((ns, name)) = split_meta_namespace_key(key) else {
            tracing::error!(%key, "invalid resource key");
            return Ok(());
        };
        let app = match self.apps.namespaced(ns).get(name) {
            Ok(app) => app,
            Err(e) if e.is_not_found() => {
                tracing::info!(%key, "App in work queue no longer exists");
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let deployment = self
            .sync_child(
                &app,
                &app.spec.deployment_template.name,
                self.deployments.namespaced(ns),
                self.clientset.apps_v1().deployments(ns),
                new_deployment,
                deployment_update,
            )
            .await?;
        let service = self
            .sync_child(
                &app,
                &app.spec.service_template.name,
                self.services.namespaced(ns),
                self.clientset.core_v1().services(ns),
                new_service,
                service_update,
            )
            .await?;
        let status = AppStatus {
            deployment_status: deployment.and_then(|d| d.status),
            service_status: service.and_then(|s| s.status),
        };
        if app.status.as_ref() != Some(&status) {
            let mut next = App::clone(&app);
            next.status = Some(status);
            ResourceClient::<App>::namespaced(self.clientset.rest_client().clone(), ns)
                .update_status(&next, &write_options())
                .await?;
        }
        self.recorder.event(
            app.as_ref(),
            EventType::Normal,
            SUCCESS_SYNCED,
            "App synced successfully",
        );
        Ok(())
    }
}

fn write_options() -> CreateOptions {
    UpdateOptions::default().field_manager(CONTROLLER_NAME)
}

impl Reconciler for AppReconciler {
    fn reconcile<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Action, ReconcileError>> {
        Box::pin(async move { self.sync(key).await.map(|()| Action::Done) })
    }
}

/// Enqueues the App that controls `obj`, if it is one the cache knows.
fn enqueue_owner<K: Resource>(queue: &RateLimitingQueue<String>, apps: &Lister<App>, obj: &K) {
    let meta = obj.meta();
    let Some(owner) = meta
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
    else {
        return;
    };
    if owner.kind != App::kind(&()) {
        return;
    }
    let ns = meta.namespace.as_deref().unwrap_or_default();
    match apps.namespaced(ns).get(&owner.name) {
        Ok(app) if app.metadata.uid.as_deref() == Some(owner.uid.as_str()) => {
            enqueue(queue, app.as_ref())
        }
        _ => tracing::debug!(owner = %owner.name, "ignoring an orphaned object"),
    }
}

/// Handlers for a child type: enqueue the owning App on add, real update and delete.
fn child_handler<K: Resource + Send + Sync + 'static>(
    queue: &RateLimitingQueue<String>,
    apps: &Lister<App>,
) -> ResourceEventHandlerFuncs<K> {
    let (q1, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
    let (a1, a2, a3) = (apps.clone(), apps.clone(), apps.clone());
    ResourceEventHandlerFuncs::new()
        .on_add(move |obj: &Arc<K>, _| enqueue_owner(&q1, &a1, obj.as_ref()))
        .on_update(move |old: &Arc<K>, new: &Arc<K>| {
            // A resync (same version) changes nothing a child could tell its App.
            if old.meta().resource_version != new.meta().resource_version {
                enqueue_owner(&q2, &a2, new.as_ref());
            }
        })
        .on_delete(move |obj: &MaybeTombstone<K>| enqueue_owner(&q3, &a3, obj.object().as_ref()))
}

/// Runs the App controller until `cancel` fires.
pub async fn run(
    clientset: Clientset,
    opts: Options,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(&opts.namespace)
        .build();
    let apps = factory.for_type::<App>();
    let deployments = factory.apps_v1().deployments();
    let services = factory.core_v1().services();

    let queue = RateLimitingQueue::with_config(
        default_controller_rate_limiter(),
        QueueConfig::new().name("Apps"),
    );
    apps.informer()
        .add_event_handler(enqueue_handler::<App>(&queue));
    deployments
        .informer()
        .add_event_handler(child_handler::<Deployment>(&queue, &apps.lister()));
    services
        .informer()
        .add_event_handler(child_handler::<Service>(&queue, &apps.lister()));

    let broadcaster = EventBroadcaster::new();
    broadcaster.start_structured_logging();
    broadcaster.start_recording_to_sink(ClientsetSink::new(clientset.clone()));
    let recorder = broadcaster.new_recorder(EventSource {
        component: CONTROLLER_NAME.into(),
        host: None,
    });

    let reconciler = Arc::new(AppReconciler {
        clientset,
        apps: apps.lister(),
        deployments: deployments.lister(),
        services: services.lister(),
        recorder,
    });
    factory.start();
    let runner = Runner::new(CONTROLLER_NAME, queue).max_retries(opts.max_retries);
    let synced = async {
        let synced = factory.wait_for_cache_sync(&cancel).await;
        for (informer, ok) in &synced {
            if !ok {
                tracing::error!(%informer, "cache did not sync");
            }
        }
        synced.values().all(|ok| *ok)
    };
    let result = runner
        .run(reconciler, opts.workers, synced, cancel.clone())
        .await;
    factory.shutdown().await;
    broadcaster.shutdown().await;
    result?;
    Ok(())
}
