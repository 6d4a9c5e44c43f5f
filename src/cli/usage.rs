//! Usage errors (what clap rejects) as atip's structured error, so an agent that asked for
//! JSON gets JSON even when the command line itself was wrong; with the corrected command
//! line when clap knows what was meant.

use atip::output::{Applicability, AtipError, OutputFormat, SuggestedAction, Suggestion};
use clap::error::{ContextKind, ContextValue};
use serde_json::json;
use std::ffi::OsString;

/// The `--output` the command line asked for, read without clap (which just failed);
/// `auto` resolved against stdout.
pub fn requested_format(args: &[OsString]) -> OutputFormat {
    let mut wanted = None;
    let mut iter = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(arg) = iter.next() {
        if arg == "--" {
            break;
        }
        if arg == "--output" {
            wanted = iter.next().map(|v| v.into_owned());
        } else if let Some(v) = arg.strip_prefix("--output=") {
            wanted = Some(v.to_string());
        }
    }
    let format = wanted
        .and_then(|w| clap::ValueEnum::from_str(&w, true).ok())
        .unwrap_or(OutputFormat::Auto);
    format.resolve()
}

fn context(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(v) => v.first().cloned(),
        ContextValue::StyledStr(s) => Some(s.to_string()),
        _ => None,
    }
}

