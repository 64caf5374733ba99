//! The checked-in apply configurations are what the pinned OpenAPI documents give: a bump of
//! the control plane without `cargo run -p kubekit-applyconfigurations-gen` fails here.

use std::path::Path;

use kubekit_applyconfigurations_gen as generator;

#[test]
fn generated_apply_configurations_match_the_pinned_openapi_documents() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sources = generator::Sources::read(&repo).expect("the generator's inputs");
    let out = generator::render(&sources).expect("generation");
    let code = std::fs::read_to_string(generator::output_path(&repo)).expect("the generated file");
    let stale = "run `cargo run -p kubekit-applyconfigurations-gen`";
    assert!(
        code == out.code,
        "kubekit-applyconfigurations/src/generated.rs is stale: {stale}"
    );
    for (path, features) in [
        (generator::manifest_path(&repo), &out.features),
        (generator::facade_manifest_path(&repo), &out.facade_features),
    ] {
        let manifest = std::fs::read_to_string(&path).expect("a manifest");
        assert_eq!(
            manifest,
            generator::with_features(&manifest, features).expect("the manifest's markers"),
            "the generated features of {} are stale: {stale}",
            path.display()
        );
    }
    assert!(out.roots > 50, "only {} kinds can be applied", out.roots);
}
