//! The identify crate's integration tests, as one test binary (`cargo test
//! -p storage-identify --test identify`): the decoders and the machine
//! readers on the captured fixtures of `tests/fixtures/`, and property
//! tests of the decoders. One module per area; a test's name is its
//! module and its function (`decoders_fuzz::…`).

mod decoders_fixtures;
mod decoders_fuzz;
mod doctor_fixtures;
mod health_dumps;
mod system_fixtures;
