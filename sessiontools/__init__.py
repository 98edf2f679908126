"""sessiontools: analyse and replay the session files of AI coding agents (Pi)."""

__version__ = "0.1.0"
