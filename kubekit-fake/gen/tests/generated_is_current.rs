//! The checked-in apply schema and OpenAPI schemas are what the pinned OpenAPI documents
//! give: a bump of the control plane without `cargo run -p kubekit-fake-gen` fails here.

use std::path::{Path, PathBuf};

/// Requires the file at `path` (in the repository at `repo`) to hold what `generate`
/// makes.
fn assert_current(generate: fn(&Path) -> Result<String, String>, path: fn(&Path) -> PathBuf) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let generated = generate(&repo).expect("generation");
    let file = path(&repo);
    let current = std::fs::read_to_string(&file).expect("the generated file");
    assert!(
        current == generated,
        "{} is stale: run `cargo run -p kubekit-fake-gen`",
        file.display()
    );
}

#[test]
fn apply_schema_matches_the_pinned_openapi_documents() {
    assert_current(kubekit_fake_gen::generate, kubekit_fake_gen::output_path);
}

#[test]
fn openapi_schemas_match_the_pinned_openapi_documents() {
    assert_current(
        kubekit_fake_gen::generate_openapi,
        kubekit_fake_gen::openapi_output_path,
    );
}

#[test]
fn discovery_matches_the_pinned_control_plane() {
    assert_current(
        kubekit_fake_gen::generate_discovery,
        kubekit_fake_gen::discovery_output_path,
    );
}
