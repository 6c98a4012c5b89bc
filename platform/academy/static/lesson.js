// Lesson pages: arrow-key paging, and on exercise steps the editor, drafts, submitting and the verdict.
// All text from the server is inserted with textContent, never as HTML, except solution.md's HTML,
// which the server renders and sanitises like every lesson card, and the solution's code, which the server
// highlights (Pygments escapes it) like a card's code.
"use strict";

(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  // ← and → page through the lesson, except while typing in the editor or a form field.
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    if (event.target.closest(".cm-editor, input, textarea, select, [contenteditable]")) return;
    // Right-to-left pages (Arabic) read from right to left: → goes back, ← goes on.
    const rtl = document.documentElement.dir === "rtl";
    const link = (rtl ? { ArrowLeft: "next", ArrowRight: "prev" } : { ArrowLeft: "prev", ArrowRight: "next" })[event.key];
    const target = link && document.getElementById(link);
    if (target) { event.preventDefault(); window.location.href = target.href; }
  });

  // After answering a quiz question the page comes back at that question: focus its verdict there.
  const answered = window.location.hash.startsWith("#q-") &&
    document.getElementById("verdict-" + window.location.hash.slice(3));
  if (answered) {
    answered.focus();
    // Again once the page has loaded and scrolled to the question, which may otherwise take the focus back.
    window.addEventListener("load", () => { if (document.activeElement !== answered) answered.focus(); });
  }

  // The page's language: lesson.js's own messages, translated by the server (i18n.JS_MESSAGES); English as is.
  const uiNode = document.getElementById("ui-text");
  const TEXT = uiNode ? JSON.parse(uiNode.textContent) : {};
  const phrasesNode = document.getElementById("editor-phrases");  // CodeMirror's own (i18n.EDITOR_PHRASES)
  const T = (message, values) => (TEXT[message] || message)
    .replace(/%\((\w+)\)s/g, (all, name) => (values && name in values ? String(values[name]) : all));
  // The same, as nodes, where a value is a node of its own (a check's title isolated in <bdi>).
  const nodesT = (message, values) => (TEXT[message] || message).split(/(%\(\w+\)s)/).map((part) => {
    const name = /^%\((\w+)\)s$/.exec(part);
    const value = name && values && name[1] in values ? values[name[1]] : part;
    return value instanceof Node ? value : document.createTextNode(String(value));
  });

  const dataNode = document.getElementById("exercise-data");
  if (!dataNode) return;
  const data = JSON.parse(dataNode.textContent);
  const resultBox = document.getElementById("result");
  const submitButton = document.getElementById("submit-code");
  const runButton = document.getElementById("run-code");
  const draftState = document.getElementById("draft-state");
  // One job at a time per learner (the server refuses a second with a 429): while a submission is graded or a
  // Run runs, Submit and Run are disabled, visibly, with the reason beside them, rather than ignore a click.
  // Not queued: the code the learner would have queued may change before its turn, and the job ahead can take
  // up to its time limit.
  const busyReason = document.getElementById("busy-reason");
  function busy(reason) {
    submitButton.disabled = runButton.disabled = !!reason;
    if (!busyReason) return;
    busyReason.textContent = reason || "";
    busyReason.hidden = !reason;
    for (const button of [submitButton, runButton]) {  // the reason is the disabled button's description
      if (reason) button.setAttribute("aria-describedby", "busy-reason");
      else button.removeAttribute("aria-describedby");
    }
  }
  const GRADING = T("Run and Submit wait until this submission's verdict arrives.");
  const RUNNING = T("Run and Submit wait until this Run ends.");
  // A refused Submit or Run (too many, one still waiting, offline): said at the top of its panel, above the
  // verdict or Run the learner was reading there, which stays as it was.
  function refused(box, text) {
    clearRefusals();
    const note = el("p", "flash error refusal", text);
    note.setAttribute("role", "alert");
    box.prepend(note);
    box.hidden = false;
  }
  function clearRefusals() {
    for (const note of document.querySelectorAll("#result > .refusal, #run-output > .refusal")) note.remove();
  }

  // The API answers its errors in the language Accept-Language names (else English): this page's, whatever
  // the browser's own setting.
  const language = document.documentElement.lang || "en";
  // Numbers and dates in the page's language, not the browser's ("0,8 s" on an Italian page). Arabic pages keep
  // Western digits, as every number the server writes on them does.
  const locale = language === "ar" ? "ar-u-nu-latn" : language;
  const oneDecimal = new Intl.NumberFormat(locale, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  const upToOneDecimal = new Intl.NumberFormat(locale, { maximumFractionDigits: 1 });
  const percent = new Intl.NumberFormat(locale, { style: "percent", maximumFractionDigits: 0 });
  const dateTime = new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "short" });
  const timeOnly = new Intl.DateTimeFormat(locale, { timeStyle: "short" });
  const seconds = (s) => oneDecimal.format(s);
  // Today's times without the date; older ones with it.
  function when(date) {
    return date.toDateString() === new Date().toDateString() ? timeOnly.format(date) : dateTime.format(date);
  }
  // The grader names the device in English: its one fixed wording is translated; a GPU's name stays as it is.
  // "cpu" alone where the run used no CUDA emulation (grader/learner/emulation.py).
  const DEVICE_WORDS = { "cpu (cuda emulated)": T("cpu (cuda emulated)"), cpu: T("cpu") };
  const deviceName = (device) => DEVICE_WORDS[device] || device;
  // A refused Run or Submit's message, and for a 429 (too many, or one still waiting) how long to wait: the
  // API's `retry_after`, else its Retry-After header, in whole seconds.
  function refusal(response, body, fallback) {
    const message = body.error || fallback;
    if (response.status !== 429) return message;
    const wait = Number(body.retry_after) || Number(response.headers.get("Retry-After"));
    if (!(wait > 0)) return message;
    return message + " " + T("Try again in %(seconds)s s.", { seconds: upToOneDecimal.format(wait) });
  }
  function api(method, url, body, extra) {
    return fetch(url, Object.assign({
      method,
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, Accept: "application/json",
        "Accept-Language": language },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    }, extra || {}));
  }

  // Drafts: saved on the server shortly after each change, and on leaving the page. A visitor without
  // an account yet (public lessons) keeps them in this browser (localStorage) until their first Run or
  // Submit makes them a guest; then the draft moves to the server.
  const localKey = "dla-draft:" + data.exercise;
  const localKeyAt = "dla-draft-at:" + data.exercise;  // when it was kept, for the restored draft's label
  function localDraft() {
    try { return window.localStorage.getItem(localKey); } catch (e) { return null; }
  }
  function localDraftAt() {
    try { return window.localStorage.getItem(localKeyAt); } catch (e) { return null; }
  }
  function forgetLocalDraft() {
    try {
      window.localStorage.removeItem(localKey);
      window.localStorage.removeItem(localKeyAt);
    } catch (e) { /* storage off: nothing kept */ }
  }
  let draftTimer = null;
  let draftDirty = false;
  // `quiet`: a success leaves draftState as it is (the restored draft's label, see labelRestoredDraft).
  function saveDraft(keepalive, quiet) {
    if (!draftDirty) return;
    draftDirty = false;
    clearTimeout(draftTimer);
    if (data.visitor) {
      try {
        window.localStorage.setItem(localKey, editor.getCode());
        window.localStorage.setItem(localKeyAt, new Date().toISOString());
        draftState.textContent = T("Draft kept in this browser");
      } catch (e) { draftState.textContent = T("Draft not kept (this browser blocks storage)"); }
      return;
    }
    if (!quiet) draftState.textContent = T("Saving draft…");
    api("PUT", "/api/drafts/" + data.exercise, { code: editor.getCode() }, { keepalive: !!keepalive })
      .then((r) => {
        if (!r.ok || !quiet) {
          draftState.textContent = r.ok ? T("Draft saved") : T("Draft not saved (%(status)s)", { status: r.status });
        }
        if (r.ok) forgetLocalDraft();
        // Refused (a quota, a limit): say why, in the server's words; the editor keeps the text.
        else r.json().then((body) => { if (body && body.error) draftState.textContent = body.error; }, () => {});
      })
      .catch(() => { draftState.textContent = T("Draft not saved (offline?)"); draftDirty = true; });
  }
  // The first action that needs a learner made this visitor a guest: from now on drafts go to the server.
  function becameLearner() {
    if (!data.visitor) return;
    data.visitor = false;
    draftDirty = true;
    saveDraft();
    refreshAccount();
  }
  // The header's account links, as the server renders them for this browser now (a guest's name and "Save
  // progress" instead of Sign in / Sign up), swapped in without a reload.
  function refreshAccount() {
    const account = document.getElementById("account");
    if (!account || !account.dataset.refresh) return;
    fetch(account.dataset.refresh, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then((r) => (r.ok ? r.text() : null))
      .then((html) => {
        if (html === null) return;
        const parsed = new DOMParser().parseFromString(html, "text/html");
        account.replaceChildren(...parsed.body.childNodes);
      })
      .catch(() => { /* the next page load shows it */ });
  }
  const kept = localDraft();
  const adopt = kept !== null && (data.visitor || !data.has_draft);
  const keptAt = adopt ? localDraftAt() : data.draft_saved_at;
  if (adopt) data.code = kept;

  const editor = window.AcademyEditor.create(document.getElementById("editor"), {
    doc: data.code,
    label: T("Code editor: your %(name)s solution", { name: data.exercise.split("/").pop() }),
    describedBy: "editor-help",
    phrases: phrasesNode ? JSON.parse(phrasesNode.textContent) : {},
    onSubmit: () => submit(),
    onChange: () => {
      draftDirty = true;
      clearTimeout(draftTimer);
      draftTimer = setTimeout(saveDraft, 700);
    },
  });
  window.academyEditor = editor; // for scripts and browser tests
  // The editor's text is a contenteditable, in the tab order already; an explicit tabindex says so to checkers
  // that count only tabindex and native controls (axe's scrollable-region-focusable flagged the phone's editor,
  // which scrolls inside). CodeMirror leaves attributes it did not set alone.
  const editorText = document.querySelector("#editor .cm-content");
  if (editorText) editorText.tabIndex = 0;
  window.addEventListener("pagehide", () => saveDraft(true));
  labelRestoredDraft();
  if (adopt && !data.visitor) { draftDirty = true; saveDraft(false, true); }  // kept as a visitor: now on the server

  // The editor opened on the learner's own draft (kept in this browser, or on the server), not on the starter:
  // say so, and since when, beside "Reset to starter", the way back.
  function labelRestoredDraft() {
    if (data.code === data.starter || !(adopt || data.has_draft)) return;
    const at = keptAt ? new Date(keptAt) : null;
    draftState.textContent = at && !isNaN(at)
      ? T("Your draft, saved %(when)s", { when: when(at) })
      : T("Your draft from an earlier visit");
  }

  document.getElementById("reset-code").addEventListener("click", () => {
    editor.setCode(data.starter);
    editor.markLines([]);
    draftState.textContent = T("Reset to the starter code (Ctrl+Z undoes it).");
    editor.focus();
  });
  submitButton.addEventListener("click", () => submit());

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  // Check messages and hints write code between `backticks`: show it as code, still as text nodes only.
  function prose(tag, className, text) {
    const node = el(tag, className);
    String(text).split("`").forEach((part, i) => {
      if (part) node.append(i % 2 ? el("code", null, part) : document.createTextNode(part));
    });
    return node;
  }

  // The grader's English (check messages, hints, notes, error messages), on a page in another language: marked
  // English and isolated left to right, so that on an Arabic page the bidi algorithm does not carry its
  // punctuation and code to the other end of the line. Code between `backticks` as in `prose`.
  function english(text) {
    const node = prose("span", "grader-text", text);
    node.lang = "en";
    node.dir = "ltr";
    return node;
  }
  // A paragraph of the grader's English, in its own isolated span (a line link may follow it, in the page's words).
  function englishLine(className, text) {
    const node = el("p", className);
    node.append(english(text));
    return node;
  }

  function showMessage(kind, text) {
    clearInterval(ticking);
    resultBox.hidden = false;
    resultBox.replaceChildren(el("p", "flash " + kind, text));
  }

  let ticking = null;
  function showProgress(status, startedAt) {
    clearInterval(ticking);
    const line = el("p", "progress-line");
    const label = status === "running" ? T("Running your code") : T("Queued");
    const render = () => {
      line.textContent = label + "… " + seconds((Date.now() - startedAt) / 1000) + " s";
    };
    render();
    ticking = setInterval(render, 100);
    resultBox.hidden = false;
    resultBox.dataset.status = status;
    resultBox.replaceChildren(el("div", "spinner"), line, timeLimit());
  }

  // While code runs, the limit it runs under (the exercise's limits.time_s, the same for a Run and a Submit):
  // an endless loop is then no surprise, and its timeout verdict follows what the page said.
  function timeLimit() {
    if (!data.time_limit_s) return document.createTextNode("");
    return el("span", "muted time-limit", " · " + T("stops after %(seconds)s s",
      { seconds: upToOneDecimal.format(data.time_limit_s) }));
  }

  // The newest Run or verdict is the one shown, first: the other panel is about the code as it was before
  // (an old Run's "line 11" above a new check's "line 10" contradicted it), so it folds away under an
  // "Earlier ..." summary below the new one, where it can still be opened.
  function bringForward(box, older, label) {
    box.classList.remove("earlier");
    older.before(box);
    if (older.hidden || older.classList.contains("earlier") || !older.firstChild) return;
    const folded = el("details", "earlier-result");
    folded.append(el("summary", null, label), ...older.childNodes);
    older.replaceChildren(folded);
    older.classList.add("earlier");
  }

  const SUMMARY = {
    passed: T("All checks passed. Well done!"),
    timeout: T("Your code ran out of time."),
    killed: T("Your code was stopped."),
    error: T("Your code could not be checked."),
    "infra-error": T("The grader failed; your submission is saved."),
  };
  // A stopped run's headline says what was observed, as its message below does (grader/harness/interpret.py's
  // error kinds): a print flood is not a memory problem. Other stops (a signal, a file or CPU limit) say only
  // that the code was stopped, and the message why.
  const STOPPED = {
    output: T("Your code printed too much output and was stopped."),
    memory: T("Your code ran out of memory and was stopped."),
  };
  function headline(result) {
    if (result.status === "killed" && result.error && STOPPED[result.error.kind]) return STOPPED[result.error.kind];
    return SUMMARY[result.status] || result.status;
  }

  function lineLink(line) {
    const jump = el("button", "link line-link", T("line %(line)s", { line }));
    jump.type = "button";
    jump.addEventListener("click", () => editor.markLines([line]));
    return jump;
  }

  // The verdict just arrived: focus moves to it, so a screen reader reads it and the keyboard starts there.
  function focusVerdict() {
    const head = resultBox.querySelector("#result-summary, .flash");
    if (!head) return;
    head.tabIndex = -1;
    head.focus();
  }

  function showResult(sub) {
    performance.mark("academy-verdict-arrived");  // to the verdict drawn: benchmarks/verdict_pictures.py
    clearInterval(ticking);
    busy(null);
    resultBox.hidden = false;
    resultBox.dataset.status = sub.status;
    const nodes = [];
    const result = sub.result;
    if (!result) {
      nodes.push(el("p", "flash error", sub.error || T("Grading failed; your submission is saved. Try again.")));
      resultBox.replaceChildren(...nodes);
      return;
    }
    // The server sends every result in today's shape (grader.core.result.upgrade_result): each check has a status.
    const passedCount = result.checks.filter((c) => c.status === "passed").length;
    const summary = result.status === "failed"
      ? T("%(passed)s of %(total)s checks passed.", { passed: passedCount, total: result.checks.length })
      : headline(result);
    const head = el("h2", "summary " + (result.passed ? "pass" : "fail"), summary);
    head.id = "result-summary";
    nodes.push(head);
    const lines = [];
    if (result.error) {
      // The code did not load or run: one message, with its line; no per-check list, no hints.
      const message = englishLine("flash error error-message", result.error.message);
      if (result.error.line) {
        lines.push(result.error.line);
        message.append(" ", lineLink(result.error.line));
      }
      nodes.push(message);
    } else {
      const list = el("ul", "checks");
      // Check titles as this page's language gives them (exercise.<lang>.yaml), else as the result has them.
      const pageTitles = Object.fromEntries((data.checks || []).map((c) => [c.id, c.title]));
      const titles = Object.fromEntries(result.checks.map((c) => [c.id, pageTitles[c.id] || c.title]));
      for (const check of result.checks) {
        const status = check.status;
        const item = el("li", "check " + (status === "passed" ? "pass" : status === "skipped" ? "skip" : "fail"));
        item.dataset.check = check.id;
        item.id = "check-" + check.id;
        const title = el("strong");
        title.append(el("bdi", null, titles[check.id]));  // English where no translation gives it: isolated
        item.append(el("span", "mark", status === "passed" ? "✔" : status === "skipped" ? "–" : "✘"), title);
        if (status === "skipped") {
          const because = titles[check.because] ? el("bdi", null, titles[check.because]) : T("an earlier check");
          const skipped = el("p", "message muted");
          skipped.append(...nodesT("Not judged: %(check)s explains it.", { check: because }));
          item.append(skipped);
        } else if (status === "failed") {
          if (check.message) item.append(englishLine("message", check.message));
          if (check.line) {
            lines.push(check.line);
            const message = item.querySelector(".message");
            if (message) message.append(" ", lineLink(check.line)); else item.append(lineLink(check.line));
          }
          item.append(hintsOf(sub.id, check));
        }
        list.append(item);
      }
      nodes.push(list);
    }
    if (window.academyFigures) {
      nodes.push(...window.academyFigures.render(result, (line) => editor.markLines([line]), T));
    }
    for (const note of result.notes || []) nodes.push(englishLine("note muted", note));
    if (result.output) {
      const details = el("details", "output");
      const truncated = result.output_truncated ? " " + T("(truncated)") : "";
      details.append(el("summary", null, T("Output of your code") + truncated),
        el("pre", "code", result.output));
      nodes.push(details);
    }
    const took = { seconds: seconds(result.duration_s), device: deviceName(result.device) };
    nodes.push(el("p", "muted",
      result.device ? T("Graded in %(seconds)s s on %(device)s.", took) : T("Graded in %(seconds)s s.", took)));
    resultBox.replaceChildren(...nodes);
    editor.markLines(lines);
    if (result.passed) openSolution();
    if (historyBox.open) loadHistory();
    performance.mark("academy-verdict-drawn");
  }

  // Hints on request: the verdict holds only the hints already revealed; each click reveals (and the
  // server records) the next one.
  function hintsOf(submissionId, check) {
    const box = el("div", "hints");
    const render = (hints, total) => {
      const nodes = hints.map((h, i) => {
        const hint = el("p", "hint",
          (total > 1 ? T("Hint %(number)s of %(total)s", { number: i + 1, total }) : T("Hint")) + ": ");
        hint.append(english(h));  // the page's "Hint 1 of 2:", then the grader's English, isolated
        return hint;
      });
      if (hints.length < total) {
        const more = el("button", "link reveal-hint", hints.length ? T("Show the next hint") : T("Show a hint"));
        more.type = "button";
        more.addEventListener("click", async () => {
          more.disabled = true;
          const r = await api("POST", "/api/submissions/" + submissionId + "/hints", { check: check.id });
          const body = await r.json().catch(() => ({}));
          if (r.ok) render(body.hints, body.hints_total);
          else {
            more.disabled = false;
            more.textContent = body.error || T("Could not show the hint (%(status)s)", { status: r.status });
          }
        });
        nodes.push(more);
      }
      box.replaceChildren(...nodes);
    };
    render(check.hints, check.hints_total);  // the server sends both for every failed check of one's own
    return box;
  }

  // Attempt history: every submission of this exercise, its code viewable, restorable and diffable.
  const historyBox = document.getElementById("history");
  const historyList = document.getElementById("history-list");
  const historyView = document.getElementById("history-view");
  const STATUS_WORDS = { passed: T("passed"), failed: T("failed"), error: T("error"), timeout: T("timed out"),
    killed: T("stopped"), "infra-error": T("grader failed"), queued: T("queued"), running: T("running") };
  async function loadHistory() {
    if (data.visitor) { historyList.replaceChildren(el("p", "muted", T("No submissions yet."))); return; }
    const r = await api("GET", "/api/submissions?exercise=" + encodeURIComponent(data.exercise));
    if (!r.ok) {
      const failed = T("Could not load your attempts (%(status)s).", { status: r.status });
      historyList.replaceChildren(el("p", "flash error", failed));
      return;
    }
    const subs = (await r.json()).submissions;
    if (!subs.length) { historyList.replaceChildren(el("p", "muted", T("No submissions yet."))); return; }
    const table = el("table", "history-table");
    const head = el("tr");
    for (const h of ["#", T("When"), T("Score"), T("Status"), ""]) head.append(el("th", null, h));
    table.append(head);
    subs.forEach((sub, i) => {
      const row = el("tr");
      row.dataset.submission = sub.id;
      const result = sub.result;
      const at = dateTime.format(new Date(sub.created_at));
      const score = result ? percent.format(result.score) : "–";
      const status = STATUS_WORDS[result ? result.status : sub.status] || (result ? result.status : sub.status);
      row.append(el("td", null, "#" + sub.id), el("td", null, at), el("td", null, score), el("td", null, status));
      const actions = el("td");
      const button = (label, handler) => {
        const b = el("button", "secondary", label);
        b.type = "button";
        b.addEventListener("click", handler);
        actions.append(b, " ");
      };
      button(T("View"), () => showAttempt(sub.id, "view"));
      button(T("Restore"), () => showAttempt(sub.id, "restore"));
      if (i < subs.length - 1) button(T("Diff with previous"), () => showAttempt(sub.id, "diff"));
      row.append(actions);
      table.append(row);
    });
    historyList.replaceChildren(table);
  }
  async function showAttempt(id, action) {
    const r = await api("GET", "/api/submissions/" + id + (action === "diff" ? "/diff" : ""));
    if (!r.ok) {
      historyView.hidden = false;
      historyView.replaceChildren(el("p", "flash error", T("Could not load it.")));
      return;
    }
    const body = await r.json();
    historyView.hidden = false;
    if (action === "restore") {
      editor.setCode(body.code);
      editor.markLines([]);
      draftState.textContent = T("Restored submission #%(id)s into the editor (Ctrl+Z undoes it).", { id });
      historyView.replaceChildren(el("p", "muted", T("Submission #%(id)s is in the editor.", { id })));
      return;
    }
    if (action === "diff") {
      const pre = el("pre", "code diff");
      for (const line of body.diff.split("\n")) {
        pre.append(el("span", line.startsWith("+") && !line.startsWith("+++") ? "add" :
          line.startsWith("-") && !line.startsWith("---") ? "del" : null, line + "\n"));
      }
      const heading = T("Submission #%(id)s against #%(previous)s", { id, previous: body.previous });
      historyView.replaceChildren(el("h3", null, heading), pre);
      return;
    }
    historyView.replaceChildren(el("h3", null, T("Submission #%(id)s", { id })),
      el("pre", "code attempt-code", body.code));
  }
  historyBox.addEventListener("toggle", () => { if (historyBox.open) loadHistory(); });

  // The worked solution: offered once the exercise is passed (or after the exercise's number of attempts).
  const solutionBox = document.getElementById("solution");
  function openSolution() {
    solutionBox.hidden = false;
    document.getElementById("solution-rule").hidden = true;
  }
  solutionBox.addEventListener("toggle", async () => {
    if (!solutionBox.open || solutionBox.dataset.loaded) return;
    const body = document.getElementById("solution-body");
    const r = await api("GET", "/api/exercises/" + data.exercise + "/solution");
    const sol = await r.json().catch(() => ({}));
    if (!r.ok) {
      body.replaceChildren(el("p", "muted", sol.error || T("Not available (%(status)s).", { status: r.status })));
      return;
    }
    solutionBox.dataset.loaded = "1";
    const explanation = el("div", "prose");
    // Rendered from solution.md on the server and sanitised there (academy.content.render_markdown).
    explanation.innerHTML = sol.explanation_html;
    // The code highlighted on the server as a card's code is (academy.content.highlight_code; Pygments escapes it).
    const code = el("div", "solution-code-box");
    if (sol.code_html) code.innerHTML = sol.code_html; else code.append(el("pre", "code", sol.code));
    code.firstElementChild.classList.add("solution-code");
    body.replaceChildren(explanation, code);
  });

  // A submission's or Run's state once it changed from `known` (queued to running, or finished), or once the
  // server's wait ran out (academy/jobs/waiting.py: `?wait=` answers the moment the row changes). An answer that came
  // back quickly with nothing new was not held (every waiting seat taken, or a server without the long-poll):
  // then a pause, as plain polling.
  const WAIT_S = 20;
  async function waitFor(path, known) {
    const asked = Date.now();
    const response = await api("GET", path + "?wait=" + WAIT_S + "&seen=" + known);
    if (response.ok) {
      const body = await response.clone().json();
      if (body.status === known && Date.now() - asked < 500) await new Promise((r) => setTimeout(r, 600));
    }
    return response;
  }

  async function follow(id, startedAt) {
    let known = "queued";
    for (;;) {
      let response;
      try {
        response = await waitFor("/api/submissions/" + id, known);
      } catch (e) {
        await new Promise((r) => setTimeout(r, 2000));
        continue;
      }
      if (!response.ok) {
        showMessage("error", T("Could not fetch the result (%(status)s).", { status: response.status }));
        break;
      }
      const sub = await response.json();
      if (sub.status === "done" || sub.status === "error") { showResult(sub); focusVerdict(); break; }
      if (resultBox.dataset.status !== sub.status) showProgress(sub.status, startedAt);
      known = sub.status;
    }
    busy(null);
  }

  // The panels change only once the server took the submission: a refused one leaves the verdict (or Run) the
  // learner was reading as it was, its marked lines too, with the refusal beside it.
  async function submit() {
    if (submitButton.disabled) return;
    busy(GRADING);
    clearRefusals();
    saveDraft();
    const startedAt = Date.now();
    let response;
    try {
      response = await api("POST", "/api/submissions", { exercise: data.exercise, code: editor.getCode() });
    } catch (e) {
      busy(null);
      refused(resultBox, T("Could not reach the server. Your code is still in the editor; try again."));
      return;
    }
    const body = await response.json().catch(() => ({}));
    if (response.status !== 202) {
      busy(null);
      refused(resultBox, refusal(response, body, T("Submitting failed (%(status)s).", { status: response.status })));
      return;
    }
    becameLearner();
    editor.markLines([]);
    bringForward(resultBox, runBox, T("Earlier Run, before this submission"));
    showProgress("queued", startedAt);
    await follow(body.id, startedAt);
  }

  // Run: the function once on the exercise's example (example.py): what it printed and returned, or the
  // error with its line. No verdict, not an attempt; one job at a time, like a submission.
  const runBox = document.getElementById("run-output");
  function showRun(run, error) {
    runBox.hidden = false;
    if (!run) { runBox.replaceChildren(el("p", "flash error", error || T("The Run failed; try again."))); return; }
    const nodes = [el("h2", "summary", run.status === "ran" ? T("Run finished") : T("Run stopped"))];
    if (run.error) {
      const message = englishLine("flash error error-message", run.error.message);
      if (run.error.line) { message.append(" ", lineLink(run.error.line)); editor.markLines([run.error.line]); }
      nodes.push(message);
    }
    nodes.push(el("h3", null, T("Printed output") + (run.output_truncated ? " " + T("(truncated)") : "")),
      el("pre", "code run-printed", run.output || T("(nothing printed)")));
    if (run.returned !== null) {
      nodes.push(el("h3", null, T("Returned") + (run.returned_truncated ? " " + T("(truncated)") : "")),
        el("pre", "code run-returned", run.returned));
    }
    for (const note of run.notes || []) nodes.push(englishLine("note muted", note));
    const took = { seconds: seconds(run.duration_s), device: deviceName(run.device) };
    nodes.push(el("p", "muted", run.device
      ? T("Ran once on the example in %(seconds)s s on %(device)s. Not graded: Submit to check it.", took)
      : T("Ran once on the example in %(seconds)s s. Not graded: Submit to check it.", took)));
    runBox.replaceChildren(...nodes);
  }
  async function runOnce() {
    if (runButton.disabled || submitButton.disabled) return;
    busy(RUNNING);
    clearRefusals();
    saveDraft();
    try {
      const response = await api("POST", "/api/runs", { exercise: data.exercise, code: editor.getCode() });
      const body = await response.json().catch(() => ({}));
      if (response.status !== 202) {
        // Refused: said beside what the learner was reading, which stays (as a refused Submit).
        refused(runBox, refusal(response, body, T("Run failed (%(status)s).", { status: response.status })));
        return;
      }
      becameLearner();
      editor.markLines([]);
      bringForward(runBox, resultBox, T("Earlier verdict, before this Run"));
      runBox.hidden = false;
      runBox.replaceChildren(el("div", "spinner"),
        el("p", "progress-line", T("Running your function on the example…")), timeLimit());
      for (let known = "queued"; ;) {
        const r = await waitFor("/api/runs/" + body.id, known);
        if (!r.ok) { showRun(null, T("Could not fetch the Run (%(status)s).", { status: r.status })); return; }
        const run = await r.json();
        if (run.status === "done") { showRun(run.run); return; }
        if (run.status === "error") { showRun(null, run.error); return; }
        known = run.status;
      }
    } catch (e) {
      showRun(null, T("Could not reach the server. Your code is still in the editor; try again."));
    } finally {
      busy(null);
    }
  }
  runButton.addEventListener("click", () => runOnce());

  // Esc then Tab leaves the editor (CodeMirror then lets the Tab through, where it would indent): focus goes to
  // Run, the control a keyboard user wants next, not to what follows the editor in the page (a line link in the
  // panel below, on a desktop). Shift+Tab goes back as usual.
  document.getElementById("editor").addEventListener("keydown", (event) => {
    if (event.key !== "Tab" || event.shiftKey || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.defaultPrevented) return;  // CodeMirror indented
    event.preventDefault();
    runButton.focus();
  });

  // The buttons come disabled from the server, so a click before this script attached its handlers (a slow
  // load) cannot vanish: the learner sees them come alive instead.
  for (const button of [submitButton, runButton, document.getElementById("reset-code")]) button.disabled = false;

  if (data.latest) {
    api("GET", "/api/submissions/" + data.latest).then((r) => r.ok ? r.json() : null).then((sub) => {
      if (!sub) return;
      if (sub.status === "done" || sub.status === "error") showResult(sub);
      else { busy(GRADING); follow(sub.id, Date.parse(sub.created_at)); }
    });
  }
})();
