// The inspector page: the tools of this server, a form for each, calls streamed as runs that
// survive dropped connections, the history of this tab and the server's metrics.

import { fill, h, jsonBlock, table } from "./dom.js";
import { SchemaForm } from "./form.js";
import { formatSeconds, parsePrometheus, toolMetrics } from "./metrics.js";
import { fieldErrors, formatPath } from "./paths.js";
import { badges, dialectTable, metadataList, resultView } from "./render.js";
import { RunStream, errorOf } from "./sse.js";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "kosong.inspector.token";
const HISTORY_KEY = "kosong.inspector.history";
const HISTORY_MAX = 50;
const METRICS_EVERY_MS = 15_000;
const APPROVALS_EVERY_MS = 3_000;

const state = {
  tools: [],
  report: null, // the dialect check, from /dialects
  selected: null,
  form: null,
  run: null,
  history: loadHistory(),
};

// --- talking to the server ------------------------------------------------------------------

const api = {
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  /** fetch() relative to the page, with the token in the Authorization header (never the URL). */
  async fetch(path, init = {}) {
    const headers = new Headers(init.headers || {});
    if (this.token) headers.set("Authorization", `Bearer ${this.token}`);
    const response = await fetch(new URL(path, document.baseURI), {
      ...init,
      headers,
      cache: "no-store",
      credentials: "omit",
    });
    if (response.status === 401) askForToken(response);
    return response;
  },
};

function setStatus(text) {
  $("server-status").textContent = text;
}

async function askForToken(response) {
  const { message } = (await errorOf(response.clone(), "the server asks for a bearer token")).error;
  const form = $("token-form");
  const error = $("token-error");
  error.hidden = !api.token;
  error.textContent = api.token ? `The server refused this token: ${message}` : "";
  if (form.hidden) {
    form.hidden = false;
    $("token").focus();
  }
  setStatus("This server needs a token.");
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token").value.trim();
  if (!token) {
    const error = $("token-error");
    error.hidden = false;
    error.textContent = "Enter the token the server was started with (--token or KOSONG_TOKEN).";
    return;
  }
  api.token = token;
  sessionStorage.setItem(TOKEN_KEY, token);
  $("token").value = "";
  load();
});

$("forget-token").addEventListener("click", () => {
  api.token = "";
  sessionStorage.removeItem(TOKEN_KEY);
  $("forget-token").hidden = true;
  load();
});

async function load() {
  setStatus("Loading the tools…");
  let response;
  try {
    response = await api.fetch("tools");
  } catch (error) {
    return setStatus(`The server cannot be reached: ${error.message}`);
  }
  if (response.status === 401) return;
  if (!response.ok) return setStatus(`The server answered ${response.status} for /tools.`);
  $("token-form").hidden = true;
  $("token-error").hidden = true;
  $("forget-token").hidden = !api.token;
  state.tools = (await response.json()).tools || [];
  setStatus(`${state.tools.length} tool${state.tools.length === 1 ? "" : "s"} on ${location.host}${api.token ? " (with a token)" : ""}.`);
  state.report = await fetchOptional("dialects", (response) => response.json());
  renderToolList();
  const wanted = new URLSearchParams(location.hash.slice(1)).get("tool");
  const first = state.tools.find((t) => t.name === wanted) || state.tools[0];
  if (first) selectTool(first.name, { focus: false });
  refreshMetrics();
  refreshApprovals();
}

/** What `read` makes of `path`'s answer, or null: these panels are extras and stay quiet when
 * the server is unreachable or answers an error (the tool list already said so). */
async function fetchOptional(path, read) {
  try {
    const response = await api.fetch(path);
    return response.ok ? await read(response) : null;
  } catch {
    return null;
  }
}

// --- runs waiting for an answer (an approval hook that asked) ----------------------------------

