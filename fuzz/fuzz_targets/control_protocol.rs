//! The server's control-protocol decoder on arbitrary bytes: a frame
//! stream (`decode`) and a bare body (`decode_body`) return an error, never
//! panic, and never claim more bytes than they were given.
#![no_main]

use benchsuite_net::proto;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((_, used))) = proto::decode(data) {
        assert!(used <= data.len());
    }
    let _ = proto::decode_body(data);
    let _ = proto::version_of(data);
});
