//! The App controller: for every App, a Deployment and a Service it controls, kept in line
//! with the App's spec (image, replicas, selector), their status copied into the App's
//! status subresource, and a Normal `Synced` event. A missing child is created with a
//! controller ownerReference and the selector label [`APP_LABEL`]`=<app name>`; a
//! same-named child the App does not control is never adopted (a Warning
//! `ErrResourceExists` event, and retries); an empty child name skips that child. When the
//! spec renames a child, the new one is made, then the old one (which the App still
//! controls) deleted: an App never keeps two children of a kind. Changes of Apps and of
//! their children reconcile the App, resyncs do not; a deleted App's children go with it
//! (garbage collection).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::Resource;
use kube::core::NamespaceResourceScope;
use kubekit::clientset::{Clientset, DeleteOptions, PropagationPolicy, UpdateOptions};
use kubekit::controller::{Action, ReconcileError};
use kubekit::listers::Lister;
use kubekit::manager::{Manager, ManagerError, Object, Predicate};
use kubekit::meta::{controller_ref, is_controlled_by};
use kubekit::record::{EventRecorder, EventType};
use serde_json::{Value, json};

use crate::{App, AppStatus};

/// The controller's name: its event source, field manager and metrics label.
pub const CONTROLLER_NAME: &str = "app-controller";
/// The label that ties pods and Services to their App (its value is the App's name).
pub const APP_LABEL: &str = "appcontroller.k8s.io/app";
/// Reason of the event recorded after a successful sync.
pub const SUCCESS_SYNCED: &str = "Synced";
/// Reason of the event recorded when a child exists but is not controlled by the App.
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";

/// What the reconciler reads and writes with.
struct Ctx {
    clientset: Clientset,
    deployments: Lister<Deployment>,
    services: Lister<Service>,
    recorder: EventRecorder,
}

/// A child `K` of `app` named `name` with `spec`, labelled and controlled by the App.
fn child<K: Object>(app: &App, name: &str, spec: Value) -> serde_json::Result<K> {
    let (meta, labels) = (&app.metadata, json!({ APP_LABEL: app.metadata.name }));
    serde_json::from_value(
        json!({ "apiVersion": K::api_version(&()), "kind": K::kind(&()),
        "metadata": { "name": name, "namespace": meta.namespace, "labels": labels,
            "ownerReferences": [controller_ref(app)] },
        "spec": spec }),
    )
}

/// The Deployment `app` asks for.
fn new_deployment(app: &App) -> serde_json::Result<Deployment> {
    let (t, labels) = (
        &app.spec.deployment_template,
        json!({ APP_LABEL: app.metadata.name }),
    );
    let pod = json!({ "containers": [{ "name": "app-deploy-container", "image": t.image }] });
    let spec = json!({ "replicas": t.replicas, "selector": { "matchLabels": labels },
        "template": { "metadata": { "labels": labels }, "spec": pod } });
    child(app, &t.name, spec)
}

/// The Service `app` asks for: port 8080 to its pods.
fn new_service(app: &App) -> serde_json::Result<Service> {
    let selector = json!({ APP_LABEL: app.metadata.name });
    let spec = json!({ "selector": selector, "ports": [{ "name": "app-service", "port": 8080 }] });
    child(app, &app.spec.service_template.name, spec)
}

/// What the App decides in a running child: the fields at these JSON pointers.
const DEPLOYMENT_FIELDS: &[&str] = &["/spec/replicas", "/spec/template/spec/containers/0/image"];
const SERVICE_FIELDS: &[&str] = &["/spec/selector"];

/// `current` with `desired`'s values at `fields`; `None` when they already match.
fn drift<K: Object>(current: &K, desired: &K, fields: &[&str]) -> serde_json::Result<Option<K>> {
    let (mut next, desired) = (
        serde_json::to_value(current)?,
        serde_json::to_value(desired)?,
    );
    let mut changed = false;
    for field in fields {
        let (parent, key) = field.rsplit_once('/').unwrap_or_default();
        if let (Some(Value::Object(parent)), Some(want)) =
            (next.pointer_mut(parent), desired.pointer(field))
        {
            changed |= parent.insert(key.to_string(), want.clone()).as_ref() != Some(want);
        }
    }
    changed.then(|| serde_json::from_value(next)).transpose()
}

