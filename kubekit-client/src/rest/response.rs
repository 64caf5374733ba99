//! [`Response`]: a successful response read whole, and its body decoded into an object
//! or a list from JSON, protobuf or CBOR as the server sent it; [`decode`] and
//! [`decode_list`] for JSON bodies at hand.

use std::borrow::Cow;

use bytes::Bytes;
use http::StatusCode;
use kubekit_protobuf::DecodeOptions;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::cbor;
use super::error::{Error, Result};
use super::leading::read_metadata;
use super::list::{
    ListPage, ObjectList, cbor_list_parts, decode_cbor_list, decode_json_list, json_list_metadata,
};
use super::protobuf::{
    codec_for, decode_protobuf, decode_protobuf_list, is_protobuf, protobuf_list_parts,
};

/// A successful response, read whole.
#[derive(Debug, Clone)]
pub struct Response {
    pub(super) status: StatusCode,
    pub(super) content_type: String,
    /// The `Content-Encoding` the body came in (`gzip`); `body` is decoded already.
    pub(super) content_encoding: Option<String>,
    pub(super) body: Bytes,
    pub(super) warnings: Vec<String>,
    pub(super) what: String,
    pub(super) decode_options: DecodeOptions,
}

impl Response {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The `Content-Type` the server sent (empty if none).
    pub fn content_type(&self) -> &str {
        &self.content_type
    }

    /// The `Content-Encoding` the server sent the body in (`gzip` when it compressed it,
    /// see [`RestConfig::compression`](super::RestConfig::compression));
    /// [`body`](Self::body) is decompressed already.
    pub fn content_encoding(&self) -> Option<&str> {
        self.content_encoding.as_deref()
    }

    /// The raw body.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The server's warnings about this request (the text of each `Warning` header).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What the response answers, for messages: `pods "web" in namespace "demo" from GET
    /// /api/v1/...`.
    pub(crate) fn what(&self) -> &str {
        &self.what
    }

    /// Whether the body is protobuf (`application/vnd.kubernetes.protobuf`), which the
    /// server sends when the request asked for it and the type has a protobuf form.
    pub fn is_protobuf(&self) -> bool {
        is_protobuf(&self.content_type)
    }

    /// Whether the body is CBOR (`application/cbor`), which kube-apiserver sends with its
    /// `CBORServingAndStorage` feature when the request asked for it
    /// ([`RestConfig::cbor`](super::RestConfig::cbor)).
    pub fn is_cbor(&self) -> bool {
        cbor::is_cbor(&self.content_type)
    }

    /// Decodes the body as one `T`, from JSON, protobuf or CBOR as the server sent it.
    pub fn decode<T: DeserializeOwned + 'static>(&self) -> Result<T> {
        if self.is_protobuf() {
            return decode_protobuf(&self.body, &self.what, self.decode_options);
        }
        if self.is_cbor() {
            return cbor::from_slice(&self.body).map_err(|e| cbor_error(&self.what, e, &self.body));
        }
        decode(&self.body, &self.what)
    }

    /// Decodes the body as a list of `K`, from JSON, protobuf or CBOR as the server sent
    /// it. Items are decoded one by one: an item that does not decode is reported in
    /// [`ObjectList::skipped`] (and logged) and the others are kept; a body that is not a
    /// list at all is an error.
    pub fn decode_list<K: DeserializeOwned + Send + 'static>(&self) -> Result<ObjectList<K>> {
        if self.is_protobuf() {
            return decode_protobuf_list(&self.body, &self.what, self.decode_options);
        }
        if self.is_cbor() {
            return decode_cbor_list(&self.body, &self.what, self.decode_options);
        }
        decode_json_list(&self.body, &self.what, self.decode_options)
    }

    /// A `*List` response as a [`ListPage`]: its metadata read at once (without scanning
    /// the items), its items decoded on tokio's blocking pool once awaited.
    pub fn into_list_page<K>(self) -> Result<ListPage<K>>
    where
        K: DeserializeOwned + Send + 'static,
    {
        let (metadata, shard_selector) = if self.is_protobuf() {
            let codec = codec_for::<K>(&self.what)?;
            let parts = protobuf_list_parts(codec, &self.body, &self.what)?;
            (parts.metadata, parts.shard_selector)
        } else if self.is_cbor() {
            let list = cbor_list_parts(&self.body, &self.what)?;
            (list.metadata, list.shard_selector)
        } else {
            read_metadata::<Box<RawValue>>(&self.body)
                .and_then(|raw| json_list_metadata(raw.as_deref()))
                .map_err(|e| Error::decode(format!("list of {}", self.what), e, &self.body))?
        };
        Ok(ListPage {
            metadata,
            shard_selector,
            items: Box::pin(self.decode_list_in_background()),
        })
    }

    /// [`decode_list`](Self::decode_list) on tokio's blocking pool, so that decoding a
    /// large page (tens of milliseconds) holds up no task of the runtime.
    pub async fn decode_list_in_background<K>(self) -> Result<ObjectList<K>>
    where
        K: DeserializeOwned + Send + 'static,
    {
        let what = self.what.clone();
        let runtime = tokio::runtime::Handle::current();
        crate::spawn::spawn_blocking(&runtime, move || self.decode_list())
            .await
            .unwrap_or_else(|e| Err(Error::Request(format!("decoding {what}: {e}"))))
    }
}

