//! Event handlers: what a [`SharedIndexInformer`](super::SharedIndexInformer) calls when
//! its cache changes (client-go's `ResourceEventHandler` and `ResourceEventHandlerFuncs`).
//!
//! A handler is called from its own thread, one notification at a time, in the order the
//! cache changed. Handlers receive the cache's own `Arc`s: clone the object before
//! changing it. A handler should be quick (typically: put a key on a work queue); a slow
//! one only delays itself, never the informer or the other handlers.
//!
//! A handler that never blocks can say so ([`ResourceEventHandler::may_block`],
//! [`ResourceEventHandlerFuncs::non_blocking`]): it is then called on the informer's own
//! task, in the same order, which spares the wake-up of its thread for every
//! notification (a quarter of the compact informer's CPU per watch event in
//! `bench/run.sh informer --real`, where events arrive one at a time). [`controller::enqueue_handler`](crate::controller::enqueue_handler) and the
//! manager's handlers are non-blocking.
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kubekit::cache::{ResourceEventHandlerFuncs, meta_namespace_key};
//!
//! let handler = ResourceEventHandlerFuncs::<Pod>::new()
//!     .on_add(|pod, _initial| println!("add {:?}", meta_namespace_key(pod.as_ref())))
//!     .on_update(|_old, new| println!("update {:?}", new.metadata.name))
//!     .on_delete(|pod| println!("delete {:?}", pod.object().metadata.name));
//! # let _ = handler;
//! ```

use std::fmt;
use std::sync::Arc;

use super::key::MaybeTombstone;

/// Receives the changes of an informer's cache; every method has an empty default.
pub trait ResourceEventHandler<K>: Send + Sync + 'static {
    /// An object appeared in the cache. `is_in_initial_list` is true for objects of the
    /// first list, and for the replay a handler registered late receives.
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }

    /// An object changed; also called on resync with `old` and `new` the same object.
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }

    /// An object left the cache: its last state, or a tombstone when the deletion was
    /// learned from a relist.
    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        let _ = obj;
    }

    /// Whether a call may block or take long (the default: yes), in which case the
    /// handler gets a thread of its own. A handler that answers no is called on the
    /// informer's task: while it runs the informer processes nothing else, and it must
    /// not add or remove handlers of the informer that calls it (that would deadlock).
    fn may_block(&self) -> bool {
        true
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&MaybeTombstone<K>) + Send + Sync>;

/// A [`ResourceEventHandler`] made of closures; a missing closure ignores its event.
pub struct ResourceEventHandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
    may_block: bool,
}

impl<K> fmt::Debug for ResourceEventHandlerFuncs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerFuncs")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .field("may_block", &self.may_block)
            .finish()
    }
}

impl<K> Default for ResourceEventHandlerFuncs<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
            may_block: true,
        }
    }
}

impl<K> ResourceEventHandlerFuncs<K> {
    /// A handler that ignores everything until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Called for adds, with `is_in_initial_list`.
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Called for updates (and resyncs) with the old and new object.
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Called for deletes with the object or its tombstone.
    pub fn on_delete(mut self, f: impl Fn(&MaybeTombstone<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }

    /// Declares that the closures never block nor take long: the informer calls them on
    /// its own task instead of a thread of their own (see
    /// [`ResourceEventHandler::may_block`]).
    pub fn non_blocking(mut self) -> Self {
        self.may_block = false;
        self
    }
}

impl<K: Send + Sync + 'static> ResourceEventHandler<K> for ResourceEventHandlerFuncs<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }

    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }

    fn may_block(&self) -> bool {
        self.may_block
    }
}