fn context_list(e: &clap::Error, kind: ContextKind) -> Vec<String> {
    match e.get(kind) {
        Some(ContextValue::Strings(v)) => v.clone(),
        Some(ContextValue::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// Shell-quotes one word when it needs it.
fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The command line with `wrong` replaced by `right` (the first word equal to `wrong`,
/// or starting with `wrong=`).
#[cfg(test)]
fn corrected(args: &[OsString], wrong: &str, right: &str) -> Option<String> {
    corrected_words(&words(args), wrong, right).map(|w| shell_line(&w))
}

fn words(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

fn shell_line(words: &[String]) -> String {
    let mut w = words.to_vec();
    if let Some(first) = w.first_mut() {
        *first = "atip".into();
    }
    w.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// Where `wrong` was typed (as itself or `wrong=VALUE`).
fn position(words: &[String], wrong: &str) -> Option<usize> {
    Some(
        words
            .iter()
            .skip(1)
            .position(|w| w == wrong || w.starts_with(&format!("{wrong}=")))?
            + 1,
    )
}

fn corrected_words(words: &[String], wrong: &str, right: &str) -> Option<Vec<String>> {
    let at = position(words, wrong)?;
    let mut fixed = words.to_vec();
    fixed[at] = match words[at].split_once('=') {
        Some((_, value)) if wrong.starts_with('-') => format!("{right}={value}"),
        _ => right.to_string(),
    };
    Some(fixed)
}

/// Whether `words` parse, short of what the user left out (a required argument or
/// subcommand): a suggestion must be accepted as written, and the rest is theirs.
fn parses(cmd: &clap::Command, words: &[String]) -> bool {
    use clap::error::ErrorKind;
    match cmd.clone().try_get_matches_from(words) {
        Ok(_) => true,
        Err(e) => matches!(
            e.kind(),
            ErrorKind::MissingRequiredArgument
                | ErrorKind::MissingSubcommand
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                | ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
        ),
    }
}

/// A corrected command line that parses, with what it changes: the flag moved after a
/// later subcommand it belongs to (`mcp --server X call` → `mcp call --server X`), clap's
/// suggestion, or that suggestion given the value a `--no-` spelling meant
/// (`--no-color` → `--color never`). `None` when no correction parses.
fn working_fix(
    cmd: &clap::Command,
    words: &[String],
    wrong: &str,
    right: Option<&str>,
) -> Option<(String, Vec<String>)> {
    let at = position(words, wrong)?;
    if wrong.starts_with('-') && !wrong.contains('=') {
        let takes_value = words.get(at + 1).is_some_and(|w| !w.starts_with('-'));
        let moved: Vec<String> = if takes_value {
            words[at..at + 2].to_vec()
        } else {
            vec![words[at].clone()]
        };
        let mut rest = words.to_vec();
        rest.drain(at..at + moved.len());
        for j in at..rest.len() {
            if rest[j].starts_with('-') {
                continue;
            }
            let mut w = rest.clone();
            for (k, m) in moved.iter().enumerate() {
                w.insert(j + 1 + k, m.clone());
            }
            if parses(cmd, &w) {
                return Some((format!("`{wrong}` after `{}`", rest[j]), w));
            }
        }
    }
    let right = right?;
    let fixed = corrected_words(words, wrong, right)?;
    if parses(cmd, &fixed) {
        return Some((format!("`{right}`"), fixed));
    }
    if wrong.starts_with("--no-") && !words[at].contains('=') {
        for value in ["never", "false", "none", "off", "0"] {
            let mut w = fixed.clone();
            w.insert(at + 1, value.into());
            if parses(cmd, &w) {
                return Some((format!("`{right} {value}`"), w));
            }
        }
    }
    None
}

/// The structured form of a clap error: code `usage`, clap's message, what it found in
/// `details`, and the corrected command line when clap suggests a flag, value or
/// subcommand.
pub fn to_atip(e: &clap::Error, args: &[OsString], cmd: &clap::Command) -> AtipError {
    let rendered = e.render().to_string();
    let message = rendered
        .lines()
        .next()
        .unwrap_or("invalid command line")
        .trim_start_matches("error: ")
        .to_string();
    let invalid_arg = context(e, ContextKind::InvalidArg);
    let invalid_value = context(e, ContextKind::InvalidValue);
    let invalid_sub = context(e, ContextKind::InvalidSubcommand);
    let valid_values = context_list(e, ContextKind::ValidValue);
    let suggested_arg = context(e, ContextKind::SuggestedArg);
    let suggested_value = context(e, ContextKind::SuggestedValue);
    let suggested_sub = context(e, ContextKind::SuggestedSubcommand);
    let mut err = AtipError::usage(message)
        .hint("`atip --help`, or `atip COMMAND --help`, lists what is accepted")
        .details(json!({
            "kind": format!("{:?}", e.kind()),
            "argument": invalid_arg,
            "value": invalid_value,
            "validValues": valid_values,
        }));
    let fix = [
        (invalid_arg.as_deref(), suggested_arg.as_deref(), "flag"),
        (
            invalid_value.as_deref(),
            suggested_value.as_deref(),
            "value",
        ),
        (invalid_sub.as_deref(), suggested_sub.as_deref(), "command"),
    ]
    .into_iter()
    .find_map(|(wrong, right, what)| {
        let (wrong, right) = (wrong?, right?);
        // clap names an argument as `--flag <VALUE>`; the word typed is the flag.
        let right = right.split_whitespace().next()?;
        let wrong = wrong.split_whitespace().next()?;
        Some((wrong.to_string(), right.to_string(), what))
    });
    let fix = fix.or_else(|| {
        // An unknown flag clap has no spelling for may still belong to a later subcommand.
        let wrong = invalid_arg
            .as_deref()?
            .split_whitespace()
            .next()?
            .to_string();
        Some((wrong, String::new(), "flag"))
    });
    let working = fix.as_ref().and_then(|(wrong, right, _)| {
        let right = (!right.is_empty()).then_some(right.as_str());
        working_fix(cmd, &words(args), wrong, right).map(|(what, w)| (wrong.clone(), what, w))
    });
    if let Some((wrong, right, line)) = working {
        // Only a correction that parses is offered: a "did you mean" the parser then
        // rejects (a flag that needs a value, another command's flag) misleads.
        let s = Suggestion::new(
            SuggestedAction::RetryWithModifiedInput,
            format!("{right} instead of `{wrong}`"),
        )
        .example(shell_line(&line), Applicability::MaybeIncorrect);
        err = err.hint(format!("did you mean {right}?")).suggest(s);
    } else if let (Some(value), false) = (&invalid_value, valid_values.is_empty()) {
        err = err
            .hint(format!(
                "`{value}` is not one of: {}",
                valid_values.join(", ")
            ))
            .suggest(Suggestion::new(
                SuggestedAction::RetryWithModifiedInput,
                format!("use one of: {}", valid_values.join(", ")),
            ));
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn format_is_read_from_either_spelling() {
        assert_eq!(
            requested_format(&os(&["atip", "--output", "json", "list"])),
            OutputFormat::Json
        );
        assert_eq!(
            requested_format(&os(&["atip", "list", "--output=text"])),
            OutputFormat::Text
        );
    }

    #[test]
    fn corrected_line_replaces_the_wrong_word() {
        assert_eq!(
            corrected(
                &os(&["/bin/atip", "list", "--sorce", "shim"]),
                "--sorce",
                "--source"
            )
            .as_deref(),
            Some("atip list --source shim")
        );
        assert_eq!(
            corrected(&os(&["atip", "lst", "'x y'"]), "lst", "list").as_deref(),
            Some("atip list ''\\''x y'\\'''")
        );
    }
}
