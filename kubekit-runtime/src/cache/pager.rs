//! [`ListPager`]: a list in pages, as an async stream (client-go's `tools/pager`).
//!
//! # Contract
//!
//! - **Pages.** [`ListPager::pages`] asks for [`page_size`](ListPager::page_size) objects
//!   per request (500 by default, as client-go; `opts.limit`, when the caller set it, wins;
//!   0 asks for everything in one request) and follows each page's `continue` token until
//!   a page comes without one. Each page is yielded as it arrives, with its
//!   resourceVersion.
//! - **Versions.** The caller's `resource_version` and `resource_version_match` go on the
//!   first request only: a continue request carries neither (kube-apiserver refuses a
//!   continue token together with a resourceVersion), only the token, the page size and
//!   the caller's selectors and timeout.
//! - **Expired continue token** (410, e.g. etcd compacted between two pages): with
//!   [`full_list_if_expired`](ListPager::full_list_if_expired) on (the default, client-go's
//!   `FullListIfExpired`), the pager lists the whole collection again in one request
//!   without a limit, at the caller's original resourceVersion, and yields it as one last
//!   page with [`Page::restarted`] set. **The items already yielded are not retracted**: a
//!   consumer that builds a set or a map must start over when it sees `restarted` (the
//!   restarted page holds the whole list). With the fallback off, or when the first
//!   request itself fails, or when the full list fails too, the error is the stream's last
//!   item.
//! - **Whole lists.** [`ListPager::list`] joins the pages into one [`ObjectList`] whose
//!   metadata is the first page's (without a `continue` token); after a restart the full
//!   list replaces what had been gathered, so the result never holds an object twice.
//! - **Each item.** [`ListPager::each_item`] (client-go's `EachListItem`) and
//!   [`ListPager::each_item_async`] call a function for every object in order and stop at
//!   the first error it returns. As in client-go they never restart: an object handed to
//!   the function cannot be taken back, so an expired continue token ends them with the
//!   410 error whatever [`full_list_if_expired`](ListPager::full_list_if_expired) says.
//! - Objects the server sent that did not decode are in each page's
//!   [`skipped`](Page::skipped) (and the joined list's), not errors of the stream.
//! - Pages are asked for one at a time, when the stream is polled. The
//!   [`Reflector`](crate::cache::Reflector) keeps its own paging: it asks for the next page
//!   while the current one decodes ([`ListerWatcher::list_page`]), and after an expired
//!   continue token it lists again *in pages* from the latest state, so that a relist
//!   never holds the whole collection in one response; this pager's fallback is one
//!   unpaged request, as client-go's.
//!
//! ```no_run
//! # async fn demo(rest: kubekit::rest::RestClient) -> kubekit::rest::Result<()> {
//! use futures_util::StreamExt;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::cache::{ListPager, ListWatch};
//! use kubekit::clientset::{ListOptions, ResourceClient};
//!
//! let pager = ListPager::new(ListWatch::new(ResourceClient::<ConfigMap>::namespaced(
//!     rest, "demo",
//! )))
//! .page_size(100);
//! let mut names = Vec::new();
//! let mut pages = std::pin::pin!(pager.pages(ListOptions::default()));
//! while let Some(page) = pages.next().await {
//!     let page = page?;
//!     if page.restarted {
//!         // The continue token expired: this page is the whole list.
//!         names.clear();
//!     }
//!     names.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
//! }
//! // Or all at once:
//! let all = pager.list(ListOptions::default()).await?;
//! assert!(all.metadata.continue_.is_none());
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::{Stream, StreamExt, stream};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;

use crate::cache::ListerWatcher;
use kubekit_client::clientset::ListOptions;
use kubekit_client::rest::{Error, ObjectList, Result};

/// client-go's default page size (`defaultPageSize`).
pub const DEFAULT_PAGE_SIZE: u32 = 500;

type PageFn<K> =
    Arc<dyn Fn(ListOptions) -> BoxFuture<'static, Result<ObjectList<K>>> + Send + Sync>;

