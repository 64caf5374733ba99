//! Reading an object's `metadata` without scanning the rest of it.
//!
//! The API server writes `kind`, `apiVersion` and `metadata` before anything else, in
//! objects and in lists alike, so what keys, indexes and paging need is in the first few
//! hundred bytes of a JSON that may be megabytes long (a list page, an object with a large
//! spec and status). [`read_metadata`] stops as soon as it has read `metadata`.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer as _, Error as _, IgnoredAny};

/// The keys of an object that matter here.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Key {
    Metadata,
    #[serde(other)]
    Other,
}

/// The error that ends the scan once the metadata is read.
const METADATA_READ: &str = "metadata read";

/// Reads the `metadata` of the JSON object `json` and stops there. `Ok(None)` when the
/// object has no `metadata` (or `null`): then it was scanned to its end and checked. What
/// follows the metadata is not checked.
pub fn read_metadata<M: DeserializeOwned>(json: &[u8]) -> Result<Option<M>, serde_json::Error> {
    struct Visitor<'a, M>(&'a mut Option<Option<M>>);
    impl<'de, M: DeserializeOwned> de::Visitor<'de> for Visitor<'_, M> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Key>()? {
                match key {
                    Key::Metadata => {
                        *self.0 = Some(map.next_value()?);
                        return Err(A::Error::custom(METADATA_READ));
                    }
                    Key::Other => map.next_value::<IgnoredAny>().map(drop)?,
                }
            }
            Ok(())
        }
    }
    let mut metadata = None;
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let scanned = deserializer.deserialize_map(Visitor(&mut metadata));
    match (scanned, metadata) {
        (Err(_), Some(metadata)) => Ok(metadata),
        (Err(e), None) => Err(e),
        (Ok(()), _) => deserializer.end().map(|()| None),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;

    use super::*;

    #[test]
    fn metadata_is_read_without_checking_what_follows() {
        let page = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"c"},"items":[{"broken"#;
        let meta: ListMeta = read_metadata(page).unwrap().unwrap();
        assert_eq!(meta.continue_.as_deref(), Some("c"));
        assert_eq!(meta.resource_version.as_deref(), Some("9"));
    }

    #[test]
    fn an_object_without_metadata_is_read_whole() {
        let none: Option<ListMeta> = read_metadata(br#"{"items":[]}"#).unwrap();
        assert!(none.is_none());
        let null: Option<ListMeta> = read_metadata(br#"{"metadata":null}"#).unwrap();
        assert!(null.is_none());
        assert!(read_metadata::<ListMeta>(br#"{"items":[]} trailing"#).is_err());
        assert!(read_metadata::<ListMeta>(b"[1]").is_err());
        assert!(read_metadata::<ListMeta>(br#"{"metadata":{"continue":5}}"#).is_err());
    }
}
