// The replay baseline for `make bench`: the same threshold simulation as `sessiontools replay`
// for one setting, written directly over Pi's own compiled functions. It parses the session,
// walks its path, computes Pi's context estimate at every check point (each run's final
// assistant message), and runs prepareCompaction where Pi would compact, appending a
// placeholder compaction entry. Prints the elapsed milliseconds of parse + simulation.
// Usage: node bench/pi_replay.mjs <pi package dir> <session.jsonl> <window> <reserve> <keep>
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, file, windowS, reserveS, keepS] = process.argv.slice(2);
const imp = (rel) => import(pathToFileURL(join(pkg, "dist", rel)).href);
const compaction = await imp("core/compaction/compaction.js");
const sm = await imp("core/session-manager.js");
const settings = { enabled: true, reserveTokens: Number(reserveS), keepRecentTokens: Number(keepS) };
const window = Number(windowS);

const t0 = performance.now();
const entries = [];
for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    try { entries.push(JSON.parse(line)); } catch { /* Pi skips malformed lines */ }
}
sm.migrateSessionEntries(entries);
const body = entries.filter((e) => e.type !== "session" && e.type !== "compaction");
const path = [];
let compactions = 0;
for (const entry of body) {
    path.push(entry);
    const m = entry.type === "message" ? entry.message : undefined;
    if (!m || m.role !== "assistant" || m.stopReason === "toolUse") continue;
    const est = compaction.estimateContextTokens(sm.buildSessionContext(path).messages).tokens;
    if (compaction.shouldCompact(est, window, settings)) {
        const prep = compaction.prepareCompaction(path, settings);
        if (prep) {
            compactions++;
            const id = `bench-c${compactions}`;
            path.push({ type: "compaction", id, parentId: entry.id, timestamp: new Date().toISOString(),
                summary: "s".repeat(8000), firstKeptEntryId: prep.firstKeptEntryId, tokensBefore: prep.tokensBefore });
            // Usage recorded before the compaction no longer describes the context.
        }
    }
}
const ms = performance.now() - t0;
process.stdout.write(JSON.stringify({ ms, compactions, entries: body.length }) + "\n");
