//! Lists: [`ObjectList`] (a list's items and metadata) and [`ListPage`] (a page whose items
//! may still be decoding); a JSON or CBOR list's metadata, with the shard selector the
//! server echoed; a list's items decoded one by one, on every core for a large page.

use std::fmt;

use futures_util::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kubekit_protobuf::DecodeOptions;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::cbor;
use super::error::{Error, Result};
use super::response::{cbor_error, json_without};
use super::watch_stream::decoders;

/// A list of objects: the `items` of a `*List` response and its list metadata (the
/// resourceVersion to watch from, the `continue` token of the next page).
#[derive(Debug)]
pub struct ObjectList<K> {
    /// `metadata` of the list.
    pub metadata: ListMeta,
    /// `metadata.shardInfo.selector`: the shard selector the server applied to the list
    /// (see `kubekit::cache::ShardSelector`); `None` when it applied none —
    /// none was asked for, or the server ignores the parameter. Read whatever Kubernetes
    /// version k8s-openapi was built for (its `ListMeta` has the field from 1.36 on).
    pub shard_selector: Option<String>,
    /// The objects that decoded.
    pub items: Vec<K>,
    /// Items that did not decode, each with the reason; they are left out of `items`.
    pub skipped: Vec<Error>,
}

impl<K> Default for ObjectList<K> {
    fn default() -> Self {
        Self {
            metadata: ListMeta::default(),
            shard_selector: None,
            items: Vec::new(),
            skipped: Vec::new(),
        }
    }
}

/// A page of a list whose items may still be decoding: its metadata (the resourceVersion,
/// the `continue` token of the next page) is at hand at once, so the next page can be
/// asked for while this one decodes.
pub struct ListPage<K> {
    /// `metadata` of the list.
    pub metadata: ListMeta,
    /// The shard selector the server applied, as in [`ObjectList::shard_selector`].
    pub shard_selector: Option<String>,
    /// The page's objects, once decoded.
    pub items: BoxFuture<'static, Result<ObjectList<K>>>,
}

impl<K> fmt::Debug for ListPage<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListPage")
            .field("metadata", &self.metadata)
            .field("shard_selector", &self.shard_selector)
            .finish_non_exhaustive()
    }
}

impl<K: Send + 'static> ListPage<K> {
    /// A page already decoded.
    pub fn ready(list: ObjectList<K>) -> Self {
        Self {
            metadata: list.metadata.clone(),
            shard_selector: list.shard_selector.clone(),
            items: Box::pin(std::future::ready(Ok(list))),
        }
    }
}

#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

/// What a list's `metadata` holds beside [`ListMeta`]: the `shardInfo` the server echoes.
#[derive(Deserialize)]
struct Echo {
    #[serde(rename = "shardInfo")]
    shard_info: Option<ShardInfo>,
}

#[derive(Deserialize)]
struct ShardInfo {
    selector: Option<String>,
}

/// A list's metadata and its non-empty `shardInfo.selector`, from both as decoded.
fn list_metadata(metadata: Option<ListMeta>, echo: Option<Echo>) -> (ListMeta, Option<String>) {
    let selector = echo
        .and_then(|e| e.shard_info?.selector)
        .filter(|s| !s.is_empty());
    (metadata.unwrap_or_default(), selector)
}

/// A JSON list's `metadata` and its `shardInfo.selector` (see
/// [`ObjectList::shard_selector`]), from the raw `metadata` value.
pub(super) fn json_list_metadata(
    raw: Option<&RawValue>,
) -> serde_json::Result<(ListMeta, Option<String>)> {
    let Some(raw) = raw else {
        return Ok((ListMeta::default(), None));
    };
    Ok(list_metadata(
        serde_json::from_str(raw.get())?,
        serde_json::from_str(raw.get())?,
    ))
}

/// A CBOR `*List` body, its items not decoded yet.
pub(super) struct CborList<'a> {
    pub(super) metadata: ListMeta,
    pub(super) shard_selector: Option<String>,
    /// Each item's bytes.
    pub(super) items: Vec<&'a [u8]>,
}

/// A CBOR list's `metadata` and `shardInfo.selector`, and its items' bytes.
pub(super) fn cbor_list_parts<'a>(body: &'a [u8], what: &str) -> Result<CborList<'a>> {
    let list_error = |e| cbor_error(format!("list of {what}"), e, body);
    let entries = cbor::map_entries(body).map_err(list_error)?;
    let (metadata, selector) = match cbor::entry(&entries, "metadata") {
        Some(raw) => list_metadata(
            cbor::from_slice(raw).map_err(list_error)?,
            cbor::from_slice(raw).map_err(list_error)?,
        ),
        None => (ListMeta::default(), None),
    };
    let items = match cbor::entry(&entries, "items") {
        Some(raw) if raw != [0xf6] => cbor::array_items(raw).map_err(list_error)?,
        _ => Vec::new(),
    };
    Ok(CborList {
        metadata,
        shard_selector: selector,
        items,
    })
}

