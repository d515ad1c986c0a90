//! Command-line definitions (clap). `main.rs` dispatches; nothing here runs a command.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "tracetui",
    version,
    about = "Explore AI-agent traces in the terminal: runs, event trees, timelines, diffs, live tails"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Traces to browse: trace files, run directories, or directories of runs. Without PATH:
    /// every run in the standard places (`tracetui sources` lists them).
    pub paths: Vec<PathBuf>,
    /// Read the traces as this format instead of detecting it.
    #[arg(long = "format", value_name = "NAME", global = false)]
    pub format: Option<String>,
    /// Colour theme of the explorer: dark, light, high-contrast, or a theme file path.
    #[arg(long = "theme", value_name = "NAME|PATH")]
    pub theme: Option<String>,
    /// Start in follow mode: runs open at their last event and the view follows new ones.
    #[arg(long)]
    pub follow: bool,
    /// Also receive OpenTelemetry spans and logs (OTLP on 127.0.0.1:4318 HTTP and :4317 gRPC)
    /// and show them beside PATHs as they arrive (`tracetui serve` for the options).
    #[arg(long)]
    pub otlp: bool,
}

/// The full command, with the long help naming every registered trace format.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let formats = crate::formats::ids().join(", ");
    Cli::command().long_about(format!(
        "Explore AI-agent traces in the terminal.\n\n\
         PATH is a trace file, a run directory, or a directory of runs (formats may be mixed). \
         Without PATH, tracetui opens every run in the places agents write to (~/.claude/projects, \
         ~/.codex/sessions, ... and runs/, traces/ in the current directory): `tracetui sources` \
         lists them.\n\n\
         Trace formats: {formats} (detected automatically; `--format NAME` overrides detection).\n\n\
         Exit codes: 0 fine, 1 differences or diagnostics found, 2 usage or unreadable input."
    ))
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Load traces and report format, counts and diagnostics (exit 1 on error diagnostics or
    /// directories the scan left out). Without PATH: every run in the standard places.
    Check {
        paths: Vec<PathBuf>,
        /// Also list the records each trace skipped as of a type its format does not know
        /// (agents add record types often; they are skipped quietly, not reported as problems).
        #[arg(short, long)]
        verbose: bool,
        #[command(flatten)]
        fmt: FormatArgs,
    },
    /// Print the normalized event tree of a trace.
    /// PATH may be one run of a ClickHouse store: clickhouse://host/db?trace=ID (as `ls` lists it).
    Show {
        path: PathBuf,
        #[command(flatten)]
        fmt: FormatArgs,
    },
    /// List the runs in a directory: status, agent, project, start, duration, counts (reads
    /// only metadata). Without DIR: every run in the standard places. DIR may be a
    /// clickhouse://[user@]host[:port]/[database] store of the Collector's ClickHouse exporter.
    Ls {
        dir: Option<PathBuf>,
        /// Print at once from what the summary cache holds, else cheap metadata (a finished
        /// run's run.json, a large session's ends): counts, tokens and cost marked `~` (`"provisional": true`) where they are
        /// not the loaded ones. Without it every run's loaded numbers are printed: runs not in
        /// the summary cache are loaded first (progress on stderr when it is a terminal).
        #[arg(long)]
        fast: bool,
        /// What `ls` does without `--fast` (kept for scripts that say it).
        #[arg(long, hide = true, conflicts_with = "fast")]
        load: bool,
        /// Only runs that started in this window: a duration back from now (30m, 6h, 7d) or
        /// a date (YYYY-MM-DD, UTC, or an ISO-8601 time). A clickhouse:// source defaults to 24h.
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        #[command(flatten)]
        fmt: FormatArgs,
    },
    /// Tokens, cost and tool latency across runs: runs by status, LLM calls, tokens by kind and
    /// cost grouped by model, day, run or format, and per tool its calls, errors, error rate and
    /// latency p50/p95/p99/max. Without PATH: every run in the standard places.
    Stats {
        paths: Vec<PathBuf>,
        /// Group the LLM table by this key (`tool`: the tool table only, the LLM total above it).
        #[arg(long, value_enum, default_value_t = crate::report::stats::By::Model)]
        by: crate::report::stats::By,
        /// Only runs that started on or after DATE (YYYY-MM-DD, UTC, or an ISO-8601 time).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Only runs that started on or before DATE (the whole day when a day is given).
        #[arg(long, value_name = "DATE")]
        until: Option<String>,
        /// List the runs whose recorder wrote a cost (Claude Code's cost-state, OpenCode's and
        /// Cline's message costs) that differs from the computed one, with the difference by
        /// model and kind of token.
        #[arg(long)]
        check_costs: bool,
        /// Instead of the tables, the costliest items across runs: `results`, the tool results
        /// that cost most, directly (the first LLM call that read them) and carried (re-sent on
        /// every later call of their context until a compaction).
        #[arg(long, value_name = "WHAT", value_parser = ["results"])]
        top: Option<String>,
        #[command(flatten)]
        fmt: FormatArgs,
    },
    /// Follow a run directory, trace file or directory of runs as it grows (the explorer in
    /// follow mode, or one line per event with --no-tui).
    Tail {
        path: PathBuf,
        /// Print each new event as one line instead of opening the explorer.
        #[arg(long)]
        no_tui: bool,
        /// With --no-tui: print the events already there first (the explorer always shows them).
        #[arg(long)]
        from_start: bool,
        /// Poll every MS milliseconds instead of relying on file-system notifications.
        #[arg(long, value_name = "MS")]
        poll: Option<u64>,
        #[command(flatten)]
        fmt: FormatArgs,
    },
    /// Receive OpenTelemetry (OTLP/HTTP and OTLP/gRPC) spans and logs and show them as they
    /// arrive: the explorer, or one line per event with --no-tui.
    Serve {
        /// OTLP/HTTP address (`/v1/traces`, `/v1/logs`), or `off` [default: 127.0.0.1:4318].
        /// Only loopback unless an address is given.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// OTLP/gRPC address, or `off` [default: 127.0.0.1:4317].
        #[arg(long, value_name = "ADDR")]
        grpc: Option<String>,
        /// Keep every received batch in DIR (made if missing) as the OpenTelemetry Collector's
        /// file exporter writes it: OTLP/JSON lines, files rotated by size. `tracetui DIR`
        /// reopens the session.
        #[arg(long, value_name = "DIR")]
        save: Option<PathBuf>,
        /// Print each new event as one line (as `tail --no-tui`) instead of opening the explorer.
        #[arg(long)]
        no_tui: bool,
        /// Spans held in memory at most; the oldest finished traces are dropped first.
        #[arg(long, value_name = "N", default_value_t = crate::serve::MAX_SPANS)]
        max_spans: usize,
        /// Largest request body in MiB, before and after gzip (413 beyond).
        #[arg(long, value_name = "MIB", default_value_t = crate::serve::MAX_BODY >> 20)]
        max_body_mb: usize,
        #[command(flatten)]
        fmt: FormatArgs,
    },
    /// Compare two runs: a verdict, metric deltas and the aligned calls (exit 1 on a failing verdict).
    ///
    /// Aligns the two runs' tool and LLM calls, compares paired calls' arguments and results as
    /// JSON paths and gives a verdict: PASSED, OUTPUT_DRIFT, TOOLS_REORDERED, TOOLS_CHANGED or
    /// REGRESSION. Exit 1 when the verdict is in --fail-on, 0 when not, 2 on unreadable input.
    #[command(
        after_help = "BASELINE and CURRENT are trace files or run directories; PATH#N (1-based) or PATH#ID picks \
one trace of a source that holds several (default: the first, with a note on stderr); `-` reads the baseline \
from standard input.\n\n\
Several CURRENT runs: each is compared with the baseline; a table of verdicts, metric deltas and first \
divergences, and a summary line (JSON: one object per run, then {\"summary\": ...}); exit 1 when any verdict \
is in --fail-on.\n\n\
--format text|json|markdown|html: markdown is a pull-request comment, html a self-contained side-by-side \
report (one pair of runs; use -o FILE). A string that differs is shown as a word diff ([-deleted-]{+inserted+} \
without colour), unchanged words elided past --context N.\n\n\
Ignored by default: ids, timestamps, durations, token usage, stack traces and agentsnap's fingerprint \
outside call arguments. --ignore takes globs over JSON paths: `*` matches anything, e.g. \
'*.request_id' or 'tools[*].args.ts'."
    )]
    Diff {
        /// The reference run: a trace file or run directory (PATH#N or PATH#ID picks one trace).
        baseline: PathBuf,
        /// The run to judge against it; several: each compared with the baseline (a table).
        #[arg(required = true, value_name = "CURRENT")]
        current: Vec<PathBuf>,
        #[command(flatten)]
        fmt: FormatArgs,
        /// Leave out a JSON path (glob); repeatable.
        #[arg(long = "ignore", value_name = "PATH", action = clap::ArgAction::Append)]
        ignore: Vec<String>,
        /// Compare everything, the volatile fields included.
        #[arg(long, conflicts_with = "ignore")]
        strict: bool,
        /// Verdicts that exit 1, comma-separated, or `none` [default: every verdict but PASSED].
        #[arg(long = "fail-on", value_name = "VERDICTS", value_delimiter = ',')]
        fail_on: Vec<String>,
        /// Words of unchanged text kept around each word-level change of a string
        /// [default: `[diff] context` of config.toml, else 8].
        #[arg(long, value_name = "N")]
        context: Option<usize>,
        /// Write the report to FILE instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Many runs of one task: the tree of their call sequences (--tree), or two sets of
    /// repeated runs compared metric by metric (--baseline ... --current ...).
    #[command(
        after_help = "--tree RUNS...: RUNS are trace files, run directories or directories of runs (every trace \
of a source that holds several, such as an Inspect AI log's samples and epochs, is a run). The runs' calls \
(tool calls with their arguments, LLM calls by model) form a prefix tree: each branch the runs that took it, \
with counts, outcome (ok/error, the format's verdict: Inspect scores, SWE-agent exit_status) and the mean and \
spread of cost, tokens and duration. --group-by splits the runs into tasks first. Exit 1 when the runs of a \
group took more than one path, 0 when they all made the same calls.\n\n\
--baseline A... --current B...: per metric (error rate, tool-sequence change rate, cost, tokens, duration, \
each tool's frequency) both distributions, the difference with a confidence interval and a p-value: Fisher's \
exact test for rates (Newcombe's interval), a permutation test for means (a seeded bootstrap interval). \
REGRESSION (exit 1) only when the current runs are significantly worse at --alpha, Holm-corrected over the \
metrics that decide; a tool's frequency is reported, not decisive. One run on each side: the pair verdict of \
`tracetui diff`, said on stderr (exit 1 only on REGRESSION).\n\n\
Calls that differ only in ids, timestamps, durations, results or usage are the same step; --ignore takes \
globs over argument paths as diff does, e.g. 'tools[*].args.ts'."
    )]
    Compare {
        /// Print the tree of the RUNS' call sequences.
        #[arg(long, conflicts_with_all = ["baseline", "current"])]
        tree: bool,
        /// With --tree: trace files, run directories or directories of runs.
        #[arg(value_name = "RUNS", requires = "tree")]
        runs: Vec<PathBuf>,
        /// The reference runs (repeated runs of the task before a change).
        #[arg(long, num_args = 1.., value_name = "RUN", requires = "current")]
        baseline: Vec<PathBuf>,
        /// The runs to judge against them.
        #[arg(long, num_args = 1.., value_name = "RUN", requires = "baseline")]
        current: Vec<PathBuf>,
        /// With --tree: split the runs into tasks, one tree each.
        #[arg(long = "group-by", value_enum, value_name = "KEY", requires = "tree")]
        group_by: Option<crate::report::compare_tree::GroupBy>,
        /// Significance level of the verdict (and 1 - alpha the level of the intervals).
        #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
        alpha: f64,
        /// Leave out an argument path (glob) when telling steps apart; repeatable.
        #[arg(long = "ignore", value_name = "PATH", action = clap::ArgAction::Append)]
        ignore: Vec<String>,
        /// With --tree: steps shown of a stretch without a branch (its first and last; 0: all).
        #[arg(long, value_name = "N", default_value_t = 10)]
        steps: usize,
        /// Output `text`, `json` or `markdown`, and/or a trace format name to override detection.
        #[arg(long = "format", value_name = "FORMAT", action = clap::ArgAction::Append)]
        format: Vec<String>,
        /// Write the report to FILE instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Search every run's events for PATTERN: names, arguments, results, prompts, responses,
    /// errors (exit 0 found, 1 none, 2 trouble). Without PATH: the standard places, else `.`.
    #[command(
        after_help = "Matches the decoded text (JSON escapes in files neither hide nor make a match). Each match \
prints run:line, event kind and name, the event's path in the tree, the field and a snippet with the match marked. \
--filter takes the explorer's filter language (`tool:bash status:error`); --max-count is per trace."
    )]
    Grep {
        pattern: String,
        paths: Vec<std::path::PathBuf>,
        /// Only events this filter selects (`tool:NAME kind:llm status:error model:X`, `!` inverts).
        #[arg(long, value_name = "EXPR")]
        filter: Option<String>,
        /// Case-insensitive.
        #[arg(short = 'i', long)]
        ignore_case: bool,
        /// PATTERN is a regular expression (Rust regex syntax), not a literal.
        #[arg(long)]
        regex: bool,
        /// At most N matches per trace.
        #[arg(long, short = 'm', value_name = "N")]
        max_count: Option<usize>,
        #[command(flatten)]
        fmt: FormatArgs,
    },
    /// Export runs: a self-contained HTML page, a Markdown transcript (for a pull request) or
    /// OTLP/JSON with the GenAI semantic conventions (for the OpenTelemetry Collector).
    #[command(
        after_help = "Without -o the run goes to standard output; -o FILE writes one run, -o DIR (an existing \
directory, or a path ending in /) one file a run. Without --run every run of PATH is exported. tracetui never \
writes into a trace directory: an -o inside PATH is refused. An existing file is not overwritten without \
--force, and a symbolic link where a file goes is never followed."
    )]
    Export {
        /// A trace file, a run directory, or a directory of runs.
        path: PathBuf,
        /// The id of a run to export (as `tracetui check` shows it); repeatable. Default: every run.
        #[arg(long = "run", value_name = "ID", action = clap::ArgAction::Append)]
        runs: Vec<String>,
        /// What to export to.
        #[arg(long = "to", value_enum, value_name = "FORMAT")]
        to: crate::export::To,
        /// Write to FILE (one run) or into DIR (one file a run) instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE|DIR")]
        output: Option<PathBuf>,
        /// Overwrite files that exist where the export writes (a symbolic link is still refused).
        #[arg(long)]
        force: bool,
        /// Read PATH as this trace format instead of detecting it.
        #[arg(long = "format", value_name = "NAME")]
        format: Option<String>,
    },
    /// Print the model prices used for costs, and where each comes from (the embedded list or
    /// config.toml); with MODEL, the price that model name resolves to and how it was matched.
    #[command(
        after_help = "Prices are dollars per million tokens. The embedded list is a pinned snapshot of LiteLLM's \
public price list (chat and completion models); `[prices.\"MODEL\"]` tables in config.toml (see `tracetui config path`) \
override or add models, with keys input, output, cache_read, cache_write, reasoning. Exit 1 when MODEL has no price."
    )]
    Prices {
        /// A model name as a trace spells it (provider prefixes, dates and `-latest` are understood).
        model: Option<String>,
        /// Output `text` or `json`.
        #[arg(long, value_enum, default_value_t = Output::Text)]
        format: Output,
    },
    /// List the places tracetui looks for runs when given no PATH: agent, path, whether it
    /// exists and how many runs it holds.
    Sources {
        /// Output `text` or `json`.
        #[arg(long = "format", value_name = "FORMAT", default_value = "text")]
        format: Output,
    },
    /// Show where the config file is read from.
    Config {
        #[command(subcommand)]
        what: ConfigCommand,
    },
    /// Print a shell completion script.
    Completions { shell: clap_complete::Shell },
    /// Print the manual page (roff).
    Man,
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Print the path of the config file (it need not exist).
    Path,
}

