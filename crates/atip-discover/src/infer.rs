//! Inference: ATIP metadata for tools that do not describe themselves, read from their
//! installed manual pages. Nothing is executed (spec/infer.md).
//!
//! [`locate`] finds a command's page the way `man` would, [`roff`] reads man(7) and
//! mdoc(7) into an outline, [`convert`] turns the outline into a document that says
//! where it came from (`trust.source: "inferred"`) and states no effects, so the policy
//! treats every inferred command as unknown and asks before running it — unless
//! [`curated`], atip's reviewed effects table, names the program: then the effects are
//! the table's (and the scan records who vouches for them).

pub mod convert;
pub mod curated;
pub mod locate;
pub mod roff;
pub mod source;
pub mod values;

use convert::{Inferred, InferredCommand, Origin};
use locate::{ManIndex, PageRef, ReadError, Stamp};
use std::path::PathBuf;

/// Most per-command pages (`git-*`) read for one tool.
pub const MAX_SUBPAGES: usize = 400;

/// An inferred document and what it was read from.
#[derive(Debug, Clone)]
pub struct Inference {
    /// The JSON document.
    pub document: serde_json::Value,
    /// The main page file (before `.so` redirects).
    pub page: PathBuf,
    /// Every file read, with its stamp: the inference is current while none changed.
    pub inputs: Vec<(PathBuf, Stamp)>,
    /// Number of options found (all commands).
    pub options: usize,
    /// Whether atip's effects table gave the document its effects.
    pub curated: bool,
    /// Table conditions the page did not support (the command took the worst case).
    pub effects_warnings: Vec<String>,
}

/// Parses a page's text and reads it as the page of `tool`.
pub fn infer_text(text: &str, tool: &str) -> Inferred {
    convert::infer(&roff::parse(text), tool)
}

/// Reads `tool`'s man page `page` (and per-command pages `tool-CMD` whose SYNOPSIS says
/// `tool CMD`) and infers its document.
pub(crate) fn infer_page(
    index: &ManIndex,
    page: &PageRef,
    tool: &str,
) -> Result<Inference, ReadError> {
    let main = locate::read_page(page)?;
    let mut inputs = Vec::new();
    for f in &main.files {
        if let Ok(s) = Stamp::of(f) {
            inputs.push((f.clone(), s));
        }
    }
    let mut inf = infer_text(&main.text, tool);
    let subs = index.subpages(page, tool);
    let mut from_pages: Vec<InferredCommand> = Vec::new();
    for (cmd, sub) in subs.into_iter().take(MAX_SUBPAGES) {
        let Ok(text) = locate::read_page(&sub) else {
            continue;
        };
        let parsed = roff::parse(&text.text);
        let invocation = format!("{tool} {cmd}");
        let sub_inf = convert::infer(&parsed, &invocation);
        if !convert::synopsis_starts_with(&parsed, &invocation) {
            continue;
        }
        for f in &text.files {
            if let Ok(s) = Stamp::of(f) {
                inputs.push((f.clone(), s));
            }
        }
        let forms = convert::synopsis_lines(&parsed, &invocation);
        from_pages.push(InferredCommand {
            name: cmd.clone(),
            description: if sub_inf.description.is_empty() {
                format!("The {cmd} command.")
            } else {
                sub_inf.description
            },
            arguments: forms
                .first()
                .map(|f| convert::positional(f, &invocation))
                .unwrap_or_default(),
            options: sub_inf.options,
        });
    }
    if !from_pages.is_empty() {
        // A command's own page wins over its line in a COMMANDS section.
        inf.commands
            .retain(|c| !from_pages.iter().any(|p| p.name == c.name));
        inf.commands.extend(from_pages);
        inf.commands.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let options = inf.options.len() + inf.commands.iter().map(|c| c.options.len()).sum::<usize>();
    let page_path = main
        .files
        .last()
        .cloned()
        .unwrap_or_else(|| page.path.clone());
    let mut document = convert::document(
        &inf,
        &Origin {
            page: &page_path.to_string_lossy(),
            tool,
        },
    );
    let applied = curated::apply(&mut document, tool);
    Ok(Inference {
        document,
        page: page.path.clone(),
        inputs,
        options,
        curated: applied.is_some(),
        effects_warnings: applied.map(|a| a.warnings).unwrap_or_default(),
    })
}
