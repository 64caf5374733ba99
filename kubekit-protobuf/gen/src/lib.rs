//! The generator of `kubekit-protobuf/src/generated.rs`: the protobuf codec of every
//! Kubernetes API type `k8s-openapi` has, generated from the API's own protobuf
//! definitions.
//!
//! Inputs, all pinned:
//! - the `generated.proto` files of `k8s.io/api`, `k8s.io/apimachinery`,
//!   `k8s.io/apiextensions-apiserver` and `k8s.io/kube-aggregator` at the versions
//!   `testenv/go/go.mod` pins for the control plane, fetched through the Go module proxy
//!   (`go mod download`);
//! - the Go types beside them, for what the JSON form depends on and the protos do not say
//!   (a field that is not a pointer and omits its zero value is `None` when zero);
//! - k8s-openapi's sources, every version it supports, from cargo's registry: a type or a
//!   field missing from some versions gets a `#[cfg]` on `k8s_openapi`'s version, which
//!   `kubekit-protobuf`'s build script reads.
//!
//! `cargo run -p kubekit-protobuf-gen` writes the file; its test fails when the file
//! differs from what the inputs give.

pub mod gotypes;
pub mod openapi;
pub mod proto;
pub mod sources;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use sources::Sources;

/// Messages the runtime of `kubekit-protobuf` implements by hand, because k8s-openapi
/// represents them as something other than a struct of the message's fields: a newtype of a
/// JSON value or a timestamp, or an enum.
pub const HAND_WRITTEN: &[&str] = &[
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "k8s.io.apimachinery.pkg.runtime.RawExtension",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    "k8s.io.apimachinery.pkg.api.resource.Quantity",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
];

/// Messages that are framing, not values: the envelope module reads `WatchEvent`
/// (`kubekit_protobuf::WatchEvent`), whose k8s-openapi type is a generic enum.
/// `Patch` is in the same list: its message is empty, and k8s-openapi's type is the enum of
/// patch bodies a client sends, not a value of any field.
pub const FRAMING: &[&str] = &[
    "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Patch",
];

/// Fields a decoder may be told to skip (`DecodeOptions` in the runtime): message, field,
/// and the option that says so.
pub const SKIPPABLE: &[(&str, &str, &str)] = &[(
    "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "managedFields",
    "skip_managed_fields",
)];

/// The generated file's path in the repository.
pub fn output_path(repo: &Path) -> PathBuf {
    repo.join("kubekit-protobuf/src/generated.rs")
}

/// What one generation did, for the generator's report.
#[derive(Debug, Default)]
pub struct Report {
    /// Messages with a generated implementation.
    pub messages: usize,
    /// Messages k8s-openapi has no type for (internal or option types), skipped.
    pub skipped: Vec<String>,
    /// Fields of generated messages that no k8s-openapi version has.
    pub skipped_fields: Vec<String>,
}

/// Generates the codec's Rust source from read inputs, formatted by rustfmt.
pub fn render(src: &Sources) -> Result<(String, Report), String> {
    let (code, report) = generate(src)?;
    Ok((rustfmt(&code)?, report))
}

/// `code` formatted by rustfmt (edition 2024), or why rustfmt could not format it.
pub fn rustfmt(code: &str) -> Result<String, String> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running rustfmt: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = code.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| format!("rustfmt: {e}"))?;
    writer
        .join()
        .expect("the writer thread does not panic")
        .map_err(|e| format!("rustfmt's input: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "rustfmt failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("rustfmt's output: {e}"))
}

