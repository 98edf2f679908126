// Parity oracle: answers questions about Pi session files with Pi's own compiled code.
//
//   node oracle.mjs <package_dir> <pi_ai_dir>
//
// <package_dir> is .../node_modules/@mariozechner/pi-coding-agent (0.x) or
// .../node_modules/@earendil-works/pi-coding-agent (1.x); <pi_ai_dir> is the matching pi-ai package.
// Reads JSON Lines on stdin and writes JSON Lines on stdout, in request order. Two request kinds:
//
// 1. Session request (one per session file):
//      {"session_id": str, "lines": [str, ...] | "text": str, "leaf_id": str|null,
//       "queries": [{"at_index": int, "keep_recent": int, "reserve_tokens": int}, ...],
//       "fields": [str, ...] (optional)}
//    Answers: one line per query, {"session_id", "query_index", ...}; a session without queries gets
//    one line with "query_index": null carrying only the session-level facts. Every answer carries
//    slice_ids_sha1 / slice_lines_sha1 (sha1 of JSON.stringify of the slice's ids / line indices).
//    What Pi's own code throws is reported per field in "errors"; a failure of this harness's own
//    code is reported as "helper_error" (the parity test fails on it).
//
//    "compact": true (optional) changes two fields' transport only: "context" becomes
//    "context_refs" (ids) + "context_new" ([id, message] pairs, each message object sent once per
//    session), and prepare.serialized / serialized_turn_prefix that extend the previous value of
//    the session are sent as "<key>_append" (the new tail). oracle.py rebuilds the plain fields.
//
// 2. Function request: {"fn": str, "args": [...], "id": any (optional)}
//    Answer: {"id", "fn", "result", "undefined": bool} or {"id", "fn", "error"}.
//
// Anything Pi throws is captured per field ("errors": {field: message}, "error": first message);
// the process never stops on a bad request. See tests/parity/oracle.py for the Python side and the
// field-by-field description.
import { createHash } from "node:crypto";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [packageDir, piAiDir] = process.argv.slice(2);
if (!packageDir || !piAiDir) {
    process.stderr.write("usage: node oracle.mjs <package_dir> <pi_ai_dir>\n");
    process.exit(2);
}
const distUrl = (rel) => pathToFileURL(join(packageDir, "dist", rel)).href;
const compaction = await import(distUrl("core/compaction/compaction.js"));
const utils = await import(distUrl("core/compaction/utils.js"));
const sm = await import(distUrl("core/session-manager.js"));
const messagesMod = await import(distUrl("core/messages.js"));
const overflowMod = await import(pathToFileURL(join(piAiDir, "dist", "utils", "overflow.js")).href);
const PI_VERSION = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")).version;
const MAJOR = PI_VERSION.split(".")[0];
const IS_1X = MAJOR !== "0";

const ALL_FIELDS = [
    "context", // messages Pi would send (JSON.stringify of each message object)
    "context_json", // the exact JSON.stringify text of the context array (off by default)
    "sources", // for context / summarized messages: index in the path slice of the entry that owns the very same object, else null
    "estimate_tokens",
    "context_estimate",
    "prepare",
    "serialized", // prepare.serialized / prepare.serialized_turn_prefix
    "overflow",
];
const DEFAULT_FIELDS = ALL_FIELDS.filter((f) => f !== "context_json");

/** Mark an exception as thrown by Pi's own code (or as Pi's own failure, e.g. an endless loop). */
function piThrew(e) {
    const err = e instanceof Error ? e : new Error(errorText(e));
    err.piThrew = true;
    return err;
}

/**
 * sha1 of JSON.stringify(values.slice(0, len)) (an array of strings, numbers or null), computed
 * incrementally per session: queries usually ask for growing prefixes of the same path.
 */
function prefixDigest(state, key, values, len) {
    let h = state.hashers?.[key];
    if (!h || h.len > len) {
        h = { len: 0, hash: createHash("sha1").update("[") };
        state.hashers = { ...(state.hashers ?? {}), [key]: h };
    }
    for (; h.len < len; h.len++) h.hash.update((h.len > 0 ? "," : "") + JSON.stringify(values[h.len]));
    return h.hash.copy().update("]").digest("hex");
}

function errorText(e) {
    if (e instanceof Error) return `${e.name}: ${e.message}`;
    try {
        return `thrown non-Error: ${String(e)}`;
    } catch {
        return "thrown non-Error";
    }
}

