// The metrics panel's numbers, read from /metrics (Prometheus' text format, version 0.0.4).

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g;

/** Samples by metric name: `Map<name, [{labels, value}]>`. */
export function parsePrometheus(text) {
  const samples = new Map();
  for (const line of text.split("\n")) {
    const found = SAMPLE.exec(line.trim()); // none for a comment ("# ...") or a blank line
    const value = found ? parseValue(found[3]) : null;
    if (value === null) continue;
    const labels = {};
    for (const [, key, escaped] of (found[2] ?? "").matchAll(LABEL)) {
      labels[key] = escaped.replace(/\\(.)/g, (_, next) => (next === "n" ? "\n" : next));
    }
    if (!samples.has(found[1])) samples.set(found[1], []);
    samples.get(found[1]).push({ labels, value });
  }
  return samples;
}

function parseValue(text) {
  const value = Number(text.replace(/Inf$/, "Infinity")); // Prometheus writes +Inf, Inf, -Inf
  return text === "NaN" || (text !== "" && !Number.isNaN(value)) ? value : null;
}

/**
 * The `q` quantile of a histogram from its cumulative buckets `[[upperBound, count], ...]`,
 * the way Prometheus' histogram_quantile() estimates it: linear within the bucket the rank
 * falls in. Null when there are no observations.
 */
export function histogramQuantile(q, buckets) {
  const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
  if (!sorted.length) return null;
  const total = sorted[sorted.length - 1][1];
  if (!total) return null;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [bound, count] of sorted) {
    if (count >= rank) {
      if (bound === Infinity) return lowerBound; // beyond the last finite bucket
      if (count === lowerCount) return bound;
      return lowerBound + ((bound - lowerBound) * (rank - lowerCount)) / (count - lowerCount);
    }
    lowerBound = bound;
    lowerCount = count;
  }
  return lowerBound;
}

/**
 * Per tool: `{tool, calls, errors, errorsByCode, p50, p99, mean}` (times in seconds), from
 * the samples of kosong's MetricsRegistry (`kosong_tool_*`); and the server's own gauges.
 */
export function toolMetrics(samples, prefix = "kosong_tool") {
  const tools = new Map();
  const get = (tool) => {
    if (!tools.has(tool)) {
      tools.set(tool, { tool, calls: 0, errors: 0, errorsByCode: {}, buckets: [], sum: 0, quantiles: {} });
    }
    return tools.get(tool);
  };
  for (const { labels, value } of samples.get(`${prefix}_calls_total`) || []) get(labels.tool).calls = value;
  for (const { labels, value } of samples.get(`${prefix}_errors_total`) || []) {
    const entry = get(labels.tool);
    entry.errors += value;
    entry.errorsByCode[labels.code] = value;
  }
  for (const { labels, value } of samples.get(`${prefix}_call_duration_seconds_bucket`) || []) {
    get(labels.tool).buckets.push([parseValue(labels.le), value]);
  }
  for (const { labels, value } of samples.get(`${prefix}_call_duration_seconds_sum`) || []) get(labels.tool).sum = value;
  // The registry's own quantiles of the recent calls, when the server gives them (exact);
  // else an estimate from the histogram.
  for (const { labels, value } of samples.get(`${prefix}_call_latency_seconds`) || []) {
    get(labels.tool).quantiles[labels.quantile] = value;
  }
  const rows = [...tools.values()].map(({ buckets, sum, quantiles, ...row }) => ({
    ...row,
    p50: quantiles["0.5"] ?? histogramQuantile(0.5, buckets),
    p99: quantiles["0.99"] ?? histogramQuantile(0.99, buckets),
    exact: quantiles["0.5"] !== undefined,
    mean: row.calls ? sum / row.calls : null,
  }));
  rows.sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
  const gauge = (name) => samples.get(name)?.[0]?.value ?? null;
  const rejected = {};
  for (const { labels, value } of samples.get("kosong_server_rejected_requests_total") || []) {
    rejected[labels.reason] = value;
  }
  return {
    tools: rows,
    server: {
      runsActive: gauge("kosong_server_runs_active"),
      streamsOpen: gauge("kosong_server_streams_open"),
      rejected,
    },
  };
}

/** A duration in seconds, for people: "850 µs", "12.3 ms", "1.25 s". */
export function formatSeconds(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "–";
  if (seconds < 0.001) return `${Math.round(seconds * 1e6)} µs`;
  if (seconds < 1) return `${short(seconds * 1000)} ms`;
  return `${short(seconds)} s`;
}

function short(value) {
  const text = value >= 100 ? String(Math.round(value)) : value.toPrecision(3);
  return text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
}
