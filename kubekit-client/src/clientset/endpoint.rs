//! The request core that typed and dynamic clients share: one resource (group, version,
//! resource name) in one namespace or in none, and a REST request per verb.
//!
//! # Contract
//!
//! - URLs follow the API layout: `/api/v1/...` for the core group, `/apis/<group>/<version>`
//!   otherwise, then `namespaces/<ns>/` when a namespace is set, the resource, the name and
//!   the subresource. A namespace of `""` means none: cluster-scoped, or every namespace
//!   (for list, watch and delete_collection).
//! - Names and namespaces are checked by the request builder: an empty name or one with
//!   `/` fails before anything is sent.
//! - Each verb returns the raw [`Response`]; callers decode it once into what they expect.
//! - Every request asks for JSON, unless the endpoint was given other media types
//!   (typed clients of built-in types ask for protobuf first, others for CBOR first
//!   unless the configuration says not to)
//!   ([`Endpoint::with_accept`]): one for answers that are an object (get, create,
//!   update, patch, delete, watch events), one for answers that are a list (list,
//!   delete_collection). The metadata client asks for `PartialObjectMetadata` that way.
//! - Create and update send the object in protobuf when the endpoint asks for protobuf
//!   (as client-go's typed clients do), in JSON otherwise; patches and delete options are
//!   JSON.

use std::any::Any;
use std::fmt;
use std::pin::Pin;

use futures_util::{Stream, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::options::{
    CreateOptions, DeleteOptions, GetOptions, ListOptions, PatchOptions, UpdateOptions, with_params,
};
use super::patch::PatchBody;
use crate::meta::GroupVersionResource;
use crate::rest::protobuf::protobuf_codec;
use crate::rest::{Error, Request, Response, RestClient, Result, WatchEvent};
use kubekit_protobuf::DecodeOptions;

/// The events of a watch, as they arrive; see
/// [`ResourceClient::watch`](super::ResourceClient::watch).
///
/// The stream ends when the server closes the watch (at its `timeoutSeconds`) or the
/// connection drops; an event that does not decode is an `Err` item and the stream goes
/// on. An `ERROR` event (e.g. 410 Gone) is an item like any other.
pub type WatchStream<K> = Pin<Box<dyn Stream<Item = Result<WatchEvent<K>>> + Send>>;

/// The `Accept` headers of an endpoint's requests; see the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Accept {
    /// For answers that are one object, and watches.
    pub(crate) object: &'static str,
    /// For answers that are a list.
    pub(crate) list: &'static str,
}

impl Accept {
    /// Plain JSON, the objects as stored.
    pub(crate) const JSON: Accept = Accept {
        object: "application/json",
        list: "application/json",
    };

    /// Protobuf where the server has it, else JSON, as client-go's typed clients ask.
    pub(crate) const PROTOBUF: Accept = Accept {
        object: "application/vnd.kubernetes.protobuf, application/json",
        list: "application/vnd.kubernetes.protobuf, application/json",
    };

    /// CBOR where the server serves it, else JSON, as client-go's dynamic client asks
    /// with `ClientsAllowCBOR`.
    pub(crate) const CBOR: Accept = Accept {
        object: "application/cbor, application/json;q=0.9",
        list: "application/cbor, application/json;q=0.9",
    };

    /// What a client of `rest` asks for: protobuf when `protobuf` (the type has a
    /// protobuf form) and the client's configuration allows it, else CBOR when that
    /// allows it, else JSON.
    pub(crate) fn preferred(rest: &RestClient, protobuf: bool) -> Accept {
        if protobuf && rest.protobuf() {
            Accept::PROTOBUF
        } else if rest.cbor() {
            Accept::CBOR
        } else {
            Accept::JSON
        }
    }
}

/// One resource in one namespace (or none); see the [module docs](self).
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    rest: RestClient,
    gvr: GroupVersionResource,
    namespace: Option<String>,
    accept: Accept,
    decode_options: DecodeOptions,
}

impl Endpoint {
    /// `namespace` `""` means cluster-scoped or all namespaces.
    pub(crate) fn new(rest: RestClient, gvr: GroupVersionResource, namespace: &str) -> Self {
        Self {
            rest,
            gvr,
            namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
            accept: Accept::JSON,
            decode_options: DecodeOptions::default(),
        }
    }

    /// The same endpoint asking for `accept` instead of JSON.
    pub(crate) fn with_accept(mut self, accept: Accept) -> Self {
        self.accept = accept;
        self
    }

    /// The same endpoint, its answers decoded leaving out what `options` say.
    pub(crate) fn with_decode_options(mut self, options: DecodeOptions) -> Self {
        self.decode_options = options;
        self
    }

    pub(crate) fn rest(&self) -> &RestClient {
        &self.rest
    }

    pub(crate) fn gvr(&self) -> &GroupVersionResource {
        &self.gvr
    }

    pub(crate) fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// Tells the client's write observer that a write stored the object `name` (in
    /// `namespace`) at `resource_version`; an answer without them is not told.
    pub(crate) fn observe_write(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        resource_version: Option<&str>,
    ) {
        if let (Some(name), Some(resource_version)) = (name, resource_version) {
            self.rest.observe_write(&crate::rest::Written {
                group: &self.gvr.group,
                resource: &self.gvr.resource,
                namespace: namespace.unwrap_or_default(),
                name,
                resource_version,
            });
        }
    }