// ---------------------------------------------------------------------------------------------
// Loading: exactly what loadEntriesFromFile does with the file's text (per major version).
// ---------------------------------------------------------------------------------------------

/** Returns {entries, lineIndices} where lineIndices[k] is the input line of entries[k]. */
function parseContent(content) {
    const entries = [];
    const lineIndices = [];
    if (!IS_1X) {
        // 0.x: content.trim().split("\n"); blank lines skipped; malformed lines skipped; every
        // JSON value (also null, numbers, strings) is kept.
        const trimmedStart = content.trimStart();
        const lead = content.slice(0, content.length - trimmedStart.length);
        const offset = lead.split("\n").length - 1;
        const lines = content.trim().split("\n");
        for (let i = 0; i < lines.length; i++) {
            const line = lines[i];
            if (!line.trim()) continue;
            try {
                const entry = JSON.parse(line);
                entries.push(entry);
                lineIndices.push(i + offset);
            } catch {
                // Skip malformed lines
            }
        }
    } else {
        // 1.x: split on "\n" without trimming the content; falsy JSON values are dropped too.
        const lines = content.split("\n");
        for (let i = 0; i < lines.length; i++) {
            const line = lines[i];
            if (!line.trim()) continue;
            let entry = null;
            try {
                entry = JSON.parse(line);
            } catch {
                entry = null;
            }
            if (entry) {
                entries.push(entry);
                lineIndices.push(i);
            }
        }
    }
    if (entries.length === 0) return { entries, lineIndices, valid: false };
    const header = entries[0];
    if (header.type !== "session" || typeof header.id !== "string") {
        return { entries: [], lineIndices: [], valid: false };
    }
    return { entries, lineIndices, valid: true };
}

/** Parse + migrate + index + path, mirroring SessionManager (setSessionFile, _buildIndex, getBranch).
 * All of it transcribes Pi's own loader: where it throws (e.g. on a null line), Pi throws. */
function loadSession(content, leafIdArg) {
    try {
        return loadSessionAsPi(content, leafIdArg);
    } catch (e) {
        throw piThrew(e);
    }
}

function loadSessionAsPi(content, leafIdArg) {
    const { entries, lineIndices, valid } = parseContent(content);
    const version = valid ? (entries.find((e) => e.type === "session")?.version ?? 1) : null;
    if (valid) sm.migrateSessionEntries(entries);
    const byId = new Map();
    let leafId = null;
    for (const entry of entries) {
        if (entry.type === "session") continue;
        byId.set(entry.id, entry);
        leafId = entry.id;
    }
    const startId = leafIdArg ?? leafId;
    const path = [];
    const seen = new Set();
    let current = startId ? byId.get(startId) : undefined;
    while (current) {
        if (seen.has(current)) {
            throw piThrew(new Error("parentId links form a cycle (Pi's getBranch would loop forever)"));
        }
        seen.add(current);
        path.push(current);
        current = current.parentId ? byId.get(current.parentId) : undefined;
    }
    path.reverse();
    const entryLine = new Map();
    entries.forEach((e, k) => {
        if (e !== null && typeof e === "object") entryLine.set(e, lineIndices[k]);
    });
    return { entries, lineIndices, valid, version, path, entryLine, byId, leafId: startId };
}

/** The messages Pi's SessionManager sends for this session (`buildSessionContext()`: its own
 * entries, leaf id and index). Not always the context of the branch (`path`, what getBranch and
 * compaction see): its leaf rule differs. An explicit null id gives no context, but any other id
 * that is no usable key (missing, "", 0, false) falls back to the last entry, whose ancestry is then
 * the context while the branch is empty. */
function sessionContext(sess) {
    if (!sess.valid) return []; // SessionManager starts a new, empty session in such a file
    const entries = sess.entries.filter((e) => e.type !== "session");
    if (sess.leafId !== null) {
        // Pi's walk from its context leaf never returns on a parent cycle: refuse, as for the branch.
        let current = (sess.leafId ? sess.byId.get(sess.leafId) : undefined) ?? entries[entries.length - 1];
        const seen = new Set();
        while (current) {
            if (seen.has(current)) {
                throw piThrew(new Error("parentId links form a cycle (Pi's buildSessionContext would loop forever)"));
            }
            seen.add(current);
            current = current.parentId ? sess.byId.get(current.parentId) : undefined;
        }
    }
    return sm.buildSessionContext(entries, sess.leafId, sess.byId).messages;
}

