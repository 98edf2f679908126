"""Claude Code transcripts: lines into typed records, with a Diagnostic for every bad line."""

from sessiontools.read.claude_code.load import (
    default_projects_dir,
    load_claude_file,
    looks_like_claude_code,
    parse_bytes,
    subagent_files,
)
from sessiontools.read.claude_code.records import CONTINUATION_PREFIX, ClaudeFile, Record, content_text

__all__ = [
    "CONTINUATION_PREFIX",
    "ClaudeFile",
    "Record",
    "content_text",
    "default_projects_dir",
    "load_claude_file",
    "looks_like_claude_code",
    "parse_bytes",
    "subagent_files",
]
