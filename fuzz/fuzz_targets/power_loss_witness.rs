//! The power-loss witness over any lines, as a client on the network may
//! send them: never a panic, a reply to every request that gets one, and
//! no line that is no request taken as one.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_powerloss::witness::{Session, Witness};

fuzz_target!(|data: &[u8]| {
    let witness = Witness::default();
    let mut session = Session::default();
    for line in data.split(|&b| b == b'\n') {
        let (reply, go_on) = witness.take_line(line, &mut session);
        if !go_on {
            assert!(reply.is_some_and(|r| !r.ok && r.error.is_some()));
            break;
        }
    }
});