// ---------------------------------------------------------------------------------------------
// Per-query answers
// ---------------------------------------------------------------------------------------------

function isTurnStartMessage(message) {
    switch (message.role) {
        case "user":
        case "bashExecution":
        case "custom":
        case "branchSummary":
        case "compactionSummary":
            return true;
    }
    return false;
}

function sameMessages(a, b) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
        if (a[i] !== b[i] && JSON.stringify(a[i]) !== JSON.stringify(b[i])) return false;
    }
    return true;
}

/** 0.x: reproduce prepareCompaction's boundaryStart and call the exported findCutPoint. */
function cutInfo0(slice, keepRecent) {
    let prevCompactionIndex = -1;
    for (let i = slice.length - 1; i >= 0; i--) {
        if (slice[i].type === "compaction") {
            prevCompactionIndex = i;
            break;
        }
    }
    let boundaryStart = 0;
    if (prevCompactionIndex >= 0) {
        const prev = slice[prevCompactionIndex];
        const idx = slice.findIndex((entry) => entry.id === prev.firstKeptEntryId);
        boundaryStart = idx >= 0 ? idx : prevCompactionIndex + 1;
    }
    const cut = compaction.findCutPoint(slice, boundaryStart, slice.length, keepRecent);
    return {
        method: "findCutPoint",
        boundary_start_index: boundaryStart,
        first_kept_index: cut.firstKeptEntryIndex,
        turn_start_index: cut.isSplitTurn ? cut.turnStartIndex : null,
        is_split_turn: cut.isSplitTurn,
    };
}

/**
 * 1.x: the cut is computed over projected entries by an unexported function. Rebuild the
 * projection (deterministic) and find the projected indices k (first kept) and t (turn start)
 * that reproduce prepareCompaction's result exactly: sourceEntry.id === firstKeptEntryId, and the
 * projected messages of [boundaryStart, t) and [t, k) equal messagesToSummarize and
 * turnPrefixMessages (by identity or JSON). Only a unique solution is reported.
 */
function cutInfo1(slice, res, entryIndex) {
    const proj = sm.buildSessionProjection(slice).entries;
    const prev = proj.findIndex((e) => e.sourceEntry.type === "compaction" && e.messages.length > 0);
    const bStart = prev >= 0 ? prev + 1 : 0;
    const contrib = proj.map((e) =>
        e.sourceEntry.type === "compaction" ? [] : e.messages.filter((m) => m.role !== "system"),
    );
    const flat = (a, b) => contrib.slice(a, b).flat();
    const solutions = [];
    for (let k = bStart; k < proj.length; k++) {
        if (proj[k].sourceEntry.id !== res.firstKeptEntryId) continue;
        if (!res.isSplitTurn) {
            if (res.turnPrefixMessages.length === 0 && sameMessages(flat(bStart, k), res.messagesToSummarize)) {
                solutions.push({ k, t: null });
            }
            continue;
        }
        for (let t = k - 1; t >= bStart; t--) {
            const e = proj[t];
            if (e.sourceEntry.type !== "compaction" && e.messages.some(isTurnStartMessage)) {
                if (
                    sameMessages(flat(t, k), res.turnPrefixMessages) &&
                    sameMessages(flat(bStart, t), res.messagesToSummarize)
                ) {
                    solutions.push({ k, t });
                }
                break;
            }
        }
    }
    const pathIndex = (p) => (p !== null && p < proj.length ? (entryIndex.get(proj[p].sourceEntry) ?? null) : null);
    if (solutions.length !== 1) {
        return {
            method: solutions.length === 0 ? "unresolved" : "ambiguous",
            boundary_start_index: pathIndex(bStart),
            projected_boundary_start: bStart,
            first_kept_index: slice.findIndex((e) => e.id === res.firstKeptEntryId),
            turn_start_index: null,
            projected_first_kept_index: null,
            projected_turn_start_index: null,
        };
    }
    const { k, t } = solutions[0];
    return {
        method: "projection",
        boundary_start_index: pathIndex(bStart),
        projected_boundary_start: bStart,
        first_kept_index: pathIndex(k),
        turn_start_index: t === null ? null : pathIndex(t),
        projected_first_kept_index: k,
        projected_turn_start_index: t,
    };
}

function sourcesOf(messages, messageIndex) {
    return messages.map((m) => messageIndex.get(m) ?? null);
}

