//! Objects with their type erased: one copy of the cache's machinery (the reflector, the
//! delta FIFO, the informer's handler buffers) serves every resource type, where generic code
//! would be compiled again for each.
//! An object travels as an `Arc<dyn AnyObject>`, made from an `Arc<K>` and back without a
//! copy.

use std::any::Any;
use std::sync::Arc;

use kube::Resource;

use super::key::{DeletedFinalStateUnknown, MaybeTombstone};
use super::{MetaRef, meta_ref};

/// An object of any resource type, as the cache's machinery handles it.
pub(crate) trait AnyObject: Send + Sync + 'static {
    /// Its metadata.
    fn meta(&self) -> MetaRef<'_>;
    /// Drops its `metadata.managedFields`.
    fn drop_managed_fields(&mut self);
    /// The object, to be downcast to its type.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<K: Resource + Send + Sync + 'static> AnyObject for K {
    fn meta(&self) -> MetaRef<'_> {
        meta_ref(self)
    }

    fn drop_managed_fields(&mut self) {
        self.meta_mut().managed_fields = None;
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// An object whose type is erased.
pub(crate) type Object = Arc<dyn AnyObject>;

/// `obj` in an `Arc`, its type erased.
pub(crate) fn erase<K: AnyObject>(obj: K) -> Object {
    Arc::new(obj)
}

/// `obj` as the `K` it was made from; `None` for another type, which the cache's
/// adapters never mix.
pub(crate) fn typed<K: Send + Sync + 'static>(obj: Object) -> Option<Arc<K>> {
    obj.into_any().downcast().ok()
}

/// `object`, its type erased.
pub(crate) fn erase_tombstone<K: AnyObject>(
    object: MaybeTombstone<K>,
) -> MaybeTombstone<dyn AnyObject> {
    match object {
        MaybeTombstone::Object(obj) => MaybeTombstone::Object(obj),
        MaybeTombstone::Tombstone(t) => MaybeTombstone::Tombstone(DeletedFinalStateUnknown {
            key: t.key,
            obj: t.obj,
        }),
    }
}

/// `object` as the `K` it was made from (see [`typed`]).
pub(crate) fn typed_tombstone<K: Send + Sync + 'static>(
    object: MaybeTombstone<dyn AnyObject>,
) -> Option<MaybeTombstone<K>> {
    Some(match object {
        MaybeTombstone::Object(obj) => MaybeTombstone::Object(typed(obj)?),
        MaybeTombstone::Tombstone(t) => MaybeTombstone::Tombstone(DeletedFinalStateUnknown {
            key: t.key,
            obj: typed(t.obj)?,
        }),
    })
}
