// Calls streamed as Server-Sent Events, read with fetch() so that a token can go in the
// Authorization header (a browser's EventSource cannot send one), and resumed with
// Last-Event-ID when the connection drops: the server replays exactly the events after it.

/**
 * The event stream format of the HTML standard ("Parsing an event stream"), fed decoded text
 * in pieces of any size. Calls `onEvent({type, data, id})` for each event, `onRetry(ms)` for
 * each valid `retry:` field. `lastEventId` follows every `id:` field, also of a message
 * without data (which dispatches nothing: the server's first message is one).
 */
export class EventStreamParser {
  constructor({ onEvent, onRetry = () => {}, lastEventId = "" }) {
    this.onEvent = onEvent;
    this.onRetry = onRetry;
    this.lastEventId = lastEventId;
    this.idBuffer = lastEventId;
    this.type = "";
    this.data = [];
    this.pending = ""; // the start of a line whose end has not arrived
    this.started = false;
    this.skipLF = false;
  }

  feed(chunk) {
    if (!this.started && chunk.length) {
      this.started = true;
      if (chunk.startsWith("\uFEFF")) chunk = chunk.slice(1);
    }
    if (this.skipLF) {
      this.skipLF = false;
      if (chunk.startsWith("\n")) chunk = chunk.slice(1);
    }
    const eol = /\r\n|\r|\n/g;
    let start = 0;
    let match;
    while ((match = eol.exec(chunk)) !== null) {
      const line = this.pending + chunk.slice(start, match.index);
      this.pending = "";
      start = match.index + match[0].length;
      // A CR that ends the piece may be the first half of a CRLF split across two pieces.
      if (match[0] === "\r" && start === chunk.length) this.skipLF = true;
      this.line(line);
    }
    this.pending += chunk.slice(start);
  }

  line(line) {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return; // a comment: the server's keep-alive pings
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.type = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.idBuffer = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.onRetry(Number(value));
  }

  dispatch() {
    this.lastEventId = this.idBuffer;
    const { type, data } = this;
    this.type = "";
    this.data = [];
    if (data.length) this.onEvent({ type: type || "message", data: data.join("\n"), id: this.lastEventId });
  }
}

const FINAL = new Set(["tool_result", "tool_error"]);
const MAX_RECONNECTS = 30;
const MAX_DELAY_MS = 10_000;

/** The position of an event in its run: the number after the last dot of its id. */
export function sequenceOf(id) {
  const found = /\.(\d+)$/.exec(id || "");
  return found ? Number(found[1]) : null;
}

/** Waits `ms`, or less if `signal` aborts. */
function sleep(ms, signal) {
  const woken = AbortSignal.any([signal, AbortSignal.timeout(ms)]);
  return new Promise((resolve) => {
    if (woken.aborted) resolve();
    woken.addEventListener("abort", resolve, { once: true });
  });
}

/** The error envelope a response answered, or one made of its status (`message` saying why). */
export async function errorOf(response, message = response.statusText || "no answer") {
  try {
    const body = await response.json();
    if (body && body.error) return body;
  } catch {
    // not JSON: described below
  }
  return { success: false, status: "error", error: { code: `HTTP_${response.status}`, message } };
}

/**
 * One call of a tool as a run. `api.fetch(path, init)` sends a request with the token.
 * Reports through the callbacks:
 *   onStarted(runId)                  the server named the run
 *   onEvent({kind, id, seq, data})    each event of the run, once, in order
 *   onDuplicate(id)                   an event seen before, ignored (never expected)
 *   onConnection(state)              {state: "lost"|"reconnecting"|"resumed", ...}
 *   onEnd({kind, data})              the final event's kind and data (an envelope); kind is
 *                                     "refused" when the server answered the request with an
 *                                     error, "lost" when the run could not be followed
 */
export class RunStream {
  constructor(api, callbacks) {
    this.api = api;
    this.on = callbacks;
    this.controller = new AbortController();
    this.runId = null;
    this.lastEventId = "";
    this.lastSeq = 0;
    this.retryMs = 2000;
    this.ended = false;
  }