function summarizePrepare(res, slice, keepRecent, fields, ctxState, errors) {
    if (res === undefined) return null;
    const { readFiles, modifiedFiles } = utils.computeFileLists(res.fileOps);
    const out = {
        first_kept_index: null,
        first_kept_entry_id: res.firstKeptEntryId,
        is_split_turn: res.isSplitTurn,
        tokens_before: res.tokensBefore,
        messages_to_summarize: res.messagesToSummarize.length,
        turn_prefix_messages: res.turnPrefixMessages.length,
        has_previous_summary: res.previousSummary !== undefined,
        previous_summary: res.previousSummary ?? null,
        read_files: readFiles,
        modified_files: modifiedFiles,
        turn_start_index: null,
    };
    try {
        const info = IS_1X ? cutInfo1(slice, res, ctxState.entryIndex) : cutInfo0(slice, keepRecent);
        out.first_kept_index = info.first_kept_index;
        out.turn_start_index = info.turn_start_index;
        out.boundary_start_index = info.boundary_start_index;
        out.turn_start_method = info.method;
        if (IS_1X) {
            out.projected_boundary_start = info.projected_boundary_start;
            out.projected_first_kept_index = info.projected_first_kept_index;
            out.projected_turn_start_index = info.projected_turn_start_index;
        } else if (info.is_split_turn !== res.isSplitTurn || slice[info.first_kept_index]?.id !== res.firstKeptEntryId) {
            out.turn_start_method = "mismatch";
            out.turn_start_index = null;
            out.first_kept_index = slice.findIndex((e) => e.id === res.firstKeptEntryId);
        }
    } catch (e) {
        throw new Error(`turn start reconstruction: ${errorText(e)}`); // harness failure, not Pi's
    }
    if (fields.has("sources")) {
        out.messages_to_summarize_sources = sourcesOf(res.messagesToSummarize, ctxState.messageIndex);
        out.turn_prefix_sources = sourcesOf(res.turnPrefixMessages, ctxState.messageIndex);
        out.messages_to_summarize_roles = res.messagesToSummarize.map((m) => m?.role ?? null);
        out.turn_prefix_roles = res.turnPrefixMessages.map((m) => m?.role ?? null);
    }
    if (fields.has("serialized")) {
        try {
            out.serialized = utils.serializeConversation(messagesMod.convertToLlm(res.messagesToSummarize));
        } catch (e) {
            out.serialized = null;
            errors["prepare.serialized"] = errorText(e);
        }
        try {
            out.serialized_turn_prefix = utils.serializeConversation(messagesMod.convertToLlm(res.turnPrefixMessages));
        } catch (e) {
            out.serialized_turn_prefix = null;
            errors["prepare.serialized_turn_prefix"] = errorText(e);
        }
    }
    return out;
}

const jsonCache = new WeakMap();
/** Exactly JSON.stringify(messages) for an array of message objects, caching each element's text. */
function contextText(messages) {
    const parts = messages.map((m) => {
        if (m === null || typeof m !== "object") return JSON.stringify(m) ?? "null";
        let text = jsonCache.get(m);
        if (text === undefined) {
            text = JSON.stringify(m) ?? "null";
            jsonCache.set(m, text);
        }
        return text;
    });
    return `[${parts.join(",")}]`;
}

const estimateCache = new WeakMap();
function cachedEstimate(message) {
    if (message !== null && typeof message === "object") {
        const hit = estimateCache.get(message);
        if (hit !== undefined) return hit;
        const value = compaction.estimateTokens(message);
        estimateCache.set(message, value);
        return value;
    }
    return compaction.estimateTokens(message);
}

function sessionFacts(sess) {
    const { path } = sess;
    return {
        pi_version: PI_VERSION,
        session_valid: sess.valid,
        file_version: sess.version,
        entry_count: sess.entries.length,
        path_len: path.length,
        path_types: path.map((e) => e.type ?? null),
        path_ids: path.map((e) => e.id ?? null),
        path_line_indices: path.map((e) => sess.entryLine.get(e) ?? null),
    };
}

