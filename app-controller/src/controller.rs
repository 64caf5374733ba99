//! The App controller: for every App, a Deployment and a Service it controls, kept in line
//! with the App's spec (image, replicas, selector) by server-side apply, their status
//! copied into the App's status subresource (applied too), and a Normal `Synced` event.
//! Each child is applied whole, with a controller ownerReference and the selector label
//! [`APP_LABEL`]`=<app name>`, by the field manager [`CONTROLLER_NAME`] with `force`: what
//! the App decides is the App's, whoever changed it since (no 409 to retry), and fields
//! others set and the App does not decide (a scaler's annotations, defaults) stay theirs.
//! A same-named child the cache shows the App does not control is never touched (a
//! Warning `ErrResourceExists` event, and retries); one made by someone else in the moment
//! between the cache's view and the apply would be adopted, as with any applying
//! controller. An empty child name skips that child. When the spec renames a child, the
//! new one is applied, then the old one (which the App still controls) deleted: an App
//! never keeps two children of a kind. Changes of Apps and of their children reconcile
//! the App, resyncs do not; a deleted App's children go with it (garbage collection).
//! [`add_to`] declares what the reconcile writes, so that the manager's
//! [`rbac`](kubekit::manager::Manager::rbac) covers it.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kubekit::applyconfigurations::api::{apps::v1 as apps, core::v1 as core};
use kubekit::applyconfigurations::apimachinery::pkg::apis::meta::v1 as meta;
use kubekit::applyconfigurations::{ApplyConfiguration, configuration_of};
use kubekit::clientset::PropagationPolicy;
use kubekit::manager::Verb;
use kubekit::meta::Object;
use kubekit::prelude::*;

use crate::{App, AppApply, AppStatus};

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

/// The label that selects `app`'s pods.
fn selector(app: &App) -> [(&'static str, String); 1] {
    [(APP_LABEL, app.name_any())]
}

/// The Deployment `app` asks for.
fn deployment(app: &App) -> apps::Deployment {
    let t = &app.spec.deployment_template;
    let container = core::Container::default()
        .name("app-deploy-container")
        .image(&t.image);
    let pod = core::PodTemplateSpec::default()
        .metadata(meta::ObjectMeta::default().labels(selector(app)))
        .spec(core::PodSpec::default().containers([container]));
    let spec = apps::DeploymentSpec::default()
        .replicas(t.replicas)
        .selector(meta::LabelSelector::default().match_labels(selector(app)))
        .template(pod);
    apps::Deployment::new(&t.name, app.namespace().unwrap_or_default())
        .labels(selector(app))
        .spec(spec)
}

/// The Service `app` asks for, port 8080 to its pods.
fn service(app: &App) -> core::Service {
    let port = core::ServicePort::default().name("app-service").port(8080);
    let spec = core::ServiceSpec::default()
        .selector(selector(app))
        .ports([port]);
    core::Service::new(
        &app.spec.service_template.name,
        app.namespace().unwrap_or_default(),
    )
    .labels(selector(app))
    .spec(spec)
}

/// Applies `desired`, a child of `app` (refused when the cache shows one the App does not
/// control), then deletes the other children of its kind that `app` controls (the spec
/// renamed the child). `None` when the spec names no child (nothing is touched).
async fn sync_child<K, A>(
    ctx: &Ctx,
    app: &App,
    lister: &Lister<K>,
    desired: A,
) -> Result<Option<K>, ReconcileError>
where
    K: Object + Resource<Scope = NamespaceResourceScope>,
    A: ApplyConfiguration,
{
    let ns = app.metadata.namespace.as_deref().unwrap_or_default();
    let kind = K::kind(&());
    let name = desired.name().unwrap_or_default().to_string();
    let name = name.as_str();
    if name.is_empty() {
        tracing::warn!(app = ?app.metadata.name, "{} name must be specified", kind.to_lowercase());
        return Ok(None);
    }
    if let Some(current) = lister.namespaced(ns).get_opt(name)?
        && !is_controlled_by(current.meta(), &app.metadata)
    {
        let message = format!("{kind} {name:?} already exists and is not managed by App");
        ctx.recorder
            .event(app, EventType::Warning, ERR_RESOURCE_EXISTS, &message);
        return Err(message.into());
    }
    let client = ctx.clientset.resource::<K>(ns);
    tracing::info!(app = ?app.metadata.name, child = %name, "applying {kind}");
    let child = client.apply_owned(app, desired, CONTROLLER_NAME).await?;
    // The children it controls under another name (the spec renamed them).
    let controlled = lister.controlled_by(&app.metadata);
    let renamed = controlled.iter().map(|c| c.meta());
    for old in renamed.filter(|c| c.name.as_deref() != Some(name) && c.deletion_timestamp.is_none())
    {
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

/// Logs `reconcile ended` when dropped: at the end of a reconcile however it ends
/// (returned, failed, or dropped by its worker), in the reconcile's span. With `reconcile
/// started`, a replica's log says when it reconciled which App.
struct LogEnd;

impl Drop for LogEnd {
    fn drop(&mut self) {
        tracing::info!("reconcile ended");
    }
}

async fn reconcile(app: Arc<App>, ctx: Arc<Ctx>) -> Result<ReconcileAction, ReconcileError> {
    tracing::info!("reconcile started");
    let _end = LogEnd;
    if app.metadata.deletion_timestamp.is_some() {
        // Being deleted: the garbage collector removes its children; making them again
        // would fight it (Kubernetes' own controllers leave such objects alone too).
        return Ok(ReconcileAction::Done);
    }
    let deployment = sync_child(&ctx, &app, &ctx.deployments, deployment(&app)).await?;
    let service = sync_child(&ctx, &app, &ctx.services, service(&app)).await?;
    let status = AppStatus {
        deployment_status: deployment.and_then(|d| d.status),
        service_status: service.and_then(|s| s.status),
    };
    if app.status.as_ref() != Some(&status) {
        // The manager the children are applied by too, taking over the App's status.
        let config = AppApply::default().status(configuration_of(&status)?);
        let apps = ctx.clientset.for_object(&*app);
        apps.apply_status_of(&app, config, CONTROLLER_NAME).await?;
    }
    let message = "App synced successfully";
    ctx.recorder
        .event(&*app, EventType::Normal, SUCCESS_SYNCED, message);
    Ok(ReconcileAction::Done)
}

/// Adds the App controller to `mgr`: `workers` workers, at most `max_retries` retries.
pub fn add_to(mgr: &mut Manager, workers: usize, max_retries: usize) -> Result<(), ManagerError> {
    let ctx = Arc::new(Ctx {
        clientset: mgr.clientset().clone(),
        deployments: mgr.factory().apps_v1().deployments().lister(),
        services: mgr.factory().core_v1().services().lister(),
        recorder: mgr.event_recorder(CONTROLLER_NAME),
    });
    // What `reconcile` writes: each child applied, and deleted when the spec renames it;
    // the App's status applied. Its reads come from the listers (informers).
    let children = [Verb::Create, Verb::Patch, Verb::Delete];
    mgr.controller::<App>(CONTROLLER_NAME)
        .owns::<Deployment>()
        .owns::<Service>()
        .writes::<Deployment>(children)
        .writes::<Service>(children)
        .writes_status([Verb::Patch])
        .with_event_filter(Predicate::resource_version_changed())
        .workers(workers)
        .max_retries(max_retries)
        .build(reconcile, ctx)
}
