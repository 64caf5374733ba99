//! What the `generated.proto` files do not say and the JSON form depends on: whether a Go
//! field is a pointer, and whether its JSON tag omits the zero value. Read from the struct
//! tags of the Go types beside each `generated.proto` (`protobuf:"bytes,3,opt,name=x"` and
//! `json:"x,omitempty"` on one line, as the Kubernetes API's types are written).

use std::collections::BTreeMap;

/// One Go struct field that has a protobuf tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoField {
    /// The Go type as written (`*int32`, `[]Container`, `metav1.Time`).
    pub go_type: String,
    /// Whether the JSON tag has `omitempty` or `omitzero`.
    pub omit_empty: bool,
    /// Whether it is an embedded struct without a JSON name, whose fields JSON (and
    /// k8s-openapi) flatten into the outer object while protobuf nests them in a message.
    pub embedded: bool,
}

impl GoField {
    /// Whether the field is a pointer: present on the wire exactly when set.
    pub fn pointer(&self) -> bool {
        self.go_type.starts_with('*')
    }
}

/// A package's Go types.
#[derive(Debug, Default)]
pub struct Package {
    /// The protobuf-tagged fields of its structs: struct name → field number → field.
    pub structs: BTreeMap<String, BTreeMap<u32, GoField>>,
    /// Its types defined as another package's struct (`type MatchCondition v1.MatchCondition`):
    /// name → that struct's proto name (`k8s.io.api.admissionregistration.v1.MatchCondition`).
    pub defined_as: BTreeMap<String, String>,
}

/// Adds the types of one Go source file to `package`.
pub fn parse(text: &str, package: &mut Package) {
    let mut imports = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some((alias, path)) = import(line) {
            imports.insert(alias, path);
            continue;
        }
        if let Some((name, other)) = line.strip_prefix("type ").and_then(|r| r.split_once(' '))
            && let Some((alias, ty)) = other.split_once('.')
            && let Some(path) = imports.get(alias)
        {
            let proto_package = path.replace('/', ".").replace('-', "_");
            package
                .defined_as
                .insert(name.to_string(), format!("{proto_package}.{ty}"));
        }
        if let Some(name) = line
            .strip_prefix("type ")
            .and_then(|r| r.strip_suffix(" struct {"))
        {
            current = Some(name.trim().to_string());
            continue;
        }
        if line.starts_with('}') {
            current = None;
            continue;
        }
        let Some(name) = &current else { continue };
        if let Some((number, field)) = parse_field(line) {
            package
                .structs
                .entry(name.clone())
                .or_default()
                .insert(number, field);
        }
    }
}

/// An import line (`\tv1 "k8s.io/api/core/v1"`, `import "k8s.io/x/y"`): alias and path.
fn import(line: &str) -> Option<(String, String)> {
    let line = line.trim().strip_prefix("import ").unwrap_or(line.trim());
    let (alias, quoted) = match line.split_once(' ') {
        Some((a, q)) if q.starts_with('"') => (Some(a), q),
        _ => (None, line),
    };
    let path = quoted.strip_prefix('"')?.strip_suffix('"')?;
    if !path.starts_with("k8s.io/") {
        return None;
    }
    let alias = alias.map_or_else(
        || path.rsplit('/').next().unwrap_or(path).to_string(),
        str::to_string,
    );
    Some((alias, path.to_string()))
}

/// `\tName Type `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"``
fn parse_field(line: &str) -> Option<(u32, GoField)> {
    let line = line.trim();
    if line.starts_with("//") {
        return None;
    }
    let (decl, tags) = line.split_once('`')?;
    let mut words = decl.split_whitespace();
    let name = words.next()?;
    let (go_type, embedded) = match words.next() {
        Some(ty) => (ty, false),
        None => (name, true),
    };
    let tag = |key: &str| {
        let start = tags.find(&format!("{key}:\""))? + key.len() + 2;
        tags[start..].split('"').next()
    };
    let protobuf = tag("protobuf")?;
    let number = protobuf.split(',').nth(1)?.parse().ok()?;
    let json = tag("json").unwrap_or_default();
    let omit_empty = json
        .split(',')
        .skip(1)
        .any(|o| o == "omitempty" || o == "omitzero");
    let embedded = embedded && json.split(',').next().unwrap_or_default().is_empty();
    Some((
        number,
        GoField {
            go_type: go_type.to_string(),
            omit_empty,
            embedded,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_and_omitempty_are_read_from_the_tags() {
        let mut package = Package::default();
        parse(
            "type PodSpec struct {\n\
             \t// comment `json:\"x\"`\n\
             \tRestartPolicy RestartPolicy `json:\"restartPolicy,omitempty\" protobuf:\"bytes,3,opt,name=restartPolicy,casttype=RestartPolicy\"`\n\
             \tReplicas *int32 `json:\"replicas,omitempty\" protobuf:\"varint,4,opt,name=replicas\"`\n\
             \tReady bool `json:\"ready\" protobuf:\"varint,5,opt,name=ready\"`\n\
             \tmetav1.TypeMeta `json:\",inline\"`\n\
             \tmetav1.ObjectMeta `json:\"metadata,omitempty\" protobuf:\"bytes,7,opt,name=metadata\"`\n\
             \tDeviceConfiguration `json:\"\" protobuf:\"bytes,6,opt,name=deviceConfiguration\"`\n\
             }\n",
            &mut package,
        );
        let spec = &package.structs["PodSpec"];
        assert!(spec[&3].omit_empty && !spec[&3].pointer());
        assert!(spec[&4].pointer());
        assert!(!spec[&5].omit_empty);
        assert!(spec[&6].embedded && !spec[&5].embedded && !spec[&7].embedded);
        assert_eq!(spec.len(), 5);
    }

    #[test]
    fn a_type_defined_as_another_packages_struct_names_its_proto_message() {
        let mut package = Package::default();
        parse(
            "import (\n\tv1 \"k8s.io/api/admissionregistration/v1\"\n)\n\ntype MatchCondition v1.MatchCondition\n",
            &mut package,
        );
        assert_eq!(
            package.defined_as["MatchCondition"],
            "k8s.io.api.admissionregistration.v1.MatchCondition"
        );
    }
}
