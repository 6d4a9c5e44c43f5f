//! `chat`: the whole tool loop against a model endpoint. The user's prompt goes to the
//! model with the selected tools; each tool call the model makes runs through the exec
//! [`Engine`] (validation, policy, confirmation, guardrails, timeouts, output caps,
//! redaction, audit `via: chat`); a result message per call goes back with the call's
//! id; and the model is asked again, until it answers in plain text or a limit ends the
//! run (`spec/chat.md`).
//!
//! [`provider`] owns the wire formats, [`http`] the endpoint and its retries,
//! [`transcript`] the JSONL record. Tools are offered directly (the `atip export`
//! definitions) or, for a large selection, through the search mode of
//! [`crate::search::mode`]. Must not print (the CLI renders the [`ChatReport`]), and runs
//! nothing except through the engine.

// The layers below, under the module names this code was written with (`crate::output`, …).
#[allow(unused_imports)]
pub(crate) use atip_base::{output, timestamp};
#[allow(unused_imports)]
pub(crate) use atip_compile as compile;
#[allow(unused_imports)]
pub(crate) use atip_exec as exec;
#[allow(unused_imports)]
pub(crate) use atip_search as search;

pub mod http;
pub mod provider;
pub mod transcript;

use crate::compile::FlatTool;
use crate::compile::formats::{self, ExportTool};
use crate::exec::calls::{RawArgs, ToolCall};
use crate::exec::redact::Redactor;
use crate::exec::{BatchOptions, Confirmation, Engine, Prepared, Via, args};
use crate::output::{AtipError, ErrorCode, SuggestedAction, Suggestion};
use crate::search::mode::{CALL_TOOL, SEARCH_TOOL, SearchMode, unknown_tool};
use provider::{Api, Conversation, Usage};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};
use transcript::Transcript;

/// What the model is offered.
#[derive(Debug, Clone)]
pub enum Offer {
    /// Every selected tool, by its own definition.
    Direct(Vec<FlatTool>),
    /// The search tool and the call tool over the selection.
    Search(Box<SearchMode>),
}

impl Offer {
    /// The tool definitions the model sees.
    pub(crate) fn export_tools(&self) -> Vec<ExportTool> {
        match self {
            Offer::Direct(tools) => formats::flat(tools),
            Offer::Search(mode) => mode.export_tools(),
        }
    }
}

/// Limits and endpoint settings of one run.
#[derive(Debug, Clone)]
pub struct ChatOptions {
    /// The API.
    pub api: Api,
    /// Model name.
    pub model: String,
    /// System text, when given.
    pub system: Option<String>,
    /// Most model requests.
    pub max_turns: u32,
    /// Most tool calls over the whole run.
    pub max_calls: usize,
    /// The whole run ends by then.
    pub run_timeout: Duration,
    /// Most read-only or idempotent calls at once.
    pub jobs: usize,
    /// Output-token limit the Anthropic API requires in every request.
    pub max_tokens: u32,
}

/// Why the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered in plain text.
    Answer,
    /// The model answered but its output-token limit cut the answer.
    MaxTokens,
    /// `--max-turns` model requests were made and the model still wanted tools.
    MaxTurns,
    /// The `--max-calls` budget was spent and the model still wanted tools.
    MaxCalls,
    /// `--run-timeout` passed.
    Timeout,
    /// The endpoint failed (see `error`).
    Error,
    /// SIGINT or SIGTERM: running calls were killed.
    Interrupted,
}

impl StopReason {
    /// As in the JSON report.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StopReason::Answer => "answer",
            StopReason::MaxTokens => "max_tokens",
            StopReason::MaxTurns => "max_turns",
            StopReason::MaxCalls => "max_calls",
            StopReason::Timeout => "timeout",
            StopReason::Error => "error",
            StopReason::Interrupted => "interrupted",
        }
    }
}

/// One tool call the model made, as the report lists it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    /// The model request whose response made the call (from 1).
    pub turn: u32,
    /// The provider's call id, when it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool (for a call through the call tool, the tool it named).
    pub name: String,
    /// Its arguments, redacted (the text as sent when it was not JSON).
    pub arguments: Value,
    /// `ok` (exit 0), `failed` (the tool exited non-zero or by a signal), `error` (atip
    /// refused or could not finish it; see `error`), `skipped` (a limit ended the run first).
    pub status: &'static str,
    /// The tool's exit code, when it ran to an exit.
    pub exit_code: Option<i32>,
    /// Wall time of the tool.
    pub duration_ms: u64,
    /// The atip error code, for `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The result sent back to the model (redacted), for the transcript a person reads
    /// on stderr; not in the JSON report (`--transcript` keeps every message).
    #[serde(skip)]
    pub result: Value,
}

