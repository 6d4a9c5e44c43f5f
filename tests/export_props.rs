//! Property tests of the compiler on generated metadata: every exported schema is valid
//! JSON Schema 2020-12 and passes our strict-mode checker in every format, names are
//! unique and within limits, the safety suffix survives every truncation, and every
//! flattened name maps back to a command that exists.

use atip::compile::formats::{self, Format};
use atip::compile::{Catalog, FlattenOptions, ResolvedCommand, names, resolve, safety, strict};
use atip::model::Metadata;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::HashSet;

fn description() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[A-Za-z ,.()-]{0,60}",
        1 => Just(String::new()),
        1 => Just("   ".to_string()),
        1 => "[a-zé⚠️ ]{900,1400}",
    ]
}

fn param_type() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "string",
        "integer",
        "number",
        "boolean",
        "file",
        "directory",
        "url",
        "enum",
        "array",
        "weird",
    ])
}

fn enum_values() -> impl Strategy<Value = Option<Vec<Value>>> {
    prop_oneof![
        3 => Just(None),
        1 => prop::collection::vec("[a-z ]{1,8}".prop_map(Value::from), 1..6).prop_map(Some),
        1 => prop::collection::vec((0i64..100).prop_map(Value::from), 1..5).prop_map(Some),
        1 => prop::collection::vec(prop_oneof![(0i64..9).prop_map(Value::from), "[a-z]{1,3}".prop_map(Value::from), Just(Value::Null), (0.0f64..2.0).prop_map(Value::from)], 1..5).prop_map(Some),
    ]
}

fn default_value() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![3 => Just(None), 1 => Just(Some(json!(1))), 1 => Just(Some(json!("x"))), 1 => Just(Some(json!(true))), 1 => Just(Some(json!(["a"])))]
}

fn param_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9-]{0,10}",
        "[A-Za-z0-9_.-]{1,80}",
        Just("help".to_string()),
        Just("action".to_string())
    ]
}

fn argument() -> impl Strategy<Value = Value> {
    (
        param_name(),
        param_type(),
        description(),
        any::<Option<bool>>(),
        any::<Option<bool>>(),
        enum_values(),
        default_value(),
    )
        .prop_map(|(name, ty, desc, required, variadic, values, default)| {
            let mut a = json!({"name": name, "type": ty, "description": desc});
            if let Some(r) = required {
                a["required"] = r.into();
            }
            if let Some(v) = variadic {
                a["variadic"] = v.into();
            }
            if let Some(v) = values {
                a["enum"] = v.into();
            }
            if let Some(d) = default {
                a["default"] = d;
            }
            a
        })
}

fn option() -> impl Strategy<Value = Value> {
    (
        param_name(),
        param_type(),
        description(),
        any::<Option<bool>>(),
        any::<Option<bool>>(),
        enum_values(),
        prop::option::of("[A-Z_]{2,8}"),
        prop::sample::select(vec![0usize, 1, 2]),
    )
        .prop_map(|(name, ty, desc, required, variadic, values, env, flags)| {
            let flags = match flags {
                0 => json!([format!("--{name}")]),
                1 => json!(["-x", format!("--{name}")]),
                _ => json!(["-y"]),
            };
            let mut o = json!({"name": name, "flags": flags, "type": ty, "description": desc});
            if let Some(r) = required {
                o["required"] = r.into();
            }
            if let Some(v) = variadic {
                o["variadic"] = v.into();
            }
            if let Some(v) = values {
                o["enum"] = v.into();
            }
            if let Some(e) = env {
                o["envVar"] = e.into();
            }
            o
        })
}

fn effects() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(
        (
            any::<Option<bool>>(),
            any::<Option<bool>>(),
            any::<Option<bool>>(),
            any::<Option<bool>>(),
            any::<Option<bool>>(),
            any::<Option<bool>>(),
            any::<Option<bool>>(),
        )
            .prop_map(|(d, r, i, n, b, tty, w)| {
                let mut e = json!({});
                if let Some(d) = d {
                    e["destructive"] = d.into();
                }
                if let Some(r) = r {
                    e["reversible"] = r.into();
                }
                if let Some(i) = i {
                    e["idempotent"] = i.into();
                }
                if let Some(n) = n {
                    e["network"] = n.into();
                }
                if let Some(b) = b {
                    e["cost"] = json!({"billable": b});
                }
                if let Some(t) = tty {
                    e["interactive"] = json!({"tty": t});
                }
                if let Some(w) = w {
                    e["filesystem"] = json!({"write": w});
                }
                e
            }),
    )
}

fn command(depth: u32) -> BoxedStrategy<Value> {
    let leaf = (
        description(),
        prop::collection::vec(argument(), 0..3),
        prop::collection::vec(option(), 0..4),
        effects(),
    )
        .prop_map(|(desc, args, opts, eff)| {
            let mut c = json!({"description": desc});
            if !args.is_empty() {
                c["arguments"] = args.into();
            }
            if !opts.is_empty() {
                c["options"] = opts.into();
            }
            if let Some(e) = eff {
                c["effects"] = e;
            }
            c
        });
    if depth == 0 {
        return leaf.boxed();
    }
    (
        leaf,
        prop::collection::btree_map(
            prop_oneof![9 => "[a-z][a-z0-9-]{0,8}", 1 => "[A-Za-z0-9._ -]{1,70}"],
            command(depth - 1),
            0..4,
        ),
    )
        .prop_map(|(mut c, children)| {
            if !children.is_empty() {
                c["commands"] = serde_json::to_value(children).unwrap();
            }
            c
        })
        .boxed()
}

