// Build sessiontools/data/models.json: context windows and prices of models, taken from the model
// catalogues that ship inside pi-ai (MIT): @earendil-works/pi-ai (1.x, one module per provider in
// dist/providers/*.models.js) and @mariozechner/pi-ai (0.x, dist/models.generated.js), the newest
// release of each on npm. A model in both is taken from the first directory given.
// Run: node lab/extract_models.mjs <pi_ai_1x_dir> [<pi_ai_0x_dir> ...] > sessiontools/data/models.json
// After `make pi-env` (which installs the pinned releases into .cache/pi; check `npm view <pkg> version`
// for newer ones): node lab/extract_models.mjs .cache/pi/1/node_modules/@earendil-works/pi-ai \
//     .cache/pi/0/node_modules/@mariozechner/pi-ai > sessiontools/data/models.json
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

function entry(m) {
    return {
        provider: m.provider, id: m.id, context_window: m.contextWindow, max_tokens: m.maxTokens ?? null,
        cost_per_million: m.cost ? { input: m.cost.input, output: m.cost.output, cache_read: m.cost.cacheRead ?? 0, cache_write: m.cost.cacheWrite ?? 0 } : null,
    };
}

async function modelsOf(dir) {
    const out = [];
    const providers = join(dir, "dist", "providers");
    if (!existsSync(join(dir, "dist", "models.generated.js"))) {
        for (const f of readdirSync(providers).filter((f) => f.endsWith(".models.js")).sort()) {
            const mod = await import(pathToFileURL(join(providers, f)).href);
            const key = Object.keys(mod).find((k) => k.endsWith("_MODELS") && !k.includes("IMAGE") && !k.includes("CLASSIFIER"));
            if (!key) continue;
            for (const m of Object.values(mod[key])) if (m && typeof m.contextWindow === "number") out.push(entry(m));
        }
    } else {
        const mod = await import(pathToFileURL(join(dir, "dist", "models.generated.js")).href);
        for (const byId of Object.values(mod.MODELS)) {
            for (const m of Object.values(byId)) if (m && typeof m.contextWindow === "number") out.push(entry(m));
        }
    }
    return out;
}

const dirs = process.argv.slice(2);
const seen = new Map();
const sources = [];
for (const dir of dirs) {
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    sources.push(`${pkg.name}@${pkg.version}`);
    for (const m of await modelsOf(dir)) {
        const k = m.provider + "/" + m.id;
        if (!seen.has(k)) seen.set(k, m);
    }
}
const out = [...seen.values()].sort((a, b) => (a.provider + "/" + a.id).localeCompare(b.provider + "/" + b.id));
// One model per line: small, and a refresh diffs line by line.
const head = { schema_version: 1, source: sources.join(" + "), extracted: new Date().toISOString().slice(0, 10) };
const lines = Object.entries(head).map(([k, v]) => ` ${JSON.stringify(k)}: ${JSON.stringify(v)},`);
process.stdout.write("{\n" + lines.join("\n") + '\n "models": [\n' + out.map((m) => "  " + JSON.stringify(m)).join(",\n") + "\n ]\n}\n");