/// The result of a run: `--output json` prints it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatReport {
    /// The model's final text, when it gave one.
    pub answer: Option<String>,
    /// Model requests made.
    pub turns: u32,
    /// Every tool call, in order.
    pub calls: Vec<CallRecord>,
    /// Tokens over all turns.
    pub usage: Usage,
    /// Why the run ended.
    pub stop_reason: StopReason,
    /// What ended it, unless it was an answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AtipError>,
}

impl ChatReport {
    /// Nothing done yet.
    fn started() -> ChatReport {
        ChatReport {
            answer: None,
            turns: 0,
            calls: Vec::new(),
            usage: Usage::default(),
            stop_reason: StopReason::Answer,
            error: None,
        }
    }
}

/// Everything one run uses.
pub struct Chat<'a> {
    /// The engine every call goes through.
    pub engine: &'a Engine,
    /// The tools offered.
    pub offer: Offer,
    /// Limits and endpoint settings.
    pub options: ChatOptions,
    /// The endpoint.
    pub client: http::Client,
    /// Redacts the key and token shapes from everything the run reports.
    pub redactor: Redactor,
    /// Where messages are recorded, when asked.
    pub transcript: Option<Transcript>,
}

/// One call of a response, classified before anything runs.
enum Step {
    /// Answered here: a search, or an error before the engine.
    Done(Value, bool),
    /// Goes to the engine as this call (for the call tool, the unwrapped one).
    Run(ToolCall),
}

/// Why a run ends when its model request fails: its time limit, an interrupt, or an
/// error.
fn stop_reason_of(e: &AtipError) -> StopReason {
    match e.code {
        ErrorCode::RunTimeout => StopReason::Timeout,
        ErrorCode::Interrupted => StopReason::Interrupted,
        _ => StopReason::Error,
    }
}

