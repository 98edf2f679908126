// Build sessiontools/data/models.json: context windows and prices of common models, taken from
// the model catalogue that ships inside the pinned @earendil-works/pi-ai package (MIT).
// Run: node lab/extract_models.mjs <pi_ai_dir> > sessiontools/data/models.json
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.argv[2];
const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
const providers = ["anthropic", "openai", "google", "deepseek", "zai", "qwen-token-plan", "xai", "mistral", "moonshotai", "minimax", "openai-codex", "kimi-coding"];
const out = [];
for (const p of providers) {
    const mod = await import(pathToFileURL(join(dir, "dist", "providers", `${p}.models.js`)).href);
    const key = Object.keys(mod).find((k) => k.endsWith("_MODELS") && !k.includes("IMAGE") && !k.includes("CLASSIFIER"));
    for (const m of Object.values(mod[key])) {
        out.push({
            provider: m.provider, id: m.id, context_window: m.contextWindow, max_tokens: m.maxTokens ?? null,
            cost_per_million: m.cost ? { input: m.cost.input, output: m.cost.output, cache_read: m.cost.cacheRead ?? 0, cache_write: m.cost.cacheWrite ?? 0 } : null,
        });
    }
}
out.sort((a, b) => (a.provider + "/" + a.id).localeCompare(b.provider + "/" + b.id));
process.stdout.write(JSON.stringify({
    schema_version: 1,
    source: `${pkg.name}@${pkg.version} (dist/providers/*.models.js)`,
    extracted: new Date().toISOString().slice(0, 10),
    models: out,
}, null, 1) + "\n");
