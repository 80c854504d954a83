/* suanli serve: the "What can this card run?" tab (suanli card --json as a page).
 * Every figure comes from POST /api/card; nothing is computed here. */
"use strict";

(function () {
  const $ = (sel) => document.querySelector(sel);
  const { t, url } = window.suanliI18n; // the page's language (lang.js)
  const TASK = { full: () => t("full fine-tune"), lora: () => "LoRA", qlora: () => "QLoRA" };
  const state = { gen: 0, pending: false, doc: null };
  window.suanliCard = state; // for the end-to-end test

  function esc(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({
      "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
    }[c]));
  }
  function params(v) {
    if (v === null || v === undefined) return "-";
    const b = v / 1e9;
    return (b < 1 ? b.toFixed(2) : b.toFixed(1)) + "B";
  }
  function speed(v) {
    if (v === null || v === undefined) return "-";
    if (v >= 10000) return (v / 1e3).toFixed(0) + "k tok/s";
    if (v >= 1000) return (v / 1e3).toFixed(1) + "k tok/s";
    return v.toFixed(0) + " tok/s";
  }
  function jobLabel(job) {
    if (job.task === "infer") {
      return t("infer {weights}, {k}k context", { weights: job.weights, k: job.tokens / 1024 });
    }
    return t("train {task}, seq {seq}", { task: TASK[job.task] ? TASK[job.task]() : job.task,
      seq: job.tokens.toLocaleString("en-US") });
  }

  function render(doc) {
    const rows = doc.capabilities.map((c) => {
      const largest = c.largest_model === null ? t("nothing (not even 0.5B)")
        : c.largest_model + " (" + params(c.largest_params) + ")";
      const about = c.largest_model === null ? "-"
        : (c.about_params === null ? t("more") : "~" + params(c.about_params));
      return "<tr><td>" + esc(jobLabel(c.job)) + "</td><td>" + esc(largest) + '</td><td class="r">' +
        esc(about) + '</td><td class="r">' + esc(speed(c.tokens_per_s)) + "</td></tr>";
    });
    $("#card-title").textContent = doc.gpus > 1
      ? t("What {gpus} x {name} can run", { gpus: doc.gpus, name: doc.name })
      : t("What {name} can run", { name: doc.name });
    $("#card-jobs").innerHTML = "<table><thead><tr><th>" + esc(t("job")) + "</th><th>" +
      esc(t("largest model that fits")) + '</th><th class="r">' + esc(t("size limit")) +
      '</th><th class="r">' + esc(t("speed")) + "</th></tr></thead><tbody>" +
      rows.join("") + "</tbody></table>";
    const heads = doc.jobs.map((j) => "<th class=\"r\">" + esc(jobLabel(j)) + "</th>").join("");
    const models = doc.models.map((m) => "<tr><td>" + esc(m.model) + '</td><td class="r">' +
      esc(params(m.params)) + "</td>" + m.fits.map((ok, i) => '<td class="r' + (ok ? "" : " no") +
      '">' + esc(ok ? speed(m.tokens_per_s[i]) : t("does not fit")) + "</td>").join("") + "</tr>");
    $("#card-models").innerHTML = "<table><thead><tr><th>" + esc(t("model")) + '</th><th class="r">' +
      esc(t("size")) + "</th>" + heads + "</tr></thead><tbody>" + models.join("") + "</tbody></table>";
    $("#card-assumptions").innerHTML = doc.assumptions.map((a) => "<li>" + esc(a) + "</li>").join("");
  }
  function showError(message) {
    state.error = message;
    $("#card-error").textContent = message;
    $("#card-error").hidden = false;
  }

  async function ask() {
    const gen = ++state.gen;
    state.pending = true;
    $("#card-error").hidden = true;
    const body = { gpu: $("#card-gpu").value.trim(), gpus: Number($("#card-gpus").value) || 1 };
    try {
      const res = await fetch(url("/api/card"), {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
      });
      const doc = await res.json();
      if (gen !== state.gen) return;
      if (!res.ok) throw new Error(doc.error || res.statusText);
      state.doc = doc;
      state.error = null;
      render(doc);
    } catch (err) {
      if (gen !== state.gen) return;
      showError(err.message);
    } finally {
      if (gen === state.gen) {
        state.pending = false;
        document.body.dataset.cardReady = String(gen);
      }
    }
  }

  // Switching the language asks for the answer again, written in the new language.
  window.suanliI18n.onChange(() => (state.doc || state.error ? ask() : null));

  document.addEventListener("DOMContentLoaded", () => {
    $("#card-form").addEventListener("submit", (ev) => { ev.preventDefault(); ask(); });
    document.querySelector(".tab[data-tab='card']").addEventListener("click", () => {
      if (state.doc === null && !state.pending) ask();
    });
  });
})();
