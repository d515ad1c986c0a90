//! tracetui: a terminal explorer for AI-agent traces.
//!
//! Data flows one way: bytes → [`formats`] → [`model`] → [`report`] (DESIGN §1).
//! Everything here is usable from tests, benches and fuzz targets.

pub mod cli;
pub mod cost;
pub mod diff;
pub mod export;
pub mod formats;
pub mod in_order;
pub mod json;
pub mod model;
pub mod output;
pub mod report;
pub mod sanitize;
pub mod search;
pub mod serve;
pub mod source;
pub mod tail;
pub mod tui;
pub mod words;
