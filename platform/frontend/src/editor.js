// The code editor of exercise steps: CodeMirror 6 with Python, exposed as window.AcademyEditor.
// Page logic (submitting, polling, drafts) lives in academy/static/lesson.js, outside this bundle,
// so changing it never needs a rebuild.
import { EditorView, basicSetup } from "codemirror";
import { Decoration, keymap } from "@codemirror/view";
import { EditorState, Prec, StateEffect, StateField } from "@codemirror/state";
import { indentWithTab } from "@codemirror/commands";
import { indentUnit, syntaxHighlighting } from "@codemirror/language";
import { classHighlighter } from "@lezer/highlight";
import { python } from "@codemirror/lang-python";

const setMarks = StateEffect.define();

// Lines named by failing checks, highlighted until the code changes or the next verdict arrives.
const marks = StateField.define({
  create: () => Decoration.none,
  update(value, tr) {
    value = value.map(tr.changes);
    for (const effect of tr.effects) {
      if (effect.is(setMarks)) value = effect.value;
    }
    return value;
  },
  provide: (field) => EditorView.decorations.from(field),
});

const failingLine = Decoration.line({ class: "cm-failing-line", attributes: { "data-failing": "true" } });

// Tokens get stable classes (tok-keyword, tok-string, ...): academy.css colours them, in light and in dark
// mode, instead of basicSetup's fixed light palette (which it now only falls back to).
// `label` is the editor's accessible name, `describedBy` the id of the text that says how to leave it,
// `phrases` CodeMirror's own texts (search panel, go to line, folding...) in the page's language: English
// phrase -> translation (EditorState.phrases).
function create(parent, { doc = "", onSubmit = () => {}, onChange = () => {}, label = "Code editor",
  describedBy = null, phrases = {} } = {}) {
  const aria = { "aria-label": label };
  if (describedBy) aria["aria-describedby"] = describedBy;
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        basicSetup, // line numbers, bracket matching, undo history, highlighting, search...
        python(),
        EditorState.phrases.of(phrases),
        syntaxHighlighting(classHighlighter),
        EditorView.contentAttributes.of(aria),
        indentUnit.of("    "), // PEP 8: Tab and auto-indent use four spaces
        keymap.of([indentWithTab]),
        // Above basicSetup, whose Mod-Enter would insert a blank line.
        Prec.highest(keymap.of([{ key: "Mod-Enter", run: () => { onSubmit(); return true; } }])),
        marks,
        EditorView.updateListener.of((update) => { if (update.docChanged) onChange(update.state.doc.toString()); }),
      ],
    }),
  });

  return {
    view,
    getCode: () => view.state.doc.toString(),
    setCode(code) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: code } });
    },
    markLines(lines) {
      const doc = view.state.doc;
      const ranges = [...new Set(lines)]
        .filter((n) => Number.isInteger(n) && n >= 1 && n <= doc.lines)
        .sort((a, b) => a - b)
        .map((n) => failingLine.range(doc.line(n).from));
      view.dispatch({ effects: setMarks.of(Decoration.set(ranges)) });
      if (ranges.length) view.dispatch({ effects: EditorView.scrollIntoView(ranges[0].from, { y: "center" }) });
    },
    focus: () => view.focus(),
  };
}

window.AcademyEditor = { create };
