//! `kubekit new`: a new operator project, ready to build and test; `kubekit api`: one more
//! kind in it.
//!
//! ```text
//! cargo run -p kubekit-cli -- new my-operator --group example.com --version v1 --kind Widget
//! ```
//!
//! writes `my-operator/`: a `Widget` custom resource (`example.com/v1`) whose controller,
//! on kubekit's manager, applies a ConfigMap holding the Widget's message (a typed apply
//! configuration), reports a `Ready` condition in its status and cleans up through a
//! finalizer; its flags (`--leader-elect`, metrics and health addresses, `--print-crd`,
//! `--print-rbac`); a test on kubekit-fake and one on kubekit's local control plane;
//! `deploy/` (Namespace, ServiceAccount, a Deployment with probes and the metrics port;
//! the CRD and the RBAC, derived from the code, written by its first `cargo test`); a
//! Dockerfile and a README. kubekit is a `path` dependency on this repository (or
//! `--kubekit-path`), or a `git` one with `--kubekit-git URL`. Each kind is a module
//! (`src/widget/`: the type, and its controller).
//!
//! ```text
//! cargo run -p kubekit-cli -- api --group example.com --version v1alpha1 --kind Gadget --dir my-operator
//! ```
//!
//! adds `src/gadget/` and the lines that register it, at the marker comments `kubekit new`
//! left in `src/lib.rs` and `src/main.rs` (it refuses a project without them, or a kind
//! whose module exists).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// kubekit's command line.
#[derive(Debug, Parser)]
#[command(name = "kubekit", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Writes a new operator project in the directory NAME, with a first kind.
    New(New),
    /// Adds a kind, its controller and its CRD to a project `kubekit new` wrote.
    Api(Api),
}

/// A custom resource's group, version and kind.
#[derive(Debug, clap::Args)]
struct KindArgs {
    /// The custom resource's API group (a DNS subdomain with a dot: `example.com`).
    #[arg(long)]
    group: String,
    /// Its version (`v1`, `v1alpha1`, `v2beta3`).
    #[arg(long)]
    version: String,
    /// Its kind (UpperCamelCase: `Widget`); its module is the kind in snake_case.
    #[arg(long)]
    kind: String,
}

/// What `kubekit new` is given.
#[derive(Debug, clap::Args)]
struct New {
    /// The project's name: its crate, binary and namespace prefix (a DNS label of at most
    /// 56 characters: lowercase letters, digits and `-`).
    name: String,
    #[command(flatten)]
    kind: KindArgs,
    /// The directory the project's directory is made in.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// kubekit as a path dependency on this clone (default: the repository this program
    /// was built from).
    #[arg(long, conflicts_with = "kubekit_git")]
    kubekit_path: Option<PathBuf>,
    /// kubekit as a git dependency on this URL instead.
    #[arg(long)]
    kubekit_git: Option<String>,
}

/// What `kubekit api` is given.
#[derive(Debug, clap::Args)]
struct Api {
    #[command(flatten)]
    kind: KindArgs,
    /// The project's directory.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
}

/// The project's own files: each path and its template.
const PROJECT: [(&str, &str); 11] = [
    ("Cargo.toml", include_str!("../template/Cargo.toml")),
    ("README.md", include_str!("../template/README.md")),
    ("Dockerfile", include_str!("../template/Dockerfile")),
    (".gitignore", include_str!("../template/.gitignore")),
    ("src/lib.rs", include_str!("../template/src/lib.rs")),
    ("src/main.rs", include_str!("../template/src/main.rs")),
    (
        "tests/common/mod.rs",
        include_str!("../template/tests/common/mod.rs"),
    ),
    ("tests/fake.rs", include_str!("../template/tests/fake.rs")),
    ("tests/e2e.rs", include_str!("../template/tests/e2e.rs")),
    (
        "tests/manifests.rs",
        include_str!("../template/tests/manifests.rs"),
    ),
    (
        "deploy/deployment.yaml",
        include_str!("../template/deploy/deployment.yaml"),
    ),
];

