use clap::FromArgMatches;
use std::io::Write;
use std::process::ExitCode;
use tracetui::cli::{Cli, Command, ConfigCommand, FormatArgs, Output};
use tracetui::{report, source};

fn main() -> ExitCode {
    let (ssh, args) = match ssh_sources() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}", tracetui::sanitize::line(&format!("tracetui: {e:#}")));
            return ExitCode::from(2);
        }
    };
    let cli = match Cli::from_arg_matches(&tracetui::cli::command().get_matches_from(args)) {
        Ok(c) => c,
        Err(e) => {
            drop(ssh);
            e.exit()
        }
    };
    let follow = ssh_follow(ssh.as_ref(), &cli);
    let result = run(cli);
    source::cleanup();
    source::clickhouse::runs::cleanup();
    ssh_finish(ssh, follow);
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // A closed pipe (`| head`) is not an error worth a message.
            if let Some(io) = e.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::BrokenPipe
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("{}", tracetui::sanitize::line(&format!("tracetui: {e:#}")));
            ExitCode::from(2)
        }
    }
}

/// The runs under PATHs, or without any, in the standard places.
fn discover_or_places(
    paths: &[std::path::PathBuf],
    forced: Option<&'static dyn tracetui::formats::Format>,
) -> source::Discovery {
    if paths.is_empty() {
        source::discover_places(&source::places::resolve_env(), forced)
    } else {
        source::discover(paths, forced)
    }
}

/// Without PATH and with no run in any standard place, there is nothing to list or check:
/// said on stderr, exit 2 (as for a PATH that holds no trace).
fn nothing_in_places(paths: &[std::path::PathBuf], d: &source::Discovery) -> bool {
    let none = paths.is_empty() && d.runs.is_empty() && d.errors.is_empty() && !d.skipped.any();
    if none {
        eprintln!("tracetui: no runs in the places agents write to (`tracetui sources` lists them); give a PATH");
    }
    none
}

/// Where a report goes: the file `-o` names (created, buffered), else standard output.
fn output_to<'a>(path: Option<&std::path::Path>, out: &'a mut dyn Write) -> anyhow::Result<Box<dyn Write + 'a>> {
    Ok(match path {
        Some(p) => {
            let f = std::fs::File::create(p).map_err(|e| usage(format!("{}: {e}", p.display())))?;
            Box::new(std::io::BufWriter::new(f))
        }
        None => Box::new(out),
    })
}

/// `diff` of a baseline and runs, its exit code (a usage error exits 2).
fn compare_pairs(req: &report::compare::Request, sink: &mut dyn Write) -> anyhow::Result<u8> {
    match report::compare::run(req, sink) {
        Ok(c) => Ok(c),
        Err(report::compare::RunError::Usage(m)) => Err(usage(m)),
        Err(report::compare::RunError::Io(e)) => Err(e.into()),
    }
}

fn usage(msg: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{msg}")
}

fn formats(f: &FormatArgs) -> anyhow::Result<(Output, Option<&'static dyn tracetui::formats::Format>)> {
    let (out, forced) = f.split().map_err(usage)?;
    let forced = source::forced_format(forced.as_deref()).map_err(usage)?;
    Ok((out, forced))
}

/// `--poll MS`: poll at that interval instead of relying on notify.
fn live_options(poll: Option<u64>) -> tracetui::tui::LiveOptions {
    match poll {
        Some(ms) => tracetui::tui::LiveOptions {
            poll: std::time::Duration::from_millis(ms.max(10)),
            poll_only: true,
            ..Default::default()
        },
        None => tracetui::tui::LiveOptions::default(),
    }
}

/// The user's price overrides (config.toml) for every cost shown; a config that does not
/// read is reported by `tracetui prices` and the explorer, and leaves the embedded prices.
fn init_prices() {
    let path = tracetui::tui::config::path();
    if let (Some(p), Ok(c)) = (&path, tracetui::tui::config::load(path.as_deref()))
        && !c.prices.is_empty()
        && let Ok(prices) = tracetui::cost::Prices::with_overrides(&c.prices, p)
    {
        tracetui::cost::usage::set_current(prices);
    }
}