async function refreshApprovals() {
  const listed = await fetchOptional("runs?state=waiting", (response) => response.json());
  if (!listed) return;
  const runs = listed.runs || [];
  const list = $("approvals");
  const focused = list.contains(document.activeElement) ? document.activeElement.id : null;
  fill(list, runs.map(approvalItem));
  if (focused) document.getElementById(focused)?.focus();
  const status = $("approvals-status");
  if (runs.length) status.textContent = `${runs.length} run${runs.length === 1 ? " waits" : "s wait"} for an answer.`;
  else if (!status.dataset.answered) status.textContent = "No run is waiting.";
}

function approvalItem(run) {
  const reasonId = `reason-${run.id}`;
  const answer = (approved) => async () => {
    const reason = document.getElementById(reasonId).value;
    const response = await api.fetch(`runs/${encodeURIComponent(run.id)}/input`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ approved, reason }),
    });
    const status = $("approvals-status");
    status.dataset.answered = "1";
    if (response.status === 202) {
      status.textContent = `${approved ? "Approved" : "Denied"}: ${run.tool} (${run.id}).`;
    } else {
      const { message } = (await errorOf(response, `HTTP ${response.status}`)).error;
      status.textContent = `Could not answer ${run.tool}: ${message}`;
    }
    refreshApprovals();
  };
  return h(
    "li",
    { class: "approval", dataset: { run: run.id } },
    h("p", { class: "question" }, run.question),
    h("p", { class: "muted" }, `${run.tool}, waiting since ${run.since}`),
    jsonBlock(run.arguments, { "aria-label": `Arguments of ${run.tool}` }),
    h("label", { for: reasonId }, "Reason (optional)"),
    h("input", { id: reasonId, type: "text", autocomplete: "off" }),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", class: "approve", onclick: answer(true) }, "Approve"),
      h("button", { type: "button", class: "secondary deny", onclick: answer(false) }, "Deny"),
    ),
  );
}

// --- the tool list and the selected tool ------------------------------------------------------

function renderToolList() {
  const list = $("tool-list");
  fill(
    list,
    state.tools.map((tool) =>
      h(
        "li",
        {},
        h(
          "button",
          {
            type: "button",
            class: "tool",
            dataset: { tool: tool.name },
            onclick: () => selectTool(tool.name),
          },
          h("span", { class: "tool-name" }, tool.name),
          h("span", { class: "tool-description" }, (tool.description || "").split("\n")[0]),
          h("span", { class: "badges" }, badges(tool, state.report)),
        ),
      ),
    ),
  );
  if (!state.tools.length) list.append(h("li", { class: "muted" }, "This server has no tools."));
}

// Arrow keys move between the tools; Tab leaves the list; Enter or Space selects.
$("tool-list").addEventListener("keydown", (event) => {
  const buttons = [...$("tool-list").querySelectorAll("button.tool")];
  const index = buttons.indexOf(document.activeElement);
  if (index === -1) return;
  const moves = { ArrowDown: index + 1, ArrowUp: index - 1, Home: 0, End: buttons.length - 1 };
  if (!(event.key in moves)) return;
  event.preventDefault();
  const next = buttons[Math.max(0, Math.min(buttons.length - 1, moves[event.key]))];
  for (const button of buttons) button.tabIndex = button === next ? 0 : -1;
  next.focus();
});

function selectTool(name, { focus = true, values } = {}) {
  const tool = state.tools.find((t) => t.name === name);
  if (!tool) return;
  state.selected = name;
  history.replaceState(null, "", `#tool=${encodeURIComponent(name)}`);
  // One tab stop for the list (the selected tool); arrow keys move within it.
  for (const button of $("tool-list").querySelectorAll("button.tool")) {
    const current = button.dataset.tool === name;
    if (current) button.setAttribute("aria-current", "true");
    else button.removeAttribute("aria-current");
    button.tabIndex = current ? 0 : -1;
  }
  fill(
    $("tool-info"),
    h("h2", { id: "tool-name" }, tool.name, tool.title ? h("span", { class: "title" }, ` ${tool.title}`) : null),
    h("p", { class: "badges" }, badges(tool, state.report)),
    h("p", { class: "description" }, tool.description || ""),
    metadataList(tool, { onSelect: (other) => selectTool(other) }),
  );
  fill(
    $("tool-extra"),
    h("h3", {}, "Providers"),
    dialectTable(tool, state.report),
    h("details", { class: "schema" }, h("summary", {}, "JSON Schema of the parameters"), jsonBlock(tool.parameters, { id: "schema-json" })),
    tool.outputSchema
      ? h("details", { class: "schema" }, h("summary", {}, "JSON Schema of the output"), jsonBlock(tool.outputSchema, { id: "output-schema-json" }))
      : null,
  );
  state.form = new SchemaForm(tool.parameters, { idPrefix: "arg" });
  fill($("fields"), state.form.element);
  if (values) state.form.fill(values);
  clearFormErrors();
  updatePreview();
  $("call-form").hidden = false;
  if (focus) $("tool").focus();
}

