//! Request handlers, one module per family of APIs.

pub mod admin;
mod current_leader;
pub mod fetch;
pub mod log_dirs;
pub mod mirror_admin;
pub mod offsets;
pub mod produce;
