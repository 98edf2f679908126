// Branch an existing Pi session file in place with Pi's own SDK (AgentSession.navigateTree).
//
// Usage: node lab/branch.mjs SPEC.json
// SPEC = {
//   "packageDir": ".../node_modules/<pi-coding-agent>",   // which Pi release to load
//   "sessionFile": "/abs/session.jsonl",                   // written by print mode before
//   "cwd": "/abs/workspace", "agentDir": "/abs/agent",
//   "actions": [
//     {"navigate": "<exact text of an earlier user prompt>", "summarize": true},
//     {"prompt": "<text>"}, ...
//   ]
// }
// "navigate" selects that user message in the tree, as /tree does in the TUI: the leaf moves to
// the message's parent and, with summarize, Pi writes a branch_summary entry there (one LLM call
// to the lab server). The following prompts then grow a new branch from that point.
// Prints one JSON line per action to stdout.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const pi = await import(pathToFileURL(join(spec.packageDir, "dist", "index.js")).href);
const { createAgentSession, SessionManager } = pi;

const sessionManager = SessionManager.open(spec.sessionFile, undefined, spec.cwd);
const { session } = await createAgentSession({
  cwd: spec.cwd,
  agentDir: spec.agentDir,
  sessionManager,
});

const events = [];
session.subscribe((event) => {
  if (event.type === "compaction_start" || event.type === "compaction_end" || event.type === "auto_compaction_start" || event.type === "auto_compaction_end") {
    events.push({ type: event.type, reason: event.reason, aborted: event.aborted, willRetry: event.willRetry, errorMessage: event.errorMessage });
  }
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// In 0.x, threshold/overflow compaction runs in the session's event queue after prompt() returns;
// wait for it (and for any overflow retry it starts) before the next action.
async function settle() {
  for (let i = 0; i < 600; i++) {
    if (session._agentEventQueue) await session._agentEventQueue;
    await sleep(150);
    const busy = session.isCompacting || session.isStreaming;
    if (!busy) {
      if (session._agentEventQueue) await session._agentEventQueue;
      if (!session.isCompacting && !session.isStreaming) return;
    }
  }
  throw new Error("session did not settle");
}

function userText(entry) {
  const c = entry.message.content;
  if (typeof c === "string") return c;
  return c.filter((b) => b.type === "text").map((b) => b.text).join("");
}

let failed = false;
try {
  for (const action of spec.actions) {
    if (action.navigate !== undefined) {
      const target = sessionManager
        .getEntries()
        .find((e) => e.type === "message" && e.message.role === "user" && userText(e) === action.navigate);
      if (!target) throw new Error(`no user message with text ${JSON.stringify(action.navigate)}`);
      const result = await session.navigateTree(target.id, { summarize: !!action.summarize });
      await settle();
      console.log(JSON.stringify({ action: "navigate", target: target.id, cancelled: result.cancelled, leaf: sessionManager.getLeafId() }));
    } else if (action.prompt !== undefined) {
      await session.prompt(action.prompt);
      await settle();
      console.log(JSON.stringify({ action: "prompt", leaf: sessionManager.getLeafId(), events: events.splice(0) }));
    }
  }
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.stack : String(err));
} finally {
  session.dispose();
}
process.exit(failed ? 1 : 0);