/// Generates the codec's Rust source from read inputs.
pub fn generate(src: &Sources) -> Result<(String, Report), String> {
    let messages = proto::index(&src.protos);
    let all_versions: BTreeSet<&str> = src.openapi.keys().map(String::as_str).collect();
    let mut report = Report::default();
    let mut out = String::new();
    writeln!(
        out,
        "// @generated by kubekit-protobuf-gen (`cargo run -p kubekit-protobuf-gen`); do not edit.\n\
         // From the generated.proto files of {} and k8s-openapi {} ({}).\n",
        src.modules.join(", "),
        src.openapi_version,
        all_versions.iter().copied().collect::<Vec<_>>().join(", "),
    )
    .unwrap();
    out.push_str(
        "use crate::runtime::{Decoder, Encoder, Error, Field, ListWrapper, Message, WireType};\n",
    );
    let mut registrations = String::new();

    for (name, message) in &messages {
        let definition = format!(
            "io.k8s.{}",
            name.strip_prefix("k8s.io.")
                .ok_or_else(|| format!("{name}: not a k8s.io message"))?
        );
        let present: BTreeMap<&str, &openapi::Type> = src
            .openapi
            .iter()
            .filter_map(|(v, types)| types.get(&definition).map(|t| (v.as_str(), t)))
            .collect();
        if present.is_empty() {
            report.skipped.push(name.clone());
            continue;
        }
        if HAND_WRITTEN.contains(&name.as_str()) || FRAMING.contains(&name.as_str()) {
            continue;
        }
        if message.fields.is_empty() && present.values().all(|t| !t.named_fields) {
            // An empty Go struct, which k8s-openapi holds as the JSON object `{}`.
            let path = one_path(name, &present)?;
            let cfg = cfg_attr(&present.keys().copied().collect(), &all_versions);
            writeln!(
                out,
                "\n{cfg}crate::empty_message_value!(\"{name}\", k8s_openapi::{path});"
            )
            .unwrap();
            report.messages += 1;
            continue;
        }
        if present.values().any(|t| !t.named_fields) {
            return Err(format!(
                "{name}: k8s-openapi has it as a newtype or enum; the runtime must implement it by hand"
            ));
        }
        let path = one_path(name, &present)?;
        let versions: BTreeSet<&str> = present.keys().copied().collect();
        let go = src.go_field_facts(name).ok_or_else(|| {
            format!("{name}: no Go struct with protobuf tags found beside its proto")
        })?;
        let ctx = Context {
            src,
            messages: &messages,
            present: &present,
            versions: &versions,
        };
        let (merges, encodes) = ctx.fields(message, go, name, &mut report)?;
        let cfg = cfg_attr(&versions, &all_versions);
        let ty = format!("k8s_openapi::{path}");
        let empty = empty_body(&present, &versions);
        // `encode_fields` is `#[inline]`: compiled only in what encodes the type (the
        // registry with the `encode` feature, a program calling `encode`), not for every
        // message in kubekit-protobuf itself.
        writeln!(
            out,
            "\n{cfg}impl Message for {ty} {{\n    \
                 const NAME: &'static str = \"{name}\";\n\n    \
                 fn empty() -> Self {{ {empty} }}\n\n    \
                 fn merge_field(&mut self, number: u32, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {{\n        \
                     match number {{\n{merges} _ => d.skip(wire),\n        }}\n    }}\n\n    \
                 #[inline]\n    \
                 fn encode_fields(&self, e: &mut Encoder) {{\n{encodes}    }}\n}}\n\n\
             {cfg}crate::message_value!({ty});"
        )
        .unwrap();
        if present.values().any(|t| t.is_resource) {
            let cfg = cfg_attr(
                &present
                    .iter()
                    .filter(|(_, t)| t.is_resource)
                    .map(|(v, _)| *v)
                    .collect(),
                &all_versions,
            );
            writeln!(registrations, "{cfg}r.visit::<{ty}>();").unwrap();
        }
        report.messages += 1;
    }
    writeln!(
        out,
        "\n/// Registers every resource type's codec.\npub(crate) fn register(r: &mut impl crate::registry::ResourceVisitor) {{\n{registrations}}}"
    )
    .unwrap();
    Ok((out, report))
}

