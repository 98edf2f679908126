// The replay baseline for `make bench`: the same simulation as `sessiontools replay --policy pi-0`
// for one setting (sessiontools/replay/simulate.py, `_Sim.walk`), written over Pi's own compiled
// functions: the same check points (each run's final reply), the same view (the reply's usage, as
// Pi sees it), the same truth (recorded while the context is the recorded one, else the truth
// model: overhead + summary + per-entry tokens, which Python fits and passes in), overflow
// recovery, mid-run crossings, compactions by Pi's prepareCompaction on the simulated path with a
// placeholder summary of the modelled size plus Pi's file lists, and the summariser's input
// (serializeConversation). Bench corpus sessions only: no recorded compactions, errors or aborts
// (anything else is refused, not approximated).
//
//   node bench/pi_replay.mjs <pi package dir> <session.jsonl> <truth.json> <window> <reserve> <keep>
//
// Then one line per run on stdin ("run", or "grid R1,R2;K1,K2" for a grid of settings); each answer is one JSON line on stdout:
// {"ms": elapsed ms of parse + simulation, "cpu_ms": this process's CPU time over it (user + system, every
// thread: V8's compiler and collector threads included), "parse_ms": of reading + JSON.parse alone,
// "compactions": [[parentId, firstKeptEntryId, tokensBefore], ...]}.
// The process stays alive between runs, so the measured runs are warm, like Python's.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [pkg, file, truthFile, windowS, reserveS, keepS] = process.argv.slice(2);
const imp = (rel) => import(pathToFileURL(join(pkg, "dist", rel)).href);
const compaction = await imp("core/compaction/compaction.js");
const utils = await imp("core/compaction/utils.js");
const sm = await imp("core/session-manager.js");
const messages = await imp("core/messages.js");
const truth = JSON.parse(readFileSync(truthFile, "utf8")); // {entry_tokens: [...], overhead, ratio, summary_tokens, summary_chars_per_token}
const window = Number(windowS);

function textTokens(chars) {
    return truth.ratio * Math.ceil(chars / 4);
}

