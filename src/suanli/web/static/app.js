/* suanli serve: the page. Plain JavaScript, no build step; Chart.js is vendored under
 * /static/vendor. Every figure comes from the JSON API (the CLI's --json documents). */
"use strict";

(function () {
  const GiB = 2 ** 30;
  const { t, th, w, url } = window.suanliI18n; // the page's language (lang.js)
  const COMPONENTS = {
    weights: ["weights", "#4e79a7"],
    master_weights: ["master weights", "#a0cbe8"],
    gradients: ["gradients", "#f28e2b"],
    optimizer: ["optimizer states", "#ffbe7d"],
    activations: ["activations", "#59a14f"],
    logits: ["logits", "#8cd17d"],
    kv_cache: ["KV cache", "#b6992d"],
    overhead: ["runtime overhead", "#bab0ac"],
    overlap: ["gradients replace freed activations", "#d4a6c8"],
  };
  const LIVE_POINTS = 150;
  const PLAN_GROUPS = {
    "buy-or-rent": "Cards to buy or rent by the hour (consumer, workstation)",
    datacenter: "Datacenter cards",
  };
  const DEFAULT_CARDS = ["rtx-4090-24gb", "l40s-48gb", "h100-sxm-80gb"];

  const state = {
    presets: [],
    gpus: [],
    options: null,
    cards: DEFAULT_CARDS.slice(),
    gen: 0,
    pending: false,
    last: {},
    charts: {},
    explain: {},
    live: { samples: [], timer: null, start: null },
  };
  window.suanli = state; // for the curious, and for the end-to-end test

  const $ = (sel) => document.querySelector(sel);

  // --- formatting ------------------------------------------------------------------------
  function esc(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({
      "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
    }[c]));
  }
  function gib(bytes) { return (bytes / GiB).toFixed(2) + " GiB"; }
  function group(v, digits) {
    return Number(v).toLocaleString("en-US", {
      minimumFractionDigits: digits || 0, maximumFractionDigits: digits || 0,
    });
  }
  function si(v, unit) {
    if (v === null || v === undefined || !isFinite(v)) return "-";
    const steps = [[1e18, "E"], [1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [size, prefix] of steps) {
      if (Math.abs(v) >= size) return (v / size).toPrecision(3) + " " + prefix + unit;
    }
    return v.toPrecision(3) + " " + unit;
  }
  function dur(s) {
    if (s === null || s === undefined) return "-";
    if (s >= 86400) return group(s / 86400, 1) + " " + t("days");
    if (s >= 3600) return group(s / 3600, 1) + " " + t("h");
    if (s >= 60) return group(s / 60, 1) + " " + t("min");
    if (s >= 1) return s.toFixed(2) + " " + t("s");
    return (s * 1e3).toFixed(2) + " " + t("ms");
  }
  function money(v) {
    if (v === null || v === undefined) return "-";
    return "$" + group(v, Math.abs(v) < 100 ? 2 : 0);
  }
  // A rent with where it comes from (the answer's Price: the same number every command shows).
  function rentNote(p) {
    if (!p) return "-";
    const from = p.kind === "given" ? p.kind : [p.provider, p.kind, p.date].filter(Boolean).join(", ");
    return money(p.usd) + "/h (" + from + ")";
  }
  function count(v) {
    if (v >= 1e12) return (v / 1e12).toPrecision(3) + "T";
    if (v >= 1e9) return (v / 1e9).toPrecision(3) + "B";
    if (v >= 1e6) return (v / 1e6).toPrecision(3) + "M";
    return group(v);
  }
  function pct(v) { return v === null || v === undefined ? "-" : (100 * v).toFixed(1) + "%"; }
  function rate(v) { return v === null || v === undefined ? "-" : group(v, 0); }

  // --- explanations: every number is a button that opens its derivation ---------------------
  let explainCount = 0;
  function num(scope, text, title, details) {
    const id = scope + "-" + explainCount++;
    state.explain[id] = { title: title, value: text, details: details || [] };
    return '<button type="button" class="num" data-x="' + id + '">' + esc(text) + "</button>";
  }
  function forget(scope) {
    for (const key of Object.keys(state.explain)) {
      if (key.startsWith(scope + "-")) delete state.explain[key];
    }
  }
  function showExplain(entry) {
    $("#explain-title").textContent = entry.title;
    $("#explain-value").textContent = entry.value;
    const body = $("#explain-body");
    body.innerHTML = "";
    for (const part of entry.details) {
      const div = document.createElement("div");
      div.className = "item";
      if (typeof part === "string") {
        div.textContent = w(part);
      } else if (Array.isArray(part)) {
        div.innerHTML = "<dl>" + part.map(([k, v]) =>
          "<dt>" + esc(k) + "</dt><dd>" + esc(w(v)) + "</dd>").join("") + "</dl>";
      } else if (part && part.list) {
        div.innerHTML = "<strong>" + esc(part.heading || "") + "</strong><ul>" +
          part.list.map((x) => "<li>" + esc(w(x)) + "</li>").join("") + "</ul>";
      }
      body.appendChild(div);
    }
    $("#explain").hidden = false;
  }
  document.addEventListener("click", (ev) => {
    const button = ev.target.closest("button.num");
    if (button && state.explain[button.dataset.x]) {
      showExplain(state.explain[button.dataset.x]);
    }
  });
  $("#explain-close").addEventListener("click", () => { $("#explain").hidden = true; });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") $("#explain").hidden = true;
  });

  // --- the API -------------------------------------------------------------------------------
  async function api(path, body, signal) {
    const init = body === undefined ? { signal: signal } : {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal: signal,
    };
    const response = await fetch(url(path), init);
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) {
      const message = data && data.error ? data.error
        : t("the server answered {status}", { status: response.status });
      const error = new Error(message);
      error.status = response.status;
      throw error;
    }
    return data;
  }

  // --- the form ------------------------------------------------------------------------------
  function fill(select, values, chosen) {
    select.innerHTML = values.map((v) => {
      const [value, label] = Array.isArray(v) ? v : [v, v];
      return '<option value="' + esc(value) + '"' + (value === chosen ? " selected" : "") +
        ">" + esc(label) + "</option>";
    }).join("");
  }
  function intOf(id, fallback) {
    const v = Number($(id).value);
    return Number.isFinite(v) && v >= 1 ? Math.round(v) : fallback;
  }
  function isInfer() { return $("#task").value === "infer"; }

  function readForm() {
    const infer = isInfer();
    const context = intOf("#context", 4096);
    const output = Math.min(intOf("#output", 256), Math.max(context - 1, 1));
    const util = Number($("#util").value);
    const price = $("#price").value.trim();
    return {
      model: $("#model").value.trim(),
      task: $("#task").value,
      framework: $("#framework").value || "hf",
      batch: intOf("#batch", 1),
      seq: intOf("#seq", 2048),
      context: Math.max(context, output + 1),
      output: output,
      dtype: $("#dtype").value,
      precision: $("#precision").value,
      optimizer: $("#optimizer").value,
      recompute: $("#recompute").value,
      quant: $("#quant").value,
      kv_dtype: $("#kv_dtype").value,
      gpus: intOf("#gpus", 1),
      zero: infer ? 0 : Number($("#zero").value),
      tokens: Number($("#tokens").value) >= 1 ? Number($("#tokens").value) : 1e8,
      years: Number($("#years").value) > 0 ? Math.min(Number($("#years").value), 50) : 3,
      utilisation: Number.isFinite(util) ? Math.min(Math.max(util, 0), 100) / 100 : 0.6,
      price: price === "" || !(Number(price) >= 0) ? null : Number(price),
      cards: state.cards.slice(),
    };
  }

  // With a framework chosen, a field the user left untouched is not sent: the framework's
  // default fills it (suanli frameworks), as on the command line.
  function touched(id) { return $("#" + id).dataset.touched === "1"; }

  function workload(f) {
    const w = {
      model: f.model, task: f.task, batch: f.batch, gpus: f.gpus, framework: f.framework,
    };
    const keep = (key, id) => f.framework === "hf" || touched(id || key);
    if (f.task === "infer") {
      Object.assign(w, { quant: f.quant });
      if (keep("context")) w.context = f.context;
      if (keep("kv_dtype")) w.kv_dtype = f.kv_dtype;
    } else {
      Object.assign(w, { seq: f.seq, dtype: f.dtype, optimizer: f.optimizer });
      if (keep("precision")) w.precision = f.precision;
      if (keep("recompute")) w.recompute = f.recompute;
      if (keep("zero")) w.zero = f.zero;
    }
    return w;
  }

  function requests(f) {
    const memory = Object.assign(workload(f), { gpu: f.cards[0] || null, cards: f.cards });
    // The page always shows the speed, and says in red when the job cannot run as given.
    const perf = Object.assign(workload(f), { gpu: f.cards[0], ignore_fit: true });
    if (f.task === "infer") {
      delete perf.context;
      perf.prompt = f.context - f.output;
      perf.output = f.output;
    } else {
      perf.tokens = f.tokens;
    }
    const plan = { model: f.model, task: f.task, max_gpus: Math.min(f.gpus, 64) };
    if (f.task === "infer") {
      Object.assign(plan, {
        context: f.context, quant: f.quant, kv_dtype: f.kv_dtype, output: f.output,
      });
    } else {
      Object.assign(plan, {
        seq: f.seq, dtype: f.dtype, precision: f.precision, optimizer: f.optimizer,
        tokens: f.tokens,
      });
    }
    const cost = {
      gpu: f.cards[0], gpus: f.gpus, years: f.years, utilisation: f.utilisation,
    };
    if (f.price !== null) cost.price = f.price;
    return { memory: memory, perf: perf, plan: plan, cost: cost };
  }

  function syncTask() {
    const infer = isInfer();
    document.querySelectorAll("[data-for]").forEach((el) => {
      el.hidden = (el.dataset.for === "infer") !== infer;
    });
    $("#batch-label").textContent = infer ? t("Concurrent sequences (batch)") : t("Micro-batch per GPU");
  }

  // --- GPU cards -----------------------------------------------------------------------------
  function norm(s) { return String(s).toLowerCase().replace(/[\s_-]+/g, ""); }
  function findGpu(query) {
    const q = norm(query);
    if (!q) return null;
    const keys = (g) => [g.id, g.name].concat(g.aliases || []).map(norm);
    const exact = state.gpus.filter((g) => keys(g).includes(q));
    if (exact.length === 1) return exact[0];
    const partial = state.gpus.filter((g) => keys(g).some((k) => k.includes(q)));
    return partial.length === 1 ? partial[0] : null;
  }
  function renderChips() {
    $("#chips").innerHTML = state.cards.map((id, i) =>
      '<span class="chip' + (i === 0 ? " first" : "") + '" data-id="' + esc(id) + '">' +
      '<button type="button" class="chip-main" title="' + esc(t("use for speed and cost")) + '">' +
      (i === 0 ? "★ " : "") + esc(id) + "</button>" +
      '<button type="button" class="chip-x" aria-label="' + esc(t("remove {gpu}", { gpu: id })) +
      '">×</button></span>'
    ).join("");
  }
  $("#chips").addEventListener("click", (ev) => {
    const chip = ev.target.closest(".chip");
    if (!chip) return;
    const id = chip.dataset.id;
    if (ev.target.classList.contains("chip-x")) {
      if (state.cards.length > 1) state.cards = state.cards.filter((c) => c !== id);
    } else {
      state.cards = [id].concat(state.cards.filter((c) => c !== id));
    }
    renderChips();
    schedule();
  });
  function addGpu() {
    const input = $("#gpu-add");
    const value = input.value.trim();
    if (!value) return;
    const gpu = findGpu(value);
    const error = $("#gpu-error");
    if (!gpu) {
      error.textContent = t("no single GPU matches {query}; pick one from the list",
        { query: JSON.stringify(value) });
      error.hidden = false;
      return;
    }
    error.hidden = true;
    input.value = "";
    if (!state.cards.includes(gpu.id)) {
      state.cards.push(gpu.id);
      if (state.cards.length > 8) state.cards.splice(1, 1);
    }
    renderChips();
    schedule();
  }
  $("#gpu-add").addEventListener("change", addGpu);
  $("#gpu-add").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); addGpu(); }
  });

  // --- upload --------------------------------------------------------------------------------
  $("#upload").addEventListener("change", async () => {
    const file = $("#upload").files[0];
    if (!file) return;
    const info = $("#model-info");
    const body = new FormData();
    body.append("file", file, file.name);
    info.classList.remove("field-error");
    info.textContent = t("reading {file}…", { file: file.name });
    try {
      const response = await fetch(url("/api/config"), { method: "POST", body: body });
      const data = await response.json().catch(() => null);
      if (!response.ok) throw new Error(data && data.error ? data.error : t("upload failed"));
      $("#model").value = data.model;
      info.textContent = t("{file}: {architecture}, {params} parameters ({layers} layers); read " +
        "as JSON, kept in the server's memory only", { file: file.name,
        architecture: data.architecture, params: count(data.params_total), layers: data.layers });
      schedule();
    } catch (err) {
      info.classList.add("field-error");
      info.textContent = err.message;
    }
  });
  function describeModel() {
    const name = $("#model").value.trim();
    const info = $("#model-info");
    if (name.startsWith("upload:")) return;
    info.classList.remove("field-error");
    const preset = state.presets.find((p) => p.name === name);
    const about = preset && { name: preset.name, params: count(preset.params_total),
      active: count(preset.params_active), hf: preset.hf_id };
    info.textContent = !preset ? (name.includes("/") ? t("a Hugging Face id: only its config.json is read") : "")
      : preset.params_active !== preset.params_total
        ? t("{name}: {params} parameters, {active} active per token ({hf})", about)
        : t("{name}: {params} parameters ({hf})", about);
  }

  // --- charts --------------------------------------------------------------------------------
  function chart(id, config) {
    const existing = state.charts[id];
    if (existing && existing.config.type === config.type) {
      existing.data = config.data;
      existing.options = config.options;
      existing.update("none");
      return existing;
    }
    if (existing) existing.destroy();
    config.options = Object.assign({ animation: false, maintainAspectRatio: false }, config.options);
    state.charts[id] = new Chart(document.getElementById(id), config);
    return state.charts[id];
  }
  function baseOptions(extra) {
    return Object.assign({
      animation: false,
      maintainAspectRatio: false,
      responsive: true,
      plugins: { legend: { labels: { boxWidth: 12, font: { size: 11 } } } },
    }, extra);
  }
  const logTicks = (unit) => ({
    autoSkip: false,
    maxRotation: 0,
    callback: function (value) {
      const exp = Math.log10(value);
      if (Math.abs(exp - Math.round(exp)) > 1e-9) return "";
      return unit ? si(value, unit) : value >= 1 ? group(value) : String(Number(value.toPrecision(1)));
    },
  });
  // The fit line: each card's usable memory drawn across its bar, labelled.
  const capacityLines = {
    id: "capacityLines",
    afterDatasetsDraw(c) {
      const index = c.data.datasets.findIndex((d) => d.capacity);
      if (index < 0 || !c.isDatasetVisible(index)) return;
      const points = c.getDatasetMeta(index).data;
      const bars = c.getDatasetMeta(0).data;
      const ctx = c.ctx;
      ctx.save();
      ctx.strokeStyle = "#c62828";
      ctx.fillStyle = "#c62828";
      ctx.lineWidth = 3;
      ctx.font = "11px sans-serif";
      ctx.textAlign = "center";
      points.forEach((pt, i) => {
        const half = ((bars[i] && bars[i].width) || 40) / 2 + 8;
        ctx.beginPath();
        ctx.moveTo(pt.x - half, pt.y);
        ctx.lineTo(pt.x + half, pt.y);
        ctx.stroke();
        ctx.fillText(t("{gib} GiB usable", { gib: c.data.datasets[index].data[i].toFixed(1) }),
          pt.x, pt.y - 6);
      });
      ctx.restore();
    },
  };

  // --- memory --------------------------------------------------------------------------------
  function renderMemory(doc) {
    forget("mem");
    const fits = doc.fits || [];
    const keys = Object.keys(doc.breakdown).filter((k) => doc.breakdown[k] > 0);
    const labels = fits.map((f) => f.gpu + (f.fits ? " ✓" : " ✗"));
    const datasets = keys.map((k) => ({
      type: "bar",
      label: w((COMPONENTS[k] || [k])[0]),
      data: fits.map(() => doc.breakdown[k] / GiB),
      backgroundColor: (COMPONENTS[k] || [k, "#999"])[1],
      stack: "need",
      order: 2,
    }));
    datasets.push({
      type: "line",
      label: t("usable memory (fit line)"),
      capacity: true,
      data: fits.map((f) => f.usable_bytes / GiB),
      borderColor: "#c62828",
      backgroundColor: "#c62828",
      showLine: false,
      pointStyle: "line",
      pointRadius: 0,
      pointHitRadius: 12,
      borderWidth: 3,
      order: 1,
    });
    chart("mem-chart", {
      type: "bar",
      plugins: [capacityLines],
      data: { labels: labels, datasets: datasets },
      options: baseOptions({
        scales: {
          x: { stacked: true },
          y: { stacked: true, title: { display: true, text: t("GiB per GPU") }, beginAtZero: true,
            grace: "8%" },
        },
        plugins: {
          legend: { position: "right", labels: { boxWidth: 12, font: { size: 11 } } },
          tooltip: {
            callbacks: {
              label: (ctx) => ctx.dataset.label + ": " + ctx.parsed.y.toFixed(2) + " GiB",
            },
          },
        },
        onClick: (ev, elements, c) => {
          if (!elements.length) return;
          const ds = c.data.datasets[elements[0].datasetIndex];
          const key = keys[elements[0].datasetIndex];
          if (key) showExplain(componentExplain(doc, key));
          else if (ds) showExplain(fitExplain(doc, fits[elements[0].index]));
        },
      }),
    });
    const rows = keys.map((k) => {
      const entry = componentExplain(doc, k);
      return "<tr><td><span class=\"swatch\" style=\"background:" + COMPONENTS[k][1] +
        "\"></span>" + esc(w(COMPONENTS[k][0])) + '</td><td class="r">' +
        num("mem", gib(doc.breakdown[k]), entry.title, entry.details) + '</td><td class="r">' +
        (100 * doc.breakdown[k] / doc.total_bytes).toFixed(1) + "%</td></tr>";
    });
    rows.push("<tr><td><strong>" + esc(t("total per GPU")) + '</strong></td><td class="r" id="mem-total">' +
      num("mem", gib(doc.total_bytes), t("Total memory per GPU"), [
        t("The sum of the components above, per GPU."),
        { heading: t("assumptions"), list: doc.assumptions },
      ]) + "</td><td class=\"r\">100%</td></tr>");
    if (doc.cpu_bytes) {
      rows.push("<tr><td>" + esc(t("in CPU memory (offloaded)")) + "</td><td class=\"r\">" +
        num("mem", gib(doc.cpu_bytes), t("Offloaded to CPU memory"), [
          t("Optimizer states and master weights kept in host memory (offload_optimizer)."),
        ]) + "</td><td></td></tr>");
    }
    const longest = (gpu) => doc.task === "infer" ? t("Longest context that fits on {gpu}", { gpu: gpu })
      : t("Longest sequence that fits on {gpu}", { gpu: gpu });
    const fitRows = fits.map((f) => {
      const x = fitExplain(doc, f);
      return "<tr><td>" + esc(f.gpu) + '</td><td class="r">' +
        num("mem", gib(f.gpu_memory_bytes), f.name, [[[t("memory"), gib(f.gpu_memory_bytes)],
          [t("usable"), gib(f.usable_bytes)]]]) + "</td><td>" +
        (f.fits ? '<span class="yes">' + esc(t("fits")) + "</span>"
          : '<span class="no">' + esc(t("does not fit")) + "</span>") +
        '</td><td class="r">' + num("mem", gib(f.headroom_bytes), x.title, x.details) +
        '</td><td class="r">' + num("mem", f.max_batch ? String(f.max_batch) : t("none fits"),
          t("Largest batch that fits on {gpu}", { gpu: f.gpu }), x.details) + '</td><td class="r">' +
        num("mem", f.max_seq ? group(f.max_seq) : t("none fits"), longest(f.gpu), x.details) +
        "</td></tr>";
    });
    const heads = (cols) => cols.map(([name, cls]) =>
      "<th" + (cls ? ' class="r"' : "") + ">" + esc(name) + "</th>").join("");
    $("#mem-table").innerHTML = "<table><thead><tr>" +
      heads([[t("component")], [t("per GPU"), 1], [t("share"), 1]]) +
      "</tr></thead><tbody>" + rows.join("") + "</tbody></table>" +
      "<table id=\"fit-table\"><thead><tr>" + heads([["GPU"], [t("memory"), 1], [t("fit")],
        [t("headroom"), 1], [t("largest batch"), 1],
        [doc.task === "infer" ? t("longest context") : t("longest sequence"), 1]]) +
      "</tr></thead><tbody>" + fitRows.join("") + "</tbody></table>";
  }
  function componentExplain(doc, key) {
    const lines = doc.lines.filter((l) => l.key === key);
    return {
      title: t("{component} (per GPU)", { component: w((COMPONENTS[key] || [key])[0]) }),
      value: gib(doc.breakdown[key]),
      details: lines.map((l) => [
        [t("line"), l.label], [t("bytes"), gib(l.bytes) + " (" + group(l.bytes) + " B)"],
        [t("formula"), l.formula], [t("source"), l.source],
      ]).concat([{ heading: t("assumptions"), list: doc.assumptions }]),
    };
  }
  function fitExplain(doc, f) {
    return {
      title: t("Fit on {gpu}", { gpu: f.gpu }),
      value: f.fits ? t("fits, {gib} to spare", { gib: gib(f.headroom_bytes) })
        : t("short by {gib}", { gib: gib(-f.headroom_bytes) }),
      details: [[
        [t("capacity"), gib(f.gpu_memory_bytes)],
        [t("usable"), gib(f.usable_bytes)],
        [t("needed"), gib(doc.total_bytes)],
        [t("headroom"), t("usable - needed = {gib}", { gib: gib(f.headroom_bytes) })],
        [t("largest batch"), f.max_batch ? String(f.max_batch) : t("none fits")],
        [t("longest (tokens)"), f.max_seq ? group(f.max_seq) : t("none fits")],
        [t("best format"), f.best_format || "-"],
      ]].concat(f.notes && f.notes.length ? [{ heading: t("notes"), list: f.notes }] : []),
    };
  }

  // --- speed ---------------------------------------------------------------------------------
  function renderPerf(doc, f) {
    forget("perf");
    const ex = doc.explain || {};
    const assumptions = { heading: t("assumptions"), list: doc.assumptions || [] };
    const breakdown = Object.entries(doc.breakdown_s || {}).map(([k, v]) => [w(k), dur(v)]);
    // Every time term with its efficiency and where that efficiency comes from (perf --explain).
    const terms = {
      heading: t("terms"),
      list: (doc.terms || []).map((x) => x.efficiency === null
        ? t("{term}: {time}, {source}", { term: w(x.term), time: dur(x.seconds), source: w(x.source) })
        : t("{term}: {time} at {share} of the rate, {source}", { term: w(x.term),
          time: dur(x.seconds), share: pct(x.efficiency), source: w(x.source) })),
    };
    const cells = [];
    const cell = (label, text, why, extra) => cells.push(
      "<div><span class=\"k\">" + esc(label) + "</span>" +
      num("perf", text, label, [why].concat(extra || [])) + "</div>");
    $("#speed-gpu").textContent = f.task === "infer" ? t("on {gpu}", { gpu: doc.gpu })
      : t("on {gpus} × {gpu}", { gpus: doc.gpus, gpu: doc.gpu });
    const blocked = cannotRun(doc);
    if (blocked) {
      // A job that cannot run has no speed: every speed and time says why instead of a number
      // (the API computes them with ignore_fit, for the curious, but the page does not show them).
      cells.push("<div class=\"cannot-run\"><span class=\"no\">" + esc(blockedOn(blocked, doc.gpu)) +
        "</span> " + (doc.warnings || []).map((x) => esc(x)).join(" ") + "</div>");
      const why = (doc.warnings || []).join(" ");
      const labels = f.task === "infer"
        ? [t("time to first token"), t("time per output token"), "tokens/s"]
        : [t("step time"), "tokens/s", "MFU", t("time to train"), t("rent")];
      labels.forEach((label) => cell(label, t(blocked), why));
      $("#speed-numbers").innerHTML = cells.join("");
      renderRoofline(Object.assign({}, doc.roofline, { points: [] }));
      if (state.charts["batch-chart"]) {
        state.charts["batch-chart"].destroy();
        delete state.charts["batch-chart"];
      }
      return;
    }
    if (f.task === "infer") {
      cell(t("time to first token"), dur(doc.ttft_s), ex.ttft_s, [breakdown, terms, assumptions]);
      cell(t("time per output token"), dur(doc.tpot_s), ex.tpot_s, [breakdown, terms, assumptions]);
      cell("tokens/s", rate(doc.tokens_per_s), ex.tokens_per_s, [assumptions]);
      cell(t("decode bound by"), w(doc.bound), ex.bound);
      cell(t("compute-bound from batch"),
        doc.compute_bound_batch ? String(doc.compute_bound_batch) : t("never"), ex.compute_bound_batch);
    } else {
      cell(t("step time"), dur(doc.step_time_s), ex.step_time_s, [breakdown, terms, assumptions]);
      cell("tokens/s", rate(doc.tokens_per_s), ex.tokens_per_s, [assumptions]);
      cell("MFU", pct(doc.mfu), ex.mfu, [assumptions]);
      cell(t("bound"), w(doc.bound), ex.bound, [breakdown]);
      if (doc.time_to_train_s !== undefined) {
        cell(t("time to train"), dur(doc.time_to_train_s), ex.time_to_train_s,
          [[[t("tokens"), group(doc.tokens)], [t("GPU-hours"), group(doc.gpu_hours, 1)]]]);
        cell(t("rent"), doc.cost_usd === null ? t("no price known") : money(doc.cost_usd), ex.cost_usd,
          [[[t("GPU-hours"), group(doc.gpu_hours, 1)], [t("energy"), group(doc.energy_kwh, 1) + " kWh"]]]);
      }
      (doc.advice || []).slice(0, 1).forEach((tip) => cell(t("tip"), tip.issue,
        tip.fix, [[[t("tokens/s after"), rate(tip.tokens_per_s_after)],
          [t("speed-up"), Number(tip.speedup).toFixed(2) + "x"]]]));
    }
    // The error band of the regime (GET /api/perf "band"): where published runs of this kind
    // landed against the estimate; none where too few were published.
    cell(t("likely tokens/s"), likely(doc.band), likelyBasis(doc.band, doc.band_basis));
    $("#speed-numbers").innerHTML = cells.join("");
    renderRoofline(doc.roofline);
    if (f.task === "infer") renderBatch(doc); else renderStep(doc);
  }
  // The error band of a speed answer ("band" and "band_basis" of GET /api/perf and of each row
  // of POST /api/plan, computed by the server): the likely tokens/s, and where it comes from.
  function likely(band) {
    return band && band.tokens_per_s
      ? rate(band.tokens_per_s[0]) + " – " + rate(band.tokens_per_s[1]) : t("unvalidated");
  }
  function likelyBasis(band, basis) {
    if (!band || !band.tokens_per_s) {
      return t("fewer than 5 published runs from 2 sources in this regime");
    }
    const b = basis || {};
    return t("where 80% of runs should land, from measured / estimated speed of {rows} published " +
      "runs from {sources} sources in this regime", { rows: b.rows, sources: b.sources });
  }
  function renderRoofline(r) {
    const far = Math.max(1e4, ...r.points.map((p) => (p.flops_per_byte || 0) * 2));
    const top = Math.ceil(Math.log10(far));
    const xs = [];
    for (let e = -1; e <= top + 0.001; e += 0.125) xs.push(10 ** e);
    xs.push(r.ridge_flops_per_byte, r.peak_flops / r.peak_bandwidth_bytes_per_s);
    xs.sort((a, b) => a - b);
    const roof = (peak, bw) => xs.map((x) => ({ x: x, y: Math.min(peak, bw * x) }));
    const palette = ["#e15759", "#76b7b2", "#edc948"];
    const points = r.points.filter((p) => p.flops_per_byte && p.flops_per_s).map((p, i) => ({
      type: "scatter",
      label: w(p.label),
      data: [{ x: p.flops_per_byte, y: p.flops_per_s }],
      pointRadius: 7,
      pointHoverRadius: 9,
      backgroundColor: palette[i % palette.length],
      borderColor: "#333",
    }));
    chart("roofline-chart", {
      type: "scatter",
      data: {
        datasets: [
          { type: "line", label: t("datasheet roof"), data: roof(r.peak_flops, r.peak_bandwidth_bytes_per_s),
            borderColor: "#9aa5b1", borderDash: [5, 4], pointRadius: 0, borderWidth: 1.5 },
          { type: "line", label: t("achievable roof"), data: roof(r.achievable_flops, r.achievable_bandwidth_bytes_per_s),
            borderColor: "#1f5fa8", pointRadius: 0, borderWidth: 2 },
        ].concat(points),
      },
      options: baseOptions({
        parsing: false,
        scales: {
          x: { type: "logarithmic", min: 0.1, max: 10 ** top, ticks: logTicks(""),
            title: { display: true, text: t("arithmetic intensity (FLOP per byte)") } },
          y: { type: "logarithmic", ticks: logTicks("FLOP/s"), max: r.peak_flops * 3,
            title: { display: true, text: t("FLOP/s per GPU") } },
        },
        plugins: {
          title: { display: true, text: t("Roofline of {gpu}", { gpu: r.gpu }) },
          tooltip: { callbacks: { label: (ctx) => t("{label}: {flops} at {intensity} FLOP/B", {
            label: ctx.dataset.label, flops: si(ctx.parsed.y, "FLOP/s"),
            intensity: ctx.parsed.x.toPrecision(3) }) } },
          legend: { labels: { boxWidth: 12, font: { size: 11 } } },
        },
        onClick: () => showExplain({
          title: t("Roofline of {gpu}", { gpu: r.gpu }),
          value: t("ridge at {intensity} FLOP/byte", { intensity: r.ridge_flops_per_byte.toPrecision(3) }),
          details: [[
            [t("peak"), si(r.peak_flops, "FLOP/s")],
            [t("achievable"), si(r.achievable_flops, "FLOP/s")],
            [t("bandwidth"), t("{peak} (achievable {achievable})", {
              peak: si(r.peak_bandwidth_bytes_per_s, "B/s"),
              achievable: si(r.achievable_bandwidth_bytes_per_s, "B/s") })],
            [t("ceilings from"), r.source],
          ]].concat(r.points.map((p) => [[t("point"), p.label],
            ["FLOPs", si(p.flops, "FLOP")], [t("bytes"), si(p.bytes, "B")],
            [t("time"), dur(p.seconds)], [t("attained"), si(p.flops_per_s, "FLOP/s")]]), [r.note]),
        }),
      }),
    });
  }
  function renderBatch(doc) {
    const sweep = doc.batch_sweep || [];
    chart("batch-chart", {
      type: "line",
      data: {
        labels: sweep.map((x) => String(x.batch)),
        datasets: [
          { label: "tokens/s", data: sweep.map((x) => x.tokens_per_s), borderColor: "#4e79a7",
            backgroundColor: "#4e79a7", yAxisID: "y" },
          { label: t("time per token (ms)"), data: sweep.map((x) => x.tpot_s * 1e3),
            borderColor: "#f28e2b", backgroundColor: "#f28e2b", yAxisID: "y1" },
        ],
      },
      options: baseOptions({
        scales: {
          x: { title: { display: true, text: t("batch (concurrent sequences)") } },
          y: { position: "left", title: { display: true, text: "tokens/s" }, beginAtZero: true },
          y1: { position: "right", title: { display: true, text: t("ms per output token") },
            beginAtZero: true, grid: { drawOnChartArea: false } },
        },
        plugins: { title: { display: true, text: t("Throughput and latency against batch") } },
      }),
    });
  }
  function renderStep(doc) {
    const parts = Object.entries(doc.breakdown_s || {});
    const colors = { compute: "#4e79a7", memory: "#59a14f", communication: "#f28e2b", bubble: "#bab0ac" };
    chart("batch-chart", {
      type: "bar",
      data: {
        labels: [t("step")],
        datasets: parts.map(([k, v]) => ({
          label: w(k), data: [v * 1e3], backgroundColor: colors[k] || "#999", stack: "t",
        })),
      },
      options: baseOptions({
        indexAxis: "y",
        scales: {
          x: { stacked: true, title: { display: true, text: t("milliseconds per optimizer step") } },
          y: { stacked: true },
        },
        plugins: { title: { display: true, text: t("Where a training step's time goes") } },
      }),
    });
  }

  // --- plan ----------------------------------------------------------------------------------
  function layoutText(row, infer) {
    if (!row.fits) return "-";
    const v = Object.assign({}, row, { recompute: w(row.recompute) });
    if (infer) {
      if (row.replicas > 1) {
        return t("{gpus} GPUs (TP {tp} × {replicas} replicas), {weight_format} weights, KV " +
          "{kv_dtype}, batch {batch}", v);
      }
      return row.gpus > 1 ? t("{gpus} GPUs (TP {tp} × {replicas} replica), {weight_format} weights, " +
        "KV {kv_dtype}, batch {batch}", v) : t("{gpus} GPU (TP {tp} × {replicas} replica), " +
        "{weight_format} weights, KV {kv_dtype}, batch {batch}", v);
    }
    return row.gpus > 1 ? t("{gpus} GPUs: TP {tp} PP {pp} DP {dp}, ZeRO-{zero}, recompute " +
      "{recompute}, micro-batch {batch}", v) : t("{gpus} GPU: TP {tp} PP {pp} DP {dp}, " +
      "ZeRO-{zero}, recompute {recompute}, micro-batch {batch}", v);
  }
  let planShowAll = false;
  function renderPlan(doc, f) {
    forget("plan");
    const infer = doc.task === "infer";
    const rows = doc.rows || [];
    const shown = planShowAll ? rows : rows.slice(0, 12);
    const ranked = { objective: w(doc.objective), gpus: doc.max_gpus };
    $("#plan-sub").textContent = (doc.max_gpus > 1 ? t("ranked by {objective}, up to {gpus} GPUs", ranked)
      : t("ranked by {objective}, up to {gpus} GPU", ranked)) + (doc.capped ? " " + t("(capped)") : "");
    const head = infer
      ? ["#", "GPU", t("fit"), t("layout"), "TPOT", "tokens/s", t("$ / M tokens"), t("why not first")]
      : ["#", "GPU", t("fit"), t("layout"), "tokens/s", "MFU", t("time"), t("rent"), t("why not first")];
    const body = shown.map((r, i) => {
      const why = [
        [["GPU", r.gpu], [t("software"), r.software_stack || "-"]],
        r.reason ? t("Why: {reason}", { reason: w(r.reason) }) : t("The best of the ranking."),
      ];
      if (r.options) {
        why.push(t("Reproduce: {command}", { command: "suanli perf " + f.model + (infer ? " "
          : " --task " + doc.task + " --seq " + f.seq + " ") + r.options }));
      }
      const cls = !r.fits ? "nofit" : i === 0 && !r.reason ? "best" : "";
      const cells = [
        String(i + 1),
        esc(r.gpu),
        r.fits ? '<span class="yes">✓</span>' : '<span class="no">✗</span>',
        r.fits ? num("plan", layoutText(r, infer), t("Layout on {gpu}", { gpu: r.gpu }), why.concat(
          [[[t("memory per GPU"), gib(r.memory_bytes)]]])) : esc(w(r.reason || "-")),
      ];
      const on = { gpu: r.gpu };
      if (infer) {
        cells.push(r.fits ? num("plan", dur(r.tpot_s), t("Time per output token, {gpu}", on), why) : "-");
        cells.push(r.fits ? num("plan", rate(r.tokens_per_s), t("Tokens/s, {gpu}", on),
          why.concat([[[t("requests/s"), r.requests_per_s.toFixed(2)], ["TTFT", dur(r.ttft_s)],
            [t("likely tokens/s"), likely(r.band)]], likelyBasis(r.band, r.band_basis)])) : "-");
        cells.push(r.fits && r.usd_per_million_tokens !== null && r.usd_per_million_tokens !== undefined
          ? num("plan", money(r.usd_per_million_tokens), t("USD per million output tokens, {gpu}", on),
            why.concat([[[t("USD per hour"), money(r.usd_per_hour)], [t("rent"), rentNote(r.rent)],
              [t("formula"), t("USD per hour / 3600 / tokens per s × 1e6")]]])) : "-");
      } else {
        cells.push(r.fits ? num("plan", rate(r.tokens_per_s), t("Tokens/s, {gpu}", on), why.concat(
          [[[t("likely tokens/s"), likely(r.band)]], likelyBasis(r.band, r.band_basis)])) : "-");
        cells.push(r.fits ? num("plan", pct(r.mfu), t("MFU, {gpu}", on),
          why.concat([t("model FLOPs / (step time × GPUs × dense peak)")])) : "-");
        cells.push(r.fits ? num("plan", dur(r.time_s), t("Time for {tokens} tokens, {gpu}",
          { tokens: group(doc.tokens), gpu: r.gpu }), why.concat([t("tokens / tokens per second")])) : "-");
        cells.push(r.fits && r.cost_usd !== null && r.cost_usd !== undefined
          ? num("plan", money(r.cost_usd), t("Rent for the run, {gpu}", on), why.concat([[
            [t("USD per GPU-hour"), money(r.usd_per_hour)], [t("rent"), rentNote(r.rent)],
            [t("formula"), t("time × GPUs × USD per GPU-hour")]]])) : "-");
      }
      cells.push(r.fits ? esc(r.reason ? w(r.reason) : t("best")) : "");
      // A personal fine-tune's plan is grouped: cards to buy or rent first, datacenter after.
      const title = r.fits && r.group && (i === 0 || shown[i - 1].group !== r.group)
        ? '<tr class="group"><td colspan="' + head.length + '">' + esc(w(PLAN_GROUPS[r.group] ||
          r.group)) + "</td></tr>" : "";
      return title + '<tr class="' + cls + '" data-gpu="' + esc(r.gpu) + '">' + cells.map((c, j) =>
        "<td" + (j >= 4 && j < cells.length - 1 ? ' class="r"' : "") + ">" + c + "</td>").join("") +
        "</tr>";
    });
    const after = Object.entries(doc.ranked_after_cuda || {})
      .filter(([gpu]) => shown.some((r) => r.gpu === gpu));
    const right = (h, j) => j >= 4 && j < head.length - 1;
    // Ranked by the estimate; the best row's band says where published runs of its regime landed.
    const top = rows[0] && rows[0].fits && !rows[0].reason ? rows[0] : null;
    const band = top ? '<p class="hint" id="plan-likely">' + esc(t("likely tokens/s") + " (" +
      top.gpu + "): " + likely(top.band) + " — " + likelyBasis(top.band, top.band_basis)) + "</p>"
      : "";
    $("#plan-table").innerHTML =
      (doc.capped ? '<p class="hint">' + esc(w(doc.capped)) + "</p>" : "") +
      "<table id=\"plan\"><thead><tr>" + head.map((h, j) =>
        "<th" + (right(h, j) ? ' class="r"' : "") + ">" + esc(h) + "</th>").join("") +
      "</tr></thead><tbody>" + body.join("") + "</tbody></table>" + band +
      after.map(([gpu, why]) => '<p class="hint">' + esc(t("{gpu} is ranked after the CUDA cards: " +
        "{why} (stack_ok ranks by speed alone).", { gpu: gpu, why: w(why) })) + "</p>").join("") +
      (rows.length > 12 ? '<button type="button" class="more" id="plan-more">' + esc(planShowAll
        ? t("show the first 12") : t("show all {n} GPUs", { n: rows.length })) + "</button>" : "");
    const more = $("#plan-more");
    if (more) more.addEventListener("click", () => { planShowAll = !planShowAll; renderPlan(doc, f); });
  }

  // --- cost ----------------------------------------------------------------------------------
  function renderCost(doc) {
    forget("cost");
    const curve = doc.curve || [];
    const series = [
      ["buy", "buy_cumulative_usd", "#4e79a7"],
      ["rent (on demand)", "rent_cumulative_usd", "#f28e2b"],
      ["rent (spot)", "spot_cumulative_usd", "#ffbe7d"],
      ["reserved", "reserved_cumulative_usd", "#b07aa1"],
      ["API", "api_cumulative_usd", "#59a14f"],
    ].filter(([, key]) => curve.length && curve[curve.length - 1][key] !== null);
    const datasets = series.map(([label, key, color]) => ({
      type: "line", label: w(label), borderColor: color, backgroundColor: color, pointRadius: 0,
      borderWidth: 2, data: curve.map((p) => ({ x: p.year, y: p[key] })),
    }));
    const be = doc.break_even_years;
    if (be !== null && be !== undefined && be <= doc.inputs.years) {
      const buyAt = doc.totals.capex_usd + be * (doc.totals.electricity_usd + doc.totals.facility_usd) /
        doc.inputs.years;
      datasets.push({
        type: "scatter", label: t("break-even: {years} years", { years: be.toFixed(2) }),
        data: [{ x: be, y: buyAt }],
        pointRadius: 8, pointStyle: "rectRot", backgroundColor: "#c62828", borderColor: "#c62828",
      });
    }
    chart("cost-chart", {
      type: "line",
      data: { datasets: datasets },
      options: baseOptions({
        parsing: false,
        scales: {
          x: { type: "linear", min: 0, max: doc.inputs.years, title: { display: true, text: t("years") } },
          y: { beginAtZero: true, title: { display: true, text: t("cumulative USD") },
            ticks: { callback: (v) => money(v) } },
        },
        plugins: {
          tooltip: { callbacks: { label: (ctx) => ctx.dataset.label + ": " + money(ctx.parsed.y) } },
        },
      }),
    });
    $("#cost-sub").textContent = t("{gpus} × {gpu}, {percent}% utilised", { gpus: doc.inputs.gpus,
      gpu: doc.inputs.gpu, percent: Math.round(doc.inputs.utilisation * 100) });
    const sources = doc.assumptions.map((a) => [[t("input"), a.name],
      [t("value"), String(a.value) + (a.unit ? " " + a.unit : "")], [t("source"), a.source || "-"],
      [t("date"), a.date || "-"]].concat(a.notes ? [[t("notes"), a.notes]] : []));
    const ex = doc.explain || {};
    const when = be === null || be === undefined ? t("renting never costs as much as buying")
      : t("renting has cost as much as buying after {years} years", { years: be.toFixed(2) });
    const time = num("cost", when, t("Break-even in time"), [ex.break_even_years].concat(sources));
    $("#cost-verdict").innerHTML = doc.break_even_utilisation !== null
      ? th("{verdict}. {time}; break-even utilisation {utilisation}.", { verdict: esc(doc.verdict),
        time: time, utilisation: num("cost", pct(doc.break_even_utilisation), t("Break-even utilisation"),
          [ex.break_even_utilisation].concat(sources)) })
      : th("{verdict}. {time}.", { verdict: esc(doc.verdict), time: time });
    const cols = series.map((x) => x[1]);
    $("#cost-table").innerHTML = "<table id=\"cost\"><thead><tr><th>" + esc(t("year")) + "</th>" +
      series.map((x) => '<th class="r">' + esc(w(x[0])) + "</th>").join("") + "</tr></thead><tbody>" +
      doc.per_year.map((row) => "<tr><td>" + row.year + "</td>" + cols.map((key, j) =>
        '<td class="r">' + num("cost", money(row[key]), t("{series}, cumulative to year {year}",
          { series: w(series[j][0]), year: row.year }),
          [ex[key] || t("cumulative cost to this year")].concat(sources)) + "</td>").join("") +
        "</tr>").join("") + "</tbody></table>";
  }

  // --- the verdict ----------------------------------------------------------------------------
  function renderVerdict(f) {
    const mem = state.last.memory;
    const perf = state.last.perf;
    const plan = state.last.plan;
    const parts = [];
    if (mem) {
      const yes = mem.fits.filter((x) => x.fits).map((x) => x.gpu);
      const no = mem.fits.filter((x) => !x.fits).map((x) => x.gpu);
      const on = { yes: esc(yes.join(", ")), no: esc(no.join(", ")) };
      const fit = yes.length
        ? (no.length ? th("fits on {yes}; does not fit on {no}", on) : th("fits on {yes}", on))
        : (no.length ? th("fits on none of the cards; does not fit on {no}", on)
          : th("fits on none of the cards", on));
      const needs = { model: esc(f.model), task: esc(taskName(f.task)), fit: fit, gpus: f.gpus,
        memory: "<strong>" + gib(mem.total_bytes) + "</strong>" };
      parts.push(f.gpus > 1 ? th("{model} {task} needs {memory} per GPU ({gpus} GPUs): {fit}.", needs)
        : th("{model} {task} needs {memory} per GPU: {fit}.", needs));
    }
    const blocked = perf ? cannotRun(perf, mem) : null;
    if (blocked) {
      // No speed and no time for a job that cannot run: say so, and what to change.
      const head = { gpu: esc(perf.gpu) };
      const it = "<strong class=\"no\">" + (blocked === "does not fit"
        ? th("It does not fit on {gpu}", head) : th("It is not supported on {gpu}", head)) + "</strong>";
      parts.push(perf.warnings && perf.warnings.length
        ? th("{it}: {warnings}.", { it: it, warnings: perf.warnings.map((x) => esc(x)).join(" ") })
        : th("{it} as given.", { it: it }));
    } else if (perf) {
      const v = { gpu: esc(perf.gpu), rate: rate(perf.tokens_per_s), tpot: dur(perf.tpot_s),
        bound: esc(w(perf.bound)), time: dur(perf.time_to_train_s) };
      parts.push(f.task === "infer" ? th("On {gpu}: {rate} tokens/s, {tpot} per output token.", v)
        : perf.time_to_train_s ? th("On {gpu}: {rate} tokens/s ({bound}-bound), {time} to train.", v)
          : th("On {gpu}: {rate} tokens/s ({bound}-bound).", v));
    }
    if (plan && plan.rows && plan.rows.length && plan.rows[0].fits) {
      parts.push(th("Best in the catalog: {gpu} ({layout}).", {
        gpu: "<strong>" + esc(plan.rows[0].gpu) + "</strong>",
        layout: esc(layoutText(plan.rows[0], plan.task === "infer")) }));
    }
    $("#verdict").innerHTML = parts.join(" ");
  }
  // Why a speed answer cannot run as given ("does not fit", "not supported"), or null when it can.
  // The memory answer's verdict for the same card counts too, so the headline never says a card
  // does not fit and then gives its speed.
  function blockedOn(blocked, gpu) {
    return blocked === "does not fit" ? t("does not fit on {gpu}", { gpu: gpu })
      : t("not supported on {gpu}", { gpu: gpu });
  }
  function cannotRun(perf, mem) {
    if (perf.supported === false) return "not supported";
    if (perf.fits === false) return "does not fit";
    const fit = mem && mem.fits ? mem.fits.find((x) => x.gpu === perf.gpu) : null;
    if (fit && !fit.fits) return "does not fit";
    return null;
  }
  function taskName(task) {
    return { lora: t("LoRA fine-tune"), qlora: t("QLoRA fine-tune"), full: t("full fine-tune"),
      pretrain: t("pretraining"), infer: t("inference") }[task] || task;
  }

  // --- refresh: debounced, stale answers dropped -----------------------------------------------
  let timer = null;
  let controller = null;
  function schedule() {
    clearTimeout(timer);
    state.pending = true;
    timer = setTimeout(refresh, 300);
  }
  // An error: the API's sentence (in the page's language).
  function setError(card, message) {
    const el = document.querySelector("#" + card + " .error");
    el.textContent = message || "";
    el.hidden = !message;
    document.getElementById(card).classList.toggle("failed", Boolean(message));
  }
  async function refresh() {
    state.pending = false;
    const gen = ++state.gen;
    if (controller) controller.abort();
    controller = new AbortController();
    const signal = controller.signal;
    const f = readForm();
    const req = requests(f);
    state.lastRequests = req;
    document.body.dataset.ready = "";
    $("#status").className = "busy";
    $("#status").textContent = "";
    describeModel();
    const done = (name) => (doc) => {
      if (gen !== state.gen) return;
      state.last[name] = doc;
    };
    const fail = (card, name) => async (err) => {
      if (gen !== state.gen || err.name === "AbortError") return;
      state.last[name] = null;
      setError(card, err.message);
    };
    state.lastForm = f;
    const memory = api("/api/memory", req.memory, signal).then(done("memory"))
      .then(() => {
        if (gen === state.gen) { setError("mem-card"); renderMemory(state.last.memory); }
      }).catch(fail("mem-card", "memory"));
    const perf = api("/api/perf", req.perf, signal).then(done("perf")).then(() => {
      if (gen === state.gen) { setError("speed-card"); renderPerf(state.last.perf, f); }
    }).catch(fail("speed-card", "perf"));
    const plan = api("/api/plan", req.plan, signal).then(done("plan")).then(() => {
      if (gen === state.gen) { setError("plan-card"); renderPlan(state.last.plan, f); }
    }).catch(fail("plan-card", "plan"));
    // The API line of the cost chart needs the tokens this setup produces (inference).
    const cost = perf.then(() => {
      const p = state.last.perf;
      const preset = state.presets.find((x) => x.name === f.model);
      if (f.task === "infer" && p && !cannotRun(p) && preset && preset.api_priced) {
        req.cost.tokens_per_year = p.tokens_per_s * 3600 * 8760 * f.utilisation;
        req.cost.api = preset.name;
      }
      return api("/api/cost", req.cost, signal);
    }).then(done("cost")).then(() => {
      if (gen === state.gen) { setError("cost-card"); renderCost(state.last.cost); }
    }).catch(fail("cost-card", "cost"));
    await Promise.allSettled([memory, perf, plan, cost]);
    if (gen !== state.gen) return;
    renderVerdict(f);
    $("#status").className = "";
    state.updated = new Date();
    $("#status").textContent = t("updated {time}", { time: state.updated.toLocaleTimeString() });
    document.body.dataset.ready = String(gen);
  }

  // --- live ----------------------------------------------------------------------------------
  function renderLive(doc) {
    const at = (doc.time - state.live.start);
    state.live.samples.push({ t: at, samples: doc.samples });
    if (state.live.samples.length > LIVE_POINTS) state.live.samples.shift();
    const devices = doc.samples.map((s) => s.index + ": " + s.name);
    const series = (field, scale) => devices.map((label, i) => ({
      label: label,
      data: state.live.samples.map((p) => ({
        x: p.t, y: p.samples[i] && p.samples[i][field] !== null ? p.samples[i][field] * scale : null,
      })),
      pointRadius: 0, borderWidth: 2, spanGaps: true,
    }));
    const make = (id, title, field, scale, unit) => chart(id, {
      type: "line",
      data: { datasets: series(field, scale) },
      options: baseOptions({
        parsing: false,
        scales: { x: { type: "linear", title: { display: true, text: t("seconds") } },
          y: { beginAtZero: true, title: { display: true, text: unit } } },
        plugins: { title: { display: true, text: title } },
      }),
    });
    make("live-util", t("Utilisation"), "utilization_pct", 1, "%");
    make("live-mem", t("Memory used"), "memory_used_bytes", 1 / GiB, "GiB");
    make("live-power", t("Power"), "power_w", 1, "W");
    make("live-temp", t("Temperature"), "temperature_c", 1, "°C");
    $("#live-note").textContent = doc.note ? w(doc.note)
      : t("{n} device(s), every 2 s", { n: doc.samples.length });
    $("#live-table").innerHTML = "<table><thead><tr><th>#</th><th>" + esc(t("name")) +
      "</th><th class=\"r\">" + esc(t("util")) + "</th><th class=\"r\">" + esc(t("memory")) +
      "</th><th class=\"r\">" + esc(t("power")) + "</th><th class=\"r\">" + esc(t("temp")) +
      "</th><th>" + esc(t("flags")) + "</th>" +
      "</tr></thead><tbody>" + doc.samples.map((s) => "<tr><td>" + s.index + "</td><td>" +
        esc(s.name) + '</td><td class="r">' + (s.utilization_pct === null ? "N/A" : s.utilization_pct + "%") +
        '</td><td class="r">' + (s.memory_total_bytes ? gib(s.memory_used_bytes) + " / " +
          gib(s.memory_total_bytes) : "N/A") + '</td><td class="r">' +
        (s.power_w === null ? "N/A" : s.power_w.toFixed(0) + " W") + '</td><td class="r">' +
        (s.temperature_c === null ? "N/A" : s.temperature_c.toFixed(0) + " °C") + "</td><td>" +
        esc((s.flags || []).map((x) => x.kind + ": " + w(x.message)).join("; ")) + "</td></tr>").join("") +
      "</tbody></table>";
  }
  async function pollLive() {
    try {
      const doc = await api("/api/live");
      if (state.live.start === null) state.live.start = doc.time;
      renderLive(doc);
    } catch (err) {
      $("#live-note").textContent = err.message;
    }
  }
  function showTab(name) {
    document.querySelectorAll(".tab[data-tab]").forEach((b) => {
      b.classList.toggle("active", b.dataset.tab === name);
    });
    document.querySelectorAll(".view").forEach((view) => {
      view.hidden = view.id !== "tab-" + name;
    });
    clearInterval(state.live.timer);
    if (name === "live") {
      pollLive();
      state.live.timer = setInterval(pollLive, 2000);
    }
  }
  document.querySelectorAll(".tab[data-tab]").forEach((b) => {
    b.addEventListener("click", () => showTab(b.dataset.tab));
  });

  // --- start ---------------------------------------------------------------------------------
  async function start() {
    const [options, presetDoc, gpuDoc] = await Promise.all([
      api("/api/options"), api("/api/presets"), api("/api/gpus"),
    ]);
    const presets = presetDoc.models;
    const gpus = gpuDoc.gpus;
    state.options = options;
    state.presets = presets;
    state.gpus = gpus;
    // Every default comes from the server's one declaration (GET /api/options "defaults"), the
    // one the command line and the API use: the page has no defaults of its own.
    const d = options.defaults || {};
    for (const id of ["model", "task", "seq", "context", "output"]) {
      if (d[id] !== undefined && d[id] !== null) $("#" + id).value = d[id];
    }
    fill($("#dtype"), options.dtypes, d.dtype);
    labelSelects(d.precision, d.framework, d.quant);
    fill($("#optimizer"), options.optimizers, d.optimizer);
    // recompute "auto": the lightest recomputation that fits the first card, as mem and card.
    fill($("#recompute"), options.recompute, d.recompute);
    for (const id of ["precision", "recompute", "zero", "context", "kv_dtype"]) {
      const el = $("#" + id);
      if (el) el.addEventListener("change", () => { el.dataset.touched = "1"; });
    }
    fill($("#kv_dtype"), options.kv_dtypes, d.kv_dtype);
    $("#preset-list").innerHTML = presets.map((p) =>
      '<option value="' + esc(p.name) + '">' + esc(p.hf_id) + "</option>").join("");
    $("#gpu-list").innerHTML = gpus.map((g) =>
      '<option value="' + esc(g.id) + '">' + esc(g.name) + "</option>").join("");
    state.cards = state.cards.filter((id) => gpus.some((g) => g.id === id));
    if (!state.cards.length && gpus.length) state.cards = [gpus[0].id];
    renderChips();
    syncTask();
    const form = $("#form");
    form.addEventListener("input", (ev) => {
      if (ev.target.id === "gpu-add" || ev.target.id === "upload") return;
      if (ev.target.id === "task") syncTask();
      schedule();
    });
    form.addEventListener("change", (ev) => {
      if (ev.target.id === "task") { syncTask(); schedule(); }
    });
    form.addEventListener("submit", (ev) => ev.preventDefault());
    refresh();
    try {
      state.machine = await api("/api/live");
      $("#live-tab").hidden = !state.machine.gpus;
      describeMachine();
    } catch (err) {
      $("#machine").textContent = "";
    }
  }
  // The choices whose labels are words: written again in the page's language.
  function labelSelects(precision, framework, quant) {
    const options = state.options;
    fill($("#precision"), options.precisions.map((p) => [p, p === "mixed"
      ? t("mixed (fp32 master weights)") : t("pure (all in dtype)")]), precision);
    fill($("#framework"), (options.frameworks || [{ id: "hf", name: "Hugging Face" }]).map(
      (fw) => [fw.id, fw.kind === "serve" ? t("{name} (serving)", { name: fw.name }) : fw.name]), framework);
    fill($("#quant"), options.quant.map((q) => [q.id, t("{name} ({bits} bits)",
      { name: q.name, bits: q.bits_per_weight })]), quant);
  }
  function describeMachine() {
    const live = state.machine;
    if (!live) return;
    const cpu = live.samples[0];
    $("#machine").textContent = live.gpus
      ? t("{n} GPU(s) on this machine: see Live GPUs.", { n: live.samples.length })
      : cpu ? t("No GPU found on this machine ({cpu}); the Live tab appears when one is.", { cpu: cpu.name })
        : t("No GPU found on this machine; the Live tab appears when one is.");
  }
  // Switching the language: the labels at once, then the answers asked for again in it (their
  // sentences are written by the server, in the language each request names).
  async function relabel() {
    if (!state.options) return;
    labelSelects($("#precision").value, $("#framework").value, $("#quant").value);
    syncTask();
    renderChips();
    describeModel();
    describeMachine();
    if (state.lastForm) await refresh();
  }
  window.suanliI18n.onChange(relabel);
  window.suanliI18n.ready.then(start).catch((err) => {
    $("#status").textContent = t("cannot reach the suanli server: {error}", { error: err.message });
  });
})();