/// Standard output for reports, in 1 MiB blocks, through a duplicate of its descriptor.
/// Not stdout's own handle: held for the run, its lock would make the explorer's terminal
/// restore (from a signal thread) wait, and its line buffer searches every block it is
/// given for the last newline (5% of a large export).
fn report_out() -> std::io::BufWriter<Box<dyn Write>> {
    if source::ssh::active() {
        // An ssh:// source's mirror paths are named as the remote's (`ssh://host/path`).
        let w = source::ssh::ShownWriter::new(std::io::stdout());
        return std::io::BufWriter::with_capacity(1 << 16, Box::new(w));
    }
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() {
            return std::io::BufWriter::with_capacity(1 << 20, Box::new(std::fs::File::from(fd)));
        }
    }
    std::io::BufWriter::with_capacity(1 << 16, Box::new(std::io::stdout()))
}

/// ssh:// arguments: each machine connected and its files mirrored, the argument replaced by
/// the mirror's paths (which every command reads as local ones; output names them remote).
fn ssh_sources() -> anyhow::Result<(Option<source::ssh::Sources>, Vec<std::ffi::OsString>)> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if !source::ssh::in_args(&args) {
        return Ok((None, args));
    }
    let s = source::ssh::open_args(args)?;
    for w in s.warnings() {
        eprintln!("{}", tracetui::sanitize::line(&format!("tracetui: {w}")));
    }
    let args = s.args.clone();
    Ok((Some(s), args))
}

/// The explorer and `tail` keep an ssh mirror current while they run. A command without
/// the explorer closes the connections when a signal ends it.
fn ssh_follow(ssh: Option<&source::ssh::Sources>, cli: &Cli) -> Vec<source::ssh::Follower> {
    let Some(s) = ssh else { return Vec::new() };
    let explorer = match &cli.command {
        None | Some(Command::Serve { .. }) | Some(Command::Diff { .. }) => true,
        Some(Command::Tail { no_tui, .. }) => !no_tui,
        _ => false,
    };
    if !explorer {
        source::ssh::close_on_signals(&s.sessions);
    }
    match &cli.command {
        None | Some(Command::Tail { .. }) => s.sessions.iter().map(|x| x.follow()).collect(),
        _ => Vec::new(),
    }
}

/// Stop following, say what went wrong meanwhile, close the connections.
fn ssh_finish(ssh: Option<source::ssh::Sources>, follow: Vec<source::ssh::Follower>) {
    let mut msgs: Vec<String> = follow.into_iter().flat_map(|f| f.finish()).collect();
    if let Some(s) = &ssh {
        msgs.extend(s.warnings());
        // Also when a follower still holds a session (left waiting on an unreachable host).
        for x in &s.sessions {
            x.close();
        }
    }
    for m in msgs {
        eprintln!("{}", tracetui::sanitize::line(&format!("tracetui: {m}")));
    }
    drop(ssh);
}

/// The commands that read clickhouse:// sources so far (the others refuse them, exit 2).
const CLICKHOUSE_COMMANDS: &str = "ls, show, check, stats, grep, diff, compare, export, tail and the explorer";

/// A clickhouse:// argument, if any: such a source is read by [`clickhouse`], not discovered.
fn clickhouse_arg() -> Option<String> {
    std::env::args_os()
        .skip(1)
        .filter_map(|a| a.into_string().ok())
        .find(|a| source::clickhouse::is_url(a))
}

fn clickhouse_client(url: &str) -> anyhow::Result<source::clickhouse::Client> {
    let src = source::clickhouse::Source::parse(url).map_err(usage)?;
    let path = tracetui::tui::config::path();
    let password = tracetui::tui::config::load(path.as_deref())
        .ok()
        .and_then(|c| c.clickhouse_password);
    Ok(source::clickhouse::Client::new(src, password)?)
}

