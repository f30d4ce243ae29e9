"""Utilities shared across kosong: JSON types and JSON Schema helpers."""
