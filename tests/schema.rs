//! Validates report JSON against the schema `benchsuite schema` prints
//! ([`benchsuite::schema::json_schema`]). The in-process tests use it as
//! `benchsuite_tests::schema`; the CLI's integration tests include this
//! file with `#[path]`, since the `benchsuite` package cannot depend on
//! this crate (it depends on `benchsuite`).

use std::sync::OnceLock;

/// Panics, listing every violation with its JSON path, unless `report`
/// (a report as JSON) validates against the report schema.
pub fn assert_valid_report(report: &serde_json::Value) {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        jsonschema::validator_for(&benchsuite::schema::json_schema())
            .expect("the report schema compiles")
    });
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("  {}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the report does not match `benchsuite schema`:\n{}",
        errors.join("\n")
    );
}
