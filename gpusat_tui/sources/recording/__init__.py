"""Recordings: writing a session's Frames (plain, gzip, zstd blocks; rotated parts) and reading
them back for replay and `report`. The file format is an interface (docs/recording.md)."""
