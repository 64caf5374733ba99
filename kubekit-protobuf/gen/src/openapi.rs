//! What `k8s-openapi` generated for each Kubernetes version it supports: its types, by the
//! OpenAPI definition each was generated from, with each field's Rust name, JSON name and
//! Rust type. Read from k8s-openapi's own sources (`src/v1_XX/**.rs`), whose files open
//! with `// Generated from definition io.k8s.…` and name their fields in a serde visitor
//! (`"restartPolicy" => Field::Key_restart_policy,`).

use std::collections::BTreeMap;
use std::path::Path;

/// A type of one k8s-openapi version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Type {
    /// Its path below the crate root: `api::core::v1::Pod`.
    pub path: String,
    /// Its fields by JSON name, for a struct with named fields; empty for a newtype or enum.
    pub fields: BTreeMap<String, RustField>,
    /// Whether it is a struct with named fields.
    pub named_fields: bool,
    /// Whether it implements `Default` (all do but those with a required time).
    pub has_default: bool,
    /// Whether it is a resource (`impl Resource`): a kind the API serves.
    pub is_resource: bool,
}

/// A named field of a k8s-openapi struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RustField {
    /// The Rust name, `restart_policy`, `type_`.
    pub ident: String,
    /// The Rust type as written, `Option<std::string::String>`.
    pub ty: String,
}

/// One version's types, by OpenAPI definition (`io.k8s.api.core.v1.Pod`), with `-` written
/// `_` as proto packages write it (`io.k8s.apiextensions_apiserver.…`).
pub type Types = BTreeMap<String, Type>;

/// Reads the types of one version directory (`…/k8s-openapi-0.29.0/src/v1_37`).
pub fn read_version(dir: &Path) -> Result<Types, String> {
    let mut types = Types::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", d.display()))?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let rel = path.strip_prefix(dir).expect("walked below dir");
                let module: Vec<String> = rel
                    .parent()
                    .into_iter()
                    .flat_map(|p| p.components())
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if let Some((definition, ty)) = parse_file(&module, &text) {
                    types.insert(definition, ty);
                }
            }
        }
    }
    Ok(types)
}

/// The definition and type of one generated file, or `None` for a file that is not one.
pub fn parse_file(module: &[String], text: &str) -> Option<(String, Type)> {
    let definition = text
        .lines()
        .next()?
        .strip_prefix("// Generated from definition ")?
        .trim()
        .replace('-', "_");
    let mut name = None;
    let mut named_fields = false;
    let mut types = BTreeMap::new();
    let mut json = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        for kw in ["pub struct ", "pub enum "] {
            if let Some(rest) = line.strip_prefix(kw)
                && name.is_none()
            {
                let n: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                named_fields = kw == "pub struct " && rest[n.len()..].trim_start().starts_with('{');
                name = Some(n);
            }
        }
        if named_fields {
            if let Some((ident, ty)) = line.strip_prefix("pub ").and_then(|r| r.split_once(": "))
                && ident.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                types.insert(ident.to_string(), ty.trim_end_matches(',').to_string());
            }
            if let Some((j, rest)) = line
                .strip_prefix('"')
                .and_then(|r| r.split_once("\" => Field::Key_"))
            {
                json.insert(j.to_string(), rest.trim_end_matches(',').to_string());
            }
        }
    }
    let name = name?;
    let has_default = text.lines().any(|l| {
        let l = l.trim();
        (l.starts_with("#[derive(") && l.contains("Default"))
            || l.starts_with(&format!("impl Default for {name}"))
    });
    let is_resource = text.contains(&format!("impl crate::Resource for {name} "));
    let fields = json
        .into_iter()
        .filter_map(|(j, ident)| {
            let ty = types.get(&ident)?.clone();
            Some((j, RustField { ident, ty }))
        })
        .collect();
    let mut path = module.join("::");
    path.push_str("::");
    path.push_str(&name);
    Some((
        definition,
        Type {
            path,
            fields,
            named_fields,
            has_default,
            is_resource,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_struct_file_gives_its_path_and_fields_by_json_name() {
        let text = "// Generated from definition io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta\n\
            pub struct ListMeta {\n    pub continue_: Option<std::string::String>,\n\
            pub remaining_item_count: Option<i64>,\n}\n\
            \"continue\" => Field::Key_continue_,\n\"remainingItemCount\" => Field::Key_remaining_item_count,\n";
        let module: Vec<String> = ["apimachinery", "pkg", "apis", "meta", "v1"]
            .map(String::from)
            .into();
        let (def, ty) = parse_file(&module, text).unwrap();
        assert_eq!(def, "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta");
        assert_eq!(ty.path, "apimachinery::pkg::apis::meta::v1::ListMeta");
        assert!(ty.named_fields && !ty.has_default && !ty.is_resource);
        assert_eq!(ty.fields["continue"].ident, "continue_");
        assert_eq!(ty.fields["remainingItemCount"].ty, "Option<i64>");
    }

    #[test]
    fn a_newtype_has_no_named_fields() {
        let text = "// Generated from definition io.k8s.apimachinery.pkg.apis.meta.v1.Time\n\
            #[derive(Clone, Debug, Default)]\npub struct Time(pub crate::jiff::Timestamp);\n\
            impl crate::Resource for Time {\n";
        let (_, ty) = parse_file(&["m".to_string()], text).unwrap();
        assert!(!ty.named_fields && ty.has_default && ty.is_resource);
        assert_eq!(ty.path, "m::Time");
    }
}
