//! The interactive explorer (DESIGN §7). State, update and render are apart: terminal input
//! becomes an [`action::Action`], [`update::update`] changes the [`state::State`], and
//! [`render::render`] draws from `&State`. Nothing outside this module knows about terminals.

pub mod action;
mod app;
pub mod branches;
pub mod chat;
pub mod clipboard;
pub mod commands;
pub mod compare;
pub mod config;
pub mod cost_view;
pub mod detail;
pub mod diffview;
pub mod export;
pub mod filter;
pub mod gist;
pub mod keymap;
pub mod layout;
pub mod live;
pub mod markdown;
pub mod nav;
pub mod render;
pub mod run_view;
pub mod runs_list;
pub mod runsearch;
pub mod state;
pub mod stats;
pub mod store;
mod terminal;
pub mod theme;
pub mod update;
pub mod usage_view;

pub use app::{DiffRequest, Options, load_one, run, theme_and_keys};
pub use live::{LiveOptions, entries};

#[cfg(test)]
mod tests;
