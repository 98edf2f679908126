"""Talking to a model server: the one package that opens network connections.

`client.Endpoint` sends a `policies.pi.summarize.SummaryRequest` to an OpenAI-compatible
chat-completions endpoint (streaming or not) or an Anthropic messages endpoint, with timeouts,
retries with back-off and a concurrency limit; `cache.ResponseCache` keeps every answer under a
hash of the exact request. It sits above the core layers (import-linter: cli -> endpoint -> report):
the core passes a callable in (`replay.summarizer.Summarize`) and never imports this package.
"""
