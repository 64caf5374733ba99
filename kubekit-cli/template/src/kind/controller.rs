//! The __KIND__ controller: for every __KIND__, a ConfigMap `__SNAKE__-<its name>` holding
//! its message, applied with server-side apply and owned by it; a `Ready` condition in its
//! status; and a finalizer that deletes the ConfigMap before the __KIND__ goes.

use std::sync::Arc;

use kubekit::applyconfigurations::api::core::v1 as core;
use kubekit::applyconfigurations::configuration_of;
use kubekit::k8s_openapi::api::core::v1::ConfigMap;
use kubekit::manager::Verb;
use kubekit::prelude::*;
use kubekit::rest::Error;

use super::{__KIND__, __KIND__Apply};

/// The controller's name: its field manager, event source and metrics label.
pub const CONTROLLER_NAME: &str = "__NAME__-__SNAKE__";
/// The finalizer that deletes a __KIND__'s ConfigMap before the __KIND__ goes.
pub const FINALIZER: &str = "__GROUP__/cleanup";

/// What the reconciler writes with.
struct Ctx {
    clientset: Clientset,
    recorder: EventRecorder,
}

async fn reconcile(
    object: Arc<__KIND__>,
    ctx: Arc<Ctx>,
) -> Result<ReconcileAction, ReconcileError> {
    let ctx = &ctx;
    let action = finalizer(&ctx.clientset, FINALIZER, object, |event| async move {
        match event {
            FinalizerEvent::Apply(object) => apply(ctx, &object).await,
            FinalizerEvent::Cleanup(object) => cleanup(ctx, &object).await,
        }
    })
    .await?;
    Ok(action)
}

/// The name of `object`'s ConfigMap: `__SNAKE__-<its name>`, apart from other kinds'.
pub fn config_map_name(object: &__KIND__) -> String {
    format!("__SNAKE__-{}", object.name_any())
}

/// Applies the ConfigMap, then the `Ready` condition.
async fn apply(ctx: &Ctx, object: &__KIND__) -> Result<ReconcileAction, Error> {
    let ns = object.namespace().unwrap_or_default();
    let message = [("message", object.spec.message.clone())];
    let config_map = core::ConfigMap::new(config_map_name(object), &ns).data(message);
    let config_maps = ctx.clientset.core_v1().config_maps(&ns);
    config_maps
        .apply_owned(object, config_map, CONTROLLER_NAME)
        .await?;

    let mut status = object.status.clone().unwrap_or_default();
    let ready = condition("Ready")
        .status(true)
        .reason("Applied")
        .message("the ConfigMap holds the message")
        .observed_generation(object.metadata.generation);
    if set_status_condition(&mut status.conditions, ready) {
        let status = configuration_of(&status)
            .map_err(|e| Error::Request(format!("the status as an apply configuration: {e}")))?;
        let config = __KIND__Apply::default().status(status);
        let objects = ctx.clientset.for_object(object);
        objects
            .apply_status_of(object, config, CONTROLLER_NAME)
            .await?;
        ctx.recorder.event(
            object,
            EventType::Normal,
            "Ready",
            "the ConfigMap holds the message",
        );
    }
    Ok(ReconcileAction::Done)
}

/// Deletes the ConfigMap (gone already is fine: cleanup may run again after a crash).
async fn cleanup(ctx: &Ctx, object: &__KIND__) -> Result<ReconcileAction, Error> {
    let ns = object.namespace().unwrap_or_default();
    let config_maps = ctx.clientset.core_v1().config_maps(&ns);
    match config_maps
        .delete(&config_map_name(object), &DeleteOptions::default())
        .await
    {
        Err(e) if !e.is_not_found() => Err(e),
        _ => Ok(ReconcileAction::Done),
    }
}

/// Adds the __KIND__ controller to `mgr`, with `workers` workers.
pub fn add_to(mgr: &mut Manager, workers: usize) -> Result<(), ManagerError> {
    let ctx = Arc::new(Ctx {
        clientset: mgr.clientset().clone(),
        recorder: mgr.event_recorder(CONTROLLER_NAME),
    });
    // What `reconcile` writes, for `Manager::rbac` (and `--print-rbac`): the finalizer
    // (a patch of the __KIND__), its status, and its ConfigMap (applied, deleted).
    mgr.controller::<__KIND__>(CONTROLLER_NAME)
        .owns::<ConfigMap>()
        .writes::<__KIND__>([Verb::Patch])
        .writes_status([Verb::Patch])
        .writes::<ConfigMap>([Verb::Create, Verb::Patch, Verb::Delete])
        .workers(workers)
        .build(reconcile, ctx)
}
