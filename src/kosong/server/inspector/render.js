// What the page shows of a tool (its metadata, the providers' verdicts on its schema) and of a
// call's result (content parts, display blocks, the envelope, timing, trace, cache).

import { h, jsonBlock, table } from "./dom.js";
import { formatSeconds } from "./metrics.js";

function today() {
  return new Date().toISOString().slice(0, 10);
}

/** The MCP hints: `[key, what true means, badge kind, the badge's title]`. */
const HINTS = [
  ["readOnlyHint", "read-only", "hint", "does not change anything"],
  ["destructiveHint", "destructive", "danger", "may destroy data"],
  ["idempotentHint", "idempotent", "hint", "calling twice is like calling once"],
  ["openWorldHint", "open world", "hint", "reaches outside systems"],
];

/** The short labels of a tool's metadata, for the tool list and its header. */
export function badges(tool, report) {
  const out = [];
  const badge = (text, kind, title) => out.push(h("span", { class: `badge ${kind}`, title }, text));
  if (tool.version) badge(`v${tool.version}`, "version", "version");
  if (tool.deprecated) {
    const past = tool.sunset_date && tool.sunset_date <= today();
    badge(past ? "retired" : "deprecated", "deprecated", tool.sunset_date ? `sunset ${tool.sunset_date}` : "deprecated");
  }
  for (const [key, text, kind, title] of HINTS) if (tool[key]) badge(text, kind, `${key}: ${title}`);
  if (tool.cacheable) badge(tool.cache_ttl ? `cached ${tool.cache_ttl} s` : "cacheable", "cache", "cacheable");
  if (tool.strict) badge("strict", "hint", "strict: undeclared arguments are refused");
  if (tool.streaming) badge("streaming", "hint", "reports progress");
  // The strict modes (openai-strict, anthropic-strict) apply only to tools sent strict.
  const rejecting = (report?.dialects ?? []).filter(
    (d) => (!d.endsWith("-strict") || tool.strict) && report.findings.some((f) => f.tool === tool.name && f.dialect === d && f.effect === "rejected"),
  );
  if (rejecting.length) badge(`rejected by ${rejecting.join(", ")}`, "danger", "see the provider check");
  return out;
}

function row(term, ...details) {
  return [h("dt", {}, term), h("dd", {}, ...details)];
}

function link(url, text) {
  return /^https?:\/\//.test(url) ? h("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, text || url) : text || url;
}

/** The metadata of a tool as a definition list. */
export function metadataList(tool, { onSelect } = {}) {
  const rows = [];
  if (tool.title) rows.push(row("Title", tool.title));
  rows.push(row("Version", tool.version || "not declared"));
  const hints = HINTS.filter(([key]) => typeof tool[key] === "boolean")
    .map(([key, text]) => `${tool[key] ? "" : "not "}${text}`);
  rows.push(row("Hints", hints.length ? hints.join(", ") : "none declared"));
  let cache = "not cacheable";
  if (tool.cacheable) {
    cache = `cacheable${tool.cache_ttl ? `, for ${tool.cache_ttl} s` : ""}`;
    if (tool.cache_key_params) cache += `, keyed by ${tool.cache_key_params.join(", ")}`;
  }
  rows.push(row("Cache", cache));
  rows.push(row("Strict", tool.strict ? "yes: undeclared arguments are refused" : "no"));
  if (tool.streaming) rows.push(row("Streaming", "reports progress while it runs"));
  if (tool.estimated_tokens !== undefined) rows.push(row("Estimated tokens", JSON.stringify(tool.estimated_tokens)));
  if (tool.deprecated) {
    const details = ["deprecated"];
    if (tool.sunset_date) {
      details.push(tool.sunset_date <= today() ? `, retired since ${tool.sunset_date}` : `, sunset on ${tool.sunset_date}`);
    }
    if (tool.replacement) {
      details.push(
        "; use ",
        onSelect
          ? h("button", { type: "button", class: "link", onclick: () => onSelect(tool.replacement) }, tool.replacement)
          : tool.replacement,
      );
    }
    if (tool.migration_guide) details.push(" (", link(tool.migration_guide, "migration guide"), ")");
    rows.push(row("Deprecation", ...details));
  }
  if (tool.changelog && typeof tool.changelog === "object") {
    rows.push(
      row(
        "Changelog",
        h("ul", { class: "plain" }, Object.entries(tool.changelog).map(([version, text]) => h("li", {}, h("code", {}, version), ` ${text}`))),
      ),
    );
  }
  return h("dl", { class: "meta" }, rows);
}

