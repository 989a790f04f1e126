// Thoth's page: ask a question through POST /v1/ask and show the answer object as a person
// reads it; list and start deep-analysis jobs (/v1/jobs); follow question→SQL sessions
// (/v1/sessions). No framework, no build step, no network asset: everything the page needs is
// served by `tht serve` itself.
// Every text that comes from the server is inserted as text (textContent), never as HTML:
// a document may contain markup, and the page must show it, not run it.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const KEY_STORE = "thoth.apiKey";
  // The answer's own words for its caveats, one entry per language (thoth.answer.wording),
  // written into the page by the server: the page recognises what the answerer wrote.
  const WORDING = JSON.parse($("thoth-wording").textContent);
  const WARNING_SIGN = "⚠";

  const STATUS = {
    found: ["Found", "Answered from the sources listed below."],
    truncated: [
      "Found, incomplete",
      "Some of what the search found did not fit in the answer: it may be incomplete.",
    ],
    nothing_found: [
      "Nothing found",
      "The search ran and the sources you may read hold nothing that answers the question.",
    ],
    failed: [
      "Search failed",
      "The sources could not be searched: this is not an answer, and not an empty result.",
    ],
    computed: [
      "Computed",
      "By a reviewed catalog query of the analytics store; no text source was consulted.",
    ],
    needs_parameter: [
      "Needs a parameter",
      "The figure can be computed once the question states what is missing.",
    ],
    not_searched: ["Not searched", "The sources were not searched for this request."],
  };
  const ANSWER_FAILED = [
    "Answer failed",
    "The sources were searched, but the answer could not be written: nothing is served.",
  ];

  // ------------------------------------------------------------------ HTTP

  function apiKey() {
    return $("api-key").value.trim();
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    const key = apiKey();
    if (key) headers.Authorization = "Bearer " + key;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw unreachable(err);
    }
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null; // a body that is not JSON: the status code still says what happened
    }
    return { status: response.status, ok: response.ok, data };
  }

  // fetch rejects, with no status, when the request got no answer at all: the server stopped,
  // its address unreachable, the connection cut. Marked so that a handler's guard says so.
  function unreachable(err) {
    if (err && typeof err === "object") err.unreachable = true;
    return err;
  }

  // An event handler whose failure is said where its section shows its other errors (`say`,
  // a message function), never left as an unhandled promise rejection: a network failure as
  // "Server unreachable", anything else as the error it is. `what` is what did not happen.
  function guarded(handler, say, what) {
    return (...args) =>
      Promise.resolve(handler(...args)).catch((err) => {
        const text = err && err.unreachable
          ? "Server unreachable (" + String(err) + "): " + what + "."
          : "Unexpected error (" + String(err) + "): " + what + ".";
        say(text, true);
      });
  }

  // ------------------------------------------------------------------ helpers

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (name === "className") node.className = value;
      else node.setAttribute(name, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function show(id, visible) {
    $(id).hidden = !visible;
  }

  // "[2]" in an answer's text becomes a link to the second source, when there is one.
  function withMarkers(text, sourceCount) {
    const nodes = [];
    let last = 0;
    for (const match of text.matchAll(/\[(\d+)\]/g)) {
      const n = Number(match[1]);
      if (n < 1 || n > sourceCount) continue;
      if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
      nodes.push(el("a", { className: "marker", href: "#source-" + n }, "[" + n + "]"));
      last = match.index + match[0].length;
    }
    if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
    return nodes;
  }

  function isNumberWarning(line) {
    const trimmed = line.trim();
    return (
      trimmed.startsWith(WARNING_SIGN) || WORDING.some((w) => trimmed.startsWith(w.number_warning))
    );
  }

  function isCaveatsHeading(line) {
    return WORDING.some((w) => line.trim() === w.caveats_heading);
  }

  // ------------------------------------------------------------------ the answer's text

  // The text as the answerer wrote it, with its structure made visible: quoted claims as a
  // list, a caveat flagged next to the claim whose figure it qualifies (the indented "⚠" line
  // right under it), and the block of the sources' caveats highlighted as caveats.
  function renderText(container, text, sourceCount) {
    container.replaceChildren();
    const marked = (s) => withMarkers(s, sourceCount);
    for (const paragraph of text.split(/\n\s*\n/)) {
      const lines = paragraph.split("\n").filter((l) => l.trim() !== "");
      if (lines.length === 0) continue;
      if (isCaveatsHeading(lines[0])) {
        const block = el("div", { className: "caveats" });
        block.append(el("p", { className: "caveats-heading" }, lines[0].trim()));
        for (const line of lines.slice(1)) {
          const item = line.trim().replace(/^[-*]\s+/, "");
          block.append(el("div", { className: "caveat" }, ...marked(item)));
        }
        container.append(block);
        continue;
      }
      let list = null;
      let current = null; // the claim the next indented line belongs to
      let rows = []; // consecutive "| a | b |" lines: a Markdown table (computed figures)
      const flushTable = () => {
        if (rows.length > 0) container.append(markdownTable(rows, marked));
        rows = [];
      };
      for (const line of lines) {
        if (line.trim().startsWith("|")) {
          list = null;
          current = null;
          rows.push(line.trim());
          continue;
        }
        flushTable();
        if (isNumberWarning(line)) {
          const caveat = el("span", { className: "caveat caveat-inline" }, ...marked(line.trim()));
          (current || container).append(caveat);
        } else if (/^[-*]\s+/.test(line)) {
          if (list === null) {
            list = el("ul");
            container.append(list);
          }
          current = el("li", { className: "claim" }, ...marked(line.replace(/^[-*]\s+/, "")));
          list.append(current);
        } else if (current !== null && /^\s/.test(line)) {
          current.append(" ", ...marked(line.trim()));
        } else {
          list = null;
          current = el("p", {}, ...marked(line));
          container.append(current);
        }
      }
      flushTable();
    }
  }

  // A Markdown table as the answerer writes one: a header row, a |---| rule, the rows.
  function markdownTable(rows, marked) {
    const cells = (row) => row.replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
    const isRule = (row) => /^\|[\s:|-]+\|$/.test(row);
    const table = el("table", { className: "answer-table" });
    const hasHeader = rows.length > 1 && isRule(rows[1]);
    if (hasHeader) {
      table.append(el("thead", {}, el("tr", {}, ...cells(rows[0]).map((c) => el("th", {}, c)))));
    }
    const body = el("tbody");
    for (const row of rows.slice(hasHeader ? 2 : 0)) {
      if (isRule(row)) continue;
      body.append(el("tr", {}, ...cells(row).map((c) => el("td", {}, ...marked(c)))));
    }
    table.append(body);
    return table;
  }

  // ------------------------------------------------------------------ the answer

  function setStatus(cssStatus, word, detail) {
    const box = $("answer-status");
    box.className = "status status-" + cssStatus;
    $("status-word").textContent = word;
    $("status-detail").textContent = detail;
  }

  function resetAnswer() {
    for (const id of ["needs-parameter", "degraded", "provenance", "sources-block", "problems",
                      "passage"]) {
      show(id, false);
    }
    $("answer-text").replaceChildren();
    $("sources").replaceChildren();
    $("answer-id").textContent = "";
    currentAnswerId = null;
    show("feedback-form", false);
    show("feedback-message", false);
    $("feedback-note").value = "";
    show("answer", true);
  }

  const MODEL_FAILURES = [
    "answer_failed",
    "uncited_answer",
    "echoed_context",
    "citation_outside_context",
  ];

  function renderAnswer(answer) {
    resetAnswer();
    // The answer model failed, or its reply was refused: searched, not a failed search.
    const failedAnswer = answer.status === "failed" && MODEL_FAILURES.includes(answer.error_code);
    const [word, detail] = failedAnswer
      ? ANSWER_FAILED
      : STATUS[answer.status] || [answer.status, ""];
    const code = answer.error_code ? " (code " + answer.error_code + ")" : "";
    setStatus(answer.status, word, detail + code);
    const sources = Array.isArray(answer.sources) ? answer.sources : null;
    renderText($("answer-text"), answer.text || "", sources ? sources.length : 0);
    if (sources !== null) renderSources(sources, answer.status);
    if (answer.provenance) renderProvenance(answer.provenance, answer.figures);
    if (answer.needs_parameter) renderNeedsParameter(answer.needs_parameter);
    if (Array.isArray(answer.degraded) && answer.degraded.length > 0) {
      $("degraded").textContent =
        "Served without part of the engine: " + answer.degraded.join("; ");
      show("degraded", true);
    }
    $("answer-id").textContent = "Answer id " + answer.id;
    currentAnswerId = answer.id;
    show("feedback-form", true);
  }

  // ------------------------------------------------------------------ feedback

  let currentAnswerId = null;

  function feedbackMessage(text, isError) {
    const p = $("feedback-message");
    p.textContent = text;
    p.className = "feedback-message" + (isError ? " error" : "");
    p.hidden = false;
  }

  // POST /v1/feedback: the reader's verdict on the answer shown, with the note as text.
  async function sendFeedback(event) {
    event.preventDefault();
    const kind = event.submitter ? event.submitter.value : "";
    if (!currentAnswerId || !kind) return;
    const body = { answer_id: currentAnswerId, kind, note: $("feedback-note").value.trim() };
    try {
      const response = await api("POST", "/v1/feedback", body);
      if (response.ok) {
        feedbackMessage("Thank you: report " + response.data.feedback.id + " (" + kind +
          ") is in the curators' queue.", false);
      } else {
        const d = response.data || {};
        const problems = (d.problems || []).map((p) => p.message + (p.hint ? " → " + p.hint : ""));
        // The problem's own code says what to fix ("bad_request" alone would not).
        const code = (d.problems && d.problems[0] && d.problems[0].code) || d.code;
        feedbackMessage("Not recorded (" + (code || response.status) + "): " +
          (problems.join("; ") || d.message || ""), true);
      }
    } catch (err) {
      feedbackMessage("Not recorded: the server is unreachable (" + String(err) + ")", true);
    }
  }

  const NO_SOURCE = {
    nothing_found: "No source: nothing in the sources you may read answers the question.",
    failed: "No source: the sources could not be consulted.",
  };

  function renderSources(sources, status) {
    show("sources-block", true);
    show("no-sources", sources.length === 0);
    $("no-sources").textContent = NO_SOURCE[status] || "No source.";
    sources.forEach((source, i) => {
      const title = source.url
        ? el("a", { className: "source-title", href: source.url }, source.title)
        : el("span", { className: "source-title" }, source.title);
      const where = source.revision
        ? source.doc_id + " @ " + String(source.revision).slice(0, 12)
        : source.doc_id;
      const open = source.link
        ? el("button", { type: "button", className: "secondary source-open" }, "Open the passage")
        : null;
      if (open) open.addEventListener("click", () => openPassage(source));
      $("sources").append(
        el("li", { id: "source-" + (i + 1), className: "source" }, title, el("span", {
          className: "source-id",
        }, where), open),
      );
    });
  }

  // ------------------------------------------------------------------ passages

  // GET the source's link as given: it carries the labels the question was asked with, and
  // the service shows the passage only under the answer's label rules, or says why not (a code).
  async function openPassage(source) {
    const path = source.link;
    show("passage", true);
    $("passage-title").textContent = source.title;
    $("passage-where").textContent = "Opening…";
    $("passage-body").replaceChildren();
    show("passage-url", false);
    try {
      const response = await api("GET", path);
      if (response.ok) renderPassage(response.data);
      else {
        const d = response.data || {};
        $("passage").className = "passage passage-refused";
        $("passage-where").textContent =
          "Not shown (" + (d.code || response.status) + "): " + (d.message || "");
      }
    } catch (err) {
      $("passage-where").textContent = "The server is unreachable: " + String(err);
    }
  }

  function renderPassage(p) {
    $("passage").className = "passage";
    $("passage-title").textContent = p.title;
    const where = [p.doc_id + " @ " + String(p.revision).slice(0, 12)];
    if (p.page) where.push("page " + p.page);
    if (p.heading_path && p.heading_path.length) where.push(p.heading_path.join(" › "));
    $("passage-where").textContent = where.join(" — ");
    if (p.url) {
      $("passage-url").replaceChildren(el("a", { href: p.url, rel: "noopener" }, p.url));
      show("passage-url", true);
    }
    for (const f of p.fragments) {
      const text = el("div", { className: "passage-text" }, f.text);
      const node = el("div", {
        className: "passage-fragment" + (f.highlight ? " highlight" : ""),
        "data-ordinal": String(f.ordinal),
      }, f.page ? el("span", { className: "passage-page" }, "page " + f.page) : null, text);
      $("passage-body").append(node);
      if (f.highlight) node.scrollIntoView({ block: "nearest" });
    }
  }

  function renderProvenance(p, figures) {
    show("provenance", true);
    const params = Object.entries(p.parameters || {})
      .map(([k, v]) => k + " = " + v)
      .join(", ");
    const rows = [
      ["Catalog query", p.query_id],
      ["Catalog revision", p.catalog_revision ? String(p.catalog_revision).slice(0, 12) : "-"],
      ["Parameters", params || "none"],
      ["Rows", String(p.row_count) + (p.truncated ? " (truncated)" : "")],
      ["Data date", p.data_date],
    ];
    // The reviewed query behind the figures: GET it with a caller's key (the API's link).
    if (p.link) rows.push(["Reviewed query", p.link]);
    const dl = $("provenance-fields");
    dl.replaceChildren();
    for (const [name, value] of rows) dl.append(el("dt", {}, name), el("dd", {}, String(value)));
    $("provenance-sql").textContent = p.sql || "";
    const table = $("figures");
    table.querySelector("thead").replaceChildren();
    table.querySelector("tbody").replaceChildren();
    if (figures && Array.isArray(figures.columns)) {
      const head = el("tr");
      for (const c of figures.columns) {
        head.append(el("th", {}, (c.label || c.name) + (c.unit ? " (" + c.unit + ")" : "")));
      }
      table.querySelector("thead").append(head);
      for (const row of figures.rows || []) {
        table.querySelector("tbody").append(el("tr", {}, ...row.map((v) => el("td", {}, String(v)))));
      }
    }
    // Folded when the answer's text already shows them as a table; open when it does not.
    const block = $("figures-block");
    block.hidden = !(figures && Array.isArray(figures.columns));
    block.open = $("answer-text").querySelector("table") === null;
  }

  function renderNeedsParameter(n) {
    const box = $("needs-parameter");
    box.replaceChildren();
    if (Array.isArray(n.missing) && n.missing.length > 0) {
      box.append(el("p", {}, "Query " + n.query_id + " needs: " + n.missing.join(", ") + "."));
    }
    for (const [name, why] of Object.entries(n.invalid || {})) {
      box.append(el("p", {}, name + ": " + why));
    }
    show("needs-parameter", true);
  }

  // An HTTP error (application/problem+json): said in words, never as an empty answer.
  function renderProblem(status, data) {
    resetAnswer();
    const code = data && data.code;
    const message = (data && (data.message || data.detail)) || "";
    if (status === 401) {
      setStatus("unauthorized", "Not authorised", message || "The API key is missing or invalid.");
    } else if (status === 403 && code === "label_above_ceiling") {
      setStatus("label_refused", "Label refused", message);
    } else if (status === 403) {
      setStatus("label_refused", "Refused", message);
    } else if (status === 429 || (status === 503 && code === "busy")) {
      setStatus("busy", "Busy", message || "The server is at its limit: ask again shortly.");
    } else if (status === 413) {
      setStatus("error", "Request too large", message);
    } else if (status === 422) {
      setStatus("error", "Request refused", message);
    } else {
      setStatus("error", "Error " + status, message || "The server could not answer.");
    }
    const problems = (data && Array.isArray(data.problems) && data.problems) || [];
    if (problems.length > 0) {
      const list = $("problems").querySelector("ul");
      list.replaceChildren(
        ...problems.map((p) => {
          const where = p.field || p.where;
          const text = (where ? where + ": " : "") + (p.message || "") + (p.hint ? " -> " + p.hint : "");
          return el("li", {}, text);
        }),
      );
      show("problems", true);
    }
  }

  function labelsOf(text) {
    return text
      .split(/[,\s]+/)
      .map((s) => s.trim())
      .filter((s) => s !== "");
  }

  async function ask(event) {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question) return;
    const body = { question };
    const labels = labelsOf($("labels").value);
    if (labels.length > 0) body.labels = labels; // none: the workspace's default labels
    const channel = $("channel").value.trim();
    if (channel) body.channel = channel;
    const button = $("ask-button");
    button.disabled = true;
    button.textContent = "Asking…";
    try {
      const response = await api("POST", "/v1/ask", body);
      if (response.ok && response.data && response.data.status) renderAnswer(response.data);
      else renderProblem(response.status, response.data);
    } catch (err) {
      resetAnswer();
      setStatus("error", "Server unreachable", String(err));
    } finally {
      button.disabled = false;
      button.textContent = "Ask";
    }
  }

  // ------------------------------------------------------------------ deep-analysis jobs

  let jobsTimer = null;
  const ACTIVE = new Set(["queued", "running"]);

  function jobsMessage(text, isError) {
    const p = $("jobs-message");
    p.textContent = text;
    p.className = "jobs-message" + (isError ? " error" : "");
    p.hidden = false;
  }

  function plural(n, one, many) {
    return n + " " + (n === 1 ? one : many);
  }

  // A job's progress as the worker reports it (`usage`: model turns, tool calls, seconds).
  function progressOf(job) {
    if (job.status === "queued") return "waiting for a worker";
    const usage = job.usage || {};
    const parts = [];
    if (typeof usage.turns === "number") parts.push(plural(usage.turns, "model turn", "model turns"));
    if (typeof usage.tool_calls === "number") {
      parts.push(plural(usage.tool_calls, "tool call", "tool calls"));
    }
    if (typeof usage.seconds === "number") parts.push(Math.round(usage.seconds) + " s");
    let text = parts.join(", ") || (job.status === "running" ? "started" : "-");
    if (job.cancel_requested && job.status === "running") text += " (cancel requested)";
    return text;
  }

  function jobOutcome(job) {
    if (job.status === "failed" || job.status === "cancelled") {
      const why = [job.error_code, job.error].filter(Boolean).join(": ");
      return why ? el("div", { className: "job-error" }, why) : null;
    }
    if ((job.status === "completed" || job.status === "partial") && job.result) {
      const text = typeof job.result.answer === "string"
        ? job.result.answer
        : JSON.stringify(job.result, null, 2);
      const details = el("details", {}, el("summary", {}, "Result"), el("pre", {}, text));
      // Each figure taken from the analytics store, with the date its data were taken on.
      const dated = (job.result.figures && job.result.figures.dated) || [];
      if (dated.length > 0) {
        details.appendChild(el("ul", { className: "job-dates" }, ...dated.map((d) =>
          el("li", { className: "job-dated" }, datedLine(d)))));
      }
      if (job.status !== "partial") return details;
      // A partial answer says first what it could not reach.
      const mark = el("div", { className: "job-gap" },
        "Partial (" + (job.error_code || "gap") + "): " + (job.error || ""));
      return el("div", {}, mark, details);
    }
    return null;
  }

  function datedLine(d) {
    const from = d.kind === "catalog_query" ? "query " + d.query_id : "SQL";
    return d.figure + ": " + from + ", data as of " + d.data_date;
  }

  function renderJobs(jobs) {
    const tbody = $("jobs").querySelector("tbody");
    tbody.replaceChildren();
    if (jobs.length === 0) {
      jobsMessage("No deep-analysis job yet.", false);
      show("jobs", false);
      return;
    }
    $("jobs-message").hidden = true;
    for (const job of jobs) {
      const cancellable = ACTIVE.has(job.status) && !job.cancel_requested;
      const cancel = cancellable
        ? el("button", { type: "button", className: "secondary job-cancel" }, "Cancel")
        : null;
      if (cancel) {
        cancel.addEventListener("click", guarded(() => cancelJob(job.id), jobsMessage,
          "the job was not cancelled"));
      }
      tbody.append(
        el("tr", { className: "job", "data-job": job.id },
          el("td", { className: "job-id" }, job.id),
          el("td", {}, el("span", { className: "job-status job-" + job.status }, job.status)),
          el("td", { className: "job-progress" }, progressOf(job)),
          el("td", {}, job.question || "", jobOutcome(job)),
          el("td", {}, cancel)),
      );
    }
    show("jobs", true);
  }

  async function loadJobs() {
    clearTimeout(jobsTimer);
    let response;
    try {
      response = await api("GET", "/v1/jobs");
    } catch (err) {
      jobsMessage("Server unreachable: " + err, true);
      return;
    }
    if (response.status === 404 || response.status === 405) {
      jobsMessage("Deep analysis is not available on this server.", false);
      $("job-button").disabled = true;
      show("jobs", false);
      return;
    }
    if (response.status === 401) {
      jobsMessage("Not authorised: enter a valid API key to see your jobs.", true);
      show("jobs", false);
      return;
    }
    if (!response.ok) {
      const message = (response.data && response.data.message) || "";
      jobsMessage("The jobs could not be listed (" + response.status + "): " + message, true);
      return;
    }
    const data = response.data;
    const jobs = Array.isArray(data) ? data : (data && data.jobs) || [];
    renderJobs(jobs);
    if (jobs.some((j) => ACTIVE.has(j.status))) jobsTimer = setTimeout(loadJobs, 2000);
  }

  async function submitJob(event) {
    event.preventDefault();
    const question = $("job-question").value.trim();
    if (!question) return;
    const body = { question };
    const labels = labelsOf($("labels").value);
    if (labels.length > 0) body.labels = labels;
    const channel = $("channel").value.trim();
    if (channel) body.channel = channel;
    const response = await api("POST", "/v1/jobs", body);
    if (response.status === 404 || response.status === 405) {
      jobsMessage("Deep analysis is not available on this server.", false);
      $("job-button").disabled = true;
      return;
    }
    if (!response.ok) {
      const d = response.data || {};
      jobsMessage("The job was refused (" + response.status + "): " + (d.message || ""), true);
      return;
    }
    $("job-question").value = "";
    await loadJobs();
  }

  async function cancelJob(id) {
    const response = await api("POST", "/v1/jobs/" + encodeURIComponent(id) + "/cancel");
    await loadJobs();
    if (!response.ok) {
      const d = response.data || {};
      jobsMessage("The job could not be cancelled (" + response.status + "): " + (d.message || ""), true);
    }
  }

  // ------------------------------------------------------------------ question→SQL sessions

  // The session shown, and the ledger position it was read at: every write sends it as
  // `base`, so a write made on a stale view is refused (409 ledger_conflict), never applied.
  let sessionId = null;
  let sessionBase = 0;
  // A write that got no answer may or may not have reached the ledger.
  const UNANSWERED =
    "no answer came; open the session again once the server is back to see what was recorded";

  function sessionPath(verb) {
    return "/v1/sessions/" + encodeURIComponent(sessionId) + (verb ? "/" + verb : "");
  }

  function sessionsMessage(text, isError) {
    const p = $("sessions-message");
    p.textContent = text;
    p.className = "jobs-message" + (isError ? " error" : "");
    p.hidden = false;
  }

  function sessionMessage(text, isError) {
    const p = $("session-message");
    p.textContent = text;
    p.className = "session-message" + (isError ? " error" : "");
    p.hidden = false;
  }

  // A refusal in words: the first problem's own code says what to fix ("bad_request" alone
  // would not), then every problem's message.
  function refusal(response) {
    const d = response.data || {};
    const problems = Array.isArray(d.problems) ? d.problems : [];
    const code = (problems[0] && problems[0].code) || d.code || response.status;
    const messages = problems.map((p) => (p.field ? p.field + ": " : "") + p.message);
    return code + "): " + (messages.join("; ") || d.message || "");
  }

  async function loadSessions() {
    let response;
    try {
      response = await api("GET", "/v1/sessions");
    } catch (err) {
      sessionsMessage("Server unreachable: " + err, true);
      return;
    }
    if (response.status === 401) {
      sessionsMessage("Not authorised: enter a valid API key to see your sessions.", true);
      show("sessions", false);
      return;
    }
    if (!response.ok) {
      sessionsMessage("The sessions could not be listed (" + refusal(response), true);
      show("sessions", false);
      return;
    }
    const sessions = response.data.sessions || [];
    const tbody = $("sessions").querySelector("tbody");
    tbody.replaceChildren();
    if (sessions.length === 0) {
      sessionsMessage("No session yet.", false);
      show("sessions", false);
      return;
    }
    $("sessions-message").hidden = true;
    for (const s of sessions.slice().reverse()) {
      const open = el("button", { type: "button", className: "secondary session-open" }, "Open");
      open.addEventListener("click", guarded(() => openSession(s.id), sessionsMessage,
        "the session " + s.id + " could not be opened"));
      tbody.append(el("tr", { className: "session", "data-session": s.id },
        el("td", { className: "job-id" }, s.id),
        el("td", {}, s.question || ""),
        el("td", {}, String(s.decisions)),
        el("td", {}, open)));
    }
    show("sessions", true);
  }

  async function newSession(event) {
    event.preventDefault();
    const question = $("session-question").value.trim();
    if (!question) return;
    const response = await api("POST", "/v1/sessions", { question });
    if (!response.ok) {
      sessionsMessage("The session was refused (" + refusal(response), true);
      return;
    }
    $("session-question").value = "";
    await loadSessions();
    await openSession(response.data.session);
  }

  function decisionText(e) {
    return e.type + ": " + e.subject + (e.detail ? " — " + e.detail : "") +
      (e.rationale ? " (" + e.rationale + ")" : "");
  }

  // The ledger's decisions in order: the effective ones as they are, the withdrawn ones
  // struck through and said to be withdrawn (by which entry and why). Receipts and runs have
  // their own lists below.
  function renderTimeline(view) {
    const withdrawn = new Map((view.withdrawn || []).map((w) => [w.seq, w]));
    const effective = new Set((view.effective || []).map((e) => e.seq));
    const list = $("session-timeline");
    list.replaceChildren();
    const shown = (view.entries || []).filter(
      (e) => e.type !== "evidence_receipt" && e.type !== "sql_run");
    for (const e of shown) {
      const w = withdrawn.get(e.seq);
      list.append(el("li", {
        className: "decision" + (w ? " withdrawn" : ""), "data-seq": String(e.seq),
      },
        el("span", { className: "decision-seq" }, "#" + e.seq),
        el("span", { className: "decision-stage" }, e.stage),
        el("span", { className: "decision-text" }, decisionText(e)),
        w ? el("span", { className: "withdrawn-note" },
          "withdrawn (" + w.reason + " by #" + w.by + ")") : retractButton(e, effective)));
    }
    if (shown.length === 0) list.append(el("li", { className: "hint" }, "No decision yet."));
  }

  // Only an effective decision (the server's list) offers Retract; the server still decides.
  function retractButton(e, effective) {
    if (!effective.has(e.seq)) return null;
    const button = el("button", { type: "button", className: "secondary session-open" }, "Retract");
    button.addEventListener("click", guarded(() => retract(e.seq), sessionMessage, UNANSWERED));
    return button;
  }

  async function retract(seq) {
    const rationale = $("decide-rationale").value.trim();
    if (!rationale) {
      sessionMessage("Write the rationale of the retraction first.", false);
      return;
    }
    const done = await sessionWrite("retract", { seq, rationale });
    if (done === null) return;
    $("decide-rationale").value = "";
    await reloadSession();
    sessionMessage("Decision #" + seq + " withdrawn by #" + done.entry.seq + ".", false);
  }

  // Consult the stage typed above: the Evidence found is shown, each unit with an anchor the
  // receipts link to, and the receipt enters the ledger.
  async function consult() {
    const stage = $("decide-stage").value.trim();
    const done = await sessionWrite("consult", { stage });
    if (done === null) return;
    const list = $("session-consulted");
    list.replaceChildren();
    for (const r of done.results || []) {
      const excerpt = (r.excerpts && r.excerpts[0]) || "";
      list.append(el("li", { className: "unit", id: "unit-" + r.evidence_id },
        el("strong", {}, r.title || r.evidence_id), " (" + r.kind + ", " + r.evidence_id + ")",
        el("div", { className: "hint" }, excerpt)));
    }
    if ((done.results || []).length === 0) {
      list.append(el("li", { className: "hint" }, "The search found no unit for " + stage + "."));
    }
    await reloadSession();
    sessionMessage("Consulted " + stage + ": receipt #" + done.receipt_seq + ", " +
      (done.results || []).length + " units.", false);
  }

  async function decide(event) {
    event.preventDefault();
    const body = {
      stage: $("decide-stage").value.trim(),
      type: $("decide-type").value.trim(),
      subject: $("decide-subject").value.trim(),
      detail: $("decide-detail").value,
      rationale: $("decide-rationale").value.trim(),
    };
    const done = await sessionWrite("decisions", body);
    if (done === null) return;
    for (const id of ["decide-subject", "decide-detail", "decide-rationale"]) $(id).value = "";
    await reloadSession();
    sessionMessage("Recorded #" + done.entry.seq + ": " + decisionText(done.entry) + ".", false);
  }

  // Reopen a stage (a closed session opens again) or roll back to it (the later stages'
  // decisions withdrawn): the stage and rationale typed above, the server judges.
  async function changeStage(verb, said) {
    const stage = $("decide-stage").value.trim();
    const rationale = $("decide-rationale").value.trim();
    if (!rationale) {
      sessionMessage("Write the rationale first.", false);
      return;
    }
    const done = await sessionWrite(verb, { stage, rationale });
    if (done === null) return;
    $("decide-rationale").value = "";
    await reloadSession();
    sessionMessage(said + " " + stage + ": #" + done.entry.seq + ".", false);
  }

  // Each Evidence receipt: the stage's search, the generation and revision it read, and the
  // units it cites, each by its id — a link that opens the unit (GET /v1/evidence/units/{id}).
  function renderReceipts(view) {
    const list = $("session-receipts");
    list.replaceChildren();
    for (const e of view.receipts || []) {
      const r = e.receipt || {};
      const units = (r.evidence_ids || []).map((id) => {
        const link = el("a", { className: "unit-link", "data-unit": id, href: "#unit-view" }, id);
        link.addEventListener("click", guarded((event) => {
          event.preventDefault();
          return openUnit(id);
        }, sessionMessage, "the unit " + id + " could not be opened"));
        return link;
      });
      list.append(el("li", { className: "receipt", "data-seq": String(e.seq) },
        "#" + e.seq + " " + e.stage + " (" + (r.purpose || e.subject) + ") — generation " +
        (r.generation || "-") + " @ " + String(r.revision || "").slice(0, 12) + ": ",
        ...(units.length ? units : ["no unit found"])));
    }
    if ((view.receipts || []).length === 0) {
      list.append(el("li", { className: "hint" }, "No Evidence consulted yet."));
    }
  }

  // One unit as the active generation publishes it: title, kind, body, caveats, provenance,
  // all as text. A unit no longer published (a newer generation) is said to be so.
  async function openUnit(id) {
    const response = await api("GET", "/v1/evidence/units/" + encodeURIComponent(id));
    show("unit-view", true);
    const message = $("unit-message");
    if (!response.ok) {
      for (const part of ["unit-title", "unit-where", "unit-body", "unit-provenance"]) {
        $(part).textContent = "";
      }
      $("unit-caveats").replaceChildren();
      message.textContent = "The unit " + id + " could not be opened (" + refusal(response);
      message.className = "session-message error";
      message.hidden = false;
      return;
    }
    message.hidden = true;
    const u = response.data;
    $("unit-title").textContent = u.title;
    $("unit-where").textContent = u.evidence_id + " (" + u.kind + ") — " + u.document +
      ", generation " + u.generation + " @ " + String(u.revision).slice(0, 12);
    $("unit-body").textContent = u.body || (u.excerpts || []).join("\n\n");
    $("unit-caveats").replaceChildren(...(u.caveats || []).map((c) => el("li", {}, c)));
    const p = u.provenance || {};
    $("unit-provenance").textContent = "Source: evidence/" + p.source_file +
      (p.supporting_excerpts && p.supporting_excerpts.length
        ? " — " + p.supporting_excerpts.map((x) => "“" + x + "”").join(" ") : "");
    $("unit-view").scrollIntoView();
  }

  function approvedSql(view) {
    const approved = (view.effective || []).filter((e) => e.type === "final_sql_approved");
    return approved.length ? approved[approved.length - 1] : null;
  }

  function renderRuns(view) {
    const list = $("session-runs");
    list.replaceChildren();
    for (const e of view.runs || []) {
      const r = e.run || {};
      const what = r.status === "succeeded"
        ? r.row_count + " rows" + (r.truncated ? " (truncated at " + r.row_limit + ")" : "") +
          ", columns " + (r.columns || []).join(", ") + ", " + Math.round(r.duration_ms) + " ms"
        : (r.code || "") + ": " + (r.reason || "");
      list.append(el("li", { className: "run", "data-seq": String(e.seq) },
        "Run #" + e.seq + " of decision #" + r.final_sql_seq + ": ",
        el("span", { className: "run-" + r.status }, r.status), " — " + what));
    }
  }

  async function openSession(id) {
    sessionId = id;
    $("session-message").hidden = true;
    $("session-consulted").replaceChildren();
    $("session-checks").replaceChildren();
    $("session-rows").replaceChildren();
    show("unit-view", false);
    await reloadSession();
  }

  async function reloadSession() {
    const response = await api("GET", sessionPath(""));
    if (!response.ok) {
      show("session-view", true);
      sessionMessage("The session could not be read (" + refusal(response), true);
      return;
    }
    const view = response.data;
    sessionBase = view.position;
    $("session-title").textContent = view.session.question;
    $("session-where").textContent = view.session.id + " — ledger position " + view.position;
    renderTimeline(view);
    renderReceipts(view);
    const sql = approvedSql(view);
    $("session-sql").textContent = sql ? sql.detail : "No final SQL approved yet.";
    $("sql-run").disabled = sql === null;
    $("sql-check").disabled = sql === null; // nothing to check: the text says so
    renderRuns(view);
    show("session-view", true);
    await Promise.all([loadProposals(), loadChecklist(), loadSummary()]);
  }

  // A write: POST the body with the base this view was read at. A stale base is refused
  // with 409 ledger_conflict: say so, then show the session as it is now.
  async function sessionWrite(verb, body) {
    const response = await api("POST", sessionPath(verb), { base: sessionBase, ...body });
    if (response.status === 409 && response.data && response.data.code === "ledger_conflict") {
      await reloadSession();
      sessionMessage("Not written: the session changed since you read it (now at position " +
        response.data.position + "). It has been reloaded: check it and try again.", true);
      return null;
    }
    if (!response.ok) {
      sessionMessage("Refused (" + refusal(response), true);
      return null;
    }
    return response.data;
  }

  async function checkSql() {
    const sql = $("session-sql").textContent;
    const response = await api("POST", sessionPath("sql/check"), { sql });
    const line = response.ok
      ? el("li", { className: "check" }, el("span", { className: "run-succeeded" }, "accepted"),
        " — one read-only statement " + response.data.dialect + "'s EXPLAIN accepts")
      : el("li", { className: "check" }, el("span", { className: "run-failed" }, "refused"),
        " (" + refusal(response));
    $("session-checks").replaceChildren(line);
  }

  async function runSql() {
    const labels = labelsOf($("session-run-labels").value);
    const body = labels.length ? { labels } : {};
    const done = await sessionWrite("sql/run", body);
    if (done === null) return;
    await reloadSession();
    const rows = $("session-rows");
    rows.replaceChildren();
    if (Array.isArray(done.columns) && Array.isArray(done.rows)) {
      const table = el("table", { className: "answer-table" },
        el("thead", {}, el("tr", {}, ...done.columns.map((c) => el("th", {}, String(c))))),
        el("tbody", {}, ...done.rows.map((row) =>
          el("tr", {}, ...row.map((v) => el("td", {}, v === null ? "" : String(v)))))));
      rows.append(table);
    }
  }

  async function loadProposals() {
    const list = $("session-proposals");
    list.replaceChildren();
    const response = await api("GET", sessionPath("proposals"));
    if (!response.ok) {
      list.append(el("li", { className: "hint" }, "Not available (" + refusal(response)));
      $("proposals-choose").disabled = true;
      return;
    }
    const results = response.data.results || [];
    for (const m of results) {
      const box = el("input", { type: "checkbox", value: m.memory_id, id: "mem-" + m.memory_id });
      list.append(el("li", { className: "proposal" }, box,
        el("label", { for: "mem-" + m.memory_id },
          m.subject + (m.detail ? " — " + m.detail : "") + " (" + m.memory_id + ", from " +
          m.session_id + ")")));
    }
    if (results.length === 0) list.append(el("li", { className: "hint" }, "No memory proposed."));
    $("proposals-choose").disabled = results.length === 0;
  }

  // F2: the ticked memories in one request, all checked by the server before the first applies.
  async function chooseMemories(event) {
    event.preventDefault();
    const ids = [...$("session-proposals").querySelectorAll("input:checked")].map((b) => b.value);
    if (ids.length === 0) {
      sessionMessage("Tick the memories to choose first.", false);
      return;
    }
    const done = await sessionWrite("memories", { memory_ids: ids });
    if (done === null) return;
    await reloadSession();
    sessionMessage("Chosen: " + done.chosen.map((c) => c.memory_id).join(", ") + ".", false);
  }

  async function loadChecklist() {
    const list = $("session-checklist");
    list.replaceChildren();
    const response = await api("GET", sessionPath("checklist"));
    if (!response.ok) {
      list.append(el("li", { className: "hint" }, "Not available (" + refusal(response)));
      $("checklist-confirm").disabled = true;
      return;
    }
    const candidates = response.data.candidates || [];
    for (const c of candidates) {
      const select = el("select", { "data-seq": String(c.seq), "aria-label": "seq " + c.seq },
        el("option", { value: "promote" }, "promote"),
        el("option", { value: "decline" }, "decline"));
      select.value = c.preselected;
      list.append(el("li", { className: "candidate" },
        "#" + c.seq + " " + c.subject + (c.detail ? " — " + c.detail : ""), select,
        c.near_duplicates && c.near_duplicates.length
          ? el("span", { className: "hint" }, " (a near-duplicate memory exists)") : null));
    }
    if (candidates.length === 0) {
      list.append(el("li", { className: "hint" }, "Nothing to promote or decline."));
    }
    $("checklist-confirm").disabled = candidates.length === 0;
  }

  // F8: every candidate with its action (preselected, or as edited) in one request.
  async function confirmChecklist(event) {
    event.preventDefault();
    const items = [...$("session-checklist").querySelectorAll("select")].map((s) => ({
      seq: Number(s.dataset.seq), action: s.value,
    }));
    const done = await sessionWrite("checklist", { items });
    if (done === null) return;
    await reloadSession();
    sessionMessage("Checklist confirmed: " + done.saved.length + " promoted, " +
      done.declined.length + " declined" + (done.closed ? "; the session is closed." : "."), false);
  }

  // The summary is Markdown from the ledger: shown as text, never parsed into HTML.
  async function loadSummary() {
    let response;
    try {
      response = await fetch(sessionPath("summary"), {
        headers: apiKey() ? { Authorization: "Bearer " + apiKey() } : {},
      });
    } catch (err) {
      throw unreachable(err);
    }
    $("session-summary").textContent = response.ok
      ? await response.text()
      : "The summary could not be read (" + response.status + ").";
  }

  // ------------------------------------------------------------------ knowledge gaps

  function gapsMessage(text, isError) {
    const p = $("gaps-message");
    p.textContent = text;
    p.className = "jobs-message" + (isError ? " error" : "");
    p.hidden = false;
  }

  // The open gaps GET /v1/gaps returns to this caller (a curator's: every session's). Turning
  // one into a source note is a curator's CLI step: the command is shown, not run.
  // The list is replaced only once the answer is in: emptied before, the page would shrink
  // under a click on the sessions above it.
  async function loadGaps() {
    const list = $("gaps");
    let response;
    try {
      response = await api("GET", "/v1/gaps");
    } catch (err) {
      gapsMessage("Server unreachable: " + err, true);
      return;
    }
    if (!response.ok) {
      list.replaceChildren();
      gapsMessage("The gaps could not be listed (" + refusal(response), true);
      return;
    }
    const gaps = response.data.gaps || [];
    if (gaps.length === 0) {
      list.replaceChildren();
      gapsMessage("No open knowledge gap.", false);
      return;
    }
    $("gaps-message").hidden = true;
    list.replaceChildren(...gaps.map((g) =>
      el("li", { className: "gap", "data-gap": g.id },
        el("span", { className: "gap-when" }, g.at), " ",
        el("span", { className: "job-id" }, g.session), " ",
        el("span", { className: "decision-stage" }, g.stage), " ",
        el("strong", { className: "gap-subject" }, g.subject),
        g.detail ? el("span", { className: "gap-detail" }, " — " + g.detail) : null,
        g.receipt_seq !== null && g.receipt_seq !== undefined
          ? el("span", { className: "hint" }, " (receipt #" + g.receipt_seq + " found nothing)")
          : null,
        el("div", {}, el("code", { className: "gap-command" },
          "tht evidence gaps --to-source " + g.id)))));
  }

  // ------------------------------------------------------------------ wiring

  function start() {
    const input = $("api-key");
    input.value = sessionStorage.getItem(KEY_STORE) || "";
    input.addEventListener("change", () => {
      sessionStorage.setItem(KEY_STORE, apiKey());
      loadJobs();
      loadSessions();
      loadGaps();
    });
    $("ask-form").addEventListener("submit", ask);
    $("feedback-form").addEventListener("submit", sendFeedback);
    $("job-form").addEventListener("submit", guarded(submitJob, jobsMessage,
      "the job was not queued, or its answer was lost: refresh the list once the server is back"));
    $("jobs-refresh").addEventListener("click", loadJobs);
    $("session-form").addEventListener("submit", guarded(newSession, sessionsMessage,
      "no session was opened; refresh the list once the server is back"));
    $("sessions-refresh").addEventListener("click", loadSessions);
    const inSession = (handler) => guarded(handler, sessionMessage, UNANSWERED);
    $("decide-form").addEventListener("submit", inSession(decide));
    $("consult-button").addEventListener("click", inSession(consult));
    $("reopen-button").addEventListener("click",
      inSession(() => changeStage("reopen", "Reopened")));
    $("rollback-button").addEventListener("click",
      inSession(() => changeStage("rollback", "Rolled back to")));
    $("sql-check").addEventListener("click",
      guarded(checkSql, sessionMessage, "the SQL was not checked"));
    $("sql-run").addEventListener("click", inSession(runSql));
    $("proposals-form").addEventListener("submit", inSession(chooseMemories));
    $("checklist-form").addEventListener("submit", inSession(confirmChecklist));
    $("gaps-refresh").addEventListener("click", loadGaps);
    loadJobs();
    loadSessions();
    loadGaps();
  }

  start();
})();