function prepareSession(sess) {
    const messageIndex = new Map();
    const entryIndex = new Map();
    sess.path.forEach((e, i) => {
        entryIndex.set(e, i);
        if (e.type === "message" && e.message !== null && typeof e.message === "object" && !messageIndex.has(e.message)) {
            messageIndex.set(e.message, i);
        }
    });
    const overflow = [];
    sess.path.forEach((e, i) => {
        const m = e.message;
        if (e.type !== "message" || m === null || typeof m !== "object") return;
        if (m.role !== "assistant" || m.stopReason !== "error") return;
        try {
            overflow.push({ index: i, overflow: overflowMod.isContextOverflow(m) });
        } catch (err) {
            overflow.push({ index: i, overflow: null, error: errorText(err) });
        }
    });
    return { messageIndex, entryIndex, overflow };
}

function answerQuery(sess, state, q, qi, fields, emit) {
    const atIndex = q.at_index;
    const keepRecent = q.keep_recent;
    const reserve = q.reserve_tokens;
    const slice = sess.path.slice(0, atIndex + 1);
    const out = {
        session_id: sess.sessionId,
        query_index: qi,
        at_index: atIndex,
        keep_recent: keepRecent,
        reserve_tokens: reserve,
        path_len: sess.path.length,
        slice_len: slice.length,
    };
    const errors = {};
    if (qi === 0) {
        Object.assign(out, sessionFacts(sess));
        try {
            out.session_context = sessionContext(sess);
        } catch (e) {
            errors.session_context = errorText(e); // Pi's own buildSessionContext threw
            out.session_context = null;
        }
    }
    // Every query: the exact slice (ids; line indices for v1 files, whose ids Pi draws at random).
    state.pathIds ??= sess.path.map((e) => e.id ?? null);
    state.pathLines ??= sess.path.map((e) => sess.entryLine.get(e) ?? null);
    out.slice_ids_sha1 = prefixDigest(state, "ids", state.pathIds, slice.length);
    out.slice_lines_sha1 = prefixDigest(state, "lines", state.pathLines, slice.length);
    const attempt = (name, fn) => {
        try {
            return fn();
        } catch (e) {
            errors[name] = errorText(e);
            return null;
        }
    };
    const needContext = ["context", "context_json", "estimate_tokens", "context_estimate"].some((f) => fields.has(f));
    const context = needContext
        ? // 0.x: buildSessionContext walks from the slice's last entry; 1.x: the projection's messages.
          attempt("context", () => sm.buildSessionContext(slice).messages)
        : null;
    // The context text is spliced into the answer line (see contextText): same bytes as
    // JSON.stringify(context), but each message object is stringified once per session.
    const ctxText =
        context && (fields.has("context_json") || (fields.has("context") && !state.compact)) ? contextText(context) : null;
    if (fields.has("context") && fields.has("sources") && context) {
        out.context_sources = sourcesOf(context, state.messageIndex);
    }
    if (fields.has("context_json")) out.context_json = ctxText;
    if (fields.has("estimate_tokens")) {
        if (context) {
            const estimates = [];
            context.forEach((m, i) => {
                try {
                    estimates.push(cachedEstimate(m));
                } catch (e) {
                    estimates.push(null);
                    if (!errors.estimate_tokens) errors.estimate_tokens = `message ${i}: ${errorText(e)}`;
                }
            });
            out.estimate_tokens = estimates;
        } else {
            out.estimate_tokens = null;
        }
    }
    if (fields.has("context_estimate")) {
        out.context_estimate = context ? attempt("context_estimate", () => compaction.estimateContextTokens(context)) : null;
        if (IS_1X) {
            out.projected_context_estimate = attempt("projected_context_estimate", () =>
                compaction.estimateProjectedContextTokens(sm.buildSessionProjection(slice), slice),
            );
        }
    }
    if (fields.has("prepare")) {
        let res;
        let threw = false;
        try {
            res = compaction.prepareCompaction(slice, { enabled: true, reserveTokens: reserve, keepRecentTokens: keepRecent });
        } catch (e) {
            errors.prepare = errorText(e);
            threw = true;
        }
        out.prepare = threw ? null : (() => {
            const summary = summarizePrepare(res, slice, keepRecent, fields, state, errors);
            if (summary && state.compact) {
                // Compact transport: a string that extends the previous one sent for the same key in
                // this session is sent as <key>_append (the new tail) instead.
                for (const key of ["serialized", "serialized_turn_prefix"]) {
                    const value = summary[key];
                    if (typeof value !== "string") continue;
                    const last = state.lastStrings[key];
                    if (typeof last === "string" && last.length > 0 && value.startsWith(last)) {
                        delete summary[key];
                        summary[`${key}_append`] = value.slice(last.length);
                    }
                    state.lastStrings[key] = value;
                }
            }
            return summary;
        })();
    }
    if (fields.has("overflow")) {
        out.overflow = state.overflow.filter((o) => o.index < slice.length);
    }
    const errorNames = Object.keys(errors);
    if (errorNames.length > 0) {
        out.errors = errors;
        out.error = errors[errorNames[0]];
    }
    if (fields.has("context") && state.compact && context) {
        // Compact transport: each distinct message object is sent once per session in
        // context_new ([id, message] pairs); context_refs lists the ids in context order.
        const refs = [];
        const fresh = [];
        for (const m of context) {
            let id = state.messageIds.get(m);
            if (id === undefined) {
                id = state.nextMessageId++;
                if (m !== null && typeof m === "object") state.messageIds.set(m, id);
                fresh.push(`[${id},${contextText([m]).slice(1, -1)}]`);
            }
            refs.push(id);
        }
        out.context_refs = refs;
        const text = JSON.stringify(out);
        emit(`${text.slice(0, -1)},"context_new":[${fresh.join(",")}]}`);
    } else if (fields.has("context")) {
        const text = JSON.stringify(out);
        emit(`${text.slice(0, -1)},"context":${ctxText ?? "null"}}`);
    } else {
        emit(out);
    }
}