impl Chat<'_> {
    /// Runs the loop for `prompt`. `confirm` answers calls the policy wants confirmed;
    /// `log` hears about each call as it settles.
    pub fn run(
        mut self,
        prompt: &str,
        confirm: &mut dyn FnMut(&Prepared) -> Confirmation,
        log: &mut dyn FnMut(&CallRecord),
    ) -> ChatReport {
        let deadline = Instant::now() + self.options.run_timeout;
        let mut conv = self.start(prompt);
        let via = Via::Chat {
            model: format!("{}/{}", self.options.api.name(), self.options.model),
        };
        let mut report = ChatReport::started();
        let mut used = 0usize;
        let mut budget_told = false;
        let stop = loop {
            if self.client.interrupted() {
                break (StopReason::Interrupted, Some(http::interrupted()));
            }
            if Instant::now() >= deadline {
                break (StopReason::Timeout, Some(http::run_timeout()));
            }
            let turn = report.turns + 1;
            let doc = match self.client.post(conv.body(), deadline) {
                Ok(d) => d,
                Err(e) => break (stop_reason_of(&e), Some(e)),
            };
            report.turns = turn;
            let reply = match conv.read(&doc, turn) {
                Ok(r) => r,
                Err(e) => break (StopReason::Error, Some(e)),
            };
            report.usage.add(reply.usage);
            conv.push(&reply.messages);
            if let Some(t) = self.transcript.as_mut() {
                t.messages(turn, &reply.messages);
            }
            if reply.calls.is_empty() {
                report.answer = Some(self.redactor.redact(&reply.text).into_owned());
                break if reply.truncated {
                    (StopReason::MaxTokens, None)
                } else {
                    (StopReason::Answer, None)
                };
            }
            if let Some((reason, error)) = self.limit(turn, used, budget_told) {
                for c in &reply.calls {
                    let rec = self.record(turn, c, &c.name, "skipped", &Value::Null);
                    log(&rec);
                    report.calls.push(rec);
                }
                break (reason, Some(error));
            }
            let (results, failed) = self.dispatch(
                turn,
                &reply.calls,
                &mut used,
                &mut budget_told,
                &via,
                deadline,
                confirm,
                log,
                &mut report,
            );
            let messages = conv.results(&reply.calls, &results, &failed);
            conv.push(&messages);
            if let Some(t) = self.transcript.as_mut() {
                t.messages(turn, &messages);
            }
        };
        report.stop_reason = stop.0;
        report.error = stop.1;
        if let Some(t) = self.transcript.as_mut() {
            t.end(report.stop_reason.as_str(), report.answer.as_deref());
        }
        report
    }

    /// The conversation for `prompt`, with the tools offered; the transcript, when
    /// kept, starts with them and the first messages.
    fn start(&mut self, prompt: &str) -> Conversation {
        let defs = self.offer.export_tools();
        let tools = (!defs.is_empty()).then(|| self.options.api.tools(&defs));
        let (conv, start) = Conversation::new(
            self.options.api,
            &self.options.model,
            self.options.system.as_deref(),
            prompt,
            tools,
            self.options.max_tokens,
        );
        if let Some(t) = self.transcript.as_mut() {
            let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
            t.header(
                self.options.api.name(),
                &self.options.model,
                &self.client.shown_url(),
                &names,
            );
            t.messages(0, &start);
        }
        conv
    }

    /// The limit the model reached by asking for tools at `turn` after `used` calls
    /// (the call budget counts once the model was told of it), if any.
    fn limit(&self, turn: u32, used: usize, budget_told: bool) -> Option<(StopReason, AtipError)> {
        if turn >= self.options.max_turns {
            return Some((
                StopReason::MaxTurns,
                AtipError::new(
                    ErrorCode::TurnLimit,
                    format!(
                        "the model still wanted tools after {turn} turns (--max-turns {})",
                        self.options.max_turns
                    ),
                )
                .hint("raise --max-turns, or ask for less at once"),
            ));
        }
        (used >= self.options.max_calls && budget_told).then(|| {
            (
                StopReason::MaxCalls,
                AtipError::new(
                    ErrorCode::CallLimit,
                    format!(
                        "the model still wanted tools after {used} calls (--max-calls {})",
                        self.options.max_calls
                    ),
                )
                .hint("raise --max-calls, or ask for less at once"),
            )
        })
    }

    /// Settles every call of one response; returns the result envelopes and failure
    /// flags, in call order.
    #[allow(clippy::too_many_arguments)]
    fn dispatch(
        &self,
        turn: u32,
        calls: &[ToolCall],
        used: &mut usize,
        budget_told: &mut bool,
        via: &Via,
        deadline: Instant,
        confirm: &mut dyn FnMut(&Prepared) -> Confirmation,
        log: &mut dyn FnMut(&CallRecord),
        report: &mut ChatReport,
    ) -> (Vec<Value>, Vec<bool>) {
        let steps: Vec<Step> = calls
            .iter()
            .map(|c| {
                if *used >= self.options.max_calls {
                    *budget_told = true;
                    return Step::Done(
                        envelope(&c.name, &budget_exhausted(self.options.max_calls)),
                        true,
                    );
                }
                *used += 1;
                self.classify(c)
            })
            .collect();
        let runs: Vec<ToolCall> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Run(c) => Some(c.clone()),
                Step::Done(..) => None,
            })
            .collect();
        let opts = BatchOptions {
            jobs: self.options.jobs,
            via: via.clone(),
            deadline: Some(deadline),
            cancel: self.client.interrupt.clone(),
        };
        let mut outcomes = exec::run_batch(self.engine, &runs, &opts, confirm).into_iter();
        let mut results = Vec::with_capacity(calls.len());
        let mut failed = Vec::with_capacity(calls.len());
        for (call, step) in calls.iter().zip(steps) {
            let (name, args, mut env, f) = match step {
                Step::Done(env, f) => (call.name.clone(), raw_value(&call.arguments), env, f),
                Step::Run(inner) => {
                    let o = outcomes.next().expect("one outcome per run");
                    (
                        inner.name.clone(),
                        raw_value(&inner.arguments),
                        o.envelope,
                        o.failed,
                    )
                }
            };
            speak_to_the_model(&mut env);
            self.redactor.redact_json(&mut env);
            let rec = self.record(turn, call, &name, status_of(&env), &env);
            let rec = CallRecord {
                arguments: self.redacted(args),
                ..rec
            };
            log(&rec);
            report.calls.push(rec);
            results.push(env);
            failed.push(f);
        }
        (results, failed)
    }

    /// Answers a search call. Over the engine's whole offer (its compiled catalog read
    /// lazily, no command needing a human) the engine's own search answers, as it
    /// answers `atip search` and `atip mcp serve`'s search tool: one ranking, the same
    /// withholding. Otherwise (a selection, interactive tools allowed, an unreadable
    /// catalog index) the selection's own index answers.
    fn search(&self, mode: &SearchMode, args: &Map<String, Value>) -> Result<Value, AtipError> {
        let (query, limit) = mode.query(args)?;
        if self.engine.is_lazy()
            && !self.engine.settings.allow_interactive
            && let Some(Ok(offered)) = self.engine.search_offered(query, limit, false)
        {
            let found: Vec<&FlatTool> = offered.hits.iter().map(|(t, _)| *t).collect();
            return Ok(mode.answer(query, &found));
        }
        mode.search(args)
    }

    /// Answers a search, unwraps a call-tool call, or passes a direct call on.
    fn classify(&self, c: &ToolCall) -> Step {
        let fail = |e: AtipError| Step::Done(envelope(&c.name, &e), true);
        match &self.offer {
            Offer::Search(mode) if c.name == SEARCH_TOOL || c.name == CALL_TOOL => {
                let a = match parse_args(&c.arguments) {
                    Ok(a) => a,
                    Err(e) => return fail(e),
                };
                if c.name == SEARCH_TOOL {
                    return match self.search(mode, &a) {
                        Ok(v) => Step::Done(v, false),
                        Err(e) => fail(e),
                    };
                }
                match mode.unwrap_call(&a) {
                    Ok((name, arguments)) => Step::Run(ToolCall {
                        id: c.id.clone(),
                        name,
                        arguments: RawArgs::Value(arguments),
                    }),
                    Err(e) => fail(e),
                }
            }
            Offer::Search(mode) => fail(mode.unknown(&c.name)),
            Offer::Direct(tools) if tools.iter().any(|t| t.name == c.name) => Step::Run(c.clone()),
            Offer::Direct(tools) => fail(unknown_tool(tools, &c.name, false)),
        }
    }

    fn record(
        &self,
        turn: u32,
        call: &ToolCall,
        name: &str,
        status: &'static str,
        env: &Value,
    ) -> CallRecord {
        CallRecord {
            turn,
            id: call
                .id
                .as_ref()
                .map(|i| self.redactor.redact(i).into_owned()),
            name: name.to_string(),
            arguments: self.redacted(raw_value(&call.arguments)),
            status,
            exit_code: env
                .pointer("/data/exitCode")
                .and_then(Value::as_i64)
                .map(|c| c as i32),
            duration_ms: env
                .pointer("/meta/durationMs")
                .or_else(|| env.pointer("/error/details/durationMs"))
                .and_then(Value::as_u64)
                .unwrap_or(0),
            error: env
                .pointer("/error/code")
                .and_then(Value::as_str)
                .map(str::to_string),
            result: env.clone(),
        }
    }

    fn redacted(&self, mut v: Value) -> Value {
        self.redactor.redact_json(&mut v);
        v
    }
}