/// [`decode_list`](super::decode_list), each item without `metadata.managedFields` when
/// `options` skip them.
pub(super) fn decode_json_list<K: DeserializeOwned + Send>(
    body: &[u8],
    what: &str,
    options: DecodeOptions,
) -> Result<ObjectList<K>> {
    let list_error = |e| Error::decode(format!("list of {what}"), e, body);
    let raw: RawList<'_> = serde_json::from_slice(body).map_err(list_error)?;
    let (metadata, shard_selector) = json_list_metadata(raw.metadata).map_err(list_error)?;
    let items: Vec<&[u8]> = raw
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|item| item.get().as_bytes())
        .collect();
    Ok(decode_items(
        metadata,
        shard_selector,
        &items,
        &|item, i| {
            let json = json_without(item, &[], options);
            super::json::from_slice(&json)
                .map_err(|e| Error::decode(format!("item {i} of {what}"), e, &json))
        },
    ))
}

/// Decodes a CBOR `*List` body item by item, on every core like
/// [`decode_list`](super::decode_list).
pub(super) fn decode_cbor_list<K: DeserializeOwned + Send>(
    body: &[u8],
    what: &str,
    options: DecodeOptions,
) -> Result<ObjectList<K>> {
    let list = cbor_list_parts(body, what)?;
    Ok(decode_items(
        list.metadata,
        list.shard_selector,
        &list.items,
        &|item, i| {
            cbor::from_slice_with(item, options)
                .map_err(|e| cbor_error(format!("item {i} of {what}"), e, item))
        },
    ))
}

/// Items per thread below which a page is decoded on one thread: a thread costs tens of
/// microseconds, one Pod about as much.
const ITEMS_PER_DECODE_THREAD: usize = 64;

fn decode_threads(items: usize) -> usize {
    decoders().min(items / ITEMS_PER_DECODE_THREAD).max(1)
}

/// Decodes a list's `items` with `decode_one` (given an item and its index).
///
/// A large page is decoded on every core: building typed objects (allocation) costs far
/// more than reading the encoding, so the items are split into one run per core, decoded
/// on short-lived scoped threads, and put back in order. An item that does not decode is
/// logged and kept in [`ObjectList::skipped`].
pub(super) fn decode_items<K: Send>(
    metadata: ListMeta,
    shard_selector: Option<String>,
    items: &[&[u8]],
    // Not generic: one copy of this function per type, whatever decodes the items.
    decode_one: &(dyn Fn(&[u8], usize) -> Result<K> + Sync),
) -> ObjectList<K> {
    let run = items.len().div_ceil(decode_threads(items.len())).max(1);
    let runs: Vec<&[&[u8]]> = items.chunks(run).collect();
    // The first run's list becomes the whole list: room for every item.
    let parts: Vec<parking_lot::Mutex<ObjectList<K>>> = (0..runs.len())
        .map(|i| {
            let capacity = if i == 0 { items.len() } else { 0 };
            parking_lot::Mutex::new(ObjectList {
                items: Vec::with_capacity(capacity),
                ..ObjectList::default()
            })
        })
        .collect();
    on_threads(runs.len(), &|i| {
        let mut part = parts[i].lock();
        for (j, item) in runs[i].iter().enumerate() {
            match decode_one(item, i * run + j) {
                Ok(obj) => part.items.push(obj),
                Err(err) => {
                    tracing::warn!(error = %err, "skipping an object that does not decode");
                    part.skipped.push(err);
                }
            }
        }
    });
    let mut parts = parts.into_iter().map(parking_lot::Mutex::into_inner);
    let mut list = parts.next().unwrap_or_default();
    for part in parts {
        list.items.extend(part.items);
        list.skipped.extend(part.skipped);
    }
    list.metadata = metadata;
    list.shard_selector = shard_selector;
    list
}