/// A kind's files (the first kind's, and each `kubekit api` adds).
const KIND: [(&str, &str); 2] = [
    (
        "src/__SNAKE__/mod.rs",
        include_str!("../template/src/kind/mod.rs"),
    ),
    (
        "src/__SNAKE__/controller.rs",
        include_str!("../template/src/kind/controller.rs"),
    ),
];

/// Where `kubekit api` puts a kind's lines: after each marker's line, the line to insert
/// (with the marker's indentation), in the file.
const MARKERS: [(&str, &str, &str); 3] = [
    (
        "src/lib.rs",
        "// kubekit api: a kind's module goes above this line.",
        "pub mod __SNAKE__;",
    ),
    (
        "src/main.rs",
        "// kubekit api: a kind's controller goes above this line.",
        "__CRATE__::__SNAKE__::controller::add_to(&mut mgr, workers)?;",
    ),
    (
        "src/main.rs",
        "// kubekit api: a kind's CRD goes above this line.",
        "__CRATE__::__SNAKE__::crd_yaml(),",
    ),
];

/// `name` if it is a DNS label short enough for `<name>-system`.
fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 56
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    match valid {
        true => Ok(()),
        false => Err(format!(
            "the name {name:?} must be a DNS label of at most 56 characters (lowercase letters, \
             digits and '-', starting with a letter): it names the crate, the binary and the \
             namespace <name>-system"
        )),
    }
}

/// `group` if it is a DNS subdomain with a dot, as the API server requires of a CRD's.
fn check_group(group: &str) -> Result<(), String> {
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    match group.contains('.') && group.len() <= 253 && group.split('.').all(label) {
        true => Ok(()),
        false => Err(format!(
            "the group {group:?} must be a lowercase DNS subdomain with at least one dot \
             (example.com)"
        )),
    }
}

/// `version` if it is a Kubernetes API version: `v<N>`, `v<N>alpha<M>` or `v<N>beta<M>`.
fn check_version(version: &str) -> Result<(), String> {
    let number =
        |s: &str| !s.is_empty() && !s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit());
    let valid = version.strip_prefix('v').is_some_and(|rest| {
        let major_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (major, stage) = rest.split_at(major_end);
        number(major)
            && (stage.is_empty()
                || ["alpha", "beta"]
                    .iter()
                    .any(|s| stage.strip_prefix(s).is_some_and(number)))
    });
    match valid {
        true => Ok(()),
        false => Err(format!(
            "the version {version:?} must be v<N>, v<N>alpha<M> or v<N>beta<M> (v1, v1alpha1)"
        )),
    }
}

/// `kind` if it is an UpperCamelCase identifier.
fn check_kind(kind: &str) -> Result<(), String> {
    let valid = kind.starts_with(|c: char| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphanumeric());
    match valid {
        true => Ok(()),
        false => Err(format!(
            "the kind {kind:?} must be UpperCamelCase letters and digits (Widget)"
        )),
    }
}

