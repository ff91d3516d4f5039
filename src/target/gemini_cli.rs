//! The gemini-cli driver: installs also live in Homebrew's Cellar, and
//! gemini-cli updates itself (which drops the patch), so status reads its
//! settings to say when auto-update is on. verify cannot drive it yet.

use crate::locate::{Environment, Search};

/// Homebrew's Cellar (`…/Cellar/gemini-cli/<v>/libexec/lib/node_modules`).
pub fn search(search: &mut Search, env: &Environment) {
    search.homebrew_cellar("gemini-cli", env);
}
