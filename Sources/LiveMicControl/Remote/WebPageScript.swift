/// The page's script (served as `/app.js`): plain JavaScript, no framework, no build step.
enum WebPageScript {
  static let text = """
    "use strict";
    // LiveMic's web remote: every request is one control-protocol request (POST /api), the live
    // state comes from the feed (GET /events: the socket's stream lines) and a status read once a
    // second while the page is open.
    const $ = (id) => document.getElementById(id);
    const view = { status: null, params: [], keys: "", editing: new Map(), lost: false, presetsFor: null };

    async function api(request) {
      try {
        const answer = await fetch("/api", { method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify(request), credentials: "same-origin" });
        if (answer.status === 401) { location.href = "/"; return { ok: false }; }
        return await answer.json();
      } catch (e) { setLost(true); return { ok: false, error: String(e) }; }
    }

    function setLost(lost) {
      view.lost = lost;
      if (lost) showBanner("lost", "lost LiveMic, retrying");
      else if (view.status) showStatus(view.status);
    }

    function showBanner(state, text) {
      const banner = $("banner");
      banner.dataset.state = state;
      $("banner-text").textContent = text;
    }

    function bannerFor(s) {
      const stages = s.chain || [];
      switch (s.state) {
        case "muted": return ["muted", "muted (" + (s.mute_mode || "ramp") + ")"];
        case "suspended": return ["suspended", "suspended (muted, client off)"];
        case "reconnecting":
          return ["reconnecting", "reconnecting: attempt " + (s.attempt || 0) + ", " +
            (s.lost_seconds || 0).toFixed(1) + " s lost"];
        case "stopping": return ["stopping", "stopping"];
        default:
          if (stages.length && stages.every((st) => st.bypassed || st.id === "output"))
            return ["bypassed", "running, every stage bypassed"];
          return [s.state || "running", s.state || "running"];
      }
    }

    function showStatus(s) {
      view.status = s;
      if (view.lost) return;
      const [state, text] = bannerFor(s);
      showBanner(state, text);
      // While reconnecting no event comes per second: read the attempt and the time lost again.
      if (s.state === "reconnecting") refreshLater(500);
      $("preset-name").textContent = s.preset ? "preset " + s.preset : "";
      const mute = $("mute");
      mute.textContent = s.muted ? "UNMUTE" : "MUTE";
      mute.classList.toggle("muted", !!s.muted);
      mute.dataset.muted = s.muted ? "true" : "false";
      const figures = ["xruns " + s.xruns, "DSP load " + (s.dsp_load_percent || 0).toFixed(1) + " %"];
      if (s.loudness) figures.push("M " + fmt(s.loudness.momentary_lufs) + " S " + fmt(s.loudness.shortterm_lufs) +
        " I " + fmt(s.loudness.integrated_lufs) + " LUFS");
      const notches = view.values && view.values["feedback.active_notches"];
      if (notches !== undefined) figures.push("feedback notches " + notches);
      $("figures").textContent = figures.join(" · ");
      const recordings = s.recordings || [];
      $("record").textContent = recordings.length ? "Stop recording" : "Start recording";
      $("record").dataset.recording = recordings.length ? "true" : "false";
      $("recordings").replaceChildren(...recordings.map((r) => {
        const li = document.createElement("li");
        li.textContent = r.path + " — " + r.seconds.toFixed(1) + " s (" + r.format + ", " + r.tap + ")";
        return li;
      }));
      const st = s.stream;
      $("stream").textContent = st && st.path ? "stream " + st.path + (st.open ? " open" : " waiting for a reader") +
        ", " + st.frames + " frames" : "no stream";
      for (const stage of s.chain || []) {
        const b = document.querySelector('.bypass[data-stage="' + stage.id + '"]');
        if (b && !view.editing.has(stage.id + ".bypass")) setToggle(b, stage.bypassed);
      }
      if (view.presetsFor !== s.preset) loadPresets();
    }

    function fmt(x) { return x === undefined || x <= -199 ? "–" : Number(x).toFixed(1); }

    async function refreshStatus() {
      const s = await api({ cmd: "status" });
      if (s.ok) { if (view.lost) setLost(false); showStatus(s); }
    }

    async function refreshValues() {
      const answer = await api({ cmd: "get", describe: true });
      if (!answer.ok) return;
      view.values = answer.values;
      const keys = answer.parameters.map((p) => p.key).join(",");
      if (keys !== view.keys) { view.keys = keys; view.params = answer.parameters; build(); }
      for (const p of answer.parameters) {
        if (view.editing.has(p.key)) continue;
        const el = document.querySelector('[data-key="' + p.key + '"]');
        if (el) showValue(el, p, p.value);
      }
    }

    async function refreshRoute() {
      const r = await api({ cmd: "route" });
      if (!r.ok) return;
      const effective = Array.isArray(r.effective) ? r.effective.join(", ") : (r.effective || "nothing");
      $("route-effective").textContent = "target: " + effective + (r.override ? " (override)" : "") +
        " · requested: " + (r.requested || "");
      const select = $("route-candidates");
      const names = (r.candidates || []).map((c) => Array.isArray(c) ? c.join(",") : String(c));
      if (select.dataset.names !== names.join(";")) {
        select.dataset.names = names.join(";");
        select.replaceChildren(...names.map((n) => new Option(n, n)));
      }
    }

    async function loadPresets() {
      view.presetsFor = view.status ? view.status.preset : null;
      const answer = await api({ cmd: "preset", action: "list" });
      if (!answer.ok) return;
      const select = $("preset-list");
      select.replaceChildren(...answer.presets.filter((p) => !p.error).map((p) => {
        const o = new Option(p.name, p.name);
        o.title = p.description || "";
        return o;
      }));
      select.value = answer.preset;
    }

    // Controls, built from the parameter descriptions `get` gives with "describe": true.
    function label(p) { return p.name + (p.unit ? " (" + p.unit + ")" : ""); }

    function showValue(el, p, value) {
      if (el.classList.contains("toggle")) setToggle(el, value >= 0.5);
      else if (el.tagName === "SELECT") el.value = String(value);
      else if (el.tagName === "INPUT") { el.value = value; }
      const out = document.querySelector('[data-out="' + p.key + '"]');
      if (out) out.textContent = p.kind === "toggle" ? (value >= 0.5 ? "on" : "off") : round(value);
    }

    function round(v) { return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2); }

    function setToggle(el, on) { el.classList.toggle("on", on); el.setAttribute("aria-pressed", on ? "true" : "false");
      if (el.classList.contains("bypass")) el.textContent = on ? "bypassed" : "active"; else el.textContent = on ? "on" : "off"; }

    const pending = new Map();
    function send(key, value) {
      view.editing.set(key, Date.now());
      if (pending.has(key)) { pending.get(key).value = value; return; }
      const entry = { value };
      pending.set(key, entry);
      const flush = async () => {
        const v = entry.value;
        await api({ cmd: "set", key, value: v });
        if (entry.value !== v) return flush();
        pending.delete(key);
        setTimeout(() => { if (Date.now() - (view.editing.get(key) || 0) >= 900) view.editing.delete(key); }, 1000);
      };
      flush();
    }

    function control(p) {
      const row = document.createElement("div");
      row.className = "control";
      const id = "p-" + p.key.replace(/[^A-Za-z0-9_-]/g, "_");
      const name = document.createElement("label");
      name.textContent = label(p);
      name.htmlFor = id;
      name.title = p.summary || "";
      row.append(name);
      let el;
      if (p.kind === "output") {
        el = document.createElement("span");
        el.className = "value";
      } else if (p.kind === "toggle") {
        el = document.createElement("button");
        el.type = "button";
        el.className = "toggle";
        el.addEventListener("click", () => { const on = !el.classList.contains("on"); setToggle(el, on); send(p.key, on ? 1 : 0); });
      } else if (p.kind === "choice") {
        el = document.createElement("select");
        for (const c of p.choices) el.append(new Option(round(c), String(c)));
        el.addEventListener("change", () => send(p.key, Number(el.value)));
      } else {
        el = document.createElement("input");
        el.type = "range";
        el.min = p.min; el.max = p.max;
        el.step = p.kind === "integer" ? 1 : (p.max - p.min) / 500;
        el.addEventListener("input", () => {
          const out = document.querySelector('[data-out="' + p.key + '"]');
          if (out) out.textContent = round(Number(el.value));
          send(p.key, Number(el.value));
        });
      }
      el.id = id;
      el.dataset.key = p.key;
      row.append(el);
      const out = document.createElement("output");
      out.dataset.out = p.key;
      row.append(out);
      if (p.kind === "output") { el.dataset.out = p.key; out.remove(); }
      showValue(el, p, p.value);
      return row;
    }

    function build() {
      const levelsStages = ["output", "music", "monitor"];
      const levels = $("levels");
      levels.replaceChildren();
      const stages = $("stages");
      stages.replaceChildren();
      const byStage = new Map();
      for (const p of view.params) {
        if (!byStage.has(p.stage)) byStage.set(p.stage, []);
        byStage.get(p.stage).push(p);
      }
      for (const [stage, params] of byStage) {
        if (levelsStages.includes(stage)) {
          for (const p of params) if (p.name !== "bypass") levels.append(control(p));
        }
        const details = document.createElement("details");
        details.className = "stage";
        const summary = document.createElement("summary");
        const title = document.createElement("span");
        title.textContent = stage;
        summary.append(title);
        const bypass = params.find((p) => p.name === "bypass");
        if (bypass) {
          const b = document.createElement("button");
          b.type = "button";
          b.className = "toggle bypass";
          b.dataset.stage = stage;
          b.dataset.key = bypass.key;
          setToggle(b, bypass.value >= 0.5);
          b.addEventListener("click", (e) => { e.preventDefault(); const on = !b.classList.contains("on"); setToggle(b, on); send(bypass.key, on ? 1 : 0); });
          summary.append(b);
        }
        details.append(summary);
        const box = document.createElement("div");
        box.className = "controls";
        for (const p of params) if (p.name !== "bypass" && !levelsStages.includes(stage)) box.append(control(p));
        details.append(box);
        stages.append(details);
      }
    }

    // Meters: bars from -60 to 0 dBFS, drawn once per animation frame from the latest line.
    let latestMeters = null;
    function meterRow(label, peak, rms) {
      const row = document.createElement("div");
      row.className = "meter";
      const name = document.createElement("span");
      name.textContent = label;
      const bar = document.createElement("div");
      bar.className = "bar";
      const fill = document.createElement("div");
      fill.className = "rms";
      fill.style.width = pct(rms) + "%";
      const mark = document.createElement("div");
      mark.className = "peak";
      mark.style.left = "calc(" + pct(peak) + "% - 3px)";
      bar.append(fill, mark);
      const value = document.createElement("span");
      value.textContent = fmt(peak) + " / " + fmt(rms);
      row.append(name, bar, value);
      return row;
    }
    function pct(db) { return Math.max(0, Math.min(100, (db + 60) / 60 * 100)); }

    function drawMeters() {
      const m = latestMeters;
      latestMeters = null;
      if (!m) return;
      const rows = [];
      (m.input || []).forEach((c, i) => rows.push(meterRow("in " + (i ? "R" : "L"), c.peak_dbfs, c.rms_dbfs)));
      (m.output || []).forEach((c, i) => rows.push(meterRow("out " + (i ? "R" : "L"), c.peak_dbfs, c.rms_dbfs)));
      const meters = $("meters");
      meters.replaceChildren(...rows);
      meters.dataset.outputPeak = m.output && m.output[0] ? m.output[0].peak_dbfs : -200;
      meters.dataset.inputPeak = m.input && m.input[0] ? m.input[0].peak_dbfs : -200;
      meters.dataset.updates = String(Number(meters.dataset.updates || 0) + 1);
      const grs = Object.entries(m.gain_reduction_db || {}).map(([id, db]) => {
        const row = document.createElement("div");
        row.className = "meter gr";
        const name = document.createElement("span");
        name.textContent = id + " GR";
        const bar = document.createElement("div");
        bar.className = "bar";
        const fill = document.createElement("div");
        fill.className = "rms";
        fill.style.width = Math.min(100, db / 20 * 100) + "%";
        bar.append(fill);
        const value = document.createElement("span");
        value.textContent = db.toFixed(1) + " dB";
        row.append(name, bar, value);
        return row;
      });
      $("reductions").replaceChildren(...grs);
    }

    let statusLater = null;
    function refreshLater(ms) { if (!statusLater) statusLater = setTimeout(() => { statusLater = null; refreshStatus(); }, ms); }

    // At most one read per `ms` however many events come (a flood of presets from a script
    // must not make every page flood the door): the first soon, the last one after.
    function throttled(fn, first, ms) {
      let timer = null, last = 0;
      return () => {
        if (timer) return;
        const wait = Math.max(first, last + ms - Date.now());
        timer = setTimeout(() => { timer = null; last = Date.now(); fn(); }, wait);
      };
    }
    const refreshSoon = throttled(refreshStatus, 20, 150);
    const refreshValuesSoon = throttled(refreshValues, 20, 250);

    function onEvent(e) {
      if (e.event === "state-changed" && view.status) {
        showStatus(Object.assign({}, view.status, { state: e.to, mute_mode: e.mute_mode,
          muted: e.to === "muted" || e.to === "suspended" || (view.status.muted && e.to === "reconnecting") }));
      }
      if (e.event === "value-changed" && view.params) {
        // A set from any door (another page, ctl, OSC): that control at once.
        const p = view.params.find((q) => q.key === e.key);
        const el = document.querySelector('[data-key="' + e.key + '"]');
        if (p && el && !view.editing.has(e.key)) showValue(el, p, e.value);
        if (view.values) view.values[e.key] = e.value;
        if (!e.key.endsWith(".bypass")) return;  // a bypass can change the banner: read status
      }
      refreshSoon();
      if (e.event === "preset-loaded" || e.event === "mode-changed") refreshValuesSoon();
      if (e.event === "route-changed") refreshRoute();
    }

    function connectFeed() {
      const feed = new EventSource("/events?topics=meters,events");
      feed.onopen = () => { setLost(false); refreshStatus(); refreshValues(); refreshRoute(); };
      feed.onmessage = (message) => {
        let line;
        try { line = JSON.parse(message.data); } catch (e) { return; }
        if (line.stream === "meters") {
          if (!latestMeters) requestAnimationFrame(drawMeters);
          latestMeters = line;
        } else if (line.stream === "event") onEvent(line);
      };
      feed.onerror = () => {
        setLost(true);
        if (feed.readyState === EventSource.CLOSED) { feed.close(); setTimeout(connectFeed, 1000); }
      };
    }

    $("mute-mode").value = localStorage.getItem("livemic-mute-mode") || "ramp";
    $("mute-mode").addEventListener("change", () => localStorage.setItem("livemic-mute-mode", $("mute-mode").value));
    $("mute").addEventListener("click", async () => {
      const muted = view.status && view.status.muted;
      const answer = await api(muted ? { cmd: "unmute" } : { cmd: "mute", mode: $("mute-mode").value });
      if (answer.ok) refreshStatus();
    });
    $("preset-load").addEventListener("click", async () => {
      await api({ cmd: "preset", action: "load", name: $("preset-list").value });
      refreshStatus(); refreshValues();
    });
    $("record").addEventListener("click", async () => {
      const recording = view.status && (view.status.recordings || []).length;
      await api(recording ? { cmd: "record", action: "stop" } : { cmd: "record", action: "start" });
      refreshStatus();
    });
    $("route-override").addEventListener("click", async () => {
      const target = $("route-candidates").value;
      if (target) await api({ cmd: "route", action: "override", ports: target.split(",") });
      refreshRoute();
    });
    $("route-clear").addEventListener("click", async () => { await api({ cmd: "route", action: "clear" }); refreshRoute(); });

    connectFeed();
    setInterval(() => { if (!document.hidden) refreshStatus(); }, 1000);
    setInterval(() => { if (!document.hidden && !view.lost) refreshValues(); }, 500);
    setInterval(() => { if (!document.hidden && !view.lost) refreshRoute(); }, 3000);

    """
}
