//! Resource store (owned by the server work).