// --- the form -----------------------------------------------------------------------------------

function clearFormErrors() {
  state.form?.clearErrors();
  fill($("form-errors")).hidden = true;
}

function showFormErrors(errors, intro) {
  state.form.showErrors(errors);
  const box = $("form-errors");
  fill(
    box,
    h("p", {}, intro),
    h(
      "ul",
      {},
      errors.map((error) => {
        const where = error.path.length ? formatPath(error.path) : "arguments";
        return h("li", { dataset: { path: where } }, h("code", {}, where), `: ${error.message}`);
      }),
    ),
  );
  box.hidden = false;
}

function updatePreview() {
  if (!state.form) return;
  const { value } = state.form.read({ check: false });
  $("arguments-preview").textContent = JSON.stringify(value, null, 2);
}

$("call-form").addEventListener("input", updatePreview);
$("call-form").addEventListener("change", updatePreview);
$("call-form").addEventListener("click", (event) => {
  if (event.target.closest("button.add, button.remove")) queueMicrotask(updatePreview);
});

$("call-form").addEventListener("submit", (event) => {
  event.preventDefault();
  if (state.run || !state.form) return;
  const check = $("check-first").checked;
  const { value, errors } = state.form.read({ check });
  clearFormErrors();
  if (check && errors.length) {
    showFormErrors(errors, `Not sent: ${errors.length} problem${errors.length === 1 ? "" : "s"} to fix first.`);
    (state.form.firstInvalid() || $("form-errors")).focus();
    return;
  }
  startRun(state.selected, value);
});

$("cancel-button").addEventListener("click", async () => {
  const run = state.run;
  if (!run) return;
  $("cancel-button").disabled = true;
  setRunStatus("Cancelling…");
  const status = await run.stream.cancel();
  if (status === null && state.run === run) setRunStatus("Stopped following the run (the server could not be told).");
});

// --- a run ----------------------------------------------------------------------------------------

function setRunStatus(text) {
  $("run-status").textContent = text;
}

function notice(text, kind) {
  $("notices").append(h("li", { class: kind, dataset: { notice: kind } }, text));
}

function eventRow(text, attributes) {
  $("events").append(h("li", attributes, text));
}

/** Moves the bar (which holds its value between 0 and its max itself) and says why. */
function setProgress(value, text) {
  if (typeof value === "number" && Number.isFinite(value)) $("progress").value = value;
  $("progress-text").textContent = text;
}

/** Empties the run panel: its notices, events, progress and result. */
function clearRun() {
  fill($("notices"));
  fill($("events"));
  fill($("result"));
  setProgress(0, "");
}