/// The body of `Message::empty`: `Default::default()`, or for the few types without
/// `Default` (a required time) a struct literal whose times are Go's zero time, with a
/// `return` per group of k8s-openapi versions that agree on the type.
fn empty_body(present: &BTreeMap<&str, &openapi::Type>, versions: &BTreeSet<&str>) -> String {
    if present.values().all(|t| t.has_default) {
        return "Default::default()".to_string();
    }
    let mut groups: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for (v, t) in present {
        let expr = if t.has_default {
            "Default::default()".to_string()
        } else {
            let fields: Vec<String> = t
                .fields
                .values()
                .map(|f| {
                    let init = if f.ty.starts_with("Option<") {
                        "None"
                    } else if f.ty.ends_with("meta::v1::Time") {
                        "crate::special::zero_time()"
                    } else if f.ty.ends_with("meta::v1::MicroTime") {
                        "crate::special::zero_micro_time()"
                    } else {
                        "Default::default()"
                    };
                    format!("{}: {init}", f.ident)
                })
                .collect();
            format!("Self {{ {} }}", fields.join(", "))
        };
        groups.entry(expr).or_default().insert(v);
    }
    if groups.len() == 1 {
        return groups.into_keys().next().expect("one group");
    }
    groups
        .iter()
        .map(|(expr, vs)| format!("{}return {expr};", cfg_attr(vs, versions)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A message's fields in field-number order.
fn sorted(fields: &[proto::Field]) -> Vec<&proto::Field> {
    let mut fields: Vec<&proto::Field> = fields.iter().collect();
    fields.sort_by_key(|f| f.number);
    fields
}

/// What generating one message's fields needs.
struct Context<'a> {
    src: &'a Sources,
    messages: &'a BTreeMap<String, &'a proto::Message>,
    /// The k8s-openapi versions that have the message's type, with it.
    present: &'a BTreeMap<&'a str, &'a openapi::Type>,
    /// Their keys.
    versions: &'a BTreeSet<&'a str>,
}

impl Context<'_> {
    /// The match arms of `merge_field` (`N => expression,`) and the statements of
    /// `encode_fields` for `message`'s fields, filling the k8s-openapi type's fields of the
    /// same JSON names. The fields of an embedded Go struct without a JSON name are the
    /// type's own (JSON flattens them), inside a nested message on the wire.
    fn fields(
        &self,
        message: &proto::Message,
        go: &BTreeMap<u32, gotypes::GoField>,
        owner: &str,
        report: &mut Report,
    ) -> Result<(String, String), String> {
        let (mut merges, mut encodes) = (String::new(), String::new());
        for f in sorted(&message.fields) {
            let go_field = go.get(&f.number).ok_or_else(|| {
                format!(
                    "{owner}.{}: no Go field has protobuf number {}",
                    f.name, f.number
                )
            })?;
            if go_field.embedded {
                let inner = self
                    .messages
                    .get(&f.ty)
                    .ok_or_else(|| format!("{owner}.{}: no message {}", f.name, f.ty))?;
                let inner_go = self
                    .src
                    .go_field_facts(&f.ty)
                    .ok_or_else(|| format!("{}: no Go struct", f.ty))?;
                let (inner_merges, inner_encodes) =
                    self.fields(inner, inner_go, &format!("{owner}.{}", f.name), report)?;
                writeln!(
                    merges,
                    "{} => d.embedded(wire, |number, wire, d| match number {{ {inner_merges} _ => d.skip(wire) }}),",
                    f.number
                )
                .unwrap();
                writeln!(
                    encodes,
                    "e.key({}, WireType::Len); e.nested(|e| {{ {inner_encodes} }});",
                    f.number
                )
                .unwrap();
            } else if let Some((m, e)) = self.field(go_field, f, owner, report)? {
                writeln!(merges, "{m},").unwrap();
                writeln!(encodes, "{e}").unwrap();
            }
        }
        Ok((merges, encodes))
    }

    /// The match arm that decodes proto field `f` and the statement that encodes it;
    /// `None` (and a line in the report) when no k8s-openapi version has the field.
    fn field(
        &self,
        go_field: &gotypes::GoField,
        f: &proto::Field,
        owner: &str,
        report: &mut Report,
    ) -> Result<Option<(String, String)>, String> {
        let Some(ident) = one_ident(self.present, &f.name)? else {
            report.skipped_fields.push(format!("{owner}.{}", f.name));
            return Ok(None);
        };
        let with_field: BTreeSet<&str> = self
            .present
            .iter()
            .filter(|(_, t)| find_field(t, &f.name).is_some())
            .map(|(v, _)| *v)
            .collect();
        let cfg = cfg_attr(&with_field, self.versions);
        let wrapper = self.messages.get(&f.ty).is_some_and(|m| m.nullable_list)
            && f.label == proto::Label::Optional;
        if wrapper {
            let inner = &self.messages[&f.ty];
            if inner.fields.len() != 1
                || inner.fields[0].number != 1
                || inner.fields[0].label != proto::Label::Repeated
            {
                return Err(format!(
                    "{}: a nullable list message must hold one repeated field numbered 1",
                    f.ty
                ));
            }
        }
        if let proto::Label::Map(key) = &f.label
            && key != "string"
        {
            return Err(format!(
                "{owner}.{}: map keys other than strings are not supported",
                f.name
            ));
        }
        let omit_empty = f.label == proto::Label::Optional
            && proto::SCALARS.contains(&f.ty.as_str())
            && go_field.omit_empty
            && !go_field.pointer();
        let (merge, encode) = if wrapper {
            ("ListWrapper::merge", "ListWrapper::encode")
        } else if omit_empty {
            ("Field::merge_omit_empty", "Field::encode")
        } else {
            ("Field::merge", "Field::encode")
        };
        let skip = SKIPPABLE
            .iter()
            .find(|(m, field, _)| *m == owner && *field == f.name)
            .map(|(_, _, option)| {
                format!(
                    "{cfg}{} if d.options().{option} => d.skip(wire),\n",
                    f.number
                )
            })
            .unwrap_or_default();
        Ok(Some((
            format!(
                "{skip}{cfg}{} => {merge}(&mut self.{ident}, wire, d)",
                f.number
            ),
            format!("{cfg}{encode}(&self.{ident}, {}, e);", f.number),
        )))
    }
}

/// The path of a message's type, which must be the same in every version that has it.
fn one_path<'t>(
    name: &str,
    present: &BTreeMap<&str, &'t openapi::Type>,
) -> Result<&'t str, String> {
    let paths: BTreeSet<&str> = present.values().map(|t| t.path.as_str()).collect();
    if paths.len() != 1 {
        return Err(format!(
            "{name}: k8s-openapi versions disagree on its path: {paths:?}"
        ));
    }
    Ok(paths.into_iter().next().expect("one path"))
}

