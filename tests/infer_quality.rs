//! Quality of man-page inference, measured on a labelled set: real pages of many styles
//! copied from a Debian system into `tests/fixtures/man/`, each with its true options
//! and subcommands written down in `tests/fixtures/man/labels/NAME.SECTION.txt`.
//!
//! Reports option precision and recall per page and overall (run with `--nocapture` to
//! see the table) and fails below 95 % / 95 %. Every inferred flag must also be spelled
//! in the page itself, and every inferred document must validate without a warning.

use atip::infer::{self, locate};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/man")
}

struct Label {
    tool: String,
    flags: BTreeSet<String>,
    commands: BTreeSet<String>,
    /// `enum: FLAG VALUE…`: values the option's own description lists in prose.
    enums: Vec<(String, BTreeSet<String>)>,
}

fn labels() -> Vec<Label> {
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(fixtures().join("labels"))
        .expect("labels dir")
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let stem = f.file_stem().unwrap().to_str().unwrap();
        let tool = stem
            .rsplit_once('.')
            .map(|(t, _)| t)
            .unwrap_or(stem)
            .to_owned();
        let text = std::fs::read_to_string(&f).unwrap();
        let mut flags = BTreeSet::new();
        let mut commands = BTreeSet::new();
        let mut enums = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(c) = line.strip_prefix("command:") {
                commands.insert(c.trim().to_owned());
            } else if let Some(e) = line.strip_prefix("enum:") {
                let mut words = e.split_whitespace().map(str::to_owned);
                let flag = words.next().expect("enum: FLAG VALUE…");
                enums.push((flag, words.collect()));
            } else {
                flags.extend(line.split_whitespace().map(str::to_owned));
            }
        }
        out.push(Label {
            tool,
            flags,
            commands,
            enums,
        });
    }
    out
}

/// The page's text with roff's dash escapes resolved and font changes dropped, to check
/// that a flag is spelled in the page.
fn page_words(text: &str) -> String {
    // Drop zero-width and font escapes, then resolve dashes.
    let mut s = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            s.push(c);
            continue;
        }
        match chars.next() {
            Some('-') => s.push('-'),
            Some('f') => match chars.next() {
                Some('(') => {
                    chars.next();
                    chars.next();
                }
                Some('[') => while chars.next().is_some_and(|c| c != ']') {},
                _ => {}
            },
            Some('^' | '|' | '&' | ',' | '/' | ':' | '%' | ')') => {}
            Some(other) => {
                s.push('\\');
                s.push(other);
            }
            None => {}
        }
    }
    // mdoc writes `.Fl a` for `-a` and `Fl Fl all` for `--all`.
    let mut extra = String::new();
    for line in s.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut i = 0;
        while i < words.len() {
            if words[i] == "Fl" || words[i] == ".Fl" {
                let mut dashes = 1;
                while i + dashes < words.len() && words[i + dashes] == "Fl" {
                    dashes += 1;
                }
                if let Some(w) = words.get(i + dashes) {
                    extra.push_str(&format!(" {}{} ", "-".repeat(dashes), w));
                }
                i += dashes;
            } else {
                i += 1;
            }
        }
    }
    s.push_str(&extra);
    s
}