function startRun(toolName, args) {
  const tool = state.tools.find((t) => t.name === toolName);
  const started = performance.now();
  const run = { resumes: 0 };
  state.run = run;
  $("call-button").disabled = true;
  $("cancel-button").disabled = true;
  $("run").dataset.state = "running";
  delete $("run").dataset.attempt;
  delete $("run").dataset.resumed;
  $("progress").removeAttribute("data-done");
  clearRun();
  setRunStatus(`Calling ${toolName}…`);
  run.stream = new RunStream(api, {
    onStarted(runId) {
      $("run").dataset.runId = runId || "";
      $("cancel-button").disabled = false;
      setRunStatus(`Running ${toolName} (run ${runId}).`);
    },
    onEvent(event) {
      const { kind, seq, data } = event;
      let text = `#${seq ?? "?"} ${kind}`;
      if (kind === "tool_progress") {
        const percent = typeof data.progress === "number" ? data.progress : null;
        text += `${percent === null ? "" : ` ${Math.round(percent)}%`}${data.message ? ` ${data.message}` : ""}`;
        setProgress(percent, `${percent === null ? "" : `${Math.round(percent)}%`}${data.message ? ` — ${data.message}` : ""}`);
      } else if (kind === "tool_retrying") {
        const error = data.error || {};
        const line = `Retry ${data.retry_count} of ${data.max_retries} in ${data.delay_seconds} s after ${error.code}: ${error.message}`;
        text += ` ${line}`;
        notice(line, "retry");
      }
      eventRow(text, { class: `event ${kind}`, dataset: { seq: seq ?? "", kind, id: event.id } });
    },
    onDuplicate(id) {
      eventRow(`duplicate of ${id}, ignored`, { class: "event duplicate", dataset: { duplicate: id } });
    },
    onConnection(change) {
      if (change.state === "lost") {
        eventRow(`connection lost after ${change.lastEventId || "the start"}`, { class: "connection lost" });
        notice(`The connection dropped after ${change.lastEventId || "the start"}; the run goes on at the server.`, "lost");
      } else if (change.state === "reconnecting") {
        $("run").dataset.attempt = String(change.attempt);
        setRunStatus(`Connection lost; reconnecting in ${formatSeconds(change.delay / 1000)} (attempt ${change.attempt})…`);
      } else if (change.state === "resumed") {
        run.resumes += 1;
        $("run").dataset.resumed = String(run.resumes);
        eventRow(`resumed with Last-Event-ID: ${change.lastEventId || "(none: from the start)"}`, { class: "connection resumed", dataset: { resumed: change.lastEventId } });
        notice(`Resumed the same run from ${change.lastEventId || "the start"}.`, "resumed");
        setRunStatus(`Running ${toolName} (resumed).`);
      }
    },
    onEnd({ kind, data, status }) {
      const wallMs = performance.now() - started;
      state.run = null;
      $("call-button").disabled = false;
      $("cancel-button").disabled = true;
      $("run").dataset.state = "done";
      const envelope = data && typeof data === "object" ? data : { success: false, status: "error", error: { code: "UNKNOWN", message: String(data) } };
      const ok = envelope.success === true;
      if (ok) setProgress(100, $("progress-text").textContent || "done");
      $("progress").dataset.done = ok ? "success" : "error";
      const code = envelope.error?.code;
      let summary = ok ? `${toolName} succeeded` : `${toolName} failed: ${code}`;
      if (kind === "refused") summary = `The server refused the call (${status}): ${code}`;
      if (kind === "lost") summary = `Lost the run: ${envelope.error?.message}`;
      setRunStatus(`${summary} in ${formatSeconds(wallMs / 1000)}${run.resumes ? `, resumed ${run.resumes}×` : ""}.`);
      fill($("result"), resultView(envelope, { tool, wallMs, runId: run.stream.runId, resumes: run.resumes }));
      if (code === "INVALID_PARAMS" && state.selected === toolName) {
        const errors = fieldErrors(envelope.error.message);
        showFormErrors(errors, "The server refused these arguments:");
      }
      remember({
        tool: toolName,
        args,
        at: new Date().toISOString(),
        outcome: ok ? "success" : code || "error",
        ms: Math.round(wallMs),
        runId: run.stream.runId,
        resumes: run.resumes,
        envelope,
      });
      refreshMetrics();
    },
  });
  run.stream.start(toolName, args);
}

// --- history of this tab ---------------------------------------------------------------------------

function loadHistory() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(HISTORY_KEY) || "[]");
    return Array.isArray(stored) ? stored : [];
  } catch {
    return [];
  }
}

