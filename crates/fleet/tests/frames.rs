//! The meeting point's frames and messages under arbitrary input (a
//! property test in the normal suite, so it runs in CI): every message
//! survives its encoding; bytes from a stranger (garbage, a truncated or
//! oversized frame, a mutated good one) are an error, never a panic, a
//! hang or an allocation of the size the stranger claims; a stranger's text
//! printed by a rank steers no terminal; a stored name never leaves the
//! store's namespace.

use std::io::Cursor;
use std::time::{Duration, Instant};

use benchsuite_fleet::rendezvous::{
    FrameError, MAX_FRAME, MAX_HANDSHAKE_FRAME, MAX_NAME, MAX_UNTRUSTED, Msg, encode, frame_len,
    read_frame, untrusted, valid_name,
};
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9._-]{0,24}",
        any::<String>(),
        "(\\PC|\u{1b}\\[[0-9;]*m|\u{202e}|\n|\0){0,40}",
    ]
}

fn msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        (any::<u32>(), text(), text(), any::<u64>()).prop_map(|(version, nonce, job, world)| {
            Msg::Hello {
                version,
                nonce,
                job,
                world,
            }
        }),
        text().prop_map(|nonce| Msg::Challenge { nonce }),
        text().prop_map(|mac| Msg::Auth { mac }),
        (text(), text()).prop_map(|(proof, instance)| Msg::Welcome { proof, instance }),
        (text(), text()).prop_map(|(name, text)| Msg::Put { name, text }),
        text().prop_map(|name| Msg::Get { name }),
        text().prop_map(|name| Msg::Remove { name }),
        proptest::option::of(any::<u64>()).prop_map(|since| Msg::List { since }),
        Just(Msg::Ok),
        proptest::option::of(text()).prop_map(|text| Msg::Value { text }),
        (
            any::<u64>(),
            proptest::option::of(proptest::collection::vec(text(), 0..8))
        )
            .prop_map(|(version, names)| Msg::Names { version, names }),
        text().prop_map(|message| Msg::Error { message }),
    ]
}

fn read(bytes: &[u8], max: usize) -> Result<Msg, FrameError> {
    // A cursor never blocks: the deadline only bounds a misbehaving reader.
    read_frame(
        &mut Cursor::new(bytes),
        max,
        Instant::now() + Duration::from_secs(5),
        None,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_message_survives_its_encoding(m in msg()) {
        let frame = encode(&m);
        prop_assert_eq!(read(&frame, MAX_FRAME).unwrap(), m);
    }

    #[test]
    fn a_truncated_frame_is_an_error(m in msg(), cut in any::<prop::sample::Index>()) {
        let frame = encode(&m);
        let at = cut.index(frame.len());
        prop_assert!(read(&frame[..at], MAX_FRAME).is_err());
    }

    #[test]
    fn garbage_is_an_error_or_a_message_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let start = Instant::now();
        if let Ok(m) = read(&bytes, MAX_HANDSHAKE_FRAME) {
            // Whatever parsed is a message that encodes back to itself.
            prop_assert_eq!(read(&encode(&m), MAX_FRAME).unwrap(), m);
        }
        prop_assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_mutated_frame_is_an_error_or_a_message(m in msg(), flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let mut frame = encode(&m);
        for (at, b) in flips {
            let i = at.index(frame.len());
            frame[i] ^= b;
        }
        let _ = read(&frame, MAX_FRAME);
    }

    #[test]
    fn a_length_above_the_limit_is_refused_before_any_body(len in (MAX_HANDSHAKE_FRAME as u32 + 1)..=u32::MAX) {
        // Only the prefix is sent: reading the claimed body would fail
        // with an end of file, not TooLarge.
        match read(&len.to_be_bytes(), MAX_HANDSHAKE_FRAME) {
            Err(FrameError::TooLarge { len: l, max }) => {
                prop_assert_eq!(l, u64::from(len));
                prop_assert_eq!(max, MAX_HANDSHAKE_FRAME);
            }
            other => prop_assert!(false, "{other:?}"),
        }
        prop_assert!(frame_len(len.to_be_bytes(), MAX_HANDSHAKE_FRAME).is_err());
    }

    #[test]
    fn a_strangers_text_steers_no_terminal(t in text()) {
        let shown = untrusted(&t);
        prop_assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        prop_assert!(!shown.chars().any(|c| matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')), "{shown:?}");
        // At most MAX_UNTRUSTED characters of the text, each escaped to at
        // most 10 (\u{10ffff}), and the ellipsis.
        prop_assert!(shown.chars().count() <= MAX_UNTRUSTED * 10 + 1);
    }

    #[test]
    fn a_valid_name_stays_in_the_store(t in text()) {
        if valid_name(&t) {
            prop_assert!(!t.contains('/') && !t.contains('\0') && !t.starts_with('.'));
            prop_assert!(!t.is_empty() && t.len() <= MAX_NAME);
        }
    }
}