/// Lists objects of type `K` in pages; see the [module docs](self).
pub struct ListPager<K> {
    page_fn: PageFn<K>,
    page_size: u32,
    full_list_if_expired: bool,
}

impl<K> Clone for ListPager<K> {
    fn clone(&self) -> Self {
        Self {
            page_fn: self.page_fn.clone(),
            page_size: self.page_size,
            full_list_if_expired: self.full_list_if_expired,
        }
    }
}

impl<K> fmt::Debug for ListPager<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListPager")
            .field("page_size", &self.page_size)
            .field("full_list_if_expired", &self.full_list_if_expired)
            .finish_non_exhaustive()
    }
}

/// One page of a [`ListPager::pages`] stream.
#[derive(Debug)]
pub struct Page<K> {
    /// `metadata` of the page: its resourceVersion and `continue` token.
    pub metadata: ListMeta,
    /// The shard selector the server applied, as in
    /// [`ObjectList::shard_selector`](kubekit_client::rest::ObjectList::shard_selector).
    pub shard_selector: Option<String>,
    /// The page's objects that decoded, in the server's order.
    pub items: Vec<K>,
    /// Objects of the page that did not decode, each with the reason.
    pub skipped: Vec<Error>,
    /// The continue token expired and this page is the whole list, listed again in one
    /// request: the items of the earlier pages are **not** retracted, so a consumer that
    /// gathers them must drop what it has and start over from this page.
    pub restarted: bool,
}

impl<K> Page<K> {
    /// The page's resourceVersion (`""` if the server sent none).
    pub fn resource_version(&self) -> &str {
        self.metadata.resource_version.as_deref().unwrap_or("")
    }
}

/// Where a [`ListPager::pages`] stream stands.
enum State {
    /// The next request, and whether it follows a continue token.
    Next(ListOptions, bool),
    Done,
}

