/* suanli serve: the page's language (中文 / English). The labels marked data-i18n (their English
 * text is the message id) are filled from GET /api/messages, which serves the same gettext
 * catalog as the CLI; the choice is remembered in localStorage, and the first view follows the
 * browser's Accept-Language. Nothing is translated here. */
"use strict";

(function () {
  const KEY = "suanli-lang";
  const state = { lang: null };
  window.suanliLang = state; // for the end-to-end test

  function remembered() {
    try { return localStorage.getItem(KEY); } catch (err) { return null; }
  }

  async function apply(lang) {
    const url = "/api/messages" + (lang ? "?lang=" + encodeURIComponent(lang) : "");
    const res = await fetch(url);
    if (!res.ok) return;
    const doc = await res.json();
    document.querySelectorAll("[data-i18n]").forEach((el) => {
      const key = el.dataset.i18n;
      el.textContent = doc.messages[key] || key;
    });
    document.documentElement.lang = doc.lang === "zh" ? "zh-CN" : "en";
    const button = document.getElementById("lang-switch");
    button.textContent = doc.lang === "zh" ? "English" : "中文";
    button.lang = doc.lang === "zh" ? "en" : "zh";
    state.lang = doc.lang;
    document.body.dataset.lang = doc.lang;
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.getElementById("lang-switch").addEventListener("click", () => {
      const next = state.lang === "zh" ? "en" : "zh";
      try { localStorage.setItem(KEY, next); } catch (err) { /* private mode: not remembered */ }
      apply(next);
    });
    apply(remembered());
  });
})();
