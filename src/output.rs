//! How a command prints: text for people, or JSON for programs (`--format text|json`). Below
//! the commands and the entry point, so that `report`, `serve` and `tail` need not reach up
//! into `cli`.

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Output {
    #[default]
    Text,
    Json,
}
