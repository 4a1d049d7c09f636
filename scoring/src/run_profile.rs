//! Which test profile a run used (docs/report.md#top-level (`profile`)), as one type
//! that the verdict, the score's comparability, `compare` and the
//! leaderboard's intake all read, instead of comparing strings.
//!
//! A report stores it as the string `"compat"` or `"quick"` (or none,
//! meaning `compat`); a newer version's profile loads as `Unknown`, which
//! is neither comparable nor judged as more than indicative.

use crate::schema::PROFILES;

/// The names a report stores: PiBenchmarks' test set, and the shortened one.
pub const COMPAT: &str = "compat";
pub const QUICK: &str = "quick";

/// A run's test profile.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RunProfile {
    /// PiBenchmarks' test set and sizes: the score is comparable.
    #[default]
    Compat,
    /// Shortened tests: a quick look, not comparable, verdict indicative.
    Quick,
    /// A profile this version does not know (a newer report's).
    Unknown(String),
}

impl RunProfile {
    /// The profile a report names (`None`: `compat`, as PiBenchmarks).
    pub fn of(name: Option<&str>) -> RunProfile {
        match name {
            None => RunProfile::Compat,
            Some(name) if name == PROFILES[0] => RunProfile::Compat,
            Some(name) if name == PROFILES[1] => RunProfile::Quick,
            Some(other) => RunProfile::Unknown(other.to_owned()),
        }
    }

    /// The name a report stores.
    pub fn name(&self) -> &str {
        match self {
            RunProfile::Compat => PROFILES[0],
            RunProfile::Quick => PROFILES[1],
            RunProfile::Unknown(name) => name,
        }
    }

    /// Whether its figures are comparable with PiBenchmarks results.
    pub fn comparable(&self) -> bool {
        *self == RunProfile::Compat
    }

    /// Whether a class verdict on its figures can only be indicative.
    pub fn indicative(&self) -> bool {
        !self.comparable()
    }
}

impl std::fmt::Display for RunProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_profiles_are_not_comparable() {
        assert_eq!(RunProfile::of(None), RunProfile::Compat);
        for name in PROFILES {
            assert_eq!(RunProfile::of(Some(name)).name(), name);
        }
        assert!(RunProfile::of(Some("compat")).comparable());
        assert!(RunProfile::of(Some("quick")).indicative());
        let newer = RunProfile::of(Some("thorough"));
        assert_eq!(newer, RunProfile::Unknown("thorough".into()));
        assert!(!newer.comparable() && newer.indicative());
    }
}