#[test]
fn labelled_set_precision_and_recall() {
    let root = fixtures();
    let index = locate::ManIndex::build(std::slice::from_ref(&root), &BTreeMap::new());
    let labels = labels();
    assert!(
        labels.len() >= 30,
        "the labelled set has {} pages",
        labels.len()
    );
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    let (mut ctp, mut cfp, mut cfn) = (0usize, 0usize, 0usize);
    let mut invented = Vec::new();
    // Enum values read from prose (options whose value name is no `{a|b}` list).
    let (mut etp, mut efp, mut efn) = (0usize, 0usize, 0usize);
    let mut enum_report = String::new();
    let mut report = String::from("page              options  precision  recall   commands\n");
    for label in &labels {
        let page = index
            .find(&label.tool)
            .unwrap_or_else(|| panic!("no fixture page for {}", label.tool));
        let text = locate::read_page(&page).expect("fixture page reads").text;
        let inferred = infer::infer_text(&text, &label.tool);
        let got: BTreeSet<String> = inferred
            .options
            .iter()
            .flat_map(|o| o.flags.iter().cloned())
            .collect();
        let words = page_words(&text);
        for f in &got {
            let spelled = words.match_indices(f.as_str()).any(|(i, _)| {
                let after = words[i + f.len()..].chars().next();
                !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
            });
            if !spelled {
                invented.push(format!("{}: {f}", label.tool));
            }
        }
        let t = got.intersection(&label.flags).count();
        let p = got.difference(&label.flags).count();
        let n = label.flags.difference(&got).count();
        tp += t;
        fp += p;
        fn_ += n;
        for o in &inferred.options {
            let v = o.value.as_deref().unwrap_or("");
            let braces = v.contains(['{', '|']) || (v.contains(',') && !v.contains(' '));
            if o.kind != "enum" || braces {
                continue;
            }
            let got: BTreeSet<String> = o.values.iter().cloned().collect();
            let right = label
                .enums
                .iter()
                .any(|(f, vals)| o.flags.contains(f) && *vals == got);
            if right {
                etp += 1;
            } else {
                efp += 1;
                enum_report.push_str(&format!(
                    "    {}: {:?} read as enum {got:?}, not labelled so\n",
                    label.tool, o.flags
                ));
            }
        }
        for (f, vals) in &label.enums {
            let found = inferred.options.iter().any(|o| {
                o.flags.contains(f)
                    && o.kind == "enum"
                    && o.values.iter().cloned().collect::<BTreeSet<_>>() == *vals
            });
            if !found {
                efn += 1;
                enum_report.push_str(&format!("    {}: {f} {vals:?} missed\n", label.tool));
            }
        }
        let got_cmds: BTreeSet<String> = inferred.commands.iter().map(|c| c.name.clone()).collect();
        ctp += got_cmds.intersection(&label.commands).count();
        cfp += got_cmds.difference(&label.commands).count();
        cfn += label.commands.difference(&got_cmds).count();
        let prec = if t + p == 0 {
            1.0
        } else {
            t as f64 / (t + p) as f64
        };
        let rec = if t + n == 0 {
            1.0
        } else {
            t as f64 / (t + n) as f64
        };
        report.push_str(&format!(
            "{:<18}{:>7}  {:>8.1}%  {:>6.1}%  {}/{}\n",
            label.tool,
            label.flags.len(),
            prec * 100.0,
            rec * 100.0,
            got_cmds.intersection(&label.commands).count(),
            label.commands.len()
        ));
        if p > 0 || n > 0 {
            report.push_str(&format!(
                "    extra {:?}\n    missing {:?}\n",
                got.difference(&label.flags).collect::<Vec<_>>(),
                label.flags.difference(&got).collect::<Vec<_>>()
            ));
        }
        // The document built from it is valid, without warnings.
        let doc = infer::convert::document(
            &inferred,
            &infer::convert::Origin {
                page: &page.path.to_string_lossy(),
                tool: &label.tool,
            },
        );
        let bytes = serde_json::to_vec(&doc).unwrap();
        let checked = atip::validate::check_bytes(&bytes, None, None);
        assert!(
            checked.diagnostics.is_empty(),
            "{}: inferred document has diagnostics: {:?}",
            label.tool,
            checked
                .diagnostics
                .iter()
                .map(|d| format!("{} {} {}", d.rule, d.pointer, d.message))
                .collect::<Vec<_>>()
        );
    }
    let precision = tp as f64 / (tp + fp) as f64;
    let recall = tp as f64 / (tp + fn_) as f64;
    let cprec = if ctp + cfp == 0 {
        1.0
    } else {
        ctp as f64 / (ctp + cfp) as f64
    };
    let crec = if ctp + cfn == 0 {
        1.0
    } else {
        ctp as f64 / (ctp + cfn) as f64
    };
    report.push_str(&format!(
        "overall: {} pages, {} labelled flags; option precision {:.1}%, recall {:.1}%; \
         subcommand precision {:.1}%, recall {:.1}%\n",
        labels.len(),
        tp + fn_,
        precision * 100.0,
        recall * 100.0,
        cprec * 100.0,
        crec * 100.0
    ));
    let eprec = if etp + efp == 0 {
        1.0
    } else {
        etp as f64 / (etp + efp) as f64
    };
    let erec = etp as f64 / (etp + efn).max(1) as f64;
    report.push_str(&format!(
        "enum values from prose: {} labelled options; precision {:.1}% ({etp} right, {efp} wrong), recall {:.1}%\n{enum_report}",
        etp + efn,
        eprec * 100.0,
        erec * 100.0
    ));
    eprintln!("{report}");
    assert!(
        invented.is_empty(),
        "flags not spelled in their page: {invented:?}"
    );
    assert!(
        precision >= 0.95,
        "option precision {precision:.3} < 0.95\n{report}"
    );
    assert!(recall >= 0.95, "option recall {recall:.3} < 0.95\n{report}");
    // An enum narrows what an agent may pass: a wrong one is worse than none.
    assert!(
        eprec >= 0.95 && etp + efn >= 20,
        "enum values from prose: precision {eprec:.3} < 0.95\n{report}"
    );
    assert!(
        cprec >= 0.95 && crec >= 0.95,
        "subcommands {cprec:.3}/{crec:.3}\n{report}"
    );
}