/// The field of a k8s-openapi type a proto field fills: the same JSON name or, failing
/// that, the same name ignoring case and punctuation (`$ref` is proto's `ref`,
/// `x-kubernetes-list-type` proto's `xKubernetesListType`).
fn find_field<'t>(ty: &'t openapi::Type, proto_name: &str) -> Option<&'t openapi::RustField> {
    let norm = |s: &str| {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect::<String>()
    };
    ty.fields.get(proto_name).or_else(|| {
        let want = norm(proto_name);
        let mut matches = ty.fields.iter().filter(|(j, _)| norm(j) == want);
        let first = matches.next()?;
        matches.next().is_none().then_some(first.1)
    })
}

/// The Rust name of a proto field, which must be the same in every version that has it.
fn one_ident(
    present: &BTreeMap<&str, &openapi::Type>,
    proto_name: &str,
) -> Result<Option<String>, String> {
    let idents: BTreeSet<&str> = present
        .values()
        .filter_map(|t| find_field(t, proto_name))
        .map(|f| f.ident.as_str())
        .collect();
    match idents.len() {
        0 => Ok(None),
        1 => Ok(idents.into_iter().next().map(str::to_string)),
        _ => Err(format!(
            "field {proto_name}: k8s-openapi versions name it differently: {idents:?}"
        )),
    }
}

/// `#[cfg(any(k8s_openapi = "1.36", …))] ` when `some` is not all of `all`, else nothing.
fn cfg_attr(some: &BTreeSet<&str>, all: &BTreeSet<&str>) -> String {
    if some == all {
        return String::new();
    }
    let versions: Vec<String> = some
        .iter()
        .map(|v| format!("k8s_openapi = \"{v}\""))
        .collect();
    format!("#[cfg(any({}))] ", versions.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_missing_from_some_versions_gets_a_cfg_on_them() {
        let all: BTreeSet<&str> = ["1.33", "1.34", "1.35"].into();
        assert_eq!(cfg_attr(&all, &all), "");
        let some: BTreeSet<&str> = ["1.34", "1.35"].into();
        assert_eq!(
            cfg_attr(&some, &all),
            "#[cfg(any(k8s_openapi = \"1.34\", k8s_openapi = \"1.35\"))] "
        );
    }

    #[test]
    fn proto_names_find_json_names_that_differ_in_case_and_punctuation() {
        let mut fields = BTreeMap::new();
        for (j, i) in [
            ("$ref", "ref_path"),
            ("x-kubernetes-list-type", "x_kubernetes_list_type"),
            ("type", "type_"),
        ] {
            fields.insert(
                j.to_string(),
                openapi::RustField {
                    ident: i.into(),
                    ty: "Option<String>".into(),
                },
            );
        }
        let ty = openapi::Type {
            path: "a::B".into(),
            fields,
            named_fields: true,
            has_default: true,
            is_resource: false,
        };
        assert_eq!(find_field(&ty, "ref").unwrap().ident, "ref_path");
        assert_eq!(
            find_field(&ty, "xKubernetesListType").unwrap().ident,
            "x_kubernetes_list_type"
        );
        assert_eq!(find_field(&ty, "type").unwrap().ident, "type_");
        assert!(find_field(&ty, "missing").is_none());
    }
}