pub(crate) fn metadata() -> impl Strategy<Value = Metadata> {
    (
        prop_oneof![4 => "[a-z][a-z0-9-]{0,10}", 1 => "[0-9A-Za-z_-]{1,70}"],
        description(),
        prop::collection::vec(option(), 0..3),
        effects(),
        prop::collection::btree_map(prop_oneof![9 => "[a-z][a-z0-9-]{0,8}", 1 => Just(String::new())], command(2), 0..5),
    )
        .prop_map(|(name, desc, globals, eff, commands)| {
            let mut m = json!({"atip": {"version": "0.6"}, "name": name, "version": "1", "description": desc});
            if !globals.is_empty() { m["globalOptions"] = globals.into(); }
            if let Some(e) = eff { m["effects"] = e; }
            if !commands.is_empty() { m["commands"] = serde_json::to_value(commands).unwrap(); }
            Metadata::from_value(m).expect("generated metadata parses")
        })
}

const JSON_FORMATS: [Format; 5] = [
    Format::Openai,
    Format::OpenaiStrict,
    Format::Anthropic,
    Format::Gemini,
    Format::Mcp,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: crate::common::proptest_cases(32), ..ProptestConfig::default() })]

    #[test]
    fn every_export_is_valid_and_checked(metas in prop::collection::vec(metadata(), 1..3), interactive in any::<bool>()) {
        // A registry holds one tool per name; two generated documents with the same name
        // are not a case export has to answer for.
        let mut tool_names = HashSet::new();
        prop_assume!(metas.iter().all(|m| tool_names.insert(m.tool_name())));
        let catalog = Catalog::build(&metas, &FlattenOptions { include_interactive: interactive, commands: None });
        let mut seen = HashSet::new();
        for t in catalog.tools().iter().chain(catalog.skipped()) {
            // Names: valid everywhere, unique across the set, and the reverse map finds them.
            prop_assert!(names::is_valid_tool_name(&t.name), "bad name {:?}", t.name);
            prop_assert!(seen.insert(t.name.clone()), "duplicate name {}", t.name);
            let meta = metas.iter().find(|m| m.tool_name() == Some(t.tool.as_str())).unwrap();
            let found = resolve(meta, &t.command);
            prop_assert!(found.is_some(), "{} does not map back to {:?}", t.name, t.command);
            if let Some(ResolvedCommand::Entry(e)) = found {
                prop_assert_eq!(e.path.iter().map(|s| s.to_string()).collect::<Vec<_>>(), t.command.clone());
            }
            // The suffix survives every cut, and the limit holds.
            prop_assert!(t.description.chars().count() <= safety::MAX_DESCRIPTION);
            prop_assert_eq!(&t.safety, &safety::suffix(&t.effects));
            prop_assert!(t.description.ends_with(&t.safety));
            prop_assert!(!t.description.trim().is_empty());
            // Property names: identifiers, unique within the tool.
            let mut props = HashSet::new();
            for p in &t.params {
                prop_assert!(names::is_valid_property(&p.property), "bad property {:?}", p.property);
                prop_assert!(props.insert(p.property.clone()));
                prop_assert!(!p.description.trim().is_empty());
            }
            // The plain schema is JSON Schema 2020-12.
            if let Err(e) = jsonschema::draft202012::meta::validate(&t.input_schema) {
                prop_assert!(false, "{}: invalid schema: {e}", t.name);
            }
        }
        for t in catalog.tools() {
            prop_assert!(catalog.get(&t.name).is_some_and(|g| g.command == t.command && g.tool == t.tool));
        }
        for strategy_grouped in [false, true] {
            let list = if strategy_grouped { formats::grouped(catalog.tools(), &metas) } else { formats::flat(catalog.tools()) };
            let mut names_seen = HashSet::new();
            for t in &list {
                prop_assert!(names_seen.insert(t.name.clone()));
                prop_assert!(t.description.chars().count() <= safety::MAX_DESCRIPTION);
            }
            for f in JSON_FORMATS {
                // The streamed views print exactly the pretty-printed values.
                let mut fast = formats::ListWriter::new(Vec::new(), f);
                let mut slow = formats::ListWriter::new(Vec::new(), f);
                for t in &list {
                    fast.push_tool(t).unwrap();
                    slow.push(&formats::element(t, f)).unwrap();
                }
                let (fast, slow) = (fast.finish().unwrap(), slow.finish().unwrap());
                prop_assert_eq!(String::from_utf8(fast).unwrap(), String::from_utf8(slow.clone()).unwrap());
                let out = formats::render(&list, f);
                let pretty = serde_json::to_string_pretty(&out).unwrap() + "\n";
                prop_assert_eq!(pretty, String::from_utf8(slow).unwrap());
                let v = strict::check(f, &out);
                prop_assert!(v.is_empty(), "{:?} grouped={}: {:?}", f, strategy_grouped, v);
                prop_assert!(!out.to_string().contains("\"$ref\""));
                if f == Format::OpenaiStrict {
                    for tool in out.as_array().unwrap() {
                        if let Err(e) = jsonschema::draft202012::meta::validate(&tool["function"]["parameters"]) {
                            prop_assert!(false, "strict schema invalid: {e}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_suffix_survives_any_length(text in ".{0,3000}", max in 100usize..1500, flags in prop::sample::subsequence(vec!["⚠️ DESTRUCTIVE", "⚠️ NOT REVERSIBLE", "⚠️ NOT IDEMPOTENT", "💰 BILLABLE"], 0..4)) {
        let suffix = if flags.is_empty() { String::new() } else { format!("[{}]", flags.join(" | ")) };
        let out = safety::with_suffix(&text, &suffix, max);
        prop_assert!(out.chars().count() <= max);
        prop_assert!(out.ends_with(&suffix));
    }
}
