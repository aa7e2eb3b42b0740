//! The exit codes of the three AgentRank binaries (`agentrank-run`, `agentrank-analyze`,
//! `agentrank-site`), defined once: each `main` maps its result to one of these, and its `--help` ends
//! with [`HELP`].
//!
//! One exception, by design: `agentrank-run tap` exits with the code of the server it ran (128 plus the
//! signal number when the server died on a signal), so a client sees the server's own exit status.

/// How a binary's run ended, as its process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// The work ran and everything is in order (also `--help` and `--version`).
    Ok = 0,
    /// The work ran and found a problem: a verify mismatch, a lint failure, a voided sweep, a failed
    /// install, or the site's publication gate (a redaction hit or a broken link).
    Problem = 1,
    /// Bad arguments or input: a usage error, a missing or malformed file, a directory that is not a
    /// bundle; the message names the file, field or command at fault.
    BadInput = 2,
    /// An internal error: the inputs were fine and something else failed (writing outputs, say).
    Internal = 3,
}

impl Exit {
    /// Every code, in numeric order.
    pub const ALL: [Exit; 4] = [Exit::Ok, Exit::Problem, Exit::BadInput, Exit::Internal];

    /// The numeric process exit code.
    pub const fn code(self) -> u8 {
        self as u8
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> std::process::ExitCode {
        std::process::ExitCode::from(e.code())
    }
}

/// The line every binary's `--help` ends with.
pub const HELP: &str = "Exit codes: 0 success; 1 the work ran and found a problem; 2 bad arguments or input; 3 internal error.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_numbers() {
        let codes: Vec<u8> = Exit::ALL.iter().map(|e| e.code()).collect();
        assert_eq!(codes, [0, 1, 2, 3]);
        for e in Exit::ALL {
            assert!(
                HELP.contains(&format!("{} ", e.code())),
                "{e:?} is not in HELP"
            );
        }
    }
}