function saveHistory() {
  // Large envelopes (images) are dropped from the oldest entries first when the tab's storage
  // is full; the entry itself stays.
  for (let i = 0; i <= state.history.length; i++) {
    try {
      sessionStorage.setItem(HISTORY_KEY, JSON.stringify(state.history));
      return;
    } catch {
      if (i < state.history.length) state.history[i].envelope = null;
    }
  }
}

function remember(entry) {
  state.history.push(entry);
  state.history = state.history.slice(-HISTORY_MAX);
  saveHistory();
  renderHistory();
}

function renderHistory() {
  $("history-empty").hidden = state.history.length > 0;
  const entries = state.history.map((entry, index) => {
    const time = new Date(entry.at).toLocaleTimeString();
    return h(
      "li",
      { dataset: { outcome: entry.outcome, tool: entry.tool } },
      h(
        "button",
        { type: "button", class: "history-entry", onclick: () => showHistory(index) },
        h("span", { class: "tool-name" }, entry.tool),
        " ",
        h("span", { class: entry.outcome === "success" ? "good" : "bad" }, entry.outcome),
        h("span", { class: "muted" }, ` ${formatSeconds(entry.ms / 1000)} · ${time}${entry.resumes ? " · resumed" : ""}`),
      ),
    );
  });
  fill($("history"), entries.reverse()); // the latest first
}

function showHistory(index) {
  const entry = state.history[index];
  if (!entry || state.run) return;
  selectTool(entry.tool, { focus: false, values: entry.args });
  const tool = state.tools.find((t) => t.name === entry.tool);
  clearRun();
  setRunStatus(`${entry.tool} at ${new Date(entry.at).toLocaleTimeString()}: ${entry.outcome} (from this tab's history; its arguments are in the form).`);
  fill(
    $("result"),
    entry.envelope
      ? resultView(entry.envelope, { tool, wallMs: entry.ms, runId: entry.runId, resumes: entry.resumes, origin: "history" })
      : h("p", { class: "muted" }, "The result was too large to keep in this tab."),
  );
}

$("clear-history").addEventListener("click", () => {
  state.history = [];
  saveHistory();
  renderHistory();
});

// --- metrics -----------------------------------------------------------------------------------

async function refreshMetrics() {
  const text = await fetchOptional("metrics", (response) => response.text());
  if (text === null) return;
  const { tools, server } = toolMetrics(parsePrometheus(text));
  const rejected = Object.entries(server.rejected).filter(([, n]) => n > 0);
  fill(
    $("metrics"),
    tools.length
      ? table(
          { class: "metrics data" },
          tools.every((row) => row.exact)
            ? "Since the server started; P50 and P99 of the recent calls"
            : "Since the server started; P50 and P99 estimated from the latency histogram",
          ["Tool", "Calls", "Errors", "P50", "P99"],
          tools.map((row) =>
            h(
              "tr",
              { dataset: { tool: row.tool } },
              h("th", { scope: "row" }, row.tool),
              h("td", { dataset: { metric: "calls" } }, String(row.calls)),
              h("td", { dataset: { metric: "errors" }, title: JSON.stringify(row.errorsByCode) }, String(row.errors)),
              h("td", { dataset: { metric: "p50" } }, formatSeconds(row.p50)),
              h("td", { dataset: { metric: "p99" } }, formatSeconds(row.p99)),
            ),
          ),
        )
      : h("p", { class: "muted" }, "No calls yet."),
    h(
      "p",
      { class: "muted small" },
      `Runs active: ${server.runsActive ?? "–"} · streams open: ${server.streamsOpen ?? "–"}`,
      rejected.length ? ` · refused: ${rejected.map(([reason, n]) => `${reason} ${n}`).join(", ")}` : "",
    ),
  );
}

$("refresh-metrics").addEventListener("click", refreshMetrics);
$("refresh-approvals").addEventListener("click", refreshApprovals);
setInterval(() => {
  if (!document.hidden) refreshApprovals();
}, APPROVALS_EVERY_MS);
setInterval(() => {
  if (document.visibilityState === "visible" && state.tools.length) refreshMetrics();
}, METRICS_EVERY_MS);

renderHistory();
load();
