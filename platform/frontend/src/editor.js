// The code editor of exercise steps: CodeMirror 6 with Python, exposed as window.AcademyEditor.
// Page logic (submitting, polling, drafts) lives in academy/static/lesson.js, outside this bundle,
// so changing it never needs a rebuild.
import { EditorView, basicSetup } from "codemirror";
import { Decoration, keymap } from "@codemirror/view";
import { EditorState, Prec, StateEffect, StateField } from "@codemirror/state";
import { indentWithTab } from "@codemirror/commands";
import { indentUnit, syntaxHighlighting, syntaxTree } from "@codemirror/language";
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

// The string node (a String or an f-string) that holds `pos`, or null.
function stringAt(state, pos) {
  for (let node = syntaxTree(state).resolveInner(pos, 1); node; node = node.parent) {
    if (node.name === "String" || node.name === "FormatString") return node;
  }
  return null;
}

// closeBrackets closes `"""` with `"""` and then steps over all three closing quotes at the first `"` typed
// there, so typing a docstring in full (`"""doc"""`) left two quotes too many. Typing a quote right before
// the closing quotes of a triple-quoted string steps over one quote: `"""doc"""` comes out as typed.
const overClosingQuote = EditorView.inputHandler.of((view, from, to, text) => {
  if (from !== to || (text !== '"' && text !== "'")) return false;
  const { state } = view;
  if (state.doc.sliceString(from, from + 1) !== text) return false;
  const node = stringAt(state, from);
  if (!node) return false;
  const body = state.doc.sliceString(node.from, node.to).replace(/^[a-zA-Z]*/, "");
  const triple = text.repeat(3);
  if (!body.startsWith(triple) || body.length < 6 || !body.endsWith(triple) || from < node.to - 3) return false;
  view.dispatch({ selection: { anchor: from + 1 }, scrollIntoView: true, userEvent: "input.type" });
  return true;
});

// After a line that leaves its block (return, pass, raise, break, continue) Enter starts the next line one
// indentation level out, as Python editors do; anywhere else CodeMirror's own Enter.
const LEAVES_BLOCK = new Set(["ReturnStatement", "PassStatement", "RaiseStatement", "BreakStatement",
  "ContinueStatement"]);
function newlineAfterBlockExit(view) {
  const { state } = view;
  const range = state.selection.main;
  if (state.selection.ranges.length > 1 || !range.empty) return false;
  const line = state.doc.lineAt(range.head);
  if (state.doc.sliceString(range.head, line.to).trim()) return false;  // not at the end of the line
  const tree = syntaxTree(state);
  let end = line.from + line.text.trimEnd().length;
  const last = tree.resolveInner(end, -1);
  if (last.name === "Comment") end = line.from + state.doc.sliceString(line.from, last.from).trimEnd().length;
  let statement = tree.resolveInner(end, -1);
  while (statement && !LEAVES_BLOCK.has(statement.name)) {
    if (statement.name === "Body" || statement.name === "Script") return false;
    statement = statement.parent;
  }
  if (!statement || statement.to < end) return false;
  let broken = false;
  statement.toTree().iterate({ enter: (node) => { if (node.type.isError) broken = true; } });
  if (broken) return false;  // e.g. `return (a,`: still open, CodeMirror's own Enter indents it
  const start = state.doc.lineAt(statement.from).text;
  const unit = state.facet(indentUnit).length;
  const indent = Math.max(0, /^ */.exec(start)[0].length - unit);
  view.dispatch(state.update(state.replaceSelection("\n" + " ".repeat(indent)),
    { scrollIntoView: true, userEvent: "input" }));
  return true;
}

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
        Prec.high(keymap.of([{ key: "Enter", run: newlineAfterBlockExit }])),
        Prec.highest(overClosingQuote),
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