/// `ls` and `show` of a clickhouse:// source.
fn clickhouse(cli: Cli, url: &str, out: &mut dyn Write) -> anyhow::Result<u8> {
    match cli.command {
        Some(Command::Ls { since, fmt, .. }) => {
            let (o, _) = formats(&fmt)?;
            let mut c = clickhouse_client(url)?;
            if let Some(w) = since {
                c.source.since_secs = match source::clickhouse::parse_window(&w) {
                    Some(s) => s,
                    None => {
                        let t = report::stats::parse_date(&w, false).map_err(usage)?;
                        let now = chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX);
                        (now.saturating_sub(t) / 1_000_000_000).max(1) as u64
                    }
                };
            }
            let page = source::clickhouse::list_page(&c)?;
            let rows = page.runs;
            let root: std::sync::Arc<std::path::Path> = std::path::PathBuf::from(c.source.display()).into();
            let full = rows.len() as u64 == c.source.limit;
            let rows: Vec<_> = rows
                .into_iter()
                .map(|r| (r, c.source.database.clone(), root.clone()))
                .collect();
            report::ls::print(&rows, None, out, o)?;
            if full {
                let of = page.total.map(|n| format!(" of {n}")).unwrap_or_default();
                eprintln!(
                    "tracetui: {} runs shown{of}; more with ?offset={}",
                    c.source.limit,
                    c.source.offset + c.source.limit
                );
            }
            Ok(0)
        }
        Some(Command::Show { fmt, .. }) => {
            let (o, _) = formats(&fmt)?;
            let c = clickhouse_client(url)?;
            let Some(trace) = c.source.trace.clone() else {
                return Err(usage(format!(
                    "{}: which run? add ?trace=ID (`tracetui ls {}` lists them)",
                    c.source.display(),
                    c.source.display()
                )));
            };
            let (loaded, _file) = source::clickhouse::load(&c, &trace)?;
            report::show::run(&loaded.traces, out, o)?;
            Ok(0)
        }
        Some(Command::Stats {
            by,
            since,
            until,
            check_costs,
            top,
            fmt,
            ..
        }) => {
            let (o, _) = formats(&fmt)?;
            let c = clickhouse_client(url)?;
            if check_costs || top.is_some() {
                return Err(usage(format!(
                    "{}: stats --check-costs and --top need each run loaded; not computed in a store",
                    c.source.display()
                )));
            }
            let w = source::clickhouse::stats::Window::parse(&c.source, since.as_deref(), until.as_deref())
                .map_err(usage)?;
            let r = source::clickhouse::stats::run(&c, &w, by)?;
            for n in &r.notes {
                eprintln!("{}", tracetui::sanitize::line(&format!("tracetui: {n}")));
            }
            report::stats::write(&r.stats, &r.runs, o, 0, out)?;
            Ok(0)
        }
        Some(Command::Grep {
            pattern,
            paths,
            filter,
            ignore_case,
            regex,
            max_count,
            fmt,
        }) => {
            let (o, _) = formats(&fmt)?;
            let c = clickhouse_client(url)?;
            if filter.is_some() || paths.len() > 1 {
                return Err(usage(format!(
                    "{}: grep of a store takes one clickhouse:// source and no --filter",
                    c.source.display()
                )));
            }
            let w = source::clickhouse::stats::Window::of(&c.source);
            let req = source::clickhouse::grep::Request {
                pattern,
                ignore_case,
                regex,
                max_count,
            };
            let found = source::clickhouse::grep::search(&c, &w, &req)?;
            let color = std::io::IsTerminal::is_terminal(&std::io::stdout())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let code = source::clickhouse::grep::print(&c.source, &found, o, color, out)?;
            if found.cut {
                eprintln!(
                    "tracetui: more than {} spans match: the first {} are shown (narrow the window, ?since=, or -m N a trace)",
                    source::clickhouse::grep::MAX_HITS,
                    source::clickhouse::grep::MAX_HITS
                );
            }
            Ok(code)
        }
        Some(Command::Check { fmt, .. }) => {
            let (o, _) = formats(&fmt)?;
            let c = clickhouse_client(url)?;
            let w = source::clickhouse::stats::Window::of(&c.source);
            let (checks, totals) = source::clickhouse::check::run(&c, &w)?;
            let code =
                source::clickhouse::check::print(&c.source, &w, &checks, totals, o, out, &mut std::io::stderr())?;
            Ok(code)
        }
        Some(Command::Tail {
            no_tui,
            from_start,
            poll,
            fmt,
            ..
        }) => {
            let (o, _) = formats(&fmt)?;
            if !no_tui {
                // The store is polled on its own clock (every 2 s), not --poll's.
                tail_explorer(std::path::PathBuf::from(url), None, None, "URL")?;
                return Ok(0);
            }
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                signal_hook::flag::register(sig, stop.clone())?;
            }
            let mut lock = std::io::stdout().lock();
            source::clickhouse::tail::follow_print(
                url,
                o,
                poll.map(|ms| std::time::Duration::from_millis(ms.max(10))),
                from_start,
                &mut lock,
                &stop,
            )?;
            Ok(0)
        }
        // The explorer on the store: its runs list, kept current.
        None => {
            need_terminal("for text output use `tracetui ls|show URL`")?;
            source::clickhouse::Source::parse(url).map_err(usage)?;
            tracetui::tui::run(tracetui::tui::Options {
                paths: vec![std::path::PathBuf::from(url)],
                places: false,
                forced: None,
                theme: cli.theme,
                diff: None,
                follow: cli.follow,
                live: live_options(None),
            })?;
            Ok(0)
        }
        _ => Err(usage(format!(
            "clickhouse:// sources work with {CLICKHOUSE_COMMANDS} so far"
        ))),
    }
}

