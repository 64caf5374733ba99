//! The checked-in apply schema is what the pinned OpenAPI documents give: a bump of the
//! control plane without `cargo run -p kubekit-fake-gen` fails here.

use std::path::Path;

#[test]
fn apply_schema_matches_the_pinned_openapi_documents() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let generated = kubekit_fake_gen::generate(&repo).expect("generation");
    let current =
        std::fs::read_to_string(kubekit_fake_gen::output_path(&repo)).expect("the generated file");
    assert!(
        current == generated,
        "kubekit-fake/src/apply_schema.json is stale: run `cargo run -p kubekit-fake-gen`"
    );
}