function simulate(reserve, keep) {
    const settings = { enabled: true, reserveTokens: reserve, keepRecentTokens: keep };
    const threshold = window - settings.reserveTokens;
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const entries = [];
    for (const line of readFileSync(file, "utf8").split("\n")) {
        if (!line.trim()) continue;
        try { entries.push(JSON.parse(line)); } catch { /* Pi skips malformed lines */ }
    }
    const parsed = performance.now();
    sm.migrateSessionEntries(entries);
    const base = entries.filter((e) => e.type !== "session");
    if (base.length !== truth.entry_tokens.length) throw new Error("truth does not describe this session");
    const idPos = new Map(base.map((e, i) => [e.id, i]));
    const T = [0];
    const C = [0];
    for (let i = 0; i < base.length; i++) {
        const e = base[i];
        if (e.type === "compaction") throw new Error("bench sessions carry no recorded compactions");
        T.push(T[i] + truth.entry_tokens[i]);
        C.push(C[i] + (e.type === "message" ? compaction.estimateTokens(e.message) : 0));
    }
    // Requests and runs, as the workload defines them for these sessions.
    const requests = [];
    let firstInRun = true;
    let run = 0;
    base.forEach((e, i) => {
        const m = e.type === "message" ? e.message : undefined;
        if (m?.role === "user") { firstInRun = true; run++; }
        if (m?.role !== "assistant") return;
        if (m.stopReason === "error" || m.stopReason === "aborted") throw new Error("bench sessions carry no errors");
        const u = m.usage;
        requests.push({ i, run, first: firstInRun, last: m.stopReason !== "toolUse",
            prompt: u.input + u.cacheRead + u.cacheWrite, output: u.output, total: compaction.calculateContextTokens(u) });
        firstInRun = false;
    });
    // A run's last request is the final one before the next run starts, whatever its stop reason.
    requests.forEach((r, k) => { if (k + 1 === requests.length || requests[k + 1].run !== r.run) r.last = true; });

    const synthetic = [];
    const out = [];
    let compacted = false;
    let fk = 0, fkSyn = 0, summaryTruth = 0, summaryEst = 0;
    let lastUsage = null, usageOverride = null;
    let overflows = 0, midRun = 0, early = 0, late = 0, billed = 0, sumIn = 0;
    const truthBefore = (i) => truth.overhead + summaryTruth + T[i] - T[fk];
    const piEstimateBefore = (i) => (lastUsage ? lastUsage[1] + C[i] - C[lastUsage[0] + 1] : summaryEst + C[i] - C[fk]);
    const serializedChars = (msgs) => utils.serializeConversation(messages.convertToLlm(msgs)).length;

    function compact(reason, parent, truthNow) {
        const path = synthetic.slice(fkSyn);
        if (usageOverride && usageOverride[0] >= fkSyn && usageOverride[0] < synthetic.length) {
            const [k, prompt, output] = usageOverride;
            const e = path[k - fkSyn];
            path[k - fkSyn] = { ...e, message: { ...e.message, usage: { input: prompt, output, cacheRead: 0, cacheWrite: 0, totalTokens: prompt + output } } };
        }
        const prep = compaction.prepareCompaction(path, settings);
        if (!prep) return null;
        const newFk = idPos.get(prep.firstKeptEntryId);
        const { readFiles, modifiedFiles } = utils.computeFileLists(prep.fileOps);
        const chars = Math.trunc(truth.summary_tokens * truth.summary_chars_per_token);
        const summary = "s".repeat(chars) + utils.formatFileOperations(readFiles, modifiedFiles);
        const id = `replay-${out.length + 1}`;
        const entry = { type: "compaction", id, parentId: base[parent].id, summary, firstKeptEntryId: prep.firstKeptEntryId,
            tokensBefore: prep.tokensBefore, details: { readFiles, modifiedFiles } };
        sumIn += textTokens(serializedChars(prep.messagesToSummarize) + String(prep.previousSummary ?? "").length + 2500);
        if (prep.isSplitTurn && prep.turnPrefixMessages.length) sumIn += textTokens(serializedChars(prep.turnPrefixMessages) + 1200);
        synthetic.push(entry);
        for (let k = synthetic.length - 1; k >= 0; k--) if (synthetic[k].id === prep.firstKeptEntryId) { fkSyn = k; break; }
        fk = newFk;
        summaryTruth = truth.summary_tokens + textTokens(summary.length - chars);
        summaryEst = compaction.estimateTokens({ role: "compactionSummary", summary });
        lastUsage = null;
        compacted = true;
        out.push([base[parent].id, prep.firstKeptEntryId, prep.tokensBefore]);
        if (reason === "threshold" && truthNow <= threshold) early++;
        return entry;
    }

    let pos = 0;
    // Pi's _overflowRecoveryAttempted: set by a compact-and-retry, cleared when a user message starts
    // and by any reply that is not an error (agent-session.js); a retry that overflows again is an error.
    let recoveryTried = false;
    for (const req of requests) {
        const i = req.i;
        if (req.first) recoveryTried = false;
        for (let j = pos; j < i; j++) synthetic.push(base[j]);
        pos = i + 1;
        let same = !compacted; // the simulated context is still the recorded one: recorded usage is the truth
        let u = same ? req.prompt : truthBefore(i);
        if (u > window) {
            overflows++;
            if (!recoveryTried) {
                recoveryTried = true;
                piEstimateBefore(i);
                compact("overflow", i - 1, u);
            }
            u = truthBefore(i);
            same = false;
            if (u > window) overflows++;
        } else if (u > threshold && !req.first) {
            midRun++;
        }
        if (u <= window) recoveryTried = false;
        billed += u;
        synthetic.push(base[i]);
        let usageTotal;
        if (same) {
            usageOverride = null;
            usageTotal = req.total;
        } else {
            usageOverride = [synthetic.length - 1, Math.round(u), req.output];
            usageTotal = u + req.output;
        }
        lastUsage = [i, usageTotal];
        if (req.last) {
            const truthNow = truthBefore(i + 1);
            if (usageTotal > threshold) {
                if (!compact("threshold", i, truthNow) && truthNow > threshold) late++;
            } else if (truthNow > threshold) {
                late++;
            }
        }
    }
    for (let j = pos; j < base.length; j++) synthetic.push(base[j]);
    const ms = performance.now() - t0;
    return { ms, cpu_ms: cpuMs(c0), parse_ms: parsed - t0, compactions: out, overflows, mid_run: midRun, early, late, billed, summarization_input: sumIn };
}

// "grid R1,R2,...;K1,K2,...": every setting of the grid as Pi's own code runs it, one full run
// (reading, parsing, simulation) per setting; the answer's "ms" is the whole grid's elapsed time.
function grid(spec) {
    const [rs, ks] = spec.split(";").map((part) => part.split(",").map(Number));
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const runs = [];
    let parseMs = 0;
    for (const r of rs) for (const k of ks) {
        const one = simulate(r, k);
        parseMs += one.parse_ms;
        runs.push({ reserve: r, keep: k, compactions: one.compactions });
    }
    return { ms: performance.now() - t0, cpu_ms: cpuMs(c0), parse_ms: parseMs, runs };
}

function cpuMs(since) {
    const c = process.cpuUsage(since);
    return (c.user + c.system) / 1000;
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const raw of rl) {
    const line = raw.trim();
    if (line === "run") process.stdout.write(JSON.stringify(simulate(Number(reserveS), Number(keepS))) + "\n");
    else if (line.startsWith("grid ")) process.stdout.write(JSON.stringify(grid(line.slice(5))) + "\n");
}