/// `tail` in the explorer: `path` opened and followed live; `what` names it in the message for
/// a command that is not in a terminal.
fn tail_explorer(
    path: std::path::PathBuf,
    forced: Option<&'static dyn tracetui::formats::Format>,
    poll: Option<u64>,
    what: &str,
) -> anyhow::Result<()> {
    need_terminal(&format!("to print events as lines use `tracetui tail --no-tui {what}`"))?;
    tracetui::tui::run(tracetui::tui::Options {
        paths: vec![path],
        places: false,
        forced,
        theme: None,
        diff: None,
        follow: true,
        live: live_options(poll),
    })?;
    Ok(())
}

/// The explorer's precondition: a terminal on standard output; else a usage error saying
/// what to run `instead`.
fn need_terminal(instead: &str) -> anyhow::Result<()> {
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        Ok(())
    } else {
        Err(usage(format!("the explorer needs a terminal; {instead}")))
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    init_prices();
    let store = clickhouse_arg();
    if store.is_some() {
        // Store runs named in diff, compare and export are discovered as their URLs and load
        // with this password (the environment's wins).
        let path = tracetui::tui::config::path();
        source::clickhouse::runs::configure(
            tracetui::tui::config::load(path.as_deref())
                .ok()
                .and_then(|c| c.clickhouse_password),
        );
    }
    if let Some(url) = store.filter(|_| {
        !matches!(
            cli.command,
            Some(Command::Diff { .. } | Command::Compare { .. } | Command::Export { .. })
        )
    }) {
        let mut out = report_out();
        let code = clickhouse(cli, &url, &mut out)?;
        out.flush()?;
        return Ok(code);
    }
    // After the prices: the cache is of summaries made with them.
    source::cache::enable();
    let mut out = report_out();
    let code = match cli.command {
        Some(Command::Check { paths, verbose, fmt }) => {
            let (o, forced) = formats(&fmt)?;
            let d = discover_or_places(&paths, forced);
            if nothing_in_places(&paths, &d) {
                return Ok(2);
            }
            let outcome = report::check::run(&d, &mut out, o, verbose)?;
            outcome.exit_code() as u8
        }
        Some(Command::Show { path, fmt }) => {
            let (o, forced) = formats(&fmt)?;
            let d = source::discover(std::slice::from_ref(&path), forced);
            let mut code = 0;
            for e in &d.errors {
                eprintln!("{}", tracetui::sanitize::line(&format!("tracetui: {e}")));
                code = 2;
            }
            for (_, res) in source::load_all(&d.runs) {
                match res {
                    Ok(l) => report::show::run(&l.traces, &mut out, o)?,
                    Err(e) => {
                        eprintln!("{}", tracetui::sanitize::line(&format!("tracetui: {e}")));
                        // The README's rule, as `check` follows it: a known format in which
                        // nothing loaded is diagnostics (1); unreadable or no trace at all, 2.
                        let c = match e {
                            tracetui::formats::LoadError::Invalid { .. } => 1,
                            _ => 2,
                        };
                        code = code.max(c);
                    }
                }
            }
            code
        }
        Some(Command::Ls {
            dir,
            fast,
            load: _,
            since,
            fmt,
        }) => {
            let since = since
                .as_deref()
                .map(|w| match source::clickhouse::parse_window(w) {
                    Some(secs) => Ok(chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX)
                        - (secs.min(i64::MAX as u64 / 1_000_000_000) as i64) * 1_000_000_000),
                    None => report::stats::parse_date(w, false),
                })
                .transpose()
                .map_err(usage)?;
            let (o, forced) = formats(&fmt)?;
            let d = discover_or_places(dir.as_slice(), forced);
            if nothing_in_places(dir.as_slice(), &d) {
                return Ok(2);
            }
            let numbers = if fast {
                report::ls::Numbers::Fast
            } else {
                report::ls::Numbers::Exact
            };
            let failed = report::ls::run(&d, &source::places::resolve_env(), &mut out, o, numbers, since)?;
            source::cache::flush();
            // Runs that could not be listed are unreadable input, also beside others that were.
            if failed > 0 { 2 } else { 0 }
        }
        Some(Command::Stats {
            paths,
            by,
            since,
            until,
            check_costs,
            top,
            fmt,
        }) => {
            let (o, forced) = formats(&fmt)?;
            use report::stats::parse_date;
            let window = report::stats::Window {
                since: since
                    .as_deref()
                    .map(|s| parse_date(s, false))
                    .transpose()
                    .map_err(usage)?,
                until: until
                    .as_deref()
                    .map(|s| parse_date(s, true))
                    .transpose()
                    .map_err(usage)?,
            };
            let d = discover_or_places(&paths, forced);
            if nothing_in_places(&paths, &d) {
                return Ok(2);
            }
            let req = report::stats::Request {
                by,
                window,
                output: o,
                check_costs,
                top_results: top.is_some(),
            };
            report::stats::run(&d, tracetui::cost::usage::current(), req, &mut out)?
        }
        Some(Command::Serve {
            http,
            grpc,
            save,
            no_tui,
            max_spans,
            max_body_mb,
            fmt,
        }) => {
            let (o, _) = formats(&fmt)?;
            let mut opts = tracetui::serve::Options::new(http.as_deref(), grpc.as_deref(), save).map_err(usage)?;
            opts.max_spans = max_spans.max(1);
            opts.max_body = max_body_mb.max(1) << 20;
            if !no_tui {
                need_terminal("to print events as lines use `tracetui serve --no-tui`")?;
                let bg = tracetui::serve::Background::start(&opts, &mut std::io::stderr())?;
                tracetui::tui::run(tracetui::tui::Options {
                    paths: vec![bg.dir().to_path_buf()],
                    places: false,
                    forced: None,
                    theme: cli.theme,
                    diff: None,
                    follow: true,
                    live: live_options(None),
                })?;
                return Ok(0);
            }
            // Ctrl-C or a TERM ends the loop, so that a private spool directory is removed.
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                signal_hook::flag::register(sig, stop.clone())?;
            }
            drop(out);
            let mut lock = std::io::stdout().lock();
            tracetui::serve::print(&opts, o, &mut lock, &mut std::io::stderr(), &stop)?;
            return Ok(0);
        }
        Some(Command::Tail {
            path,
            no_tui,
            from_start,
            poll,
            fmt,
        }) => {
            let (o, forced) = formats(&fmt)?;
            if !no_tui {
                tail_explorer(path, forced, poll, "PATH")?;
                return Ok(0);
            }
            let opts = tracetui::tail::Options {
                poll: std::time::Duration::from_millis(poll.unwrap_or(500).max(10)),
                poll_only: poll.is_some(),
                from_start,
            };
            let stop = std::sync::atomic::AtomicBool::new(false);
            // Unbuffered beyond one batch: each batch of events is flushed as it is printed.
            drop(out);
            let mut lock = std::io::stdout().lock();
            tracetui::tail::follow_print(&path, forced, o, opts, &mut lock, &stop)?;
            return Ok(0);
        }
        Some(Command::Diff {
            baseline,
            current,
            fmt,
            ignore,
            strict,
            fail_on,
            context,
            output,
        }) => {
            let (report_fmt, rest) = report::compare::split_report(&fmt.format);
            let (_, forced) = formats(&FormatArgs { format: rest })?;
            let fail_on = report::diff::fail_on(&fail_on).map_err(usage)?;
            let opts = tracetui::diff::Options {
                strict,
                ignore: ignore.iter().map(|g| tracetui::diff::Glob::new(g)).collect(),
            };
            // On a terminal without an output format, a pair of runs opens in the explorer
            // (standard input cannot be both the baseline and the keyboard).
            let stdin_used = baseline == std::path::Path::new("-");
            if report_fmt.is_none()
                && output.is_none()
                && current.len() == 1
                && !stdin_used
                && std::io::IsTerminal::is_terminal(&std::io::stdout())
            {
                let current = current.into_iter().next().expect("one");
                let mut paths = Vec::new();
                for spec in [&baseline, &current] {
                    let (p, _) = report::diff::split_selector(spec);
                    if !p.exists() && !p.to_str().is_some_and(source::clickhouse::is_url) {
                        return Err(usage(format!("{}: no such file or directory", spec.display())));
                    }
                    if !paths.contains(&p) {
                        paths.push(p);
                    }
                }
                tracetui::tui::run(tracetui::tui::Options {
                    paths,
                    places: false,
                    forced,
                    theme: cli.theme,
                    diff: Some(tracetui::tui::DiffRequest {
                        baseline,
                        current,
                        opts,
                    }),
                    follow: false,
                    live: live_options(None),
                })?;
                return Ok(0);
            }
            let context = match context {
                Some(n) => n,
                None => {
                    let config =
                        tracetui::tui::config::load(tracetui::tui::config::path().as_deref()).map_err(usage)?;
                    config.diff_context.unwrap_or(tracetui::diff::words::DEFAULT_CONTEXT)
                }
            };
            let to_file = output.is_some();
            let color = !to_file
                && std::io::IsTerminal::is_terminal(&std::io::stdout())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let req = report::compare::Request {
                baseline: &baseline,
                current: &current,
                forced,
                opts,
                fail_on,
                report: report_fmt.unwrap_or(report::compare::Report::Text),
                context,
                color,
            };
            let mut sink = output_to(output.as_deref(), &mut out)?;
            let sink: &mut dyn Write = &mut sink;
            let code = compare_pairs(&req, sink)?;
            sink.flush()?;
            if let Some(p) = &output {
                eprintln!(
                    "{}",
                    tracetui::sanitize::line(&format!("tracetui: wrote {}", p.display()))
                );
            }
            code
        }
        Some(Command::Compare {
            tree,
            runs,
            baseline,
            current,
            group_by,
            alpha,
            ignore,
            steps,
            format,
            output,
        }) => {
            use report::compare_tree as ct;
            let (report_fmt, rest) = report::compare::split_report(&format);
            let (_, forced) = formats(&FormatArgs { format: rest })?;
            let report_fmt = report_fmt.unwrap_or(report::compare::Report::Text);
            if report_fmt == report::compare::Report::Html {
                return Err(usage("compare writes text, json or markdown"));
            }
            if !(alpha > 0.0 && alpha < 1.0) {
                return Err(usage(format!("--alpha {alpha}: a level between 0 and 1 (0.05)")));
            }
            let globs: Vec<tracetui::diff::Glob> = ignore.iter().map(|g| tracetui::diff::Glob::new(g)).collect();
            let warn = |ws: &[String]| {
                for w in ws {
                    eprintln!("{}", tracetui::sanitize::line(&format!("tracetui: {w}")));
                }
            };
            let mut sink = output_to(output.as_deref(), &mut out)?;
            let sink: &mut dyn Write = &mut sink;
            let code = if tree {
                if runs.is_empty() {
                    return Err(usage(
                        "compare --tree needs RUNS: trace files, run directories or a directory of runs",
                    ));
                }
                let loaded = ct::load(&runs, forced, group_by, &globs).map_err(usage)?;
                warn(&loaded.warnings);
                let groups = ct::groups(loaded.runs);
                match report_fmt {
                    report::compare::Report::Json => ct::tree_json(&groups, sink)?,
                    report::compare::Report::Markdown => ct::tree_markdown(&groups, steps, sink)?,
                    _ => ct::tree_text(&groups, steps, sink)?,
                }
                u8::from(groups.iter().any(|g| g.tree.paths().len() > 1))
            } else if baseline.is_empty() || current.is_empty() {
                return Err(usage(
                    "compare needs --tree RUNS..., or --baseline RUN... --current RUN...",
                ));
            } else {
                let a = ct::load(&baseline, forced, None, &globs).map_err(usage)?;
                let b = ct::load(&current, forced, None, &globs).map_err(usage)?;
                warn(&a.warnings);
                warn(&b.warnings);
                if a.runs.len() == 1 && b.runs.len() == 1 {
                    eprintln!(
                        "tracetui: one run on each side: no distribution to test; this is the pair verdict of `tracetui diff` (exit 1 only on REGRESSION)"
                    );
                    let (pa, pb) = (
                        std::path::PathBuf::from(&a.runs[0].1.spec),
                        std::path::PathBuf::from(&b.runs[0].1.spec),
                    );
                    let req = report::compare::Request {
                        baseline: &pa,
                        current: std::slice::from_ref(&pb),
                        forced,
                        opts: tracetui::diff::Options {
                            strict: false,
                            ignore: globs,
                        },
                        fail_on: vec![tracetui::diff::Verdict::Regression],
                        report: report_fmt,
                        context: tracetui::diff::words::DEFAULT_CONTEXT,
                        color: false,
                    };
                    compare_pairs(&req, sink)?
                } else {
                    let av: Vec<_> = a.runs.into_iter().map(|(_, r)| r).collect();
                    let bv: Vec<_> = b.runs.into_iter().map(|(_, r)| r).collect();
                    let r = tracetui::diff::repeated::compare(&av, &bv, alpha);
                    match report_fmt {
                        report::compare::Report::Json => tracetui::json::write_line(sink, &ct::repeated_json(&r))?,
                        report::compare::Report::Markdown => ct::repeated_markdown(&r, sink)?,
                        _ => ct::repeated_text(&r, sink)?,
                    }
                    u8::from(r.regression)
                }
            };
            sink.flush()?;
            if let Some(p) = &output {
                eprintln!(
                    "{}",
                    tracetui::sanitize::line(&format!("tracetui: wrote {}", p.display()))
                );
            }
            code
        }
        Some(Command::Grep {
            pattern,
            paths,
            filter,
            ignore_case,
            regex,
            max_count,
            fmt,
        }) => {
            let (o, forced) = formats(&fmt)?;
            let opts = tracetui::search::grep::Options {
                pattern: tracetui::search::grep::Pattern::new(&pattern, ignore_case, regex).map_err(usage)?,
                filter: filter
                    .as_deref()
                    .map(tracetui::search::parse)
                    .transpose()
                    .map_err(usage)?,
                max_count,
            };
            // No PATH: the standard places that exist, else the current directory.
            let d = if paths.is_empty() && source::places::resolve_env().iter().any(|p| p.exists()) {
                discover_or_places(&paths, forced)
            } else if paths.is_empty() {
                source::discover(&[std::path::PathBuf::from(".")], forced)
            } else {
                source::discover(&paths, forced)
            };
            let color = std::io::IsTerminal::is_terminal(&std::io::stdout())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let outcome = report::grep::run(&d, &opts, &mut out, &mut std::io::stderr(), o, color)?;
            outcome.exit_code()
        }
        Some(Command::Export {
            path,
            runs,
            to,
            output,
            force,
            format,
        }) => {
            let forced = source::forced_format(format.as_deref()).map_err(usage)?;
            let req = tracetui::export::command::Request {
                path: &path,
                runs: &runs,
                to,
                output: output.as_deref(),
                force,
                forced,
            };
            tracetui::export::command::run(&req, &mut out)?
        }
        Some(Command::Sources { format }) => {
            let places = source::places::resolve_env();
            let rows = report::sources::scan(&places, None);
            report::sources::write(&rows, &mut out, format)?;
            0
        }
        Some(Command::Completions { shell }) => {
            clap_complete::generate(shell, &mut tracetui::cli::command(), "tracetui", &mut out);
            0
        }
        Some(Command::Man) => {
            clap_mangen::Man::new(tracetui::cli::command()).render(&mut out)?;
            0
        }
        Some(Command::Prices { model, format }) => {
            let path = tracetui::tui::config::path();
            let config = tracetui::tui::config::load(path.as_deref()).map_err(usage)?;
            if let Some(w) = &config.warning {
                eprintln!("{}", tracetui::sanitize::line(&format!("tracetui: {w}")));
            }
            let owned;
            let prices = match (&path, config.prices.is_empty()) {
                (Some(p), false) => {
                    owned = tracetui::cost::Prices::with_overrides(&config.prices, p).map_err(usage)?;
                    &owned
                }
                _ => tracetui::cost::Prices::builtin(),
            };
            report::prices::run(prices, model.as_deref(), &mut out, format)?
        }
        Some(Command::Config {
            what: ConfigCommand::Path,
        }) => match tracetui::tui::config::path() {
            Some(p) => {
                writeln!(out, "{}", p.display())?;
                0
            }
            None => return Err(usage("no config directory: neither XDG_CONFIG_HOME nor HOME is set")),
        },
        None => {
            let forced = source::forced_format(cli.format.as_deref()).map_err(usage)?;
            need_terminal("for text output use `tracetui show|ls|check PATH`")?;
            // No PATH: every standard place that exists (the explorer says when none does).
            // --otlp: the receiver beside the PATHs (alone without any), its spool watched as
            // any directory of runs is.
            let bg = if cli.otlp {
                Some(tracetui::serve::Background::start(
                    &tracetui::serve::Options::new(None, None, None).map_err(usage)?,
                    &mut std::io::stderr(),
                )?)
            } else {
                None
            };
            let (paths, places) = if let Some(bg) = &bg {
                let mut p = cli.paths.clone();
                p.push(bg.dir().to_path_buf());
                (p, false)
            } else if cli.paths.is_empty() {
                let places = source::places::resolve_env();
                (
                    places.iter().filter(|p| p.exists()).map(|p| p.path.clone()).collect(),
                    true,
                )
            } else {
                (cli.paths, false)
            };
            tracetui::tui::run(tracetui::tui::Options {
                paths,
                places,
                forced,
                theme: cli.theme,
                diff: None,
                follow: cli.follow || bg.is_some(),
                live: live_options(None),
            })?;
            drop(bg);
            0
        }
    };
    out.flush()?;
    Ok(code)
}
