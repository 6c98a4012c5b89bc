// The verdict's pictures (grader/display.py): the timeline of the learner's calls and the checks' figures,
// drawn as a table and inline SVG from the result's "trace" and "figures". No library, nothing from a CDN.
// window.academyFigures.render(result, markLine, T) returns the nodes to add to the verdict; T translates this
// file's own labels (lesson.js's lookup, i18n.JS_MESSAGES); the figures' texts come from the grader as they are.
(function () {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  // The figures' titles, captions, labels and the timeline's values are the grader's English: marked as English
  // and isolated left to right, so an Arabic page neither reads nor reorders them as Arabic.
  function english(node) {
    node.lang = "en";
    node.dir = "ltr";
    return node;
  }

  // A translated message whose %(name)s placeholders take English values: the values as isolated English.
  function mixed(tag, className, T, message, values) {
    const node = el(tag, className);
    const parts = T(message).split(/%\((\w+)\)s/);
    parts.forEach((part, i) => {
      if (i % 2 === 0) { if (part) node.append(part); return; }
      const value = values[part];
      node.append(typeof value === "number" ? String(value) : english(el("bdi", null, String(value))));
    });
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function frame(fig, body, title) {
    const figure = el("figure", "figure figure-" + fig.kind);
    figure.id = "figure-" + fig.id;
    figure.append(title || english(el("h3", "figure-title", fig.title)), body,
      english(el("figcaption", "muted", fig.caption)));
    return figure;
  }

  // The numbers a lesson is about are shown exactly. An integer is shown whole (65536, never "65540"); other
  // numbers keep 4 significant digits, or 3 in exponent form when tiny or huge. A loss scale (the timeline's
  // "Scale after") that is a power of two from 2^10 up also says which, as the cards write it: "65536 (2^16)";
  // a chart whose values are all powers of two (loss scales) is ticked at powers of two, labelled 2^k
  // (lineChart).
  function number(value) {
    if (value === null || value === undefined) return "";
    if (typeof value !== "number") return String(value);
    if (Number.isSafeInteger(value)) return String(value);
    const size = Math.abs(value);
    return size !== 0 && (size < 1e-3 || size >= 1e5) ? value.toExponential(2) : String(+value.toPrecision(4));
  }

  // k where value is 2^k exactly, else null.
  function powerOfTwo(value) {
    if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value)) return null;
    const k = Math.round(Math.log2(value));
    return 2 ** k === value ? k : null;
  }

  function scale(value) {
    const k = powerOfTwo(value);
    return k !== null && k >= 10 && Number.isSafeInteger(value) ? `${value} (2^${k})` : number(value);
  }

  function trace(data, checks, markLine, T, titleOf) {
    const byEvent = {};
    for (const check of checks) if (check.status === "failed" && check.event !== undefined && check.event !== null) {
      byEvent[check.event] = check;
    }
    const table = el("table", "data trace stacked");
    const head = el("tr");
    const labels = ["Line", "Call", "Autocast", "Output dtype", "Backward on", "Gradients", "Step", "Scale after"]
      .map((name) => T(name));
    for (const label of labels) head.append(el("th", null, label));
    table.append(el("thead"));
    table.tHead.append(head);
    const body = el("tbody");
    for (const row of data.rows) {
      const tr = el("tr", row.marked ? "marked" : null);
      tr.dataset.event = row.event;
      const line = el("td", "line");
      if (row.line) {
        const jump = el("button", "link line-link", String(row.line));
        jump.type = "button";
        jump.addEventListener("click", () => markLine(row.line));
        line.append(jump);
      }
      const call = el("td", "call");
      const value = el("span", "value");  // one piece: a phone lays each cell out as label, then value
      call.append(value);
      const code = english(el("code"));
      // Break opportunities after "." and "(" and ",": a long call wraps there instead of widening the table.
      row.call.split(/(?<=[.(,])/).forEach((piece, i) => { if (i) code.append(el("wbr")); code.append(piece); });
      value.append(code);
      const check = byEvent[row.event];
      if (row.marked && check) {
        const link = el("a", "trace-check", "✘ ");
        link.append(titleOf ? titleOf(check) : check.title);
        link.href = "#check-" + check.id;
        link.dataset.check = check.id;
        value.append(" ", link);
      }
      const words = (text) => english(el("td", "grader-words", text));  // the grader's words
      tr.append(line, call,
        el("td", null, row.autocast === null || row.autocast === undefined ? "" : row.autocast ? T("on") : T("off")),
        words(row.dtype || ""), words(row.backward || ""), words(row.grads || ""), words(row.step || ""),
        words(scale(row.scale)));
      // Each cell names its column (a phone shows the rows stacked, label then value: academy.css).
      [...tr.children].forEach((cell, i) => {
        cell.dataset.label = labels[i];
        if (!cell.textContent) cell.classList.add("empty");
      });
      body.append(tr);
    }
    table.append(body);
    const box = el("div", "table-scroll");
    box.append(table);
    const title = mixed("h3", "figure-title", T, "%(title)s (%(group_label)s %(group)s of %(groups)s)", data);
    return frame({kind: "trace", id: "trace", caption: data.caption}, box, title);
  }

  // Tick values from lo to hi, at most about `most` of them: every integer (or every k-th) where `whole`, so an
  // axis of 3 updates reads 1, 2, 3; else evenly spaced.
  function ticks(lo, hi, whole, most) {
    if (!whole) return [0, 1, 2, 3, 4].map((i) => lo + (hi - lo) * i / 4);
    const step = Math.max(1, Math.ceil((hi - lo) / most));
    const out = [];
    for (let v = Math.ceil(lo); v <= hi + 1e-9; v += step) out.push(v);
    return out;
  }

  function lineChart(fig) {
    const width = 560, height = 260, right = 16, top = 26, bottom = 44;
    const points = fig.series.flatMap((s) => s.points);
    const chart = svg("svg", {viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": fig.alt, class: "chart",
      lang: "en", direction: "ltr"});
    chart.append(svg("title", {}, fig.title), svg("desc", {}, fig.alt));
    if (!points.length) return chart;
    // The y axis in its own units: powers of two (loss scales) as their exponent, other logarithmic values as
    // log10, the rest as they are.
    const twos = fig.log_y && points.every((p) => powerOfTwo(p[1]) !== null);
    const axis = (v) => twos ? Math.log2(v) : fig.log_y ? Math.log10(v) : v;
    const ys = points.map((p) => axis(p[1]));
    const xs = points.map((p) => p[0]);
    let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
    if (y0 === y1) { y0 -= 1; y1 += 1; }
    const [x0, x1] = [Math.min(...xs), Math.max(...xs) === Math.min(...xs) ? Math.min(...xs) + 1 : Math.max(...xs)];
    const yTicks = ticks(y0, y1, twos, 7).map((y) => [y, twos ? `2^${y}` : number(fig.log_y ? 10 ** y : y)]);
    const xWhole = xs.every(Number.isInteger);
    const xTicks = ticks(x0, x1, xWhole, 10).map((x) => [x, number(x)]);
    // Room on the left for the widest tick label (about 6.5 px a character at 11 px).
    const left = Math.max(40, 14 + 6.5 * Math.max(...yTicks.map(([, text]) => text.length)));
    const X = (x) => left + (x - x0) / (x1 - x0) * (width - left - right);
    const Y = (y) => top + (1 - (y - y0) / (y1 - y0)) * (height - top - bottom);
    chart.append(svg("line", {x1: left, y1: height - bottom, x2: width - right, y2: height - bottom, class: "axis"}),
      svg("line", {x1: left, y1: top, x2: left, y2: height - bottom, class: "axis"}));
    for (const [y, text] of yTicks) {
      chart.append(svg("line", {x1: left, y1: Y(y), x2: width - right, y2: Y(y), class: "grid"}),
        svg("text", {x: left - 6, y: Y(y) + 4, class: "tick", "text-anchor": "end"}, text));
    }
    for (const [x, text] of xTicks) {
      chart.append(svg("text", {x: X(x), y: height - bottom + 16, class: "tick", "text-anchor": "middle"}, text));
    }
    // The y axis's title above the plot, read across: turned along the axis, a long one was cut at both ends.
    chart.append(svg("text", {x: (left + width - right) / 2, y: height - 6, class: "label", "text-anchor": "middle"},
      fig.x_label), svg("text", {x: 4, y: 13, class: "label", "text-anchor": "start"}, fig.y_label));
    fig.series.forEach((series, i) => {
      const path = series.points.map((p) => X(p[0]).toFixed(1) + "," + Y(axis(p[1])).toFixed(1));
      chart.append(svg("polyline", {points: path.join(" "), class: "series series-" + i}));
    });
    return chart;
  }

  function legend(fig) {
    const list = el("ul", "legend");
    fig.series.forEach((series, i) => {
      const item = english(el("li", "legend-" + i));
      item.append(el("span", "swatch series-" + i), series.name);
      list.append(item);
    });
    return list;
  }

  // Each bar under its label, read across the chart's width: a label beside its bar was cut on the left.
  function barChart(fig) {
    const width = 560, row = 42, left = 8, right = 70;
    const height = fig.bars.length * row + 34;
    const max = Math.max(...fig.bars.map((b) => b.value), 1e-12);
    const chart = svg("svg", {viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": fig.alt, class: "chart",
      lang: "en", direction: "ltr"});
    chart.append(svg("title", {}, fig.title), svg("desc", {}, fig.alt));
    const X = (v) => left + v / max * (width - left - right);
    // A limit's line first, under the labels it crosses.
    for (const bar of fig.bars.filter((b) => b.role === "limit")) {
      chart.append(svg("line", {x1: X(bar.value), y1: 4, x2: X(bar.value), y2: height - 30, class: "limit"}));
    }
    fig.bars.forEach((bar, i) => {
      const y = 6 + i * row;
      chart.append(svg("text", {x: left, y: y + 12, class: "tick bar-label", "text-anchor": "start"}, bar.label));
      chart.append(svg("rect", {x: left, y: y + 17, width: Math.max(1, X(bar.value) - left), height: row - 24,
        class: "bar bar-" + bar.role}), svg("text", {x: X(bar.value) + 6, y: y + 30, class: "tick"}, number(bar.value)));
    });
    chart.append(svg("text", {x: (left + width - right) / 2, y: height - 8, class: "label", "text-anchor": "middle"},
      fig.y_label));
    return chart;
  }

  function tableChart(fig) {
    const table = english(el("table", "data stacked"));
    const head = el("tr");
    for (const name of fig.columns) head.append(el("th", null, name));
    table.append(el("thead"));
    table.tHead.append(head);
    const body = el("tbody");
    fig.rows.forEach((cells, i) => {
      const tr = el("tr", fig.marked_rows.includes(i) ? "marked" : null);
      // Each cell names its column: a phone shows the rows stacked, label then value, as the timeline's.
      cells.forEach((cell, j) => {
        const td = el("td", null, number(cell));
        td.dataset.label = fig.columns[j] ?? "";
        if (!td.textContent) td.classList.add("empty");
        tr.append(td);
      });
      body.append(tr);
    });
    table.append(body);
    const box = el("div", "table-scroll");
    box.setAttribute("role", "region");
    box.setAttribute("aria-label", fig.alt);
    box.tabIndex = 0;  // a region that may scroll sideways can be scrolled with the keyboard
    box.append(table);
    return box;
  }

  // Without a lookup (benchmarks/verdict_pictures.py): the English, its placeholders filled in.
  const ENGLISH = (message, values) => values === undefined ? message
    : message.replace(/%\((\w+)\)s/g, (all, name) => String(values[name]));

  // `titleOf(check)`: a check's title as the page shows it (a node or text), else the result's.
  function render(result, markLine, T = ENGLISH, titleOf = null) {
    const nodes = [];
    if (result.trace) nodes.push(trace(result.trace, result.checks || [], markLine, T, titleOf));
    for (const fig of result.figures || []) {
      if (fig.kind === "line") {
        const box = el("div");
        box.append(lineChart(fig), legend(fig));
        nodes.push(frame(fig, box));
      } else if (fig.kind === "bar") {
        nodes.push(frame(fig, barChart(fig)));
      } else if (fig.kind === "table") {
        nodes.push(frame(fig, tableChart(fig)));
      }
    }
    if (!nodes.length) return [];
    const section = el("section", "pictures");
    section.setAttribute("aria-label", T("What your code did"));
    section.append(...nodes);
    return [section];
  }

  window.academyFigures = {render, english};
})();
