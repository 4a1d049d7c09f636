//! The scoring crate's integration tests, as one test binary (`cargo test
//! -p storage-scoring --test scoring`): property tests of the input parser,
//! the score, the verdict and the privacy filter, and the report's round
//! trips. One module per area; a test's name is its module and its
//! function (`input_props::…`). proptest keeps the failing cases it found
//! in `../proptest-regressions/MODULE.txt` (beside this directory, as its
//! `SourceParallel` rule puts them) and runs them again first.

mod input_props;
mod privacy_props;
mod schema_roundtrip;