/// Calls `work` with `0..runs`: `work(0)` on this thread, the others on short-lived scoped
/// threads (on this one too, after `work(0)`, if a thread cannot be started). A panic in
/// any is resumed here. Not generic, so compiled once rather than for every type decoded.
fn on_threads(runs: usize, work: &(dyn Fn(usize) + Sync)) {
    if runs <= 1 {
        (0..runs).for_each(work);
        return;
    }
    std::thread::scope(|scope| {
        let spawned: Vec<_> = (1..runs)
            .map(|i| {
                let thread = std::thread::Builder::new().name("kubekit-decode".into());
                (i, thread.spawn_scoped(scope, move || work(i)))
            })
            .collect();
        work(0);
        for (i, thread) in spawned {
            match thread {
                Ok(handle) => {
                    if let Err(panic) = handle.join() {
                        std::panic::resume_unwind(panic);
                    }
                }
                Err(e) => {
                    tracing::debug!("no decode thread ({e}); decoding on this one");
                    work(i);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::decode_list;
    use crate::rest::leading::read_metadata;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn a_json_list_gives_the_shard_selector_the_server_echoed() {
        let selector =
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
        let body = format!(
            r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"7","shardInfo":{{"selector":"{selector}"}}}},"items":[{{"metadata":{{"name":"a"}}}}]}}"#
        );
        let list =
            decode_list::<k8s_openapi::api::core::v1::ConfigMap>(body.as_bytes(), "cms").unwrap();
        assert_eq!(list.shard_selector.as_deref(), Some(selector));
        assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(list.items.len(), 1);
        // The page path reads the metadata alone.
        let (metadata, echoed) = read_metadata::<Box<RawValue>>(body.as_bytes())
            .and_then(|raw| json_list_metadata(raw.as_deref()))
            .unwrap();
        assert_eq!(
            (metadata.resource_version.as_deref(), echoed.as_deref()),
            (Some("7"), Some(selector))
        );
        for plain in [
            r#"{"metadata":{"resourceVersion":"7"},"items":[]}"#,
            r#"{"metadata":{"shardInfo":{"selector":""}},"items":[]}"#,
            r#"{"metadata":null,"items":[]}"#,
            r#"{"items":[]}"#,
        ] {
            let list =
                decode_list::<k8s_openapi::api::core::v1::ConfigMap>(plain.as_bytes(), "cms")
                    .unwrap();
            assert_eq!(list.shard_selector, None, "{plain}");
        }
        let bad = r#"{"metadata":{"shardInfo":{"selector":5}},"items":[]}"#;
        assert!(
            decode_list::<k8s_openapi::api::core::v1::ConfigMap>(bad.as_bytes(), "cms").is_err()
        );
    }

    #[test]
    fn a_list_decoded_in_runs_keeps_its_order_and_skips_only_the_bad_items() {
        let texts: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
        let items: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        let metadata = ListMeta {
            resource_version: Some("7".into()),
            ..ListMeta::default()
        };
        let list = decode_items(metadata, Some("shard".into()), &items, &|item, index| {
            let item: usize = std::str::from_utf8(item).unwrap().parse().unwrap();
            assert_eq!(item, index, "each item comes with its own index");
            match item % 100 {
                7 => Err(Error::Request(format!("item {item}"))),
                _ => Ok(item * 2),
            }
        });
        let kept: Vec<usize> = (0..1000).filter(|i| i % 100 != 7).map(|i| i * 2).collect();
        assert_eq!(list.items, kept);
        let skipped: Vec<String> = list.skipped.iter().map(|e| e.to_string()).collect();
        assert_eq!(skipped.len(), 10, "{skipped:?}");
        assert!(skipped.iter().all(|e| e.contains("item ")), "{skipped:?}");
        assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(list.shard_selector.as_deref(), Some("shard"));
    }

    #[test]
    fn on_threads_works_every_run_exactly_once() {
        for runs in [0, 1, 2, 5] {
            let seen = parking_lot::Mutex::new(Vec::new());
            on_threads(runs, &|i| seen.lock().push(i));
            let mut seen = seen.into_inner();
            seen.sort_unstable();
            assert_eq!(seen, (0..runs).collect::<Vec<_>>());
        }
    }

    #[test]
    fn list_with_a_malformed_item_keeps_the_others_and_reports_it() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"abc"},
            "items":[{"metadata":{"name":"a"}},{"metadata":{"name":["not","a","string"]}},{"metadata":{"name":"c"}}]}"#;
        let list = decode_list::<Pod>(body, "pods in namespace \"demo\"")
            .expect("the list itself is valid");
        let names: Vec<_> = list
            .items
            .iter()
            .filter_map(|p| p.metadata.name.as_deref())
            .collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(list.metadata.continue_.as_deref(), Some("abc"));
        assert_eq!(list.skipped.len(), 1);
        let msg = list.skipped[0].to_string();
        assert!(
            msg.contains("item 1 of pods in namespace \"demo\""),
            "{msg}"
        );
    }
}