/// Decodes one object of `K` as kubekit's clients, watches and informers do, with
/// serde_json's error naming `what` when it does not decode. With kubekit's `simd-json`
/// feature, in one pass with every array allocated at its exact length (about a tenth less
/// heap for a Pod than `serde_json::from_slice`, and faster).
pub fn decode<K: DeserializeOwned>(json: &[u8], what: &str) -> Result<K> {
    super::json::from_slice(json).map_err(|e| Error::decode(what, e, json))
}

/// Decodes a JSON `*List` body item by item, on every core; see
/// [`Response::decode_list`].
pub fn decode_list<K: DeserializeOwned + Send>(body: &[u8], what: &str) -> Result<ObjectList<K>> {
    decode_json_list(body, what, DecodeOptions::default())
}

/// A CBOR decoding error as an [`Error::Decode`].
pub(crate) fn cbor_error(what: impl Into<String>, e: cbor::Error, body: &[u8]) -> Error {
    Error::decode(what, serde::de::Error::custom(e), body)
}

/// `json`, which holds an object at `path`, without what `options` leave out (see
/// `rest::json::without_managed_fields`).
pub(crate) fn json_without<'a>(
    json: &'a [u8],
    path: &[&[u8]],
    options: DecodeOptions,
) -> Cow<'a, [u8]> {
    if options.skip_managed_fields {
        super::json::without_managed_fields(json, path)
    } else {
        Cow::Borrowed(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn truncated_or_garbage_bodies_are_errors_naming_the_resource() {
        let full = br#"{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"}}]}"#;
        for cut in [0, 1, 10, full.len() / 2, full.len() - 1] {
            let err = decode_list::<Pod>(&full[..cut], "pods").expect_err("truncated body");
            assert!(
                err.to_string().starts_with("decoding list of pods"),
                "{err}"
            );
        }
        let response = Response {
            status: StatusCode::OK,
            content_type: "application/json".into(),
            content_encoding: None,
            body: Bytes::from_static(b"{\"metadata\":{\"name\":\"web\"},\"spec\":"),
            warnings: vec![],
            what: "pods \"web\" in namespace \"demo\" from GET /api/v1/namespaces/demo/pods/web"
                .into(),
            decode_options: DecodeOptions::default(),
        };
        let err = response.decode::<Pod>().expect_err("truncated object");
        assert!(
            err.to_string()
                .contains("pods \"web\" in namespace \"demo\""),
            "{err}"
        );
        let err = decode_list::<Pod>(b"\xff\xfe\x00garbage", "pods").expect_err("binary garbage");
        assert!(matches!(err, Error::Decode { .. }));
    }
}
