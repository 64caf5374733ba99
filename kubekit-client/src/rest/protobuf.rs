//! Protobuf bodies: the codec of a type (built-in or compact), and an enveloped object or
//! a `*List` decoded with it.

use kubekit_protobuf::DecodeOptions;

use super::error::{Error, Result};
use super::list::{ObjectList, decode_items};

/// Whether a `Content-Type` is kube-apiserver's protobuf (an object, a list or a watch).
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type.starts_with(kubekit_protobuf::CONTENT_TYPE)
}

/// A protobuf decoding error as an [`Error::Decode`].
pub(crate) fn protobuf_error(
    what: impl Into<String>,
    e: kubekit_protobuf::Error,
    body: &[u8],
) -> Error {
    Error::decode(what, serde::de::Error::custom(e), body)
}

/// The protobuf codec of `K`: of a built-in type, or of a [`Compact`](crate::compact::Compact)
/// one.
#[cfg(feature = "compact")]
pub(crate) fn protobuf_codec<K: 'static>() -> Option<&'static kubekit_protobuf::Codec> {
    kubekit_protobuf::codec::<K>().or_else(crate::compact::protobuf_codec::<K>)
}

/// The protobuf codec of `K`, a built-in type (there are no compact types without the
/// `compact` feature).
#[cfg(not(feature = "compact"))]
pub(crate) fn protobuf_codec<K: 'static>() -> Option<&'static kubekit_protobuf::Codec> {
    kubekit_protobuf::codec::<K>()
}

/// The protobuf codec of `K`, or the error of a protobuf body for a type that has none.
pub(crate) fn codec_for<K: 'static>(what: &str) -> Result<&'static kubekit_protobuf::Codec> {
    protobuf_codec::<K>().ok_or_else(|| {
        let e = kubekit_protobuf::Error::new(format!(
            "{} has no protobuf form, and the server answered in protobuf",
            std::any::type_name::<K>()
        ));
        protobuf_error(what, e, &[])
    })
}

/// Decodes an enveloped protobuf object as a `K`.
pub(super) fn decode_protobuf<K: 'static>(
    body: &[u8],
    what: &str,
    options: DecodeOptions,
) -> Result<K> {
    codec_for::<K>(what)?
        .decode_with(body, options)
        .map_err(|e| protobuf_error(what, e, body))
}

/// A protobuf `*List` body's metadata and item messages, checking that it is a list of
/// `codec`'s kind.
pub(super) fn protobuf_list_parts<'a>(
    codec: &kubekit_protobuf::Codec,
    body: &'a [u8],
    what: &str,
) -> Result<kubekit_protobuf::ListParts<'a>> {
    let list_error = |e| protobuf_error(format!("list of {what}"), e, body);
    let unknown = kubekit_protobuf::Unknown::read(body).map_err(list_error)?;
    unknown
        .expect(codec.api_version(), &format!("{}List", codec.kind()))
        .map_err(list_error)?;
    kubekit_protobuf::split_list(unknown.raw).map_err(list_error)
}

/// Decodes a protobuf `*List` body item by item, on every core like
/// [`decode_list`](super::decode_list).
pub(crate) fn decode_protobuf_list<K: Send + 'static>(
    body: &[u8],
    what: &str,
    options: DecodeOptions,
) -> Result<ObjectList<K>> {
    let codec = codec_for::<K>(what)?;
    let parts = protobuf_list_parts(codec, body, what)?;
    Ok(decode_items(
        parts.metadata,
        parts.shard_selector,
        &parts.items,
        &|item, i| {
            codec
                .decode_message_with(item, options)
                .map_err(|e| protobuf_error(format!("item {i} of {what}"), e, item))
        },
    ))
}