impl<K: Send + 'static> ListPager<K> {
    /// A pager over a [`ListerWatcher`]'s [`list`](ListerWatcher::list).
    pub fn new<L: ListerWatcher<K>>(lister: L) -> Self {
        let lister = Arc::new(lister);
        Self::from_page_fn(Arc::new(move |opts| {
            let lister = lister.clone();
            Box::pin(async move { lister.list(opts).await })
        }))
    }

    /// A pager over a function that lists one page (client-go's `SimplePageFunc`), e.g.
    /// `move |opts| { let c = client.clone(); async move { c.list(&opts).await } }`.
    pub fn from_fn<F, Fut>(f: F) -> Self
    where
        F: Fn(ListOptions) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ObjectList<K>>> + Send + 'static,
    {
        Self::from_page_fn(Arc::new(move |opts| Box::pin(f(opts))))
    }

    fn from_page_fn(page_fn: PageFn<K>) -> Self {
        Self {
            page_fn,
            page_size: DEFAULT_PAGE_SIZE,
            full_list_if_expired: true,
        }
    }

    /// Objects per request when the caller's options set no `limit` (default
    /// [`DEFAULT_PAGE_SIZE`]); 0 lists everything in one request.
    pub fn page_size(mut self, n: u32) -> Self {
        self.page_size = n;
        self
    }

    /// Whether an expired continue token makes [`pages`](Self::pages) and
    /// [`list`](Self::list) list everything again in one request (default true, client-go's
    /// `FullListIfExpired`) rather than fail.
    pub fn full_list_if_expired(mut self, on: bool) -> Self {
        self.full_list_if_expired = on;
        self
    }

    /// The pages of the list `opts` asks for, following continue tokens; see the
    /// [module docs](self) for page sizes, versions and what an expired token does. The
    /// stream ends after the last page or after its first error.
    pub fn pages(&self, opts: ListOptions) -> impl Stream<Item = Result<Page<K>>> + Send + 'static {
        self.pages_with(opts, self.full_list_if_expired)
    }

    fn pages_with(
        &self,
        mut opts: ListOptions,
        full_list_if_expired: bool,
    ) -> impl Stream<Item = Result<Page<K>>> + Send + 'static {
        let page_fn = self.page_fn.clone();
        if opts.limit.is_none() && self.page_size > 0 {
            opts.limit = Some(self.page_size);
        }
        let continued = opts
            .continue_token
            .as_deref()
            .is_some_and(|c| !c.is_empty());
        // The caller's version, for the full list after an expiry.
        let requested = (opts.resource_version.clone(), opts.resource_version_match);
        stream::unfold(State::Next(opts, continued), move |state| {
            let page_fn = page_fn.clone();
            let requested = requested.clone();
            async move {
                let State::Next(opts, continued) = state else {
                    return None;
                };
                let (list, restarted) = match page_fn(opts.clone()).await {
                    Ok(list) => (list, false),
                    Err(e) if continued && full_list_if_expired && expired(&e) => {
                        tracing::info!("list continuation expired ({e}); listing everything again");
                        let full = ListOptions {
                            limit: None,
                            continue_token: None,
                            resource_version: requested.0,
                            resource_version_match: requested.1,
                            ..opts.clone()
                        };
                        match page_fn(full).await {
                            Ok(list) => (list, true),
                            Err(e) => return Some((Err(e), State::Done)),
                        }
                    }
                    Err(e) => return Some((Err(e), State::Done)),
                };
                let token = list.metadata.continue_.clone().filter(|c| !c.is_empty());
                let next = match token {
                    // A full list is the whole list, as in client-go.
                    Some(token) if !restarted => State::Next(
                        ListOptions {
                            continue_token: Some(token),
                            resource_version: None,
                            resource_version_match: None,
                            ..opts
                        },
                        true,
                    ),
                    _ => State::Done,
                };
                let page = Page {
                    metadata: list.metadata,
                    shard_selector: list.shard_selector,
                    items: list.items,
                    skipped: list.skipped,
                    restarted,
                };
                Some((Ok(page), next))
            }
        })
    }

    /// The whole list as one [`ObjectList`]: the pages joined, with the first page's
    /// metadata and shard selector and no `continue` token; after an expired continue token, the full list
    /// replaces what had been gathered.
    pub async fn list(&self, opts: ListOptions) -> Result<ObjectList<K>> {
        let mut pages = std::pin::pin!(self.pages(opts));
        let mut out: Option<ObjectList<K>> = None;
        while let Some(page) = pages.next().await {
            let page = page?;
            match &mut out {
                Some(list) if !page.restarted => {
                    list.items.extend(page.items);
                    list.skipped.extend(page.skipped);
                }
                _ => {
                    out = Some(ObjectList {
                        metadata: page.metadata,
                        shard_selector: page.shard_selector,
                        items: page.items,
                        skipped: page.skipped,
                    })
                }
            }
        }
        let mut list = out.unwrap_or_default();
        list.metadata.continue_ = None;
        list.metadata.remaining_item_count = None;
        Ok(list)
    }

    /// Calls `f` for every object of the list, in order, a page at a time (client-go's
    /// `EachListItem`); stops at the first error of `f` or of a request, and returns it.
    /// Never restarts after an expired continue token (see the [module docs](self)).
    pub async fn each_item<E, F>(&self, opts: ListOptions, mut f: F) -> Result<(), E>
    where
        E: From<Error>,
        F: FnMut(K) -> Result<(), E>,
    {
        let mut pages = std::pin::pin!(self.pages_with(opts, false));
        while let Some(page) = pages.next().await {
            for item in page?.items {
                f(item)?;
            }
        }
        Ok(())
    }

    /// [`each_item`](Self::each_item) with an async function: each call is awaited before
    /// the next.
    pub async fn each_item_async<E, F, Fut>(&self, opts: ListOptions, mut f: F) -> Result<(), E>
    where
        E: From<Error>,
        F: FnMut(K) -> Fut,
        Fut: Future<Output = Result<(), E>>,
    {
        let mut pages = std::pin::pin!(self.pages_with(opts, false));
        while let Some(page) = pages.next().await {
            for item in page?.items {
                f(item).await?;
            }
        }
        Ok(())
    }
}

/// A continue token the server no longer honours.
fn expired(e: &Error) -> bool {
    e.is_resource_expired() || e.is_gone()
}

#[cfg(test)]
mod tests;