function findingItem(f) {
  return h(
    "li",
    {},
    h("span", { class: `effect ${f.effect}` }, f.effect),
    " ",
    h("code", {}, f.path),
    `: ${f.message}`,
    f.fix ? h("span", { class: "fix" }, ` (fix: ${f.fix})`) : null,
    h("span", { class: "rule" }, ` [${f.rule}]`),
  );
}

/** The findings of one provider: a few shown, more folded away (open when they matter). */
function findingsList(findings, { relevant = true } = {}) {
  if (!findings.length) return "–";
  const rejected = findings.filter((f) => f.effect === "rejected").length;
  const ignored = findings.length - rejected;
  const list = h("ul", { class: "findings" }, findings.map(findingItem));
  if (findings.length <= 2 && relevant) return list;
  const counts = [rejected ? `${rejected} rejected` : "", ignored ? `${ignored} ignored` : ""];
  const open = relevant && rejected > 0 && findings.length <= 4;
  return h("details", { open }, h("summary", {}, counts.filter(Boolean).join(", ")), list);
}

/**
 * The dialect check of one tool: a row per provider, with what it rejects or ignores.
 * A strict mode (OpenAI's, Anthropic's) matters only to a tool sent in strict mode.
 */
export function dialectTable(tool, report) {
  if (!report) return h("p", { class: "muted" }, "The provider check is not available.");
  const findings = report.findings.filter((f) => f.tool === tool.name);
  return table(
    { class: "dialects" },
    "What each provider does with this definition",
    ["Provider", "Verdict", "Findings"],
    report.dialects.map((dialect) => {
      const mine = findings.filter((f) => f.dialect === dialect);
      const rejected = mine.some((f) => f.effect === "rejected");
      const relevant = !dialect.endsWith("-strict") || Boolean(tool.strict);
      let verdict = rejected ? "rejects it" : mine.length ? `accepts, ignores ${mine.length}` : "accepts it";
      if (!relevant) verdict = rejected ? "would reject it in strict mode" : "accepts it in strict mode";
      return h(
        "tr",
        { dataset: { dialect, verdict: rejected ? "rejected" : mine.length ? "ignored" : "ok" } },
        h("th", { scope: "row" }, dialect),
        h("td", { class: !relevant ? "muted" : rejected ? "bad" : mine.length ? "warn" : "good" }, verdict),
        h("td", {}, findingsList(mine, { relevant })),
      );
    }),
  );
}

const KNOWN_PARTS = new Set(["text", "think", "image_url", "audio_url", "video_url"]);

function isParts(envelope) {
  if (envelope.kosong && envelope.kosong.parts) return true;
  const data = envelope.data;
  return Array.isArray(data) && data.length > 0 && data.every((p) => p && typeof p === "object" && KNOWN_PARTS.has(p.type));
}

/** One content part: text, an image, audio, video, the model's thinking. */
export function contentPart(part, index) {
  const label = `content part ${index + 1}`;
  switch (part.type) {
    case "text":
      return h("pre", { class: "text part", dataset: { part: "text" } }, part.text);
    case "think":
      return h("details", { class: "part", dataset: { part: "think" } }, h("summary", {}, "Thinking"), h("pre", { class: "text" }, part.think));
    case "image_url":
    case "audio_url":
    case "video_url": {
      const url = typeof part[part.type]?.url === "string" ? part[part.type].url : "";
      const kind = part.type.slice(0, 5);
      if (!url.startsWith("data:")) {
        // Not fetched: the page loads nothing from elsewhere.
        return h("p", { class: "part", dataset: { part: part.type } }, `${kind} at `, link(url), " (not loaded by the inspector)");
      }
      if (kind === "image") return h("img", { class: "part", src: url, alt: part.image_url.id ? `image ${part.image_url.id}` : `image (${label})`, dataset: { part: "image_url" } });
      return h(kind, { class: "part", src: url, controls: true, dataset: { part: part.type }, "aria-label": `${kind} (${label})` });
    }
    default:
      return h("div", { class: "part", dataset: { part: "unknown" } }, h("p", {}, `A ${part.type} part:`), jsonBlock(part));
  }
}

/** The details of an error (`retryable`, `retry_after`...) as labelled facts, not bare JSON. */
const ERROR_DETAILS = {
  retryable: ["Retry", (v) => (v ? "may help" : "will not help")],
  retry_after: ["Retry after", (v) => formatSeconds(v)],
  timeout_seconds: ["Time limit", (v) => formatSeconds(v)],
  replacement: ["Use instead", (v) => h("code", {}, String(v))],
};

