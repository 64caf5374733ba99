//! The reflector's objects with their type erased: one copy of the reflector's code (the
//! list, the streaming list, the watch loop, the shard and the backoff) serves every
//! resource type, where a generic reflector would be compiled again for each. What stays
//! per type is here and small: the lister-watcher's items and events, wrapped in an `Arc` as
//! they come, the store's objects, unwrapped as they go, and the transform.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use kube::Resource;

use super::{ReflectorOptions, ReflectorStore, TransformFunc};
use crate::cache::key::KeyError;
use crate::cache::listwatch::ListerWatcher;
use crate::cache::object::{AnyObject, Object, erase, typed};
use kubekit_client::clientset::{ListOptions, WatchStream};
use kubekit_client::rest::{ListPage, ObjectList, Result, WatchEvent};

fn erase_list<K: AnyObject>(list: ObjectList<K>) -> ObjectList<Object> {
    ObjectList {
        metadata: list.metadata,
        shard_selector: list.shard_selector,
        items: list.items.into_iter().map(erase).collect(),
        skipped: list.skipped,
    }
}

fn erase_event<K: AnyObject>(event: WatchEvent<K>) -> WatchEvent<Object> {
    match event {
        WatchEvent::Added(obj) => WatchEvent::Added(erase(obj)),
        WatchEvent::Modified(obj) => WatchEvent::Modified(erase(obj)),
        WatchEvent::Deleted(obj) => WatchEvent::Deleted(erase(obj)),
        WatchEvent::Bookmark(bookmark) => WatchEvent::Bookmark(bookmark),
        WatchEvent::Error(status) => WatchEvent::Error(status),
    }
}

/// A lister-watcher of `K` whose objects come out erased.
pub(super) struct ErasedListerWatcher<K>(pub(super) Arc<dyn ListerWatcher<K>>);

impl<K: Resource + Send + Sync + 'static> ListerWatcher<Object> for ErasedListerWatcher<K> {
    fn list(&self, opts: ListOptions) -> BoxFuture<'_, Result<ObjectList<Object>>> {
        Box::pin(self.0.list(opts).map(|list| list.map(erase_list)))
    }

    fn list_page(&self, opts: ListOptions) -> BoxFuture<'_, Result<ListPage<Object>>> {
        Box::pin(self.0.list_page(opts).map(|page| {
            page.map(|page| ListPage {
                metadata: page.metadata,
                shard_selector: page.shard_selector,
                items: Box::pin(page.items.map(|list| list.map(erase_list))),
            })
        }))
    }

    fn watch(&self, opts: ListOptions) -> BoxFuture<'_, Result<WatchStream<Object>>> {
        Box::pin(self.0.watch(opts).map(|stream| {
            stream
                .map(|s| -> WatchStream<Object> { Box::pin(s.map(|event| event.map(erase_event))) })
        }))
    }

    fn describe(&self) -> String {
        self.0.describe()
    }
}

/// A store of `K` that takes erased objects.
pub(super) struct ErasedStore<K>(pub(super) Arc<dyn ReflectorStore<K>>);

impl<K: Resource + Send + Sync + 'static> ReflectorStore<dyn AnyObject> for ErasedStore<K> {
    fn add(&self, obj: Object) -> std::result::Result<(), KeyError> {
        self.0.add(typed(obj).ok_or(KeyError)?)
    }
    fn update(&self, obj: Object) -> std::result::Result<(), KeyError> {
        self.0.update(typed(obj).ok_or(KeyError)?)
    }
    fn delete(&self, obj: Object) -> std::result::Result<(), KeyError> {
        self.0.delete(typed(obj).ok_or(KeyError)?)
    }
    fn replace_begin(&self) {
        self.0.replace_begin();
    }
    fn replace_part(&self, part: Vec<Object>) -> Vec<KeyError> {
        let mut errors = Vec::new();
        let part = part
            .into_iter()
            .filter_map(|obj| {
                let typed = typed(obj);
                if typed.is_none() {
                    errors.push(KeyError);
                }
                typed
            })
            .collect();
        errors.extend(self.0.replace_part(part));
        errors
    }
    fn replace_forget(&self, key: &str) {
        self.0.replace_forget(key);
    }
    fn replace_end(&self) {
        self.0.replace_end();
    }
    fn resync(&self) {
        self.0.resync();
    }
    fn known(&self, key: &str) -> Option<Object> {
        self.0.known(key).map(|obj| obj as Object)
    }
    fn is_full(&self) -> bool {
        self.0.is_full()
    }
    fn wait_for_room(&self) -> BoxFuture<'_, ()> {
        self.0.wait_for_room()
    }
}

/// `opts` for the erased core: the same options, the transform taking and giving erased
/// objects.
pub(super) fn erase_options<K>(opts: ReflectorOptions<K>) -> ReflectorOptions<Object>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    ReflectorOptions {
        name: opts.name,
        page_size: opts.page_size,
        min_watch_timeout: opts.min_watch_timeout,
        silence_grace: opts.silence_grace,
        resync_period: opts.resync_period,
        should_resync: opts.should_resync,
        use_streaming_list: opts.use_streaming_list,
        drop_managed_fields: opts.drop_managed_fields,
        transform: opts.transform.map(erase_transform),
        watch_error_handler: opts.watch_error_handler,
        backoff: opts.backoff,
        metrics: opts.metrics,
        shard: opts.shard,
        shard_control: opts.shard_control,
    }
}

/// `transform` over erased objects. The object is taken out of its `Arc` (which the
/// reflector has not shared yet), so the transform gets it without a copy.
fn erase_transform<K>(transform: TransformFunc<K>) -> TransformFunc<Object>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    Arc::new(move |obj: Object| {
        // The core catches a panic of the transform and skips the object: a reflector's
        // objects are all of its type, so this one never fires.
        let obj = typed::<K>(obj).expect("a reflector's objects are of its type");
        erase(transform(Arc::unwrap_or_clone(obj)))
    })
}
