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

  function number(value) {
    if (value === null || value === undefined) return "";
    if (typeof value !== "number") return String(value);
    const size = Math.abs(value);
    return size !== 0 && (size < 1e-3 || size >= 1e5) ? value.toExponential(2) : String(+value.toPrecision(4));
  }

  function trace(data, checks, markLine, T, titleOf) {
    const byEvent = {};
    for (const check of checks) if (check.status === "failed" && check.event !== undefined && check.event !== null) {
      byEvent[check.event] = check;
    }
    const table = el("table", "data trace");
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
        words(number(row.scale)));
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

  function lineChart(fig) {
    const width = 560, height = 260, left = 64, right = 16, top = 14, bottom = 44;
    const points = fig.series.flatMap((s) => s.points);
    const chart = svg("svg", {viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": fig.alt, class: "chart",
      lang: "en", direction: "ltr"});
    chart.append(svg("title", {}, fig.title), svg("desc", {}, fig.alt));
    if (!points.length) return chart;
    const ys = points.map((p) => fig.log_y ? Math.log10(p[1]) : p[1]);
    const xs = points.map((p) => p[0]);
    let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
    if (y0 === y1) { y0 -= 1; y1 += 1; }
    const [x0, x1] = [Math.min(...xs), Math.max(...xs) === Math.min(...xs) ? Math.min(...xs) + 1 : Math.max(...xs)];
    const X = (x) => left + (x - x0) / (x1 - x0) * (width - left - right);
    const Y = (y) => top + (1 - (y - y0) / (y1 - y0)) * (height - top - bottom);
    chart.append(svg("line", {x1: left, y1: height - bottom, x2: width - right, y2: height - bottom, class: "axis"}),
      svg("line", {x1: left, y1: top, x2: left, y2: height - bottom, class: "axis"}));
    for (let i = 0; i <= 4; i++) {
      const y = y0 + (y1 - y0) * i / 4;
      chart.append(svg("line", {x1: left, y1: Y(y), x2: width - right, y2: Y(y), class: "grid"}),
        svg("text", {x: left - 6, y: Y(y) + 4, class: "tick", "text-anchor": "end"}, number(fig.log_y ? 10 ** y : y)));
      const x = x0 + (x1 - x0) * i / 4;
      chart.append(svg("text", {x: X(x), y: height - bottom + 16, class: "tick", "text-anchor": "middle"},
        number(Math.round(x))));
    }
    chart.append(svg("text", {x: (left + width - right) / 2, y: height - 6, class: "label", "text-anchor": "middle"},
      fig.x_label), svg("text", {x: 12, y: (top + height - bottom) / 2, class: "label", "text-anchor": "middle",
      transform: `rotate(-90 12 ${(top + height - bottom) / 2})`}, fig.y_label));
    fig.series.forEach((series, i) => {
      const path = series.points.map((p) => X(p[0]).toFixed(1) + "," + Y(fig.log_y ? Math.log10(p[1]) : p[1]).toFixed(1));
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

  function barChart(fig) {
    const width = 560, row = 34, left = 190, right = 70;
    const height = fig.bars.length * row + 34;
    const max = Math.max(...fig.bars.map((b) => b.value), 1e-12);
    const chart = svg("svg", {viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": fig.alt, class: "chart",
      lang: "en", direction: "ltr"});
    chart.append(svg("title", {}, fig.title), svg("desc", {}, fig.alt));
    const X = (v) => left + v / max * (width - left - right);
    fig.bars.forEach((bar, i) => {
      const y = 8 + i * row;
      chart.append(svg("text", {x: left - 8, y: y + 17, class: "tick", "text-anchor": "end"}, bar.label));
      if (bar.role === "limit") {
        chart.append(svg("line", {x1: X(bar.value), y1: 4, x2: X(bar.value), y2: height - 30, class: "limit"}));
      }
      chart.append(svg("rect", {x: left, y: y + 4, width: Math.max(1, X(bar.value) - left), height: row - 12,
        class: "bar bar-" + bar.role}), svg("text", {x: X(bar.value) + 6, y: y + 17, class: "tick"}, number(bar.value)));
    });
    chart.append(svg("text", {x: (left + width - right) / 2, y: height - 8, class: "label", "text-anchor": "middle"},
      fig.y_label));
    return chart;
  }

  function tableChart(fig) {
    const table = english(el("table", "data"));
    const head = el("tr");
    for (const name of fig.columns) head.append(el("th", null, name));
    table.append(el("thead"));
    table.tHead.append(head);
    const body = el("tbody");
    fig.rows.forEach((cells, i) => {
      const tr = el("tr", fig.marked_rows.includes(i) ? "marked" : null);
      for (const cell of cells) tr.append(el("td", null, number(cell)));
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
