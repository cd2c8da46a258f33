//! HTTP/1.x message heads and body framing on `httparse`. No I/O, no clock.
