// The tutor's panel (templates/tutor/_panel.html, academy/tutor/views.py): a question goes to the server with
// the editor's current code; the answer streams back as server-sent events over fetch and is shown as it
// comes. Stop aborts the fetch: the server closes its request to the model server, which stops generating.
(() => {
  "use strict";
  const panel = document.getElementById("tutor");
  if (!panel) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const language = document.documentElement.lang || "en";
  const log = document.getElementById("tutor-log");
  const form = document.getElementById("tutor-form");
  const input = document.getElementById("tutor-question");
  const askButton = document.getElementById("tutor-ask");
  const stopButton = document.getElementById("tutor-stop");
  const state = document.getElementById("tutor-state");
  const say = panel.dataset;
  let controller = null;

  function bubble(role, text) {
    const item = document.createElement("div");
    item.className = "tutor-msg " + (role === "learner" ? "from-learner" : "from-tutor");
    const who = document.createElement("strong");
    who.textContent = role === "learner" ? say.you : say.tutor;
    const body = document.createElement("div");
    body.className = "tutor-text";
    body.textContent = text || "";
    item.append(who, body);
    log.append(item);
    return item;
  }
  function addSources(item, sources) {
    if (!sources || !sources.length) return;
    const line = document.createElement("p");
    line.className = "tutor-sources muted";
    line.append(say.sources + " ");
    sources.forEach((source, i) => {
      if (i) line.append(" · ");
      const link = document.createElement("a");
      link.href = source.url;
      link.textContent = source.title;
      link.dataset.kind = source.kind;
      line.append(link);
    });
    item.append(line);
  }
  function addNote(item, text) {
    const note = document.createElement("p");
    note.className = "tutor-note muted";
    note.textContent = text;
    item.append(note);
    return note;
  }
  function busy(on) {
    askButton.disabled = on;
    stopButton.hidden = !on;
    state.textContent = on ? say.thinking : "";
    panel.setAttribute("aria-busy", on ? "true" : "false");
  }

  function loadHistory() {
    if (!say.signedIn) return;
    fetch(panel.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json",
      "Accept-Language": language } })
      .then((response) => (response.ok ? response.json() : { messages: [] }))
      .then((body) => {
        (body.messages || []).forEach((message) => {
          const item = bubble(message.role, message.text);
          if (message.role !== "learner") addSources(item, message.sources);
        });
      })
      .catch(() => {});
  }

  // Server-sent events from a fetch body: "event: NAME\ndata: JSON\n\n".
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        let data = "";
        block.split("\n").forEach((line) => {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        });
        if (data) onEvent(name, JSON.parse(data));
      }
    }
  }

  async function ask(question) {
    const code = window.academyEditor ? window.academyEditor.getCode() : undefined;
    bubble("learner", question);
    const answer = bubble("tutor", "");
    const text = answer.querySelector(".tutor-text");
    answer.setAttribute("aria-busy", "true");
    controller = new AbortController();
    busy(true);
    try {
      const response = await fetch(panel.dataset.url, {
        method: "POST", credentials: "same-origin", signal: controller.signal,
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, "Accept-Language": language,
          Accept: "text/event-stream" },
        body: JSON.stringify(code === undefined ? { question } : { question, code }),
      });
      const type = response.headers.get("Content-Type") || "";
      if (!response.ok || !type.startsWith("text/event-stream")) {
        let body = {};
        try { body = await response.json(); } catch (e) { /* not JSON */ }
        text.textContent = body.error || say.failed.replace("%(status)s", response.status);
        answer.classList.add("tutor-refused");
        return;
      }
      await readEvents(response, (name, data) => {
        if (name === "token") text.textContent += data.text;
        else if (name === "error") addNote(answer, data.message);
        else if (name === "done") {
          if (data.removed) addNote(answer, say.removed);
          if (data.outcome === "length") addNote(answer, say.cut);
          (data.notes || []).forEach((note) => addNote(answer, note));
          if (data.language_note) addNote(answer, data.language_note).classList.add("tutor-language");
          addSources(answer, data.sources);
        }
      });
    } catch (error) {
      if (error.name === "AbortError") addNote(answer, say.stopped);
      else addNote(answer, say.offline);
    } finally {
      answer.setAttribute("aria-busy", "false");
      controller = null;
      busy(false);
      say.signedIn = "yes"; // the first question made this browser a guest
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question || controller) return;
    input.value = "";
    ask(question);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });
  stopButton.addEventListener("click", () => { if (controller) controller.abort(); });
  loadHistory();
})();
