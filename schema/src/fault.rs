//! Whose failure an attempt records, and what it was: the attempts table's `fault_source` and
//! `fault_code` columns. The runner reads server faults from the wire and harness faults from its own
//! errors; the site names them on the attempt page. Each is serialized as the word written here.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Whose failure it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultSource {
    /// The server's own process misbehaved on the wire.
    Server,
    /// A HARNESS_ERROR: the sandbox, the fixture host or an adapter.
    Harness,
}

impl FaultSource {
    /// Every source, in declaration order.
    pub const ALL: [FaultSource; 2] = [FaultSource::Server, FaultSource::Harness];

    /// The source's word.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultSource::Server => "server",
            FaultSource::Harness => "harness",
        }
    }
}

impl fmt::Display for FaultSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the fault was: one of the server faults read from the wire, `harness`, or `credential` (a refused credential).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultCode {
    /// The process exited (or was ended by a signal) with a request unanswered.
    ServerExited,
    /// No answer to `initialize`: the server never started serving.
    NoInitialize,
    /// No answer to a request other than `initialize`.
    NoAnswer,
    /// An answer to an id that no request carried.
    UnknownId,
    /// Lines on stdout that are not JSON.
    NonJson,
    /// An answer larger than the runner's limit for one line.
    OversizedResult,
    /// More stderr than the runner's limit.
    StderrFlood,
    /// A harness fault (the words are in the attempt's `outcome_reason`).
    Harness,
    /// A harness fault: the server refused the runner's credentials (HTTP 401 or 403), the
    /// operator's configuration rather than the server's quality (the server's words are in the
    /// attempt's `outcome_reason`).
    Credential,
}

impl FaultCode {
    /// Every code, in declaration order.
    pub const ALL: [FaultCode; 9] = [
        FaultCode::ServerExited,
        FaultCode::NoInitialize,
        FaultCode::NoAnswer,
        FaultCode::UnknownId,
        FaultCode::NonJson,
        FaultCode::OversizedResult,
        FaultCode::StderrFlood,
        FaultCode::Harness,
        FaultCode::Credential,
    ];

    /// The code's word.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultCode::ServerExited => "server-exited",
            FaultCode::NoInitialize => "no-initialize",
            FaultCode::NoAnswer => "no-answer",
            FaultCode::UnknownId => "unknown-id",
            FaultCode::NonJson => "non-json",
            FaultCode::OversizedResult => "oversized-result",
            FaultCode::StderrFlood => "stderr-flood",
            FaultCode::Harness => "harness",
            FaultCode::Credential => "credential",
        }
    }

    /// The code a word names.
    pub fn parse(word: &str) -> Option<FaultCode> {
        FaultCode::ALL.into_iter().find(|c| c.as_str() == word)
    }
}

impl fmt::Display for FaultCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fault codes of one attempt, first the one named first, each once. Stored in one text column
/// joined with `,` (`no-answer,stderr-flood`), as bundles have always written it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FaultCodes(Vec<FaultCode>);

impl FaultCodes {
    /// The codes in the order given, repeats dropped; `None` when there are none.
    pub fn new(codes: impl IntoIterator<Item = FaultCode>) -> Option<FaultCodes> {
        let mut v: Vec<FaultCode> = Vec::new();
        for c in codes {
            if !v.contains(&c) {
                v.push(c);
            }
        }
        (!v.is_empty()).then_some(FaultCodes(v))
    }

    /// One code.
    pub fn one(code: FaultCode) -> FaultCodes {
        FaultCodes(vec![code])
    }

    /// The codes, first the one named first.
    pub fn codes(&self) -> &[FaultCode] {
        &self.0
    }

    /// Reads the stored text: codes joined with `,`.
    pub fn parse(text: &str) -> Result<FaultCodes, UnknownFaultCode> {
        let codes = text
            .split(',')
            .map(|word| {
                FaultCode::parse(word.trim()).ok_or_else(|| UnknownFaultCode {
                    word: word.trim().to_string(),
                    text: text.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        FaultCodes::new(codes).ok_or_else(|| UnknownFaultCode {
            word: String::new(),
            text: text.to_string(),
        })
    }
}

/// A stored fault-code text naming a code that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown fault code {word:?} in {text:?}; expected codes joined with `,`, each one of server-exited, no-initialize, no-answer, unknown-id, non-json, oversized-result, stderr-flood, harness, credential"
)]
pub struct UnknownFaultCode {
    pub word: String,
    pub text: String,
}

impl fmt::Display for FaultCodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(c.as_str())?;
        }
        Ok(())
    }
}

impl Serialize for FaultCodes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FaultCodes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FaultCodes, D::Error> {
        let text = String::deserialize(d)?;
        FaultCodes::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_stored_text() {
        let codes = FaultCodes::new([
            FaultCode::NoAnswer,
            FaultCode::StderrFlood,
            FaultCode::NoAnswer,
        ])
        .expect("codes");
        assert_eq!(codes.to_string(), "no-answer,stderr-flood");
        assert_eq!(
            FaultCodes::parse("no-answer,stderr-flood"),
            Ok(codes.clone())
        );
        let json = serde_json::to_string(&codes).expect("json");
        assert_eq!(json, "\"no-answer,stderr-flood\"");
        assert_eq!(
            serde_json::from_str::<FaultCodes>(&json).expect("read"),
            codes
        );
        assert_eq!(FaultCodes::new([]), None);
    }

    #[test]
    fn an_unknown_code_is_refused_with_the_known_ones() {
        let Err(e) = FaultCodes::parse("no-answer,exploded") else {
            panic!("an unknown code was read");
        };
        let e = e.to_string();
        assert!(
            e.contains("\"exploded\"") && e.contains("server-exited, no-initialize"),
            "{e}"
        );
        let listed: Vec<&str> = FaultCode::ALL.map(FaultCode::as_str).to_vec();
        assert!(
            e.ends_with(&listed.join(", ")),
            "the message lists every code: {e}"
        );
        assert!(FaultCodes::parse("").is_err());
    }
}