async function handleSession(req, emit) {
    const sessionId = req.session_id ?? null;
    const queries = Array.isArray(req.queries) ? req.queries : [];
    const fields = new Set(Array.isArray(req.fields) ? req.fields : DEFAULT_FIELDS);
    let sess;
    let state;
    try {
        const content = typeof req.text === "string" ? req.text : (req.lines ?? []).join("\n");
        sess = loadSession(content, req.leaf_id ?? undefined);
        sess.sessionId = sessionId;
        state = prepareSession(sess);
        state.compact = req.compact === true;
        state.messageIds = new Map();
        state.nextMessageId = 0;
        state.lastStrings = {};
    } catch (e) {
        const message = errorText(e);
        const what = e?.piThrew ? { error: message, errors: { session: message } } : { helper_error: `loading: ${message}` };
        if (queries.length === 0) emit({ session_id: sessionId, query_index: null, ...what });
        queries.forEach((q, qi) => emit({ session_id: sessionId, query_index: qi, at_index: q?.at_index ?? null, ...what }));
        return;
    }
    if (queries.length === 0) {
        const facts = { session_id: sessionId, query_index: null, ...sessionFacts(sess) };
        try {
            facts.session_context = sessionContext(sess);
        } catch (e) {
            Object.assign(facts, { session_context: null, error: errorText(e), errors: { session_context: errorText(e) } });
        }
        emit(facts);
        return;
    }
    for (let qi = 0; qi < queries.length; qi++) {
        const q = queries[qi];
        try {
            answerQuery(sess, state, q, qi, fields, emit);
        } catch (e) {
            // Everything Pi's functions throw is caught per field inside answerQuery: this is the harness.
            emit({ session_id: sessionId, query_index: qi, at_index: q?.at_index ?? null, helper_error: errorText(e) });
        }
        if (bufferedChars > FLUSH_CHARS) await flush();
    }
}

// ---------------------------------------------------------------------------------------------
// Function requests
// ---------------------------------------------------------------------------------------------