/// `ok`, `failed` or `error` for a result envelope (a search result is `ok`).
fn status_of(env: &Value) -> &'static str {
    match env.get("status").and_then(Value::as_str) {
        Some("error") => "error",
        Some("ok") if env.pointer("/data/exitCode") != Some(&json!(0)) => "failed",
        _ => "ok",
    }
}

fn envelope(name: &str, e: &AtipError) -> Value {
    exec::error_envelope(Some(name), e)
}

fn budget_exhausted(max: usize) -> AtipError {
    AtipError::new(
        ErrorCode::CallBudgetExhausted,
        format!("this session's budget of {max} tool calls is spent; the call did not run"),
    )
    .hint(ANSWER_NOW)
    .suggest(Suggestion::new(SuggestedAction::Abort, ANSWER_NOW))
}

const ANSWER_NOW: &str = "answer the user now with what you have; no more tool calls will run";

fn parse_args(raw: &RawArgs) -> Result<Map<String, Value>, AtipError> {
    match raw {
        RawArgs::Text(t) => args::parse_text(t),
        RawArgs::Value(v) => args::into_object(v.clone()),
    }
}

fn raw_value(raw: &RawArgs) -> Value {
    match raw {
        RawArgs::Value(v) => v.clone(),
        RawArgs::Text(t) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())),
    }
}

/// Rewrites the hints of refusals for the model that reads them: the engine's hints tell
/// a person at a shell what to type; a model can do none of that, and should neither
/// retry nor work around a refusal, but tell the user.
fn speak_to_the_model(env: &mut Value) {
    let Some(code) = env.pointer("/error/code").and_then(Value::as_str) else {
        return;
    };
    let hint = match code {
        "confirmation_required" => {
            "this call needs the user's confirmation and nobody can confirm it in this session, so it did not run. Do not retry it or try to reach the same effect another way; tell the user what you wanted to run and why (they can allow it with --yes or in atip's policy)"
        }
        "confirmation_declined" => {
            "the user declined this call, so it did not run. Do not retry it or try to reach the same effect another way; tell the user what you could not do"
        }
        "policy_denied" => {
            "atip's policy forbids this call, so it did not run. Do not retry it or work around it; tell the user what you could not do and why"
        }
        _ => return,
    };
    env["error"]["hint"] = hint.into();
    env["error"]["suggestion"] =
        serde_json::to_value(Suggestion::new(SuggestedAction::Abort, hint)).unwrap_or_default();
}
