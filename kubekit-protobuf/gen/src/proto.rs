//! A parser for the `generated.proto` files of the Kubernetes API modules: proto2 files of
//! top-level messages whose fields are `optional`, `repeated` or `map<K, V>`, with comments
//! carrying the Go generator's `+protobuf.…` markers. Anything else in a file is an error,
//! so a new construct in a later Kubernetes release is noticed instead of skipped.

use std::collections::BTreeMap;

/// One `generated.proto`: its package and messages.
#[derive(Debug)]
pub struct File {
    /// The proto package, `k8s.io.api.core.v1`.
    pub package: String,
    /// The messages, in the file's order.
    pub messages: Vec<Message>,
}

/// A message of a file.
#[derive(Debug)]
pub struct Message {
    /// Its name inside the package, `Pod`.
    pub name: String,
    /// Whether its comment marks it `+protobuf.nullable=true`: a Go slice type wrapped in a
    /// message of one `repeated … items = 1` field (`ExtraValue`, `Verbs`).
    pub nullable_list: bool,
    /// Its fields, in the file's order.
    pub fields: Vec<Field>,
}

/// A field of a message.
#[derive(Debug, Clone)]
pub struct Field {
    /// The name, which is the Go type's JSON name of the field.
    pub name: String,
    /// The field number.
    pub number: u32,
    /// `optional`, `repeated` or a map.
    pub label: Label,
    /// The value's type: a scalar (`string`, `int32`, …) or a message, fully qualified
    /// (`k8s.io.api.core.v1.PodSpec`, without the leading dot).
    pub ty: String,
}

/// How many values a field holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Label {
    /// `optional`: one.
    Optional,
    /// `repeated`: a list.
    Repeated,
    /// `map<key, value>`: the key's type; the value's is [`Field::ty`].
    Map(String),
}

/// The scalar types the Kubernetes protos use; any other type name is a message.
pub const SCALARS: &[&str] = &[
    "string", "bytes", "bool", "int32", "int64", "double", "float",
];

/// Parses one file's text; `path` only names it in errors.
pub fn parse(path: &str, text: &str) -> Result<File, String> {
    let mut package = None;
    let mut messages = Vec::new();
    let mut comment = String::new();
    let mut current: Option<Message> = None;
    let mut in_block_comment = false;
    for (i, raw) in text.lines().enumerate() {
        let err = |what: &str| format!("{path}:{}: {what}: {raw:?}", i + 1);
        let line = raw.trim();
        if in_block_comment || line.starts_with("/*") {
            in_block_comment = !line.contains("*/");
            continue;
        }
        if let Some(c) = line.strip_prefix("//") {
            comment.push_str(c);
            comment.push('\n');
            continue;
        }
        if line.is_empty() {
            if current.is_none() {
                comment.clear();
            }
            continue;
        }
        if let Some(m) = current.as_mut() {
            if line == "}" {
                messages.push(current.take().expect("a message is open"));
            } else {
                m.fields
                    .push(parse_field(line).ok_or_else(|| err("not a field"))?);
            }
            comment.clear();
            continue;
        }
        if let Some(rest) = line.strip_prefix("package ") {
            package = Some(rest.trim_end_matches(';').to_string());
        } else if let Some(rest) = line.strip_prefix("message ") {
            let name = rest.trim_end_matches('{').trim();
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(err("unexpected message declaration"));
            }
            current = Some(Message {
                name: name.to_string(),
                nullable_list: comment.contains("+protobuf.nullable=true"),
                fields: Vec::new(),
            });
        } else if !(line.starts_with("syntax ")
            || line.starts_with("import ")
            || line.starts_with("option "))
        {
            return Err(err("unexpected statement"));
        }
        comment.clear();
    }
    if current.is_some() {
        return Err(format!("{path}: a message is not closed"));
    }
    let package = package.ok_or_else(|| format!("{path}: no package statement"))?;
    // Qualify message types: unqualified names are the file's own package.
    for m in &mut messages {
        for f in &mut m.fields {
            if let Some(q) = f.ty.strip_prefix('.') {
                f.ty = q.to_string();
            } else if !SCALARS.contains(&f.ty.as_str()) {
                f.ty = format!("{package}.{}", f.ty);
            }
        }
    }
    Ok(File { package, messages })
}

/// `optional string name = 1;`, `repeated Pod items = 2;`, `map<string, string> labels = 11;`
fn parse_field(line: &str) -> Option<Field> {
    let line = line.strip_suffix(';')?;
    let (decl, number) = line.rsplit_once('=')?;
    let number = number.trim().parse().ok()?;
    let decl = decl.trim();
    let (label, rest) = if let Some(rest) = decl.strip_prefix("map<") {
        let (types, name) = rest.split_once('>')?;
        let (k, v) = types.split_once(',')?;
        return Some(Field {
            name: ident(name.trim())?,
            number,
            label: Label::Map(k.trim().to_string()),
            ty: v.trim().to_string(),
        });
    } else if let Some(rest) = decl.strip_prefix("optional ") {
        (Label::Optional, rest)
    } else {
        (Label::Repeated, decl.strip_prefix("repeated ")?)
    };
    let (ty, name) = rest.trim().split_once(' ')?;
    Some(Field {
        name: ident(name.trim())?,
        number,
        label,
        ty: ty.to_string(),
    })
}

fn ident(s: &str) -> Option<String> {
    (!s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| s.to_string())
}

/// Every message of `files` by its qualified name.
pub fn index(files: &[File]) -> BTreeMap<String, &Message> {
    files
        .iter()
        .flat_map(|f| {
            f.messages
                .iter()
                .map(move |m| (format!("{}.{}", f.package, m.name), m))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_every_label_are_parsed_and_types_qualified() {
        let file = parse(
            "x.proto",
            r#"
syntax = "proto2";
package k8s.io.api.core.v1;
import "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto";
option go_package = "k8s.io/api/core/v1";

// Pod is a pod.
message Pod {
  // metadata
  optional .k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;
  optional PodSpec spec = 2;
  repeated string names = 3;
  map<string, string> labels = 11;
}

// +protobuf.nullable=true
message ExtraValue {
  repeated string items = 1;
}
"#,
        )
        .unwrap();
        assert_eq!(file.package, "k8s.io.api.core.v1");
        let pod = &file.messages[0];
        assert!(!pod.nullable_list);
        assert_eq!(
            pod.fields[0].ty,
            "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(pod.fields[1].ty, "k8s.io.api.core.v1.PodSpec");
        assert_eq!(
            (pod.fields[2].label.clone(), pod.fields[2].ty.as_str()),
            (Label::Repeated, "string")
        );
        assert_eq!(pod.fields[3].label, Label::Map("string".into()));
        assert_eq!(pod.fields[3].number, 11);
        assert!(file.messages[1].nullable_list);
    }

    #[test]
    fn an_unknown_construct_is_an_error_naming_the_line() {
        let err = parse("x.proto", "package a;\nmessage A {\n  oneof x {\n}\n").unwrap_err();
        assert!(err.contains("x.proto:3"), "{err}");
    }
}
