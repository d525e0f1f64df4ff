"""Emptied: MeasureConfig lives in chronos.config, Variant and sha256_text in chronos.variant."""