  async start(tool, args) {
    const signal = this.controller.signal;
    let response;
    try {
      response = await this.api.fetch(`tools/${encodeURIComponent(tool)}/sse`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(args),
        signal,
      });
    } catch (error) {
      // Nothing says whether a run started, so it is not started again (it would run twice).
      return this.lose(`the server could not be reached: ${error.message}`);
    }
    if (!response.ok) return this.end("refused", await errorOf(response), response.status);
    const location = response.headers.get("Content-Location") || "";
    this.runId = location.split("/").pop() || null;
    this.on.onStarted?.(this.runId);
    while (response) {
      await this.read(response);
      response = this.ended ? null : await this.reconnect(); // null: the run's end was reported
    }
  }

  /** Reads events until the final one, or until the connection drops or ends early. */
  async read(response) {
    const parser = new EventStreamParser({
      lastEventId: this.lastEventId,
      onEvent: (event) => this.event(event),
      onRetry: (ms) => {
        this.retryMs = ms;
      },
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
        if (this.ended) break;
      }
    } catch {
      // the connection dropped: resumed by the caller
    } finally {
      this.lastEventId = parser.lastEventId;
      reader.cancel().catch(() => {});
    }
  }

  event({ type, data, id }) {
    const seq = sequenceOf(id);
    if (seq !== null && seq <= this.lastSeq) {
      this.on.onDuplicate?.(id);
      return;
    }
    if (seq !== null) this.lastSeq = seq;
    let parsed = data;
    try {
      parsed = JSON.parse(data);
    } catch {
      // not JSON: kept as text
    }
    this.on.onEvent?.({ kind: type, id, seq, data: parsed });
    if (FINAL.has(type)) this.end(type, parsed);
  }

  /** Follows the run again after a drop: `GET /runs/{id}` with `Last-Event-ID`. */
  async reconnect() {
    const signal = this.controller.signal;
    if (!this.runId) return this.lose("the server did not name the run");
    this.on.onConnection?.({ state: "lost", lastEventId: this.lastEventId });
    let delay = this.retryMs;
    for (let attempt = 1; attempt <= MAX_RECONNECTS; attempt++) {
      this.on.onConnection?.({ state: "reconnecting", attempt, delay, lastEventId: this.lastEventId });
      await sleep(delay, signal);
      if (signal.aborted) return this.lose("stopped following the run");
      delay = Math.min(Math.max(delay * 2, 100), MAX_DELAY_MS);
      const headers = { Accept: "text/event-stream" };
      if (this.lastEventId) headers["Last-Event-ID"] = this.lastEventId;
      let response;
      try {
        response = await this.api.fetch(`runs/${encodeURIComponent(this.runId)}`, { headers, signal });
      } catch {
        continue; // still unreachable
      }
      if (response.status === 204) return this.lose("the run ended, but its final event did not arrive");
      if (response.ok) {
        this.on.onConnection?.({ state: "resumed", attempt, lastEventId: this.lastEventId });
        return response;
      }
      if (response.status === 429 || response.status >= 500) {
        const seconds = Number(response.headers.get("Retry-After"));
        if (Number.isFinite(seconds) && seconds >= 0) delay = seconds * 1000;
        continue;
      }
      return this.end("refused", await errorOf(response), response.status);
    }
    return this.lose(`the server did not answer ${MAX_RECONNECTS} reconnections`);
  }

  /** Asks the server to cancel the run; its stream then ends with a CANCELLED error. */
  async cancel() {
    if (this.ended) return null;
    try {
      if (this.runId) {
        const response = await this.api.fetch(`runs/${encodeURIComponent(this.runId)}`, { method: "DELETE" });
        return response.status;
      }
    } catch {
      // the server is out of reach: as when no run was named yet, stop waiting for it
    }
    this.controller.abort();
    return null;
  }

  /** Ends the run as lost (it could not be followed): a NETWORK_ERROR saying why. */
  lose(message) {
    return this.end("lost", {
      success: false,
      status: "error",
      error: { code: "NETWORK_ERROR", message, retryable: true },
    });
  }

  end(kind, data, status = null) {
    if (this.ended) return null;
    this.ended = true;
    this.controller.abort();
    this.on.onEnd?.({ kind, data, status });
    return null;
  }
}
