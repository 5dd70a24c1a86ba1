extension InspectorPage {
    /// Follows `/api/queue` (each request held until a newer picture exists)
    /// and draws it; shows one entry's detail when its id is chosen or named
    /// in the address (`#entry=ID`). Everything from the queue is set as
    /// text (`textContent`), never parsed as markup.
    static let script = #"""
        "use strict";
        const STATUSES = ["pending", "inFlight", "waitingToRetry", "quarantined", "conflict", "succeeded"];
        const $ = (id) => document.getElementById(id);
        const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
        // The API answers requests that carry this header only: another site's page cannot send it.
        const api = (path, options = {}) => fetch(path, { ...options, headers: { "X-Outbox-Inspector": "1" } });
        let latest = null;

        function el(tag, text, attributes = {}) {
          const node = document.createElement(tag);
          if (text !== undefined && text !== null) node.textContent = String(text);
          for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
          return node;
        }
        function clock(ms) { return ms == null ? "–" : new Date(ms).toLocaleTimeString(); }
        function millis(value) { return value == null ? "–" : value < 10 ? value.toFixed(1) + " ms" : Math.round(value) + " ms"; }
        function age(seconds) {
          if (seconds < 90) return Math.round(seconds) + " s";
          if (seconds < 5400) return Math.round(seconds / 60) + " min";
          return (seconds / 3600).toFixed(1) + " h";
        }
        function entryLink(id) {
          const link = el("a", id, { class: "entry", href: "#entry=" + id, "data-entry": id });
          return link;
        }
        function fill(tableID, rows, noneID) {
          const body = $(tableID).tBodies[0];
          body.replaceChildren(...rows.map((cells) => {
            const row = el("tr");
            for (const cell of cells) row.append(cell instanceof Node ? el("td").appendChild(cell).parentNode : el("td", cell));
            return row;
          }));
          if (noneID) $(noneID).hidden = rows.length > 0;
          $(tableID).hidden = rows.length === 0;
        }

        function render(view) {
          const s = view.snapshot;
          latest = view;
          $("queue").textContent = view.directory + " · user " + view.user;
          $("dispatcher").textContent = s.dispatcher;
          $("dispatcher").className = "badge " + s.dispatcher;
          $("source").textContent = view.source;
          $("updated").textContent = "· updated " + clock(s.takenAt);
          $("stalled").hidden = s.stalledSince == null;
          $("stalled").textContent = s.stalledSince == null ? "" : "Stalled since " + clock(s.stalledSince) +
            ": due writes have not moved. The oldest waiting writes below say why.";
          const card = (id, css, value, label) => {
            const node = el("div", null, { class: "count " + css });
            node.append(el("b", value, { id }), el("span", label));
            return node;
          };
          // A delivered write leaves the queue: what went out shows as the last five minutes' deliveries.
          const delivered = s.seconds.reduce((sum, second) => sum + second.delivered, 0);
          $("counts").replaceChildren(...STATUSES.filter((status) => status !== "succeeded" || (s.counts.succeeded ?? 0) > 0)
            .map((status) => card("count-" + status, status, s.counts[status] ?? 0, status)),
            card("delivered-recent", "delivered", delivered, "delivered, last 5 min"));
          const unsent = (s.counts.pending ?? 0) + (s.counts.inFlight ?? 0) + (s.counts.waitingToRetry ?? 0);
          $("rates").textContent = "unsent " + unsent +
            (s.oldestUnsentAt == null ? "" : " (oldest " + age((s.takenAt - s.oldestUnsentAt) / 1000) + ")") +
            " · drain " + view.drainRate.toFixed(1) + "/s over 10 s · latency p50 " + millis(s.latencyP50) +
            " p95 " + millis(s.latencyP95) + " over 60 s";
          chart(s);
          fill("waiting", s.waiting.map((w) => [entryLink(w.id), w.status, clock(w.enqueuedAt), w.why]), "waiting-none");
          fill("failures", s.failures.map((f) => [f.cause, f.count, clock(f.lastAt)]), "failures-none");
          fill("attempts", s.attempts.slice(0, 25).map((a) => [entryLink(a.id), a.attempt, clock(a.endedAt),
            millis(a.endedAt - a.startedAt), a.outcome, a.detail ?? ""]), "attempts-none");
        }

        function chart(s) {
          const svg = $("chart"), ns = "http://www.w3.org/2000/svg";
          const width = 600, height = 150, left = 30, top = 10;
          // The last minute when all the activity is in it (a short drain stays readable), else five.
          const span = s.seconds.every((second) => second.at > s.takenAt - 60000) ? 60 : 300;
          const start = s.takenAt - span * 1000;
          const seconds = s.seconds.filter((second) => second.at > start);
          $("chart-title").textContent = "Delivered per second and attempt latency, last " + (span === 60 ? "minute" : "5 minutes");
          const most = Math.max(1, ...seconds.map((second) => second.delivered + second.failed));
          const slowest = Math.max(1, ...seconds.map((second) => second.latencyP95 ?? 0));
          const x = (at) => left + ((at - start) / 1000) * (width / span);
          const shape = (tag, attributes, text) => {
            const node = document.createElementNS(ns, tag);
            for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
            if (text !== undefined) node.textContent = text;
            return node;
          };
          const parts = [
            shape("line", { class: "axis", x1: left, y1: top + height, x2: left + width, y2: top + height }),
            shape("text", { x: 2, y: top + 8 }, String(most) + "/s"),
            shape("text", { x: left + width - 70, y: top + 8 }, millis(slowest)),
            shape("text", { x: left, y: top + height + 14 }, span === 60 ? "1 min ago" : "5 min ago"),
            shape("text", { x: left + width - 20, y: top + height + 14 }, "now"),
          ];
          const barWidth = Math.max(1, width / span - 0.4);
          for (const second of seconds) {
            const delivered = (second.delivered / most) * height, failed = (second.failed / most) * height;
            parts.push(shape("rect", { class: "delivered", x: x(second.at), width: barWidth,
              y: top + height - delivered, height: delivered }));
            if (failed > 0) parts.push(shape("rect", { class: "failed", x: x(second.at), width: barWidth,
              y: top + height - delivered - failed, height: failed }));
          }
          for (const [key, css] of [["latencyP50", "p50"], ["latencyP95", "p95"]]) {
            const points = seconds.filter((second) => second[key] != null)
              .map((second) => x(second.at) + "," + (top + height - (second[key] / slowest) * height));
            if (points.length > 0) parts.push(shape("polyline", { class: css, points: points.join(" ") }));
          }
          svg.replaceChildren(...parts);
        }

        async function showEntry(id) {
          const response = await api("/api/entries/" + encodeURIComponent(id));
          const detail = await response.json();
          $("entry").hidden = false;
          $("entry-error").hidden = response.ok;
          $("entry-error").textContent = response.ok ? "" : "cannot read " + id + ": " + detail.error;
          if (!response.ok) return;
          $("entry-id").textContent = detail.id;
          $("entry-why").textContent = detail.explanation?.why ?? detail.waiting?.why ??
            "Not among the oldest waiting writes of the draining process.";
          $("entry-source").textContent = detail.readFromQueue ? "read from the queue" :
            "the queue is held by the process draining it: what its snapshot says";
          const entry = detail.entry ?? {};
          const fields = [["status", entry.status ?? detail.waiting?.status], ["type", entry.type],
            ["endpoint", entry.method && entry.endpoint ? entry.method + " " + entry.endpoint : undefined],
            ["attempts", entry.attempts], ["scope", entry.scope], ["created", entry.createdAt],
            ["next attempt", detail.explanation?.nextAttemptAt], ["last failure", entry.lastFailure?.message ?? entry.lastFailure?.cause]];
          $("entry-fields").replaceChildren(...fields.filter(([, value]) => value != null)
            .flatMap(([name, value]) => [el("dt", name), el("dd", value)]));
          fill("entry-attempts", detail.attempts.map((a) => [a.attempt, clock(a.startedAt), millis(a.endedAt - a.startedAt),
            a.outcome, a.detail ?? ""]), "entry-attempts-none");
          const status = entry.status ?? detail.waiting?.status;
          const actions = detail.actionsAllowed && status != null && status !== "succeeded" && status !== "inFlight";
          $("entry-actions").replaceChildren(...(actions ? ["retry", "discard"].map((action) => {
            const button = el("button", action, { "data-action": action });
            button.addEventListener("click", () => act(action, detail.id));
            return button;
          }) : []));
        }

        async function act(action, id) {
          if (action === "discard" && !confirm("Discard " + id + "? It will never be sent.")) return;
          const response = await api("/api/entries/" + encodeURIComponent(id) + "/" + action, { method: "POST" });
          const answer = await response.json();
          $("entry-message").textContent = response.ok
            ? action + " done" + (answer.dependents.length ? ", with " + answer.dependents.length + " dependents" : "")
            : action + " refused: " + answer.error;
          await showEntry(id).catch(() => {});
        }

        function chosenEntry() {
          const match = /^#entry=([0-9A-Za-z:._-]+)$/.exec(location.hash);
          return match ? match[1] : null;
        }
        function showChosen() {
          const id = chosenEntry();
          if (id) showEntry(id).catch((error) => {
            $("entry").hidden = false;
            $("entry-error").hidden = false;
            $("entry-error").textContent = "cannot read " + id + ": " + (error.message ?? error);
          });
        }
        window.addEventListener("hashchange", showChosen);
        function report(error) { $("error").hidden = false; $("error").textContent = String(error.message ?? error); }

        async function follow() {
          for (;;) {
            try {
              const after = latest ? "?after=" + latest.snapshot.takenAt : "";
              const response = await api("/api/queue" + after);
              const view = await response.json();
              if (!response.ok) throw new Error(view.error);
              render(view);
              $("error").hidden = true;
            } catch (error) {
              report("cannot read the queue: " + (error.message ?? error));
              await sleep(2000);
            }
            await sleep(250);
          }
        }
        showChosen();
        follow();
        """#
}
