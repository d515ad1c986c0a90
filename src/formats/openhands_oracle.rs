//! The reader openhands had before its payloads were left on disk, word for word: the oracle
//! the tests compare the new reader (and its decoded payloads) with.

use super::*;
use crate::formats::read_json_file;

/// Load as the old reader did.
pub fn load(path: &Path) -> Result<Trace, LoadError> {
    if path.is_dir() {
        return load_v1(path);
    }
    match read_json_file(path, LIMIT)? {
        Value::Array(items) => Ok(from_v0(path, &items)),
        _ => Err(LoadError::invalid(path, "not a V0 trajectory")),
    }
}

fn from_v0(path: &Path, events: &[Value]) -> Trace {
    let name = stem(path);
    let mut t = Trace::new(RunMeta {
        id: name.clone(),
        name: Some(name.clone()),
        format: "openhands",
        source: path.to_path_buf(),
        status: RunStatus::Unknown,
        attributes: vec![("openhands".to_string(), json!("V0 trajectory"))],
        ..Default::default()
    });
    let file = t.add_file(path);
    let origin = Origin {
        file,
        line: 0,
        offset: 0,
        len: 0,
    };
    let run = t.add(NewEvent {
        origin,
        ..NewEvent::new(EventKind::Run, &name)
    });
    // LLM calls by response id; tool calls by their V0 id and by tool_call_id.
    let mut llms: HashMap<String, u32> = HashMap::new();
    let mut calls: HashMap<String, u32> = HashMap::new();
    let mut by_tool_call: HashMap<String, u32> = HashMap::new();
    let mut task: Option<Value> = None;
    let mut model: Option<String> = None;
    let mut agent_state: Option<String> = None;
    let mut finished = false;
    for (i, ev) in events.iter().enumerate() {
        let at = format!("[{i}]");
        if !ev.is_object() {
            t.diagnostics.push(Diagnostic::error(
                path,
                None,
                format!("event {at} is not an object; skipped"),
            ));
            continue;
        }
        let id = v0_id(ev);
        let ts = ts_of(ev);
        let source = str_of(ev, "source").unwrap_or("");
        let message = field(ev, "message").cloned();
        if let Some(action) = str_of(ev, "action") {
            let args = ev.get("args").cloned().unwrap_or(Value::Null);
            if NOT_TOOLS.contains(&action) || source != "agent" {
                let (kind, label) = match action {
                    "message" | "system" => {
                        let role = match (action, source) {
                            ("system", _) => "system",
                            (_, "agent") => "assistant",
                            (_, s) => s,
                        };
                        (EventKind::Message(Role::parse(role)), role.to_string())
                    }
                    _ if source == "agent" => (EventKind::Other, action.to_string()),
                    // The environment's or the user's own actions (change_agent_state, ...).
                    _ => (EventKind::State, action.to_string()),
                };
                let content = field(&args, "content").cloned().or(message);
                if action == "message" && source == "user" && task.is_none() {
                    task = content.clone();
                }
                let e = t.add(NewEvent {
                    id: id.as_deref(),
                    parent: Parent::Index(run),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    payload: PayloadRef::inline(Payload {
                        input: content,
                        extra: vec![("args".to_string(), args)],
                        ..Default::default()
                    }),
                    ..NewEvent::new(kind, &label)
                });
                // A message may cause an observation too (the recall of a user's message).
                if let Some(id) = &id {
                    calls.insert(id.clone(), e);
                }
                continue;
            }
            // An agent action: a tool call, under the LLM response that asked for it.
            let meta = ev.get("tool_call_metadata");
            let function = meta.and_then(|m| str_of(m, "function_name")).filter(|s| !s.is_empty());
            let tool_call_id = meta.and_then(|m| str_of(m, "tool_call_id"));
            let response = meta.and_then(|m| m.get("model_response"));
            let parent = match response.and_then(|r| str_of(r, "id")) {
                Some(rid) => match llms.get(rid) {
                    Some(&l) => l,
                    None => {
                        let m = response.and_then(|r| str_of(r, "model")).filter(|s| !s.is_empty());
                        if model.is_none() {
                            model = m.map(str::to_owned);
                        }
                        let l = t.add(NewEvent {
                            id: Some(rid),
                            parent: Parent::Index(run),
                            start: ts,
                            status: Status::Ok,
                            usage: response.and_then(|r| r.get("usage")).and_then(usage_of),
                            model: m,
                            origin,
                            payload: PayloadRef::inline(Payload {
                                output: field(&args, "thought").filter(|x| x.as_str() != Some("")).cloned(),
                                ..Default::default()
                            }),
                            ..NewEvent::new(EventKind::LlmCall, m.unwrap_or("llm"))
                        });
                        llms.insert(rid.to_string(), l);
                        l
                    }
                },
                None => run,
            };
            if action == "finish" {
                finished = true;
            }
            let done = NO_OBSERVATION.contains(&action);
            let c = t.add(NewEvent {
                id: id.as_deref(),
                parent: Parent::Index(parent),
                start: ts,
                status: if done { Status::Ok } else { Status::Pending },
                origin,
                payload: PayloadRef::inline(Payload {
                    input: Some(args),
                    output: if done { message } else { None },
                    extra: vec![("action".to_string(), json!(action))],
                    ..Default::default()
                }),
                ..NewEvent::new(EventKind::ToolCall, function.unwrap_or(action))
            });
            if let Some(id) = id {
                calls.insert(id, c);
            }
            if let Some(tc) = tool_call_id {
                by_tool_call.insert(tc.to_string(), c);
            }
            continue;
        }
        let Some(obs) = str_of(ev, "observation") else {
            // Drift: counted under its own type, shown when it carries text.
            let ty = ["kind", "type", "event"]
                .iter()
                .find_map(|k| str_of(ev, k).filter(|s| !s.is_empty()))
                .unwrap_or("(neither action nor observation)");
            t.skipped.add(ty);
            if crate::formats::drift_text(ev).is_some() {
                t.add(NewEvent {
                    id: id.as_deref(),
                    parent: Parent::Index(run),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    payload: PayloadRef::inline(crate::formats::drift_payload(ev, &["id", "timestamp", "source"])),
                    ..NewEvent::new(EventKind::Other, ty)
                });
            }
            continue;
        };
        let extras = ev.get("extras").cloned().unwrap_or(Value::Null);
        if obs == "agent_state_changed" {
            let state = str_of(&extras, "agent_state").unwrap_or("?").to_string();
            t.add(NewEvent {
                id: id.as_deref(),
                parent: Parent::Index(run),
                start: ts,
                status: if state == "error" { Status::Error } else { Status::Ok },
                origin,
                payload: PayloadRef::inline(Payload {
                    output: Some(json!(state)),
                    ..Default::default()
                }),
                ..NewEvent::new(EventKind::State, &format!("agent state: {state}"))
            });
            agent_state = Some(state);
            continue;
        }
        let cause = match ev.get("cause") {
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        let call = cause
            .as_deref()
            .and_then(|c| calls.get(c))
            .or_else(|| {
                ev.get("tool_call_metadata")
                    .and_then(|m| str_of(m, "tool_call_id"))
                    .and_then(|tc| by_tool_call.get(tc))
            })
            .copied();
        let content = field(ev, "content").cloned();
        let failed = obs == "error" || ev.get("success").and_then(Value::as_bool) == Some(false);
        let error = failed.then(|| ErrorInfo {
            kind: Some(obs.to_string()),
            message: content
                .as_ref()
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .or(message.as_ref().and_then(Value::as_str))
                .unwrap_or("the observation reports a failure")
                .to_string(),
            ..Default::default()
        });
        match call {
            Some(c) if t.event(c).kind == EventKind::ToolCall => {
                {
                    let e = t.event_mut(c);
                    e.status = if failed { Status::Error } else { Status::Ok };
                    if let (Some(s), Some(end)) = (e.start.get(), ts)
                        && end >= s
                    {
                        e.duration = end.checked_sub(s).into();
                    }
                }
                let p = t.payload_mut(c);
                p.output = content.or(message);
                p.error = error;
                p.set_extra("observation", json!(obs));
                if !extras.is_null() {
                    p.set_extra("extras", extras);
                }
            }
            // `null` observations answer messages and state changes: nothing to show.
            _ if obs == "null" => {}
            _ => {
                if cause.is_some() && call.is_none() {
                    t.diagnostics.push(Diagnostic::warning(
                        path,
                        None,
                        format!(
                            "event {at}: a `{obs}` observation caused by event {}, which is not in the file",
                            cause.as_deref().unwrap_or("")
                        ),
                    ));
                }
                t.add(NewEvent {
                    id: id.as_deref(),
                    parent: Parent::Index(run),
                    start: ts,
                    status: if failed { Status::Error } else { Status::Ok },
                    origin,
                    payload: PayloadRef::inline(Payload {
                        output: content.or(message),
                        error,
                        extra: vec![("extras".to_string(), extras)],
                        ..Default::default()
                    }),
                    ..NewEvent::new(if failed { EventKind::Error } else { EventKind::Other }, obs)
                });
            }
        }
    }
    // The last agent state says how the run stands; a trajectory without state events
    // (the tests' and downloads') is finished when the agent called `finish`.
    let status = match agent_state.as_deref() {
        Some("error") => RunStatus::Error,
        Some("finished" | "awaiting_user_input" | "stopped" | "paused" | "rejected" | "user_rejected") => RunStatus::Ok,
        Some("running" | "loading" | "init") => RunStatus::Running,
        _ if finished => RunStatus::Ok,
        _ => RunStatus::Unknown,
    };
    t.meta.status = status;
    t.meta.model = model.clone();
    if let Some(s) = agent_state {
        t.meta.attributes.push(("agent_state".to_string(), json!(s)));
    }
    {
        let e = t.event_mut(run);
        e.status = status.event_status();
    }
    if let Some(task) = task {
        t.payload_mut(run).input = Some(task);
    }
    t.finalize();
    t
}

/// The LLM call of response `rid`, made when its first event (an action, or the agent's
/// reply) arrives.
fn llm_call(
    t: &mut Trace,
    llms: &mut HashMap<String, u32>,
    llm: &Llm,
    rid: &str,
    ev: &Value,
    ts: Option<i64>,
    origin: Origin,
) -> u32 {
    if let Some(&l) = llms.get(rid) {
        return l;
    }
    let (usage, latency) = llm.stats.get(rid).cloned().unwrap_or_default();
    // The response arrived before its first event was recorded.
    let start = match (ts, latency) {
        (Some(t), Some(d)) => Some(t.saturating_sub(d)),
        _ => ts,
    };
    let thought = ev.get("thought").and_then(text_of).map(Value::String);
    let l = t.add(NewEvent {
        id: Some(rid),
        parent: Parent::Index(llm.run),
        start,
        duration: latency,
        status: Status::Ok,
        usage,
        model: llm.model.as_deref(),
        origin,
        payload: PayloadRef::inline(Payload {
            output: thought,
            ..Default::default()
        }),
        ..NewEvent::new(EventKind::LlmCall, llm.model.as_deref().unwrap_or("llm"))
    });
    llms.insert(rid.to_string(), l);
    l
}

fn load_v1(dir: &Path) -> Result<Trace, LoadError> {
    let state_path = dir.join(BASE_STATE);
    let mut diagnostics = Vec::new();
    let state = match read_json_file(&state_path, EVENT_LIMIT) {
        Ok(v) => v,
        Err(e) => {
            // The events still load: the state only adds status, model and tokens.
            diagnostics.push(Diagnostic::error(
                &state_path,
                None,
                format!("{e}; status, model and tokens unknown"),
            ));
            Value::Null
        }
    };
    let name = stem(dir);
    let exec = str_of(&state, "execution_status");
    let status = v1_status(exec);
    let model = state
        .get("agent")
        .and_then(|a| a.get("llm"))
        .and_then(|l| str_of(l, "model"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let mut attributes = vec![("openhands".to_string(), json!("V1 conversation"))];
    if let Some(e) = exec {
        attributes.push(("execution_status".to_string(), json!(e)));
    }
    if let Some(w) = state.get("workspace").and_then(|w| field(w, "working_dir")) {
        attributes.push(("working_dir".to_string(), w.clone()));
    }
    let mut t = Trace::new(RunMeta {
        id: str_of(&state, "id").map(str::to_owned).unwrap_or_else(|| name.clone()),
        name: Some(name.clone()),
        format: "openhands",
        source: dir.to_path_buf(),
        status,
        model: model.clone(),
        attributes,
        ..Default::default()
    });
    t.diagnostics = diagnostics;
    let state_file = t.add_file(&state_path);
    let run = t.add(NewEvent {
        status: status.event_status(),
        model: model.as_deref(),
        origin: Origin {
            file: state_file,
            line: 0,
            offset: 0,
            len: 0,
        },
        payload: PayloadRef::inline(Payload {
            error: (status == RunStatus::Error).then(|| ErrorInfo {
                kind: Some("execution_status".into()),
                message: format!("the conversation ended with execution status {:?}", exec.unwrap_or("")),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..NewEvent::new(EventKind::Run, &name)
    });
    let llm = Llm {
        run,
        stats: response_stats(&state),
        model: model.clone(),
    };
    let mut llms: HashMap<String, u32> = HashMap::new();
    let mut calls: HashMap<String, u32> = HashMap::new();
    let mut task = None;
    let mut raw_limit_said = false;
    let events_dir = dir.join(EVENTS);
    for (_, path) in event_files(&events_dir)? {
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let ev = match read_json_file(&path, EVENT_LIMIT) {
            Ok(v) if v.is_object() => v,
            Ok(_) => {
                t.diagnostics
                    .push(Diagnostic::error(&path, None, "not a JSON object; skipped"));
                continue;
            }
            Err(e) => {
                t.diagnostics
                    .push(Diagnostic::error(&path, None, format!("{e}; skipped")));
                continue;
            }
        };
        // Each event file is new: pushed, not looked up (`add_file` searches the list, which
        // made 20,000 events take a minute). Origins index files by u16: past that, an
        // event has no raw record (said once).
        let origin = if t.files.len() < u16::MAX as usize {
            t.files.push(path.clone());
            Origin {
                file: (t.files.len() - 1) as u16,
                line: 0,
                offset: 0,
                len: len.min(u32::MAX as u64) as u32,
            }
        } else {
            if !raw_limit_said {
                raw_limit_said = true;
                t.diagnostics.push(Diagnostic::warning(
                    &path,
                    None,
                    format!(
                        "more than {} event files: this and later events show no raw record",
                        u16::MAX - 1
                    ),
                ));
            }
            Origin {
                file: state_file,
                ..Origin::default()
            }
        };
        let ts = ts_of(&ev);
        let id = str_of(&ev, "id");
        let kind = str_of(&ev, "kind").unwrap_or("");
        let source = str_of(&ev, "source").unwrap_or("");
        match kind {
            "SystemPromptEvent" => {
                let text = ev
                    .get("system_prompt")
                    .and_then(|p| str_of(p, "text"))
                    .map(|s| json!(s));
                let tools = ev.get("tools").and_then(Value::as_array).map(|a| a.len());
                t.add(NewEvent {
                    id,
                    parent: Parent::Index(run),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    payload: PayloadRef::inline(Payload {
                        input: text,
                        extra: tools.map(|n| vec![("tools".to_string(), json!(n))]).unwrap_or_default(),
                        ..Default::default()
                    }),
                    ..NewEvent::new(EventKind::Message(Role::System), "system")
                });
            }
            "MessageEvent" => {
                let msg = ev.get("llm_message").unwrap_or(&Value::Null);
                let role = str_of(msg, "role").unwrap_or(source);
                let text = msg.get("content").and_then(text_of).map(Value::String);
                if role == "user" && task.is_none() {
                    task = text.clone();
                }
                // An agent's reply is the output of the LLM response it came in.
                let parent = match str_of(&ev, "llm_response_id").filter(|s| !s.is_empty()) {
                    Some(rid) if source == "agent" => llm_call(&mut t, &mut llms, &llm, rid, &Value::Null, ts, origin),
                    _ => run,
                };
                t.add(NewEvent {
                    id,
                    parent: Parent::Index(parent),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    payload: PayloadRef::inline(Payload {
                        input: text,
                        ..Default::default()
                    }),
                    ..NewEvent::new(EventKind::Message(Role::parse(role)), role)
                });
            }
            "ActionEvent" => {
                let parent = match str_of(&ev, "llm_response_id").filter(|s| !s.is_empty()) {
                    Some(rid) => llm_call(&mut t, &mut llms, &llm, rid, &ev, ts, origin),
                    None => run,
                };
                let tool = str_of(&ev, "tool_name").filter(|s| !s.is_empty()).unwrap_or("?");
                let input = ev
                    .get("tool_call")
                    .and_then(|c| c.get("arguments"))
                    .map(decode_embedded)
                    .or_else(|| field(&ev, "action").cloned());
                let tool_call_id = str_of(&ev, "tool_call_id");
                let c = t.add(NewEvent {
                    id: tool_call_id.or(id),
                    parent: Parent::Index(parent),
                    start: ts,
                    status: Status::Pending,
                    origin,
                    payload: PayloadRef::inline(Payload {
                        input,
                        extra: field(&ev, "security_risk")
                            .map(|r| vec![("security_risk".to_string(), r.clone())])
                            .unwrap_or_default(),
                        ..Default::default()
                    }),
                    ..NewEvent::new(EventKind::ToolCall, tool)
                });
                if let Some(tc) = tool_call_id {
                    calls.insert(tc.to_string(), c);
                }
                if let Some(id) = id {
                    calls.insert(id.to_string(), c);
                }
            }
            "ObservationEvent" | "AgentErrorEvent" | "UserRejectObservation" => {
                let call = str_of(&ev, "tool_call_id")
                    .and_then(|tc| calls.get(tc))
                    .or_else(|| str_of(&ev, "action_id").and_then(|a| calls.get(a)))
                    .copied();
                let obs = ev.get("observation").unwrap_or(&Value::Null);
                let (output, error) = match kind {
                    "AgentErrorEvent" => {
                        let m = str_of(&ev, "error").unwrap_or("agent error").to_string();
                        (
                            None,
                            Some(ErrorInfo {
                                kind: Some("AgentErrorEvent".into()),
                                message: m,
                                ..Default::default()
                            }),
                        )
                    }
                    "UserRejectObservation" => {
                        let m = str_of(&ev, "rejection_reason")
                            .unwrap_or("rejected by the user")
                            .to_string();
                        (
                            None,
                            Some(ErrorInfo {
                                kind: Some("rejected".into()),
                                message: m,
                                ..Default::default()
                            }),
                        )
                    }
                    _ => {
                        let text = obs.get("content").and_then(text_of);
                        let error = (obs.get("is_error").and_then(Value::as_bool) == Some(true)).then(|| ErrorInfo {
                            kind: str_of(obs, "kind").map(str::to_owned),
                            message: text.clone().unwrap_or_else(|| "the tool reported an error".into()),
                            ..Default::default()
                        });
                        (text.map(Value::String), error)
                    }
                };
                match call {
                    Some(c) => {
                        {
                            let e = t.event_mut(c);
                            e.status = if error.is_some() { Status::Error } else { Status::Ok };
                            if let (Some(s), Some(end)) = (e.start.get(), ts)
                                && end >= s
                            {
                                e.duration = end.checked_sub(s).into();
                            }
                            e.origin2 = Some(Box::new(origin));
                        }
                        let p = t.payload_mut(c);
                        p.output = output;
                        p.error = error;
                        for k in ["exit_code", "timeout", "command", "path"] {
                            if let Some(x) = field(obs, k) {
                                p.set_extra(k, x.clone());
                            }
                        }
                    }
                    None => {
                        t.diagnostics.push(Diagnostic::warning(
                            &path,
                            None,
                            format!(
                                "{kind} for a tool call no ActionEvent made ({})",
                                str_of(&ev, "tool_call_id").unwrap_or("no tool_call_id")
                            ),
                        ));
                        let failed = error.is_some();
                        t.add(NewEvent {
                            id,
                            parent: Parent::Index(run),
                            start: ts,
                            status: if failed { Status::Error } else { Status::Ok },
                            origin,
                            payload: PayloadRef::inline(Payload {
                                output,
                                error,
                                ..Default::default()
                            }),
                            ..NewEvent::new(if failed { EventKind::Error } else { EventKind::Other }, kind)
                        });
                    }
                }
            }
            k if KNOWN_V1.contains(&k) => {
                // State updates, condensations, pauses, tokens: shown by kind, not interpreted.
                let state_like = kind.contains("State") || kind == "PauseEvent";
                t.add(NewEvent {
                    id,
                    parent: Parent::Index(run),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    ..NewEvent::new(if state_like { EventKind::State } else { EventKind::Other }, kind)
                });
            }
            _ => {
                let ty = if kind.is_empty() { "(no kind)" } else { kind };
                t.skipped.add(ty);
                if crate::formats::drift_text(&ev).is_some() {
                    t.add(NewEvent {
                        id,
                        parent: Parent::Index(run),
                        start: ts,
                        status: Status::Ok,
                        origin,
                        payload: PayloadRef::inline(crate::formats::drift_payload(&ev, &V1_ENVELOPE)),
                        ..NewEvent::new(EventKind::Other, ty)
                    });
                }
            }
        }
    }
    if let Some(task) = task {
        t.payload_mut(run).input = Some(task);
    }
    t.finalize();
    Ok(t)
}
