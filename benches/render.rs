//! `cargo bench --bench render`: one frame of the run view with a million events loaded.
//! Budget 5 ms whatever the trace size: a frame touches only the visible rows (the flattened
//! row list lives in the state and is rebuilt on collapse / expand / filter, not per frame).
//! The trace is built in memory through the model API.

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tracetui::model::*;
use tracetui::tui::action::{Action, Command};
use tracetui::tui::keymap::Keymap;
use tracetui::tui::render::render;
use tracetui::tui::state::{RunView, State, View};
use tracetui::tui::theme::Theme;
use tracetui::tui::update::update;

const EVENTS: usize = 1_000_000;

/// A run of 1M events: 10,000 LLM calls, each with 99 tool calls under it; every 97th tool
/// call failed; all timed, so the timeline column draws bars.
fn big_trace() -> Trace {
    let t0: i64 = 1_771_000_000_000_000_000;
    let mut t = Trace::new(RunMeta {
        id: "bench".into(),
        name: Some("bench-run".into()),
        format: "agentdbg",
        status: RunStatus::Error,
        ..Default::default()
    });
    let root = t.add(NewEvent {
        start: Some(t0),
        duration: Some(EVENTS as i64 * 1_000_000),
        status: Status::Error,
        ..NewEvent::new(EventKind::Run, "bench-run")
    });
    let names = ["search", "read_file", "write_file", "run_tests", "fetch_url"];
    let mut clock = t0;
    while t.len() < EVENTS {
        let llm = t.add(NewEvent {
            parent: Parent::Index(root),
            start: Some(clock),
            duration: Some(99_000_000),
            status: Status::Ok,
            model: Some("gpt-4o"),
            usage: Some(Usage {
                input: Some(1200),
                output: Some(80),
                total: None,
                ..Default::default()
            }),
            payload: PayloadRef::Inline(Box::new(Payload {
                input: Some(serde_json::json!("Plan the next step.")),
                ..Default::default()
            })),
            ..NewEvent::new(EventKind::LlmCall, "gpt-4o")
        });
        for k in 0..99 {
            if t.len() >= EVENTS {
                break;
            }
            let n = t.len();
            t.add(NewEvent {
                parent: Parent::Index(llm),
                start: Some(clock + k * 1_000_000),
                duration: Some(900_000),
                status: if n.is_multiple_of(97) {
                    Status::Error
                } else {
                    Status::Ok
                },
                ..NewEvent::new(EventKind::ToolCall, names[n % names.len()])
            });
        }
        clock += 100_000_000;
    }
    t.finalize();
    t
}

fn bench(c: &mut Criterion) {
    let trace = tracetui::tui::state::shared(big_trace());
    assert_eq!(trace.read().unwrap().len(), EVENTS);
    let mut s = State::new(Keymap::default(), (200, 60));
    s.run = Some(RunView::new(trace, None));
    s.view = View::Run;
    // somewhere in the middle of the run, with the detail of a failed tool call
    for _ in 0..3 {
        update(&mut s, Action::Cmd(Command::NextError));
    }
    update(&mut s, Action::Cmd(Command::PageDown));
    let theme = Theme::dark();
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    c.bench_function("render run view, 1M events, 200x60", |b| {
        b.iter(|| {
            term.draw(|f| render(f, &s, &theme)).unwrap();
        })
    });
    update(&mut s, Action::Cmd(Command::Bottom));
    c.bench_function("render run view at the bottom, 1M events, 200x60", |b| {
        b.iter(|| {
            term.draw(|f| render(f, &s, &theme)).unwrap();
        })
    });
    c.bench_function("G (top to bottom) and render, 1M events", |b| {
        b.iter(|| {
            update(&mut s, Action::Cmd(Command::Top));
            update(&mut s, Action::Cmd(Command::Bottom));
            term.draw(|f| render(f, &s, &theme)).unwrap();
        })
    });
    c.bench_function("page down and render, 1M events", |b| {
        update(&mut s, Action::Cmd(Command::Top));
        b.iter(|| {
            update(&mut s, Action::Cmd(Command::PageDown));
            term.draw(|f| render(f, &s, &theme)).unwrap();
        })
    });
    c.bench_function("move down one row and render, 1M events", |b| {
        b.iter(|| {
            update(&mut s, Action::Cmd(Command::Up));
            term.draw(|f| render(f, &s, &theme)).unwrap();
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50);
    targets = bench
}
criterion_main!(benches);