export function errorDetails(details) {
  const rows = [];
  for (const [key, value] of Object.entries(details)) {
    const [term, show] = ERROR_DETAILS[key] || [key.replaceAll("_", " "), (v) => (typeof v === "string" ? v : JSON.stringify(v))];
    rows.push(h("dt", {}, term), h("dd", { dataset: { detail: key } }, show(value)));
  }
  return h("dl", { class: "facts error-details", "aria-label": "error details" }, rows);
}

/** One display block: the brief as a labelled line, a table as a table, any other as its JSON. */
export function displayBlock(block) {
  if (block.type === "brief") {
    return h("p", { class: "brief block", dataset: { block: "brief" } }, h("span", { class: "label" }, "Brief for the user: "), h("span", { class: "text" }, block.text));
  }
  if (block.type === "table" && Array.isArray(block.rows)) {
    const cell = (value) => h("td", {}, typeof value === "string" ? value : JSON.stringify(value));
    return table(
      { class: "block data", dataset: { block: "table" } },
      block.title,
      Array.isArray(block.headers) ? block.headers : [],
      block.rows.map((cells) => h("tr", {}, (Array.isArray(cells) ? cells : [cells]).map(cell))),
    );
  }
  return h("figure", { class: "block unknown", dataset: { block: block.type || "unknown" } }, h("figcaption", {}, `Display block "${block.type}"`), jsonBlock(block));
}

/** The cache line: a hit, a miss of a cacheable tool, or not cacheable. */
export function cacheText(envelope, tool) {
  const cache = envelope.metadata && envelope.metadata.cache;
  if (cache && cache.hit) {
    const parts = ["hit"];
    if (cache.cached_at) parts.push(`stored ${cache.cached_at}`);
    if (typeof cache.ttl_remaining === "number") parts.push(`${Math.round(cache.ttl_remaining)} s left`);
    return parts.join(", ");
  }
  return tool && tool.cacheable ? "miss" : "not cacheable";
}

/** The result of a call: what it returned or why it failed, then the facts about the call. */
export function resultView(envelope, { tool, wallMs, runId, resumes, origin }) {
  const ok = envelope.success === true;
  const metadata = envelope.metadata || {};
  const error = envelope.error || {};
  const head = h(
    "p",
    { class: `outcome ${ok ? "good" : "bad"}`, dataset: { outcome: ok ? "success" : error.code || "error" } },
    ok ? "Success" : `Error ${error.code || ""}`,
    resumes ? h("span", { class: "badge resumed", title: "the connection dropped and the run was resumed with Last-Event-ID" }, `resumed ×${resumes}`) : null,
    origin ? h("span", { class: "badge", title: "shown from this session's history" }, origin) : null,
  );
  const body = [];
  if (ok) {
    if (isParts(envelope)) body.push(h("div", { class: "parts" }, envelope.data.map(contentPart)));
    else if (typeof envelope.data === "string") body.push(h("pre", { class: "text output" }, envelope.data));
    else if (envelope.data !== undefined) body.push(jsonBlock(envelope.data, { class: "json output" }));
  } else {
    body.push(h("p", { class: "error-message" }, error.message || ""));
    const { code, message, ...details } = error;
    if (Object.keys(details).length) body.push(errorDetails(details));
  }
  const display = (envelope.kosong && envelope.kosong.display) || [];
  if (display.length) body.push(h("div", { class: "blocks" }, display.map(displayBlock)));

  const facts = [];
  const fact = (term, value, key) => facts.push(h("dt", {}, term), h("dd", { dataset: { fact: key } }, value));
  if (typeof metadata.execution_time_ms === "number") fact("Server time", formatSeconds(metadata.execution_time_ms / 1000), "server-time");
  if (typeof wallMs === "number") fact("Round trip", formatSeconds(wallMs / 1000), "wall-time");
  if (metadata.trace_id) fact("Trace id", h("code", {}, metadata.trace_id), "trace");
  if (runId) fact("Run", h("code", {}, runId), "run");
  fact("Cache", cacheText(envelope, tool), "cache");
  if (metadata.deprecation) fact("Deprecation", JSON.stringify(metadata.deprecation), "deprecation");
  if (Array.isArray(metadata.warnings) && metadata.warnings.length) {
    fact("Warnings", h("ul", { class: "plain" }, metadata.warnings.map((w) => h("li", {}, typeof w === "string" ? w : JSON.stringify(w)))), "warnings");
  }
  if (envelope.debug_info) fact("Debug", jsonBlock(envelope.debug_info), "debug");

  return h(
    "div",
    { class: "result" },
    head,
    body,
    h("dl", { class: "facts" }, facts),
    h("details", { class: "envelope" }, h("summary", {}, "Envelope (JSON)"), jsonBlock(envelope, { "aria-label": "the envelope" })),
  );
}
