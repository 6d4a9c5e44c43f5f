//! No input may panic the parser or the validator: arbitrary bytes, arbitrary JSON,
//! and mutations of real fixtures, each checked as every kind (proptest, bounded).

use atip::validate::{FileReport, Kind, Severity, check_bytes, parse_only, render};
use proptest::prelude::*;
use serde_json::Value;

const KINDS: [Option<Kind>; 5] = [
    None,
    Some(Kind::Metadata),
    Some(Kind::Shim),
    Some(Kind::Registry),
    Some(Kind::Pattern),
];

/// Checks one input as every kind and asserts the result is coherent.
fn check_all(bytes: &[u8]) {
    let _ = parse_only(bytes);
    for kind in KINDS {
        let checked = check_bytes(bytes, kind, Some(&format!("{}.json", "a".repeat(64))));
        let has_error = checked
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error);
        assert_eq!(checked.is_valid(), !has_error);
        for d in &checked.diagnostics {
            assert!(
                atip::validate::rules::rule_info(&d.rule).is_some(),
                "unknown rule {}",
                d.rule
            );
            assert!(
                d.pointer.is_empty() || d.pointer.starts_with('/'),
                "{}",
                d.pointer
            );
            if let Some(span) = &d.span {
                assert!(span.start <= bytes.len(), "span {span:?} past the input");
            }
            if let (Some(line), Some(col)) = (d.line, d.column) {
                assert!(line >= 1 && col >= 1);
            }
        }
        if checked.value.is_none() {
            assert!(!checked.is_valid(), "no value but valid");
        }
        // Every printer copes with whatever was found.
        let report = FileReport {
            path: "fuzz.json".into(),
            kind: checked.kind,
            valid: checked.is_valid(),
            diagnostics: checked.diagnostics,
            missing: false,
            source: Some(bytes.to_vec()),
            rendered: None,
        };
        let text = render::text(&report, false);
        assert_eq!(text.is_empty(), report.diagnostics.is_empty());
        for d in &report.diagnostics {
            let _ = render::sarif_result(&report.path, d);
        }
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z_\\-]{0,8}".prop_map(Value::from),
        prop_oneof![
            Just("0.1"),
            Just("0.6"),
            Just("0.9"),
            Just("string"),
            Just("enum"),
            Just("-v"),
            Just("--x")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        let keys = prop_oneof![
            Just("atip".to_string()),
            Just("name".to_string()),
            Just("version".to_string()),
            Just("description".to_string()),
            Just("commands".to_string()),
            Just("options".to_string()),
            Just("arguments".to_string()),
            Just("globalOptions".to_string()),
            Just("flags".to_string()),
            Just("type".to_string()),
            Just("enum".to_string()),
            Just("default".to_string()),
            Just("binary".to_string()),
            Just("tools".to_string()),
            Just("patterns".to_string()),
            Just("steps".to_string()),
            Just("variadic".to_string()),
            Just("required".to_string()),
            Just("features".to_string()),
            Just("trust".to_string()),
            Just("effects".to_string()),
            "[a-z~/]{0,4}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((keys, inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn fixture_bytes() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| std::fs::read(e.path()).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: crate::common::proptest_cases(64), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_all(&bytes);
    }

    #[test]
    fn arbitrary_json_never_panics(value in json_value(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_vec_pretty(&value) } else { serde_json::to_vec(&value) };
        check_all(&text.unwrap());
    }

    #[test]
    fn arbitrary_json_with_duplicate_keys_never_panics(value in json_value(), key in "[a-z]{1,3}") {
        // Splice a repeated key into every object's text.
        let text = serde_json::to_string(&value).unwrap()
            .replace('{', &format!("{{\"{key}\":1,\"{key}\":2,"))
            .replace(",}", "}");
        check_all(text.as_bytes());
    }

    #[test]
    fn mutated_fixtures_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let all = fixture_bytes();
        let mut bytes = all[pick.index(all.len())].clone();
        for (at, byte, op) in edits {
            if bytes.is_empty() { bytes.push(byte); continue; }
            let i = at.index(bytes.len());
            match op {
                0 => bytes[i] = byte,
                1 => { bytes.remove(i); }
                _ => bytes.insert(i, byte),
            }
        }
        check_all(&bytes);
    }
}