/// Brings `app`'s child `desired` in line: creates it, refuses it (not controlled by
/// `app`), or updates the `fields` that drifted; then deletes the other children of its
/// kind that `app` controls (the spec renamed the child). `None` when the spec names no
/// child (nothing is touched).
async fn sync_child<K: Object + Resource<Scope = NamespaceResourceScope>>(
    ctx: &Ctx,
    app: &App,
    lister: &Lister<K>,
    (desired, fields): (K, &[&str]),
) -> Result<Option<K>, ReconcileError> {
    let (ns, kind) = (
        app.metadata.namespace.as_deref().unwrap_or_default(),
        K::kind(&()),
    );
    let name = desired.meta().name.clone().unwrap_or_default();
    if name.is_empty() {
        tracing::warn!(app = ?app.metadata.name, "{} name must be specified", kind.to_lowercase());
        return Ok(None);
    }
    let client = ctx.clientset.resource::<K>(ns);
    let child = match lister.namespaced(ns).get(&name) {
        Err(e) if e.is_not_found() => {
            tracing::info!(app = ?app.metadata.name, child = %name, "creating {kind}");
            client.create(&desired, &write_options()).await?
        }
        current => {
            let current = current?;
            if !is_controlled_by(current.meta(), &app.metadata) {
                let message = format!("{kind} {name:?} already exists and is not managed by App");
                ctx.recorder
                    .event(app, EventType::Warning, ERR_RESOURCE_EXISTS, &message);
                return Err(message.into());
            }
            match drift(current.as_ref(), &desired, fields)? {
                None => K::clone(&current),
                Some(next) => {
                    tracing::info!(app = ?app.metadata.name, child = %name, "updating {kind} to the App's spec");
                    client.update(&next, &write_options()).await?
                }
            }
        }
    };
    // The children it controls under another name (the spec renamed them).
    let renamed = lister.controlled_by(&app.metadata);
    let renamed = renamed
        .iter()
        .map(|c| c.meta())
        .filter(|c| c.name.as_deref() != Some(name.as_str()) && c.deletion_timestamp.is_none());
    for old in renamed {
        let old_name = old.name.as_deref().unwrap_or_default();
        tracing::info!(app = ?app.metadata.name, child = %old_name, "deleting {kind} the App no longer names");
        let options = DeleteOptions::default()
            .precondition_uid(old.uid.as_deref().unwrap_or_default())
            .propagation_policy(PropagationPolicy::Background);
        if let Err(e) = client.delete(old_name, &options).await
            && !e.is_not_found()
        {
            return Err(e.into());
        }
    }
    Ok(Some(child))
}

fn write_options() -> UpdateOptions {
    UpdateOptions::default().field_manager(CONTROLLER_NAME)
}

async fn reconcile(app: Arc<App>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    if app.metadata.deletion_timestamp.is_some() {
        // Being deleted: the garbage collector removes its children; making them again
        // would fight it (Kubernetes' own controllers leave such objects alone too).
        return Ok(Action::Done);
    }
    let deploy = (new_deployment(&app)?, DEPLOYMENT_FIELDS);
    let deployment = sync_child(&ctx, &app, &ctx.deployments, deploy).await?;
    let service = (new_service(&app)?, SERVICE_FIELDS);
    let service = sync_child(&ctx, &app, &ctx.services, service).await?;
    let status = AppStatus {
        deployment_status: deployment.and_then(|d| d.status),
        service_status: service.and_then(|s| s.status),
    };
    if app.status.as_ref() != Some(&status) {
        let (mut next, ns) = (App::clone(&app), app.metadata.namespace.as_deref());
        next.status = Some(status);
        let apps = ctx.clientset.resource::<App>(ns.unwrap_or_default());
        apps.update_status(&next, &write_options()).await?;
    }
    let message = "App synced successfully";
    let recorder = &ctx.recorder;
    recorder.event(&*app, EventType::Normal, SUCCESS_SYNCED, message);
    Ok(Action::Done)
}

/// Adds the App controller to `mgr`: `workers` workers, at most `max_retries` retries.
pub fn add_to(mgr: &mut Manager, workers: usize, max_retries: usize) -> Result<(), ManagerError> {
    let ctx = Arc::new(Ctx {
        clientset: mgr.clientset().clone(),
        deployments: mgr.factory().apps_v1().deployments().lister(),
        services: mgr.factory().core_v1().services().lister(),
        recorder: mgr.event_recorder(CONTROLLER_NAME),
    });
    mgr.controller::<App>(CONTROLLER_NAME)
        .owns::<Deployment>()
        .owns::<Service>()
        .with_event_filter(Predicate::resource_version_changed())
        .workers(workers)
        .max_retries(max_retries)
        .build(reconcile, ctx)
}
