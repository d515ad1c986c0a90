//! The whole-document reader swe-agent had before its payloads were left on disk, word for
//! word: the oracle the tests compare the new reader (and its decoded payloads) with.

use super::*;
use crate::formats::read_json_file;

/// Load as the old reader did.
pub fn load(path: &Path) -> Result<Trace, LoadError> {
    let v = read_json_file(path, LIMIT)?;
    let named = traj_name(&path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    match shape(&v, named) {
        Some(Shape::Swe) => Ok(from_swe(path, v)),
        Some(Shape::MiniDoc) => Ok(from_mini(
            path,
            &v,
            v.get("messages").and_then(Value::as_array).map_or(&[], |m| m),
            "messages",
        )),
        Some(Shape::MiniList) => Ok(from_mini(
            path,
            &Value::Null,
            v.as_array().map_or(&[], |m| m),
            "messages",
        )),
        Some(Shape::History) => {
            let history = v.get("history").and_then(Value::as_array).map_or(&[][..], |h| h);
            let mut t = from_mini(path, &Value::Null, history, "history");
            t.meta.attributes.push((
                "trajectory_format".to_string(),
                json!("SWE-agent history only (a demonstration)"),
            ));
            let task = history
                .iter()
                .find(|m| {
                    str_of(m, "role") == Some("user") && !m.get("is_demo").and_then(Value::as_bool).unwrap_or(false)
                })
                .and_then(|m| m.get("content"))
                .and_then(text_of);
            if let Some(task) = task {
                let run = t.roots[0];
                t.payload_mut(run).input = Some(Value::String(task));
            }
            Ok(t)
        }
        None => Err(LoadError::invalid(path, "not a trajectory")),
    }
}

fn new_trace(
    path: &Path,
    name: &str,
    status: RunStatus,
    model: &Option<String>,
    attributes: Vec<(String, Value)>,
) -> (Trace, Origin) {
    let mut t = Trace::new(RunMeta {
        id: name.to_string(),
        name: Some(name.to_string()),
        format: "swe-agent",
        source: path.to_path_buf(),
        status,
        model: model.clone(),
        attributes,
        ..Default::default()
    });
    let file = t.add_file(path);
    (t, whole_file(file))
}

fn whole_file(file: u16) -> Origin {
    // A whole document: no line, no byte range of its own (the raw view shows the payload).
    Origin {
        file,
        line: 0,
        offset: 0,
        len: 0,
    }
}

/// The model name of a SWE-agent run: 1.x keeps its config as a JSON string in
/// `replay_config` (`agent.model.name`); 0.x has none in the file.
fn swe_model(v: &Value) -> Option<String> {
    let cfg = match field(v, "replay_config")? {
        Value::String(s) => serde_json::from_str::<Value>(s).ok()?,
        other => other.clone(),
    };
    let m = cfg.get("agent")?.get("model")?;
    str_of(m, "name")
        .or_else(|| str_of(m, "model_name"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn from_swe(path: &Path, mut v: Value) -> Trace {
    let name = run_name(path);
    // The steps are moved out of the document (they are most of it), not copied.
    let steps = match v.get_mut("trajectory").map(Value::take) {
        Some(Value::Array(steps)) => steps,
        _ => Vec::new(),
    };
    let v = &v;
    let info = v.get("info").unwrap_or(&Value::Null);
    let exit = str_of(info, "exit_status");
    let status = exit_status(exit);
    let model = swe_model(v);
    let mut attributes = Vec::new();
    for k in [
        "exit_status",
        "model_stats",
        "swe_agent_version",
        "swe_rex_version",
        "environment",
    ] {
        if let Some(x) = field(info, k).or_else(|| field(v, k)) {
            attributes.push((k.to_string(), x.clone()));
        }
    }
    let (mut t, origin) = new_trace(path, &name, status, &model, attributes);
    // The task: the first user message of the history (after the system prompt and demos).
    let task = v
        .get("history")
        .and_then(Value::as_array)
        .and_then(|h| {
            h.iter().find(|m| {
                str_of(m, "role") == Some("user") && !m.get("is_demo").and_then(Value::as_bool).unwrap_or(false)
            })
        })
        .and_then(|m| m.get("content"))
        .and_then(text_of);
    // Only run totals: `model_stats` (`tokens_sent`, `tokens_received`, `instance_cost` in
    // dollars), on the run event; all zero when the model was not a paid one.
    let stats = info.get("model_stats");
    let stat = |k: &str| crate::formats::lenient_u64(stats.and_then(|s| s.get(k))).filter(|&n| n > 0);
    let cost = stats
        .and_then(|s| s.get("instance_cost"))
        .and_then(crate::model::micros::micros_of_json)
        .filter(|&c| c > 0);
    let usage = Usage {
        input: stat("tokens_sent"),
        output: stat("tokens_received"),
        cost,
        ..Default::default()
    };
    let run = t.add(NewEvent {
        status: status.event_status(),
        model: model.as_deref(),
        usage: (!usage.is_empty()).then_some(usage),
        origin,
        payload: PayloadRef::inline(Payload {
            input: task.map(Value::String),
            output: field(info, "submission").filter(|s| s.as_str() != Some("")).cloned(),
            error: run_error(status, exit),
            extra: Vec::new(),
            context: Vec::new(),
        }),
        ..NewEvent::new(EventKind::Run, &name)
    });
    let llm_name = model.as_deref().unwrap_or("model");
    for (i, mut step) in steps.into_iter().enumerate() {
        let id = format!("trajectory[{i}]");
        if !step.is_object() {
            t.diagnostics
                .push(Diagnostic::error(path, None, format!("{id} is not an object; skipped")));
            continue;
        }
        let mut take = |k: &str| step.get_mut(k).map(Value::take).filter(|x| !x.is_null());
        let (response, thought) = (take("response"), take("thought"));
        let observation = take("observation");
        let state = take("state");
        let mut extra = Vec::new();
        let response = match (response, thought) {
            (Some(r), Some(th)) if r != th => {
                extra.push(("thought".to_string(), th));
                Some(r)
            }
            (r, th) => r.or(th),
        };
        let llm = t.add(NewEvent {
            id: Some(&format!("{id}.response")),
            parent: Parent::Index(run),
            status: Status::Ok,
            model: model.as_deref(),
            origin,
            payload: PayloadRef::inline(Payload {
                output: response,
                extra,
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::LlmCall, llm_name)
        });
        let action = str_of(&step, "action");
        if action.is_none() {
            t.diagnostics.push(Diagnostic::warning(
                path,
                None,
                format!("{id} has no `action` string; its tool call is named `?`"),
            ));
        }
        let action = action.unwrap_or("");
        // SWE-agent's actions are tool commands (`open f`, `edit 1:2`, `submit`) or bash.
        let tool = action.split_whitespace().next().unwrap_or("?");
        let mut extra = Vec::new();
        if let Some(s) = state {
            extra.push(("state".to_string(), crate::formats::decode_embedded_owned(s)));
        }
        t.add(NewEvent {
            id: Some(&id),
            parent: Parent::Index(llm),
            duration: seconds_ns(step.get("execution_time")),
            status: if observation.is_some() {
                Status::Ok
            } else {
                Status::Pending
            },
            origin,
            payload: PayloadRef::inline(Payload {
                input: Some(Value::String(action.to_string())),
                output: observation,
                error: None,
                extra,
                context: Vec::new(),
            }),
            ..NewEvent::new(EventKind::ToolCall, tool)
        });
    }
    t.finalize();
    t
}

/// A tool call waiting for its result.
struct Waiting {
    event: u32,
    command: String,
    start: Option<i64>,
}

fn from_mini(path: &Path, doc: &Value, messages: &[Value], list: &str) -> Trace {
    let name = run_name(path);
    let info = doc.get("info").unwrap_or(&Value::Null);
    // The exit message (2.x) carries the exit status when `info` lacks it.
    let exit_msg = messages
        .iter()
        .rev()
        .find(|m| str_of(m, "role") == Some("exit"))
        .and_then(|m| m.get("extra"));
    let exit = str_of(info, "exit_status").or_else(|| exit_msg.and_then(|e| str_of(e, "exit_status")));
    // The old list form has no metadata at all: nothing says whether it finished.
    let status = if doc.is_null() && exit.is_none() {
        RunStatus::Unknown
    } else {
        exit_status(exit)
    };
    let model = info
        .get("config")
        .and_then(|c| c.get("model"))
        .and_then(|m| str_of(m, "model_name"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let mut attributes = Vec::new();
    for k in ["exit_status", "model_stats", "mini_version"] {
        if let Some(x) = field(info, k) {
            attributes.push((k.to_string(), x.clone()));
        }
    }
    if let Some(f) = field(doc, "trajectory_format") {
        attributes.push(("trajectory_format".to_string(), f.clone()));
    }
    let (mut t, origin) = new_trace(path, &name, status, &model, attributes);
    let submission = field(info, "submission")
        .or_else(|| exit_msg.and_then(|e| field(e, "submission")))
        .filter(|s| s.as_str() != Some(""))
        .cloned();
    let run = t.add(NewEvent {
        status: status.event_status(),
        model: model.as_deref(),
        origin,
        payload: PayloadRef::inline(Payload {
            output: submission,
            error: run_error(status, exit),
            ..Default::default()
        }),
        ..NewEvent::new(EventKind::Run, &name)
    });
    // Calls joined by `tool_call_id`, and calls whose output is the next message (1.x, text
    // actions of 2.x).
    let mut by_id: HashMap<String, Waiting> = HashMap::new();
    let mut by_position: VecDeque<Waiting> = VecDeque::new();
    for (i, m) in messages.iter().enumerate() {
        let at = format!("{list}[{i}]");
        let Some(role) = str_of(m, "role") else {
            t.diagnostics
                .push(Diagnostic::error(path, None, format!("{at} has no `role`; skipped")));
            continue;
        };
        let text = m.get("content").and_then(text_of);
        let extra = m.get("extra");
        let ts = extra.and_then(|e| e.get("timestamp")).and_then(parse_timestamp);
        match role {
            "assistant" => {
                // Calls left waiting for a positional result got none.
                by_position.clear();
                let response = extra.and_then(|e| e.get("response"));
                // LiteLLM's usage (OpenAI's way of counting), and the cost LiteLLM computed for
                // the call (`extra.cost`, dollars).
                // A cost of 0 is what it writes when LiteLLM could not price the model: unknown.
                let cost = extra
                    .and_then(|e| e.get("cost"))
                    .and_then(crate::model::micros::micros_of_json)
                    .filter(|&c| c > 0);
                let usage = match (
                    response
                        .and_then(|r| r.get("usage"))
                        .map(crate::formats::usage_of_openai),
                    cost,
                ) {
                    (Some(u), c) => Some(Usage { cost: c, ..u }),
                    (None, Some(c)) => Some(Usage {
                        cost: Some(c),
                        ..Default::default()
                    }),
                    (None, None) => None,
                };
                let call_model = response
                    .and_then(|r| str_of(r, "model"))
                    .filter(|s| !s.is_empty())
                    .or(model.as_deref());
                let mut llm_extra = Vec::new();
                if let Some(c) = extra.and_then(|e| field(e, "cost")) {
                    llm_extra.push(("cost".to_string(), c.clone()));
                }
                let llm = t.add(NewEvent {
                    id: Some(&at),
                    parent: Parent::Index(run),
                    start: ts,
                    status: Status::Ok,
                    usage: usage.filter(|u| !u.is_empty()),
                    model: call_model,
                    origin,
                    payload: PayloadRef::inline(Payload {
                        output: text.clone().map(Value::String),
                        extra: llm_extra,
                        ..Default::default()
                    }),
                    ..NewEvent::new(EventKind::LlmCall, call_model.unwrap_or("assistant"))
                });
                for (k, (tool, command, call_id, args)) in actions(m, text.as_deref()).into_iter().enumerate() {
                    let ev = t.add(NewEvent {
                        id: Some(&call_id.clone().unwrap_or_else(|| format!("{at}.action[{k}]"))),
                        parent: Parent::Index(llm),
                        start: ts,
                        status: Status::Pending,
                        origin,
                        payload: PayloadRef::inline(Payload {
                            input: Some(args),
                            ..Default::default()
                        }),
                        ..NewEvent::new(EventKind::ToolCall, &tool)
                    });
                    let w = Waiting {
                        event: ev,
                        command,
                        start: ts,
                    };
                    match call_id {
                        Some(id) => {
                            by_id.insert(id, w);
                        }
                        None => by_position.push_back(w),
                    }
                }
            }
            "tool" | "user" => {
                let waiting = match tool_call_id(m) {
                    Some(id) => by_id.remove(id).or_else(|| {
                        t.diagnostics.push(Diagnostic::warning(
                            path,
                            None,
                            format!("{at}: a tool result for `{id}`, which no assistant message called"),
                        ));
                        None
                    }),
                    None => by_position.pop_front(),
                };
                match waiting {
                    Some(w) => complete(&mut t, w, m, text, ts),
                    None => {
                        if role == "tool" && tool_call_id(m).is_none() {
                            t.diagnostics.push(Diagnostic::warning(
                                path,
                                None,
                                format!("{at}: a tool result with no `tool_call_id` and no call waiting for it"),
                            ));
                        }
                        t.add(NewEvent {
                            id: Some(&at),
                            parent: Parent::Index(run),
                            start: ts,
                            status: Status::Ok,
                            origin,
                            payload: PayloadRef::inline(Payload {
                                input: text.map(Value::String),
                                ..Default::default()
                            }),
                            ..NewEvent::new(EventKind::Message(Role::parse(role)), role)
                        });
                    }
                }
            }
            "exit" => {}
            "system" => {
                t.add(NewEvent {
                    id: Some(&at),
                    parent: Parent::Index(run),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    payload: PayloadRef::inline(Payload {
                        input: text.map(Value::String),
                        ..Default::default()
                    }),
                    ..NewEvent::new(EventKind::Message(Role::System), role)
                });
            }
            _ => {
                t.skipped.add(role);
                if crate::formats::drift_text(m).is_some() {
                    t.add(NewEvent {
                        id: Some(&at),
                        parent: Parent::Index(run),
                        start: ts,
                        status: Status::Ok,
                        origin,
                        payload: PayloadRef::inline(crate::formats::drift_payload(m, &[])),
                        ..NewEvent::new(EventKind::Other, role)
                    });
                }
            }
        }
    }
    t.finalize();
    t
}

/// Join a result message to its call.
fn complete(t: &mut Trace, w: Waiting, m: &Value, text: Option<String>, ts: Option<i64>) {
    let rc = returncode(m, text.as_deref());
    let exception = m
        .get("extra")
        .and_then(|e| str_of(e, "exception_info"))
        .filter(|s| !s.is_empty());
    // The submit command ends the run: mini 2.x records it as "not executed" (-1), 1.x prints
    // the submission without a return code. Neither is a failure.
    let submit = SUBMIT_SENTINELS.iter().any(|s| w.command.contains(s));
    let failed = !submit && (rc.is_some_and(|rc| rc != 0) || exception.is_some());
    let output = m
        .get("extra")
        .and_then(|e| e.get("raw_output"))
        .cloned()
        .or_else(|| text.map(|s| crate::formats::json_or_string(&s)));
    let error = failed.then(|| ErrorInfo {
        kind: Some("returncode".into()),
        message: match (rc, exception) {
            (_, Some(e)) => e.to_string(),
            (Some(rc), None) => format!("exit code {rc}"),
            (None, None) => "failed".into(),
        },
        ..Default::default()
    });
    {
        let e = t.event_mut(w.event);
        e.status = if failed { Status::Error } else { Status::Ok };
        if let (Some(s), Some(end)) = (w.start, ts)
            && end >= s
        {
            e.duration = end.checked_sub(s).into();
        }
    }
    let p = t.payload_mut(w.event);
    p.output = output;
    p.error = error;
    if let Some(rc) = rc {
        p.set_extra("returncode", json!(rc));
    }
}
