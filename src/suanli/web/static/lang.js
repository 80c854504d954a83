/* suanli serve: the page's language (中文 / English). The labels marked data-i18n (their English
 * text is the message id) and the texts the scripts write (t(id, values)) come from
 * GET /api/messages, which serves the same gettext catalog as the CLI; the sentences inside
 * answers (assumptions, notes, reasons, errors) come written in the page's language: every API
 * request carries ?lang= (url()), and the server writes them from their message ids and values.
 * The choice is remembered in localStorage; the first view follows the browser's
 * Accept-Language. Nothing is translated here: every word comes from the catalog. */
"use strict";

(function () {
  const KEY = "suanli-lang";
  const state = { lang: null, messages: {}, listeners: [] };
  window.suanliLang = state; // for the end-to-end test

  function remembered() {
    try { return localStorage.getItem(KEY); } catch (err) { return null; }
  }

  // The message `id` in the page's language, its {name} holes filled from `values`.
  function t(id, values) {
    const text = state.messages[id] || id;
    if (!values) return text;
    return text.replace(/\{(\w+)\}/g, (hole, name) =>
      Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : hole);
  }

  // An API path asking for its answer in the page's language.
  function url(path) {
    if (!state.lang) return path;
    return path + (path.includes("?") ? "&" : "?") + "lang=" + encodeURIComponent(state.lang);
  }

  // A word from an answer (a bound, a term, a label): the page's message of that name, else as
  // it is (the answer's sentences already come in the page's language).
  function w(text) {
    return state.messages[text] || text;
  }

  // t() for HTML: the message is escaped, its holes are filled with `html` as given (the caller
  // escapes what it fills in).
  function th(id, html) {
    const text = esc(state.messages[id] || id);
    return text.replace(/\{(\w+)\}/g, (hole, name) =>
      Object.prototype.hasOwnProperty.call(html, name) ? String(html[name]) : hole);
  }
  function esc(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({
      "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
    }[c]));
  }

  async function apply(lang) {
    const url = "/api/messages" + (lang ? "?lang=" + encodeURIComponent(lang) : "");
    const res = await fetch(url);
    if (!res.ok) return;
    const doc = await res.json();
    state.messages = doc.messages;
    state.lang = doc.lang;
    document.querySelectorAll("[data-i18n]").forEach((el) => {
      const key = el.dataset.i18n;
      el.textContent = doc.messages[key] || key;
    });
    document.documentElement.lang = doc.lang === "zh" ? "zh-CN" : "en";
    const button = document.getElementById("lang-switch");
    if (button) {
      button.textContent = doc.lang === "zh" ? "English" : "中文";
      button.lang = doc.lang === "zh" ? "en" : "zh";
    }
  }

  // Switching the language: labels first, then every listener re-renders what it shows.
  async function change(lang) {
    await apply(lang);
    await Promise.all(state.listeners.map((fn) => Promise.resolve().then(fn).catch(() => null)));
    document.body.dataset.lang = state.lang;
  }

  const ready = apply(remembered()).catch(() => null);
  window.suanliI18n = {
    t: t,
    th: th,
    w: w,
    url: url,
    ready: ready,
    lang: () => state.lang,
    onChange: (fn) => { state.listeners.push(fn); },
  };

  document.addEventListener("DOMContentLoaded", () => {
    ready.then(() => { if (state.lang) document.body.dataset.lang = state.lang; });
    document.getElementById("lang-switch").addEventListener("click", () => {
      const next = state.lang === "zh" ? "en" : "zh";
      try { localStorage.setItem(KEY, next); } catch (err) { /* private mode: not remembered */ }
      change(next);
    });
  });
})();
