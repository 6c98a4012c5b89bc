// Dark mode: <html data-theme> follows the system (prefers-color-scheme) until the header's switch picks
// light or dark; that choice is kept in this browser (localStorage). Loaded in <head>, so the page is
// drawn in the right theme from the start.
"use strict";

(function () {
  const root = document.documentElement;
  const system = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  function chosen() {
    try { return window.localStorage.getItem("dla-theme"); } catch (e) { return null; }
  }
  function apply() {
    const saved = chosen();
    root.dataset.theme = saved === "light" || saved === "dark" ? saved : (system && system.matches ? "dark" : "light");
    const button = document.getElementById("theme-switch");
    if (button) button.setAttribute("aria-pressed", String(root.dataset.theme === "dark"));
  }
  apply();
  if (system && system.addEventListener) system.addEventListener("change", apply);

  root.classList.add("js");
  document.addEventListener("DOMContentLoaded", () => {
    apply();
    // The language switcher: choosing a language sends its form (without JavaScript: its Go button).
    const language = document.getElementById("language");
    if (language) language.addEventListener("change", () => language.form.submit());
    const button = document.getElementById("theme-switch");
    if (!button) return;
    button.addEventListener("click", () => {
      const next = root.dataset.theme === "dark" ? "light" : "dark";
      try { window.localStorage.setItem("dla-theme", next); } catch (e) { /* kept for this page only */ }
      root.dataset.theme = next;
      button.setAttribute("aria-pressed", String(next === "dark"));
    });
  });
})();
