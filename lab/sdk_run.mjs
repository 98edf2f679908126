// Drive a Pi session with Pi's own SDK, as a harness that embeds Pi (e.g. OpenClaw) does.
//
// Usage: node lab/sdk_run.mjs SPEC.json
// SPEC = {
//   "packageDir": ".../node_modules/<pi-coding-agent>",   // which Pi release to load
//   "sessionFile": "/abs/session.jsonl" | null,            // null: create a new session in sessionDir
//   "sessionDir": "/abs/sessions",
//   "cwd": "/abs/workspace", "agentDir": "/abs/agent",
//   "actions": [
//     {"prompt": "<text>"},                                  // one agent run (createAgentSession + prompt)
//     {"pseudo": {"provider": "openclaw", "model": "delivery-mirror", "api": "openai-responses",
//                 "text": "..."}}                            // a harness-written assistant message
//   ]
// }
//
// Each "prompt" opens the session file with SessionManager.open, creates an AgentSession on it,
// calls session.prompt() and waits until every follow-up has settled (threshold compaction, or
// overflow recovery: compaction + agent.continue() retry), then disposes the session. Because the
// session stays subscribed for the whole run, messages of a retried run ARE persisted (0.x print
// mode disposes its listener first and loses them).
//
// Each "pseudo" opens the file with SessionManager.open and appends an assistant message with
// sessionManager.appendMessage(): all-zero usage, stopReason "stop", a provider/model id that is
// not a model. That is how harnesses mirror a delivered reply or inject a gateway message into the
// transcript; no model request is made. Prints one JSON line per action to stdout.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const pi = await import(pathToFileURL(join(spec.packageDir, "dist", "index.js")).href);
const { createAgentSession, SessionManager } = pi;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let sessionFile = spec.sessionFile ?? null;

function findSessionFile() {
  const out = [];
  const walk = (dir) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, d.name);
      if (d.isDirectory()) walk(p);
      else if (d.name.endsWith(".jsonl")) out.push(p);
    }
  };
  walk(spec.sessionDir);
  if (out.length !== 1) throw new Error(`expected one session file in ${spec.sessionDir}, found ${out.length}`);
  return out[0];
}

async function settle(session) {
  for (let i = 0; i < 1200; i++) {
    if (session._agentEventQueue) await session._agentEventQueue;
    await sleep(150);
    if (!session.isCompacting && !session.isStreaming) {
      await sleep(300); // an overflow retry starts 100 ms after the recovery compaction
      if (session._agentEventQueue) await session._agentEventQueue;
      if (!session.isCompacting && !session.isStreaming) return;
    }
  }
  throw new Error("session did not settle");
}

function zeroUsage() {
  return {
    input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

async function runPrompt(text) {
  const sessionManager = sessionFile
    ? SessionManager.open(sessionFile, undefined, spec.cwd)
    : SessionManager.create(spec.cwd, spec.sessionDir);
  const { session } = await createAgentSession({ cwd: spec.cwd, agentDir: spec.agentDir, sessionManager });
  const events = [];
  session.subscribe((event) => {
    if (["compaction_start", "compaction_end", "auto_compaction_start", "auto_compaction_end"].includes(event.type)) {
      events.push({ type: event.type, reason: event.reason, willRetry: event.willRetry, errorMessage: event.errorMessage });
    }
  });
  try {
    await session.prompt(text);
    await settle(session);
  } finally {
    session.dispose();
  }
  if (!sessionFile) sessionFile = sessionManager.getSessionFile?.() ?? findSessionFile();
  return { action: "prompt", leaf: sessionManager.getLeafId(), events };
}

function appendPseudo(p) {
  if (!sessionFile) throw new Error("a pseudo-reply needs an existing session (run a prompt first)");
  const sessionManager = SessionManager.open(sessionFile, undefined, spec.cwd);
  const id = sessionManager.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: p.text }],
    api: p.api ?? "openai-responses",
    provider: p.provider ?? "openclaw",
    model: p.model,
    usage: zeroUsage(),
    stopReason: "stop",
    timestamp: Date.now(),
  });
  return { action: "pseudo", id, model: p.model };
}

let failed = false;
try {
  for (const action of spec.actions) {
    const out = action.prompt !== undefined ? await runPrompt(action.prompt) : appendPseudo(action.pseudo);
    console.log(JSON.stringify(out));
    await sleep(20); // distinct millisecond timestamps between entries
  }
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.stack : String(err));
}
process.exit(failed ? 1 : 0);
