//! [`ListerWatcher`]: how a reflector lists and watches one resource (client-go's
//! `ListerWatcher` and `ListWatch`).
//!
//! # Contract
//!
//! - `list` returns one page of objects for the options given (the reflector sets the
//!   resourceVersion, page size and continue token); `watch` opens a watch from the
//!   options' resourceVersion.
//! - A [`ListWatch`] wraps a typed [`ResourceClient`], a [`DynamicResourceClient`] or a
//!   [`MetadataResourceClient`] and
//!   applies its tweak (label and field selectors, …) to the options of *every* list and
//!   watch, after the reflector has set its own fields, so the two always agree on what is
//!   selected.
//! - Implementations are shared between tasks (`Send + Sync`) and hold no lock across a
//!   request.
//!
//! ```no_run
//! # fn demo(rest: kubekit::rest::RestClient) {
//! use k8s_openapi::api::core::v1::Pod;
//! use kubekit::cache::ListWatch;
//! use kubekit::clientset::ResourceClient;
//!
//! // Pods labelled app=web in namespace demo.
//! let lw = ListWatch::new(ResourceClient::<Pod>::namespaced(rest, "demo"))
//!     .with_tweak(|opts| opts.label_selector = Some("app=web".into()));
//! # let _ = lw;
//! # }
//! ```

use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use kubekit_client::clientset::{ListOptions, ResourceClient, WatchStream};
use kubekit_client::dynamic::{DynamicResourceClient, Unstructured};
use kubekit_client::metadata::{MetadataResourceClient, PartialObjectMetadata};
use kubekit_client::rest::{ListPage, ObjectList, Result};

/// Lists and watches objects of type `K`; see the [module docs](self).
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// One page of objects.
    fn list(&self, opts: ListOptions) -> BoxFuture<'_, Result<ObjectList<K>>>;
    /// One page whose metadata is at hand before its items are decoded, so that the
    /// reflector asks for the next page while this one decodes. By default, the whole
    /// [`list`](Self::list) first.
    fn list_page(&self, opts: ListOptions) -> BoxFuture<'_, Result<ListPage<K>>>
    where
        K: Send + 'static,
    {
        Box::pin(async move { self.list(opts).await.map(ListPage::ready) })
    }
    /// A watch from `opts.resource_version`.
    fn watch(&self, opts: ListOptions) -> BoxFuture<'_, Result<WatchStream<K>>>;
    /// What is listed, for logs: e.g. `pods.v1 in namespace demo`.
    fn describe(&self) -> String;
}

/// A function that adjusts the options of every list and watch.
pub type TweakListOptions = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;

/// A [`ListerWatcher`] over a typed or dynamic client, with an optional tweak of the
/// options; see the [module docs](self).
#[derive(Clone)]
pub struct ListWatch<C> {
    client: C,
    tweak: Option<TweakListOptions>,
}

impl<C: fmt::Debug> fmt::Debug for ListWatch<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListWatch")
            .field("client", &self.client)
            .field("tweak", &self.tweak.is_some())
            .finish()
    }
}

impl<C> ListWatch<C> {
    /// Lists and watches everything `client` can see.
    pub fn new(client: C) -> Self {
        Self {
            client,
            tweak: None,
        }
    }

    /// Adjusts the options of every list and watch, e.g. to set a label selector.
    pub fn with_tweak(mut self, tweak: impl Fn(&mut ListOptions) + Send + Sync + 'static) -> Self {
        self.tweak = Some(Arc::new(tweak));
        self
    }

    /// Sets (or clears) the tweak from a shared function.
    pub fn with_shared_tweak(mut self, tweak: Option<TweakListOptions>) -> Self {
        self.tweak = tweak;
        self
    }

    fn tweaked(&self, mut opts: ListOptions) -> ListOptions {
        if let Some(tweak) = &self.tweak {
            tweak(&mut opts);
        }
        opts
    }
}

fn describe(resource: String, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("{resource} in namespace {ns}"),
        None => resource,
    }
}

impl<K> ListerWatcher<K> for ListWatch<ResourceClient<K>>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
{
    fn list(&self, opts: ListOptions) -> BoxFuture<'_, Result<ObjectList<K>>> {
        let opts = self.tweaked(opts);
        Box::pin(async move { self.client.list(&opts).await })
    }

    fn list_page(&self, opts: ListOptions) -> BoxFuture<'_, Result<ListPage<K>>> {
        let opts = self.tweaked(opts);
        Box::pin(async move { self.client.list_page(&opts).await })
    }

    fn watch(&self, opts: ListOptions) -> BoxFuture<'_, Result<WatchStream<K>>> {
        let opts = self.tweaked(opts);
        Box::pin(async move { self.client.watch(&opts).await })
    }

    fn describe(&self) -> String {
        describe(self.client.gvr().to_string(), self.client.namespace())
    }
}

impl ListerWatcher<Unstructured> for ListWatch<DynamicResourceClient> {
    fn list(&self, opts: ListOptions) -> BoxFuture<'_, Result<ObjectList<Unstructured>>> {
        let opts = self.tweaked(opts);
        Box::pin(async move { self.client.list(&opts).await })
    }

    fn watch(&self, opts: ListOptions) -> BoxFuture<'_, Result<WatchStream<Unstructured>>> {
        let opts = self.tweaked(opts);
        Box::pin(async move { self.client.watch(&opts).await })
    }

    fn describe(&self) -> String {
        describe(self.client.gvr().to_string(), self.client.namespace_name())
    }
}

impl ListerWatcher<PartialObjectMetadata> for ListWatch<MetadataResourceClient> {
    fn list(&self, opts: ListOptions) -> BoxFuture<'_, Result<ObjectList<PartialObjectMetadata>>> {
        let opts = self.tweaked(opts);
        Box::pin(async move { self.client.list(&opts).await })
    }

    fn list_page(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'_, Result<ListPage<PartialObjectMetadata>>> {
        let opts = self.tweaked(opts);
        Box::pin(async move { self.client.list_page(&opts).await })
    }

    fn watch(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<PartialObjectMetadata>>> {
        let opts = self.tweaked(opts);
        Box::pin(async move { self.client.watch(&opts).await })
    }

    fn describe(&self) -> String {
        let resource = format!("{} (metadata)", self.client.gvr());
        describe(resource, self.client.namespace_name())
    }
}