const HELPERS = {
    /** JSON.stringify(value) exactly (undefined when JSON.stringify returns undefined). */
    jsonStringify: (value) => JSON.stringify(value),
    /** String length in UTF-16 code units. */
    stringLength: (s) => s.length,
    /** serializeConversation(convertToLlm(messages)), as compaction does. */
    serializeLlm: (messages) => utils.serializeConversation(messagesMod.convertToLlm(messages)),
    /** How loadEntriesFromFile parses the lines: {valid, entries, line_indices}. */
    parseLines: (lines) => {
        const r = parseContent(lines.join("\n"));
        return { valid: r.valid, entries: r.entries, line_indices: r.lineIndices };
    },
    /** Parse + migrate + path: {valid, file_version, entries (migrated), path, path_line_indices, ...}. */
    loadSession: (lines, leafId) => {
        const sess = loadSession(lines.join("\n"), leafId ?? undefined);
        return { ...sessionFacts(sess), entries: sess.entries, path: sess.path };
    },
    /** computeFileLists with fileOps given as arrays {read, written, edited}. */
    computeFileListsFromArrays: (ops) =>
        utils.computeFileLists({
            read: new Set(ops.read ?? []),
            written: new Set(ops.written ?? []),
            edited: new Set(ops.edited ?? []),
        }),
    /** extractFileOpsFromMessage over messages, as arrays in insertion order. */
    extractFileOps: (messages) => {
        const ops = utils.createFileOps();
        for (const m of messages) utils.extractFileOpsFromMessage(m, ops);
        return { read: [...ops.read], written: [...ops.written], edited: [...ops.edited] };
    },
    /** The query "prepare" answer for a path slice given directly as entries. */
    prepareSummary: (pathEntries, keepRecent, reserveTokens) => {
        const errors = {};
        const state = prepareSession({ path: pathEntries });
        const res = compaction.prepareCompaction(pathEntries, {
            enabled: true,
            reserveTokens: reserveTokens ?? 16384,
            keepRecentTokens: keepRecent,
        });
        const out = summarizePrepare(res, pathEntries, keepRecent, new Set(ALL_FIELDS), state, errors);
        if (out && Object.keys(errors).length > 0) out.errors = errors;
        return out;
    },
    piVersion: () => PI_VERSION,
    /**
     * Pi's own SessionManager on a session file (which it may rewrite: use a scratch copy):
     * {path_types, path_len, context}. Refuses files whose parent links form a cycle
     * (getBranch would never return).
     */
    openSession: (filePath) => {
        sessionContext(loadSession(readFileSync(filePath, "utf8"), undefined)); // throws on a cycle
        const manager = sm.SessionManager.open(filePath, dirname(filePath));
        const path = manager.getBranch();
        return {
            path_types: path.map((e) => e.type ?? null),
            path_len: path.length,
            context: manager.buildSessionContext().messages,
        };
    },
};

const NAMESPACE = { ...overflowMod, ...messagesMod, ...sm, ...utils, ...compaction, ...HELPERS };

function jsonReplacer(_key, value) {
    if (value instanceof Set) return [...value];
    if (value instanceof Map) return Object.fromEntries(value);
    return value;
}

function handleFn(req, emit) {
    const id = req.id ?? null;
    const fn = NAMESPACE[req.fn];
    if (typeof fn !== "function") {
        emit({ id, fn: req.fn, error: `unknown function ${JSON.stringify(req.fn)}` });
        return;
    }
    let result;
    try {
        result = fn(...(Array.isArray(req.args) ? req.args : []));
    } catch (e) {
        emit({ id, fn: req.fn, error: errorText(e) });
        return;
    }
    if (result instanceof Promise) {
        result.catch(() => {});
        emit({ id, fn: req.fn, error: "async functions are not supported by the oracle" });
        return;
    }
    let text;
    try {
        text = JSON.stringify(result === undefined ? null : result, jsonReplacer);
    } catch (e) {
        emit({ id, fn: req.fn, error: `result not serializable: ${errorText(e)}` });
        return;
    }
    emit(`{"id":${JSON.stringify(id)},"fn":${JSON.stringify(req.fn)},"undefined":${result === undefined},"result":${text}}`);
}

// ---------------------------------------------------------------------------------------------
// Main loop: one request per line; output is flushed after every request and honours the pipe's
// backpressure (stdout to a pipe is asynchronous in Node: unbounded writes fail with ENOBUFS).
// ---------------------------------------------------------------------------------------------

const FLUSH_CHARS = 1 << 20;
let buffer = [];
let bufferedChars = 0;
function emit(obj) {
    const text = typeof obj === "string" ? obj : JSON.stringify(obj);
    buffer.push(text, "\n");
    bufferedChars += text.length;
}
async function flush() {
    if (buffer.length === 0) return;
    const data = buffer.join("");
    buffer = [];
    bufferedChars = 0;
    if (!process.stdout.write(data)) await once(process.stdout, "drain");
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
    if (!line.trim()) continue;
    let req;
    try {
        req = JSON.parse(line);
    } catch (e) {
        emit({ error: `bad request line: ${errorText(e)}` });
        await flush();
        continue;
    }
    try {
        if (req !== null && typeof req === "object" && typeof req.fn === "string") handleFn(req, emit);
        else if (req !== null && typeof req === "object") await handleSession(req, emit);
        else emit({ error: "bad request: not an object" });
    } catch (e) {
        emit({ error: `oracle failure: ${errorText(e)}` });
    }
    await flush();
}
await flush();
