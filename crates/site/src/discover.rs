//! Streaming discovery of embedded references in HTML (owned by the client work).
