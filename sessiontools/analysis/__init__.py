"""Analyses over sessions: inspection, estimate error, timing (early/late), summary drift."""
