/// The inspector's page: plain HTML and CSS here, its script in
/// `InspectorPage+Script.swift`. Served as three files from the same
/// origin, so that the page's content-security policy can forbid inline
/// script and every other origin: a failure message or a reason the
/// server wrote is put on the page as text, never as markup.
enum InspectorPage {
    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>outbox inspect</title>
        <link rel="stylesheet" href="/inspector.css">
        </head>
        <body>
        <header>
          <h1>Outbox queue <span id="queue"></span></h1>
          <p><span id="dispatcher" class="badge"></span> <span id="source"></span> <span id="updated"></span></p>
          <p id="stalled" class="alert" hidden></p>
          <p id="error" class="alert" hidden></p>
        </header>
        <section id="counts" aria-label="Entries by state"></section>
        <p id="rates"></p>
        <section>
          <h2 id="chart-title">Delivered per second and attempt latency</h2>
          <svg id="chart" viewBox="0 0 640 180" role="img" aria-label="drain rate and latency"></svg>
          <p class="legend"><span class="key delivered"></span> delivered/s <span class="key failed"></span> failed/s
            <span class="key p50"></span> latency p50 <span class="key p95"></span> latency p95</p>
        </section>
        <section>
          <h2>Oldest waiting writes</h2>
          <table id="waiting"><thead><tr><th>entry</th><th>state</th><th>enqueued</th><th>why it waits</th></tr></thead>
          <tbody></tbody></table>
          <p id="waiting-none" class="quiet" hidden>Nothing waits.</p>
        </section>
        <section id="entry" hidden>
          <h2>Entry <code id="entry-id"></code></h2>
          <p id="entry-error" class="alert" hidden></p>
          <p id="entry-why" class="why"></p>
          <p id="entry-source" class="quiet"></p>
          <dl id="entry-fields"></dl>
          <h3>Recent attempts</h3>
          <table id="entry-attempts"><thead><tr><th>#</th><th>started</th><th>took</th><th>outcome</th><th>failure</th></tr></thead>
          <tbody></tbody></table>
          <p id="entry-attempts-none" class="quiet" hidden>None seen by a draining process.</p>
          <p id="entry-actions"></p>
          <p id="entry-message"></p>
        </section>
        <section>
          <h2>Failures by cause, last 5 minutes</h2>
          <table id="failures"><thead><tr><th>cause</th><th>attempts</th><th>last</th></tr></thead><tbody></tbody></table>
          <p id="failures-none" class="quiet" hidden>No failed attempts.</p>
        </section>
        <section>
          <h2>Recent attempts (the last 25)</h2>
          <table id="attempts"><thead><tr><th>entry</th><th>#</th><th>ended</th><th>took</th><th>outcome</th><th>failure</th></tr></thead>
          <tbody></tbody></table>
          <p id="attempts-none" class="quiet" hidden>No attempt seen by a draining process.</p>
        </section>
        <script src="/inspector.js"></script>
        </body>
        </html>
        """

    static let style = """
        :root { color-scheme: light dark; --ok: #2a9d5c; --bad: #d1495b; --p50: #3a6ea5; --p95: #9b5de5; --line: #8884; }
        body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem auto; max-width: 72rem; padding: 0 1rem; }
        h1 { font-size: 1.3rem; margin: 0 0 .3rem; } h2 { font-size: 1.05rem; margin: 1.6rem 0 .5rem; }
        h3 { font-size: .95rem; } code, td.id { font-family: ui-monospace, monospace; font-size: .85em; }
        .badge { border-radius: .3rem; padding: .1rem .45rem; background: var(--line); font-weight: 600; }
        .badge.running { background: var(--ok); color: white; } .badge.paused, .badge.offline { background: #e9c46a; }
        .alert { border-left: 4px solid var(--bad); padding: .3rem .6rem; background: #d1495b22; }
        #counts { display: flex; flex-wrap: wrap; gap: .6rem; margin-top: 1rem; }
        .count { border: 1px solid var(--line); border-radius: .4rem; padding: .4rem .8rem; min-width: 7rem; }
        .count b { display: block; font-size: 1.5rem; } .count.quarantined b, .count.conflict b { color: var(--bad); }
        table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .25rem .5rem; vertical-align: top; }
        thead th { border-bottom: 1px solid var(--line); font-weight: 600; } tbody tr:nth-child(odd) { background: #8881; }
        a.entry { cursor: pointer; text-decoration: underline dotted; }
        svg { width: 100%; height: auto; border: 1px solid var(--line); border-radius: .4rem; }
        svg .delivered, .key.delivered { fill: var(--ok); background: var(--ok); }
        svg .failed, .key.failed { fill: var(--bad); background: var(--bad); }
        svg .p50 { stroke: var(--p50); fill: none; stroke-width: 1.5; } .key.p50 { background: var(--p50); }
        svg .p95 { stroke: var(--p95); fill: none; stroke-width: 1.5; stroke-dasharray: 4 3; } .key.p95 { background: var(--p95); }
        svg .axis { stroke: var(--line); } svg text { font-size: 10px; fill: currentColor; }
        .key { display: inline-block; width: .8rem; height: .8rem; border-radius: .15rem; margin: 0 .2rem 0 .8rem; }
        .legend, .quiet { color: #888; } .why { font-size: 1.05rem; }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; } dt { color: #888; } dd { margin: 0; }
        button { margin-right: .6rem; padding: .3rem .8rem; }
        """
}
