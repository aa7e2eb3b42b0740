//! Library half of this crate; the binary in `main.rs` is a thin edge over it.
