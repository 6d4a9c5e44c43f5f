//! How a run ends. Commands return an [`ExitStatus`]; `main` turns it into the process's
//! exit code once. The codes are spec/exit-codes.md's table, which a test here reads.

use super::error::{AtipError, Category, exit};

/// The end of a command, before it becomes a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The job succeeded (0).
    Success,
    /// The job ran and found a failure: an invalid document, a failed check (1).
    Failure,
    /// An error of this category ended the run (2, 65–78).
    Error(Category),
    /// SIGINT, SIGTERM or SIGHUP ended the run: 128 + the signal's number, as a shell
    /// reports it.
    Signal(i32),
    /// The exit code of the tool `atip exec` ran, passed through (spec/exec.md).
    Tool(u8),
    /// A code another command's convention defines: `mcp` follows the mcp-cli document
    /// (3 transport, 4 tool error, 5 bad input; spec/mcp-cli.md).
    Convention(u8),
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => exit::OK,
            ExitStatus::Failure => exit::FAILURE,
            ExitStatus::Error(category) => category.exit_code(),
            ExitStatus::Signal(sig) => (128 + sig).clamp(0, 255) as u8,
            ExitStatus::Tool(code) | ExitStatus::Convention(code) => code,
        }
    }

    /// `Success` when `ok`, else `Failure`: a command's verdict on what it checked.
    pub fn verdict(ok: bool) -> ExitStatus {
        if ok {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        }
    }
}

impl From<&AtipError> for ExitStatus {
    fn from(e: &AtipError) -> ExitStatus {
        ExitStatus::Error(e.category)
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> std::process::ExitCode {
        std::process::ExitCode::from(status.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// spec/exit-codes.md's first table: `| code | NAME | meaning |` rows.
    fn spec_codes() -> Vec<u8> {
        let spec = include_str!("../../../../spec/exit-codes.md");
        let table = spec.split("\n## ").next().unwrap();
        table
            .lines()
            .filter_map(|l| l.split('|').nth(1)?.trim().parse::<u8>().ok())
            .collect()
    }

    #[test]
    fn the_spec_table_is_every_status_atip_itself_can_end_with() {
        let mut ours: Vec<u8> = [ExitStatus::Success, ExitStatus::Failure]
            .into_iter()
            .chain(Category::ALL.iter().map(|c| ExitStatus::Error(*c)))
            .map(ExitStatus::code)
            .collect();
        ours.sort_unstable();
        ours.dedup();
        assert_eq!(ours, spec_codes());
    }

    #[test]
    fn signals_and_conventions_keep_their_numbers() {
        assert_eq!(ExitStatus::Signal(2).code(), 130);
        assert_eq!(ExitStatus::Signal(15).code(), 143);
        assert_eq!(ExitStatus::Signal(1).code(), 129);
        assert_eq!(ExitStatus::Convention(3).code(), 3);
        assert_eq!(ExitStatus::Tool(42).code(), 42);
        assert_eq!(ExitStatus::Error(Category::Policy).code(), 77);
        assert_eq!(ExitStatus::verdict(false).code(), 1);
    }
}
