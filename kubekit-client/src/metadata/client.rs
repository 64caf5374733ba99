//! [`MetadataClient`]: the metadata of objects of any resource, named by
//! group/version/resource at run time (client-go's `metadata.Interface`).
//!
//! # Contract
//!
//! - `metadata.resource(&gvr)` is the resource across the cluster (cluster-scoped
//!   resources, or every namespace of a namespaced one); `.namespace(ns)` narrows it to
//!   one namespace. As with the dynamic client, the wrong form fails on the server (404).
//! - Every request asks the API server for metadata only, as client-go's metadata client
//!   does: `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,
//!   application/json` for an object (get, patch, delete, and each event of a watch),
//!   `…;as=PartialObjectMetadataList;…` for a list (list, delete_collection). The objects
//!   then come as `meta.k8s.io/v1` `PartialObjectMetadata`
//!   ([`is_partial`](PartialObjectMetadata::is_partial)).
//! - A server that does not negotiate (an old or aggregated API server) answers with the
//!   whole object instead: its metadata is kept, the rest skipped while decoding, and
//!   `apiVersion`/`kind` are left empty, as in client-go. An answer that is neither is an
//!   [`Error::Decode`](crate::rest::Error::Decode) saying so (for a list item or a watch
//!   event: that item is skipped and reported, the rest goes on).
//! - A delete answers with the object's metadata when the server sends the object, or with
//!   its `Status` ([`DeleteResponse`]).
//!
//! ```no_run
//! # async fn demo(rest: kubekit::rest::RestClient) -> Result<(), Box<dyn std::error::Error>> {
//! use kubekit::clientset::{ListOptions, PatchBody, PatchOptions};
//! use kubekit::meta::GroupVersionResource;
//! use kubekit::metadata::MetadataClient;
//! use serde_json::json;
//!
//! let metadata = MetadataClient::from_rest_client(rest);
//! let secrets = metadata.resource(&GroupVersionResource::new("", "v1", "secrets"));
//! for s in secrets.namespace("default").list(&ListOptions::default()).await?.items {
//!     println!("{:?} {:?}", s.metadata.name, s.metadata.labels); // no data came
//! }
//! let patch = PatchBody::Merge(json!({"metadata": {"labels": {"rotated": "true"}}}));
//! secrets.namespace("default").patch("db", &patch, &PatchOptions::default()).await?;
//! # Ok(())
//! # }
//! ```

use futures_util::StreamExt;
use serde::Serialize;

use super::object::{PartialObjectMetadata, checked, checked_event, checked_list};
use crate::clientset::{
    Accept, DeleteOptions, DeleteResponse, GetOptions, ListOptions, PatchBody, PatchOptions,
    WatchStream, decode_delete,
};
use crate::dynamic::client::resource_clients;
use crate::rest::{ListPage, ObjectList, Response, Result};

/// What the metadata client asks for (client-go's, without protobuf).
const ACCEPT: Accept = Accept {
    object: "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
    list: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
};

resource_clients! {
    /// The entry point of the metadata client; see the [module docs](self).
    client: MetadataClient,
    /// The verbs on the metadata of one resource, cluster-wide or in one namespace; see
    /// the [module docs](self).
    resource_client: MetadataResourceClient,
    accept: |_| ACCEPT,
    name: "metadata",
}

impl MetadataResourceClient {
    /// The metadata of the object named `name`.
    pub async fn get(&self, name: &str, opts: &GetOptions) -> Result<PartialObjectMetadata> {
        let response = self.endpoint.get(name, None, opts).await?;
        decode(&response)
    }

    /// The metadata of the objects matching `opts` (one page when `limit` is set).
    pub async fn list(&self, opts: &ListOptions) -> Result<ObjectList<PartialObjectMetadata>> {
        let response = self.endpoint.list(opts).await?;
        decode_list(&response)
    }

    /// [`list`](Self::list) as a [`ListPage`]: its list metadata at once, its items
    /// decoded on tokio's blocking pool once awaited.
    pub async fn list_page(&self, opts: &ListOptions) -> Result<ListPage<PartialObjectMetadata>> {
        let response = self.endpoint.list(opts).await?;
        let what = response.what().to_string();
        let page = response.into_list_page()?;
        let items = page.items;
        Ok(ListPage {
            metadata: page.metadata,
            shard_selector: page.shard_selector,
            items: Box::pin(async move { Ok(checked_list(items.await?, &what)) }),
        })
    }

    /// Watches the metadata of the objects matching `opts`.
    pub async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<PartialObjectMetadata>> {
        let what = self.endpoint.gvr().to_string();
        let events = self.endpoint.watch::<PartialObjectMetadata>(opts).await?;
        Ok(Box::pin(events.map(move |event| {
            event.and_then(|event| checked_event(event, &what))
        })))
    }

    /// Patches the object named `name` (any patch type; a merge patch of
    /// `{"metadata": {"labels": …}}` is the usual one) and returns its metadata.
    pub async fn patch<P: Serialize>(
        &self,
        name: &str,
        patch: &PatchBody<P>,
        opts: &PatchOptions,
    ) -> Result<PartialObjectMetadata> {
        let response = self.endpoint.patch(name, None, patch, opts).await?;
        decode(&response)
    }

