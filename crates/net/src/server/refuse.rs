//! Answering a connection with an error: the frame, and the refusal that
//! sends it and closes gently. A leaf below the control side and the data
//! path, which both refuse connections.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::proto::{self, ErrorCode, MAGIC, Message, PROTOCOL_VERSION};

/// An error message of this protocol version.
pub(super) fn error(code: ErrorCode, message: impl Into<String>) -> Message {
    Message::Error {
        code,
        message: message.into(),
        version: PROTOCOL_VERSION,
    }
}

/// Answers with our magic and an error, best effort, and closes.
pub(super) async fn refuse(mut sock: TcpStream, code: ErrorCode, message: &str) {
    refuse_in_place(&mut sock, code, message, false).await;
}

/// Sends an error (after our magic unless it was sent already), best
/// effort, and closes gently: the write side first, then whatever the
/// client still sends is read and dropped (16 KiB, 250 ms at most), so
/// that closing with its bytes unread does not reset the connection and
/// destroy the answer before the client reads it.
pub(super) async fn refuse_in_place(
    sock: &mut TcpStream,
    code: ErrorCode,
    message: &str,
    magic_sent: bool,
) {
    let mut frame = if magic_sent {
        Vec::new()
    } else {
        MAGIC.to_vec()
    };
    frame.extend(proto::encode(&error(code, message)));
    let _ = tokio::time::timeout(Duration::from_secs(1), sock.write_all(&frame)).await;
    let _ = sock.shutdown().await;
    let drain = async {
        let mut buf = [0u8; 4096];
        let mut left = 16 * 1024usize;
        while left > 0 {
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_millis(250), drain).await;
}