pub use crate::output::Output;

/// `--format` takes an output format (text, json) and/or a trace format name; it may be given
/// twice (`--format json --format agentdbg`). The two sets of names do not overlap.
#[derive(clap::Args, Debug, Default)]
pub struct FormatArgs {
    /// Output `text` or `json`, and/or a trace format name to override detection.
    #[arg(long = "format", value_name = "FORMAT", action = clap::ArgAction::Append)]
    pub format: Vec<String>,
}

impl FormatArgs {
    /// (output format, forced trace format name)
    pub fn split(&self) -> Result<(Output, Option<String>), String> {
        let mut out = Output::Text;
        let mut forced = None;
        for f in &self.format {
            match f.as_str() {
                "text" => out = Output::Text,
                "json" => out = Output::Json,
                other => {
                    if forced.replace(other.to_string()).is_some() {
                        return Err("--format names more than one trace format".into());
                    }
                }
            }
        }
        Ok((out, forced))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn format_splits_output_and_trace_format() {
        let a = FormatArgs {
            format: vec!["json".into(), "agentdbg".into()],
        };
        assert_eq!(a.split().unwrap(), (Output::Json, Some("agentdbg".into())));
        let b = FormatArgs {
            format: vec!["x".into(), "y".into()],
        };
        assert!(b.split().is_err());
    }
}