    /// Deletes the object named `name`; see [`DeleteResponse`].
    pub async fn delete(
        &self,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteResponse<PartialObjectMetadata>> {
        let response = self.endpoint.delete(name, opts).await?;
        decode_delete(&response, decode)
    }

    /// Deletes every object matching `list`.
    pub async fn delete_collection(
        &self,
        opts: &DeleteOptions,
        list: &ListOptions,
    ) -> Result<DeleteResponse<ObjectList<PartialObjectMetadata>>> {
        let response = self.endpoint.delete_collection(opts, list).await?;
        decode_delete(&response, decode_list)
    }
}

/// One object's metadata; see [`checked`].
fn decode(response: &Response) -> Result<PartialObjectMetadata> {
    checked(response.decode()?, || response.what().to_string())
}

/// A list's metadata; see [`checked_list`].
fn decode_list(response: &Response) -> Result<ObjectList<PartialObjectMetadata>> {
    Ok(checked_list(response.decode_list()?, response.what()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::GroupVersionResource;
    use crate::rest::WatchEvent;
    use crate::rest::test_server::{Reply, TestServer};

    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"demo","uid":"u1","resourceVersion":"7"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}"#;

    /// A server that does not negotiate: whole Pods, whatever was asked for.
    fn whole_objects(line: &str) -> Reply {
        let path = line.split_once(' ').map_or("", |(_, p)| p);
        if path.contains("watch=true") {
            Reply::json(
                200,
                format!(
                    "{{\"type\":\"ADDED\",\"object\":{POD}}}\n{{\"type\":\"MODIFIED\",\"object\":{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}}}}}}\n"
                ),
            )
        } else if path.starts_with("/api/v1/namespaces/demo/pods/web") {
            Reply::json(200, POD)
        } else if path.starts_with("/api/v1/namespaces/demo/pods/gone") {
            Reply::json(
                200,
                r#"{"kind":"Status","apiVersion":"v1","status":"Success"}"#,
            )
        } else if path.starts_with("/api/v1/namespaces/demo/pods/odd") {
            Reply::json(
                200,
                r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","rows":[]}"#,
            )
        } else {
            Reply::json(
                200,
                format!(
                    r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"9"}},"items":[{POD},{{"spec":{{}}}}]}}"#
                ),
            )
        }
    }

    #[tokio::test]
    async fn requests_negotiate_metadata_and_whole_objects_are_reduced_to_theirs() {
        let server = TestServer::start(whole_objects).await;
        let pods = MetadataClient::from_rest_client(server.client())
            .resource(&GroupVersionResource::new("", "v1", "pods"))
            .namespace("demo");

        let pod = pods.get("web", &GetOptions::default()).await.expect("get");
        assert_eq!(pod.metadata.uid.as_deref(), Some("u1"));
        assert_eq!((pod.api_version.as_str(), pod.kind.as_str()), ("", ""));
        let patched = pods
            .patch(
                "web",
                &PatchBody::Merge(serde_json::json!({})),
                &PatchOptions::default(),
            )
            .await
            .expect("patch");
        assert_eq!(patched, pod);

        let list = pods.list(&ListOptions::default()).await.expect("list");
        assert_eq!(list.metadata.resource_version.as_deref(), Some("9"));
        assert_eq!(list.items, std::slice::from_ref(&pod));
        assert_eq!(list.skipped.len(), 1, "the item without metadata");
        let page = pods.list_page(&ListOptions::default()).await.expect("page");
        assert_eq!(
            page.items.await.expect("items").items,
            std::slice::from_ref(&pod)
        );

        let events: Vec<_> = pods
            .watch(&ListOptions::default())
            .await
            .expect("watch")
            .collect()
            .await;
        assert_eq!(events.len(), 2);
        assert!(matches!(&events[0], Ok(WatchEvent::Added(p)) if *p == pod));
        let err = events[1].as_ref().expect_err("a Status is no object");
        assert!(
            err.to_string().contains("MODIFIED event of pods.v1"),
            "{err}"
        );

        let deleted = pods
            .delete("web", &DeleteOptions::default())
            .await
            .expect("delete");
        assert_eq!(deleted.object(), Some(&pod));
        let gone = pods
            .delete("gone", &DeleteOptions::default())
            .await
            .expect("delete");
        assert!(gone.status().is_some());
        let all = pods
            .delete_collection(&DeleteOptions::default(), &ListOptions::default())
            .await
            .expect("delete collection");
        assert_eq!(all.object().map(|l| l.items.len()), Some(1));
        let err = pods
            .get("odd", &GetOptions::default())
            .await
            .expect_err("a Table");
        assert!(
            err.to_string()
                .contains("neither a PartialObjectMetadata nor an object with metadata"),
            "{err}"
        );

        let object = ACCEPT.object;
        let list = ACCEPT.list;
        assert_eq!(
            server.accepts(),
            [
                object, object, list, list, object, object, object, list, object
            ]
        );
        assert_eq!(
            object,
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
        );
    }
}