    /// `Debug` of a client named `client` over this endpoint: its resource and namespace.
    pub(crate) fn debug(&self, client: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(client)
            .field("resource", &self.gvr.to_string())
            .field("namespace", &self.namespace())
            .finish_non_exhaustive()
    }

    /// The same resource in `namespace`, asking for the same media types.
    pub(crate) fn in_namespace(&self, namespace: &str) -> Self {
        Self::new(self.rest.clone(), self.gvr.clone(), namespace)
            .with_accept(self.accept)
            .with_decode_options(self.decode_options)
    }

    /// A request about the list of objects (list, delete_collection).
    fn list_target(&self, req: Request) -> Request {
        self.target(req, None, None).accept(self.accept.list)
    }

    /// A request about one object, or a watch.
    fn target(&self, req: Request, name: Option<&str>, subresource: Option<&str>) -> Request {
        let mut req = req
            .group_version(&self.gvr.group, &self.gvr.version)
            .accept(self.accept.object)
            .decode_options(self.decode_options);
        if let Some(ns) = &self.namespace {
            req = req.namespace(ns);
        }
        req = req.resource(&self.gvr.resource);
        if let Some(name) = name {
            req = req.name(name);
        }
        if let Some(sub) = subresource {
            req = req.subresource(sub);
        }
        req
    }

    /// `req` carrying `obj`: in protobuf when this endpoint asks for protobuf and `T` has
    /// its message at hand (what client-go's typed clients send; with the `protobuf-writes`
    /// feature, on by default), in JSON otherwise.
    fn with_body<T: Serialize + Any>(&self, req: Request, obj: &T) -> Request {
        let protobuf = (self.accept == Accept::PROTOBUF)
            .then(|| protobuf_codec::<T>()?.encode(obj))
            .flatten();
        match protobuf {
            Some(bytes) => req.body_bytes(bytes, kubekit_protobuf::CONTENT_TYPE),
            None => req.body(obj),
        }
    }

    pub(crate) async fn create<T: Serialize + Any>(
        &self,
        obj: &T,
        opts: &CreateOptions,
    ) -> Result<Response> {
        let req = self.with_body(self.target(self.rest.post(), None, None), obj);
        with_params(req, &opts.params()).send().await
    }

    pub(crate) async fn get(
        &self,
        name: &str,
        subresource: Option<&str>,
        opts: &GetOptions,
    ) -> Result<Response> {
        let req = self.target(self.rest.get(), Some(name), subresource);
        with_params(req, &opts.params()).send().await
    }

    pub(crate) async fn list(&self, opts: &ListOptions) -> Result<Response> {
        let req = self.list_target(self.rest.get());
        with_params(req, &opts.list_params()).send().await
    }

    pub(crate) async fn watch<K: DeserializeOwned + Send + 'static>(
        &self,
        opts: &ListOptions,
    ) -> Result<WatchStream<K>> {
        let req = self.target(self.rest.get(), None, None);
        let events = with_params(req, &opts.watch_params()).watch::<K>().await?;
        Ok(events.boxed())
    }

    pub(crate) async fn update<T: Serialize + Any>(
        &self,
        name: Option<&str>,
        subresource: Option<&str>,
        obj: &T,
        opts: &UpdateOptions,
    ) -> Result<Response> {
        let name = self.require_name(name, "update")?;
        let req = self.with_body(self.target(self.rest.put(), Some(name), subresource), obj);
        with_params(req, &opts.params()).send().await
    }

    pub(crate) async fn patch<P: Serialize>(
        &self,
        name: &str,
        subresource: Option<&str>,
        patch: &PatchBody<P>,
        opts: &PatchOptions,
    ) -> Result<Response> {
        let has_manager = opts.field_manager.as_deref().is_some_and(|m| !m.is_empty());
        if patch.is_apply() && !has_manager {
            return Err(Error::Request(format!(
                "server-side apply of {} {name:?} needs PatchOptions::field_manager",
                self.gvr
            )));
        }
        if opts.force && !patch.is_apply() {
            return Err(Error::Request(format!(
                "patch of {} {name:?}: force is allowed only with server-side apply",
                self.gvr
            )));
        }
        let req = self
            .target(self.rest.patch(patch.patch_type()), Some(name), subresource)
            .body(patch.body());
        with_params(req, &opts.params()).send().await
    }

    pub(crate) async fn delete(&self, name: &str, opts: &DeleteOptions) -> Result<Response> {
        self.target(self.rest.delete(), Some(name), None)
            .body(opts)
            .send()
            .await
    }

    pub(crate) async fn delete_collection(
        &self,
        opts: &DeleteOptions,
        list: &ListOptions,
    ) -> Result<Response> {
        let req = self.list_target(self.rest.delete()).body(opts);
        with_params(req, &list.list_params()).send().await
    }

    fn require_name<'a>(&self, name: Option<&'a str>, verb: &str) -> Result<&'a str> {
        name.filter(|n| !n.is_empty()).ok_or_else(|| {
            Error::Request(format!(
                "{verb} of {}: the object has no metadata.name",
                self.gvr
            ))
        })
    }
}
