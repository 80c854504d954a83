/* suanli serve: the page's language (中文 / English). The labels marked data-i18n (their English
 * text is the message id) and the texts the scripts write (t(id, values)) come from
 * GET /api/messages, which serves the same gettext catalog as the CLI; the sentences inside
 * answers (assumptions, notes, reasons, errors: English in the JSON) are translated by
 * POST /api/sentences. The choice is remembered in localStorage; the first view follows the
 * browser's Accept-Language. Nothing is translated here: every word comes from the catalog. */
"use strict";

(function () {
  const KEY = "suanli-lang";
  const MAX_TEXTS = 200; // per POST /api/sentences (the server's limit)
  const MAX_CHARS = 2000;
  const state = { lang: null, messages: {}, sentences: {}, listeners: [] };
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

  // An answer's English sentence in the page's language (once prepare() has fetched it).
  function s(text) {
    if (state.lang !== "zh" || typeof text !== "string") return text;
    return state.sentences[text] || text;
  }

  // A word or sentence from an answer (a bound, a term, a label): its sentence, else the
  // page's message of that name, else as it is.
  function w(text) {
    const found = s(text);
    return found !== text ? found : state.messages[text] || text;
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

  // The sentences of answers (any JSON: strings with a space and some letters) not yet known.
  function collect(value, found) {
    if (typeof value === "string") {
      if (value.length <= MAX_CHARS && value.includes(" ") && /[A-Za-z]{3}/.test(value) &&
          !(value in state.sentences)) found.add(value);
    } else if (Array.isArray(value)) {
      value.forEach((v) => collect(v, found));
    } else if (value && typeof value === "object") {
      Object.values(value).forEach((v) => collect(v, found));
    }
    return found;
  }

  // Fetch the Chinese of every sentence in `docs` (answers, error messages); English: nothing.
  async function prepare(docs) {
    if (state.lang !== "zh") return;
    const lang = state.lang;
    const texts = Array.from(collect(docs, new Set()));
    for (let i = 0; i < texts.length; i += MAX_TEXTS) {
      const chunk = texts.slice(i, i + MAX_TEXTS);
      try {
        const res = await fetch("/api/sentences", {
          method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ lang: lang, texts: chunk }),
        });
        if (!res.ok) return;
        const doc = await res.json();
        chunk.forEach((text, j) => { state.sentences[text] = doc.texts[j]; });
      } catch (err) {
        return; // the English stays
      }
    }
  }

  async function apply(lang) {
    const url = "/api/messages" + (lang ? "?lang=" + encodeURIComponent(lang) : "");
    const res = await fetch(url);
    if (!res.ok) return;
    const doc = await res.json();
    state.messages = doc.messages;
    if (doc.lang !== state.lang) state.sentences = {};
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
    s: s,
    w: w,
    prepare: prepare,
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