/// The resource's plural, as kubebuilder makes it: `widgets`, `classes`, `policies`.
fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    let consonant_y =
        lower.ends_with('y') && !lower[..lower.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        format!("{}ies", &lower[..lower.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// Where the project takes kubekit from.
enum Source {
    /// A clone of kubekit, at this (canonical) path.
    Path(PathBuf),
    /// A git repository of kubekit.
    Git(String),
}

impl Source {
    /// The kubekit clone `path` (default: the repository this program was built from), or
    /// the repository `git`.
    fn new(path: Option<&Path>, git: Option<&str>) -> Result<Self, String> {
        if let Some(url) = git {
            return Ok(Self::Git(url.to_string()));
        }
        let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let root = path.unwrap_or(&built_from);
        let canonical = root
            .canonicalize()
            .map_err(|e| format!("--kubekit-path {}: {e}", root.display()))?;
        match canonical.join("kubekit/Cargo.toml").is_file() {
            true => Ok(Self::Path(canonical)),
            false => Err(format!(
                "--kubekit-path {}: not a clone of kubekit (no kubekit/Cargo.toml)",
                root.display()
            )),
        }
    }

    /// The dependency line of kubekit's crate `krate`.
    fn dependency(&self, krate: &str) -> String {
        match self {
            Self::Path(root) => format!("{krate} = {{ path = {:?} }}", root.join(krate)),
            Self::Git(url) => format!("{krate} = {{ git = {url:?} }}"),
        }
    }

    /// Where a reader finds kubekit.
    fn home(&self) -> String {
        match self {
            Self::Path(root) => root.display().to_string(),
            Self::Git(url) => url.clone(),
        }
    }
}

/// `kind`'s module name: the kind in snake_case (`ConfigMapGenerator` →
/// `config_map_generator`, `HTTPRoute` → `http_route`), which must not be a Rust keyword.
fn snake(kind: &str) -> Result<String, String> {
    let chars: Vec<char> = kind.chars().collect();
    let mut snake = String::new();
    for (i, c) in chars.iter().enumerate() {
        let boundary = i > 0
            && c.is_ascii_uppercase()
            && (!chars[i - 1].is_ascii_uppercase()
                || chars.get(i + 1).is_some_and(char::is_ascii_lowercase));
        if boundary {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    const KEYWORDS: [&str; 51] = [
        "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn",
        "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
        "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
        "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final",
        "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
    ];
    match KEYWORDS.contains(&snake.as_str()) {
        true => Err(format!(
            "the kind {kind:?} would be the module `{snake}`, a Rust keyword: choose another kind"
        )),
        false => Ok(snake),
    }
}

/// The placeholders of `kind`'s templates in the project `name`, with their values.
fn kind_replacements(name: &str, kind: &KindArgs) -> Result<Vec<(&'static str, String)>, String> {
    check_group(&kind.group)?;
    check_version(&kind.version)?;
    check_kind(&kind.kind)?;
    Ok(vec![
        ("__CRATE__", name.replace('-', "_")),
        ("__NAME__", name.to_string()),
        ("__GROUP__", kind.group.clone()),
        ("__VERSION__", kind.version.clone()),
        ("__PLURAL__", plural(&kind.kind)),
        ("__SNAKE__", snake(&kind.kind)?),
        ("__KIND__", kind.kind.clone()),
    ])
}

/// `template` with every placeholder replaced.
fn fill(template: &str, replacements: &[(&str, String)]) -> String {
    replacements
        .iter()
        .fold(template.to_string(), |text, (from, to)| {
            text.replace(from, to)
        })
}

/// Writes each of `templates`, filled, into `project`; refuses to overwrite a file.
fn write_files(
    project: &Path,
    templates: &[(&str, &str)],
    replacements: &[(&str, String)],
) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for (path, template) in templates {
        let path = project.join(fill(path, replacements));
        if path.exists() {
            return Err(format!("{} exists already", path.display()));
        }
        let parent = path.parent().unwrap_or(project);
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        std::fs::write(&path, fill(template, replacements))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Writes the project `new` describes; returns its directory and its Rust files.
fn write(new: New) -> Result<(PathBuf, Vec<PathBuf>), String> {
    check_name(&new.name)?;
    let mut replacements = kind_replacements(&new.name, &new.kind)?;
    let source = Source::new(new.kubekit_path.as_deref(), new.kubekit_git.as_deref())?;
    let project = new.dir.join(&new.name);
    if project.exists() {
        return Err(format!("{} exists already", project.display()));
    }
    let dev = [
        source.dependency("kubekit-fake"),
        source.dependency("testenv"),
    ]
    .join("\n");
    let kubekit = [
        ("__KUBEKIT_DEV__", dev),
        ("__KUBEKIT_HOME__", source.home()),
        ("__KUBEKIT__", source.dependency("kubekit")),
    ];
    replacements.splice(0..0, kubekit);
    let mut written = write_files(&project, &PROJECT, &replacements)?;
    written.extend(write_files(&project, &KIND, &replacements)?);
    Ok((project, written))
}

/// The package name in `project`'s Cargo.toml.
fn package_name(project: &Path) -> Result<String, String> {
    let manifest = project.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).map_err(|e| {
        format!(
            "{}: {e} (is --dir a project `kubekit new` wrote?)",
            manifest.display()
        )
    })?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("name = \"")?
                .strip_suffix('"')
                .map(String::from)
        })
        .ok_or_else(|| format!("{}: no `name = \"...\"` line", manifest.display()))
}

/// Adds the kind `api` describes to its project: its module, and its lines at the markers
/// of `src/lib.rs` and `src/main.rs`. Returns the Rust files written or changed.
fn add_kind(api: Api) -> Result<Vec<PathBuf>, String> {
    let name = package_name(&api.dir)?;
    let replacements = kind_replacements(&name, &api.kind)?;
    // Every marker first: nothing is written into a project that lacks one.
    let mut edited: Vec<(PathBuf, String)> = Vec::new();
    for (file, marker, line) in MARKERS {
        let path = api.dir.join(file);
        let text = match edited.iter().position(|(p, _)| *p == path) {
            Some(i) => edited.remove(i).1,
            None => {
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?
            }
        };
        let line = fill(line, &replacements);
        let at = text.find(marker).ok_or_else(|| {
            format!("{file} has no line `{marker}`: add `{line}` where it belongs by hand")
        })?;
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let indent = &text[start..at];
        let text = format!("{}{indent}{line}\n{}", &text[..start], &text[start..]);
        edited.push((path, text));
    }
    let mut written = write_files(&api.dir, &KIND, &replacements)?;
    for (path, text) in edited {
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Formats the Rust files among `files` as `cargo fmt` would (the names put in change the
/// lines' widths); a missing `rustfmt` only leaves them as written.
fn format(files: &[PathBuf]) {
    let rust = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"));
    let formatted = std::process::Command::new("rustfmt")
        .args(["--edition", "2024"])
        .args(rust)
        .status();
    if !formatted.is_ok_and(|s| s.success()) {
        eprintln!("kubekit: rustfmt did not run; `cargo fmt` in the project formats it");
    }
}

fn main() -> ExitCode {
    let done = match Cli::parse().command {
        Command::New(new) => write(new).map(|(project, files)| {
            format(&files);
            format!("wrote {}: cd there and run `cargo test`", project.display())
        }),
        Command::Api(api) => {
            let kind = api.kind.kind.clone();
            add_kind(api).map(|files| {
                format(&files);
                format!(
                    "added {kind}: `UPDATE_MANIFESTS=1 cargo test` writes its CRD and RBAC \
                     into deploy/"
                )
            })
        }
    };
    match done {
        Ok(message) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kubekit: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_kubebuilders_rules() {
        assert_eq!(plural("Widget"), "widgets");
        assert_eq!(plural("Class"), "classes");
        assert_eq!(plural("Box"), "boxes");
        assert_eq!(plural("Match"), "matches");
        assert_eq!(plural("Policy"), "policies");
        assert_eq!(plural("Gateway"), "gateways");
    }

    #[test]
    fn names_groups_versions_and_kinds_are_checked_with_what_they_must_be() {
        for good in ["my-operator", "op", "a1"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in ["", "My-op", "1op", "op-", "op_x", &"x".repeat(57)] {
            assert!(check_name(bad).unwrap_err().contains("DNS label"), "{bad}");
        }
        assert_eq!(check_group("example.com"), Ok(()));
        for bad in ["example", "Example.com", "a..b", "-a.b", "a_b.c"] {
            assert!(check_group(bad).unwrap_err().contains("subdomain"), "{bad}");
        }
        for good in ["v1", "v12", "v1alpha1", "v2beta3"] {
            assert_eq!(check_version(good), Ok(()), "{good}");
        }
        for bad in ["1", "v0", "v", "v1alpha", "v1gamma1", "v01", "v1beta0"] {
            assert!(check_version(bad).unwrap_err().contains("v<N>"), "{bad}");
        }
        assert_eq!(check_kind("Widget"), Ok(()));
        for bad in ["widget", "Wid-get", "", "Wid get"] {
            assert!(
                check_kind(bad).unwrap_err().contains("UpperCamelCase"),
                "{bad}"
            );
        }
    }

    #[test]
    fn kinds_become_snake_case_modules_that_are_not_keywords() {
        assert_eq!(snake("Widget").unwrap(), "widget");
        assert_eq!(snake("ConfigMapGenerator").unwrap(), "config_map_generator");
        assert_eq!(snake("HTTPRoute").unwrap(), "http_route");
        assert_eq!(snake("V2Thing").unwrap(), "v2_thing");
        assert!(snake("Type").unwrap_err().contains("Rust keyword"));
        assert!(snake("Match").unwrap_err().contains("Rust keyword"));
    }

    fn kind(kind: &str) -> KindArgs {
        KindArgs {
            group: "example.com".into(),
            version: "v1".into(),
            kind: kind.into(),
        }
    }

    #[test]
    fn a_new_project_has_every_placeholder_replaced_and_api_adds_a_kind_at_the_markers() {
        let dir = std::env::temp_dir().join(format!("kubekit-new-{}", std::process::id()));
        let new = |git: Option<&str>| New {
            name: "my-operator".into(),
            kind: kind("Policy"),
            dir: dir.clone(),
            kubekit_path: None,
            kubekit_git: git.map(String::from),
        };
        let (project, files) = write(new(Some("https://example.com/kubekit.git"))).unwrap();
        assert_eq!(files.len(), PROJECT.len() + KIND.len());
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            assert!(
                !text.contains("__"),
                "{} keeps a placeholder:\n{text}",
                file.display()
            );
        }
        let read = |path: &str| std::fs::read_to_string(project.join(path)).unwrap();
        let cargo = read("Cargo.toml");
        assert!(cargo.contains(r#"kubekit = { git = "https://example.com/kubekit.git" }"#));
        let module = read("src/policy/mod.rs");
        assert!(
            module.contains(r#"plural = "policies""#) && module.contains("pub struct PolicySpec")
        );
        assert!(write(new(None)).unwrap_err().contains("exists already"));

        let api = |k: &str| Api {
            kind: kind(k),
            dir: project.clone(),
        };
        let added = add_kind(api("ConfigMapGenerator")).unwrap();
        assert_eq!(
            added.len(),
            KIND.len() + 2,
            "its module, lib.rs and main.rs"
        );
        assert!(read("src/lib.rs").contains("pub mod policy;\npub mod config_map_generator;\n"));
        let main = read("src/main.rs");
        assert!(main.contains(
            "    my_operator::config_map_generator::controller::add_to(&mut mgr, workers)?;\n    // kubekit api"
        ));
        assert!(main.contains("            my_operator::config_map_generator::crd_yaml(),\n"));
        let again = add_kind(api("ConfigMapGenerator")).unwrap_err();
        assert!(again.contains("exists already"), "{again}");
        assert_eq!(
            read("src/lib.rs").matches("config_map_generator").count(),
            1,
            "a refused kind changes nothing"
        );
        std::fs::write(project.join("src/lib.rs"), "pub mod policy;\n").unwrap();
        let unmarked = add_kind(api("Gadget")).unwrap_err();
        assert!(unmarked.contains("has no line"), "{unmarked}");
        assert!(
            !project.join("src/gadget").exists(),
            "nothing written without the markers"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
