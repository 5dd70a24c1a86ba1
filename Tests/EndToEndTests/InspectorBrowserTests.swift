import CLITestSupport
import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import Testing

/// `outbox inspect` in a real browser (headless Chromium): the page shows
/// the counts of a queue the test filled, follows it while another process
/// drains it, explains a write stuck behind a quarantined parent, and with
/// `--allow-actions` retries that parent from its button.
@Suite(
    "outbox inspect in a browser", .serialized, .timeLimit(.minutes(5)),
    .enabled(if: HeadlessBrowser.executable != nil || HeadlessBrowser.required, "no Chromium installed"))
struct InspectorBrowserTests {
    @Test("the page shows the queue's counts, follows another process's drain, and explains the stuck write")
    func followsADrain() async throws {
        let (root, parent, child) = try await InspectorFixture.stuckQueue(count: 24)
        let inspector = try await InspectorFixture.inspect(root)
        let browser = try HeadlessBrowser()
        defer { browser.close() }
        let page = try await browser.open(inspector.baseURL)
        try await browser.wait(until: "document.getElementById('count-pending').textContent === '26'", session: page)
        #expect(try await browser.text("document.getElementById('dispatcher').textContent", session: page) == "stopped")

        // Another process drains it, each request held 150 ms: the page must follow without being reloaded.
        let server = try await ReferenceServer.start(keyStore: InMemoryIdempotencyKeyStore(), latency: ServerLatency(base: .milliseconds(150)))
        async let drained = InspectorFixture.drain(root, server)
        try await browser.wait(until: "document.getElementById('dispatcher').textContent === 'running'", session: page)
        try await browser.wait(until: "document.querySelectorAll('#attempts tbody tr').length > 0", session: page)
        let run = try await drained
        #expect(run.status == 3, "the refused write and its dependent need attention: \(run.stderr)")
        try await browser.wait(
            until: "document.getElementById('delivered-recent').textContent === '24' && "
                + "document.getElementById('count-pending').textContent === '0' && "
                + "document.getElementById('count-quarantined').textContent === '2'", session: page)
        #expect(try await browser.text("document.querySelectorAll('#chart rect.delivered').length > 0", session: page) == "true")
        #expect(try await browser.text("document.getElementById('failures').innerText", session: page).contains("HTTP 422"))

        // The stuck write, chosen by its link in the waiting list (a local: id): why it waits, and that this page offers no action.
        let link = "document.querySelector(\"#waiting a.entry[data-entry$='\(child)']\")"
        #expect(try await browser.text("\(link).dataset.entry", session: page) == "local:\(child)")
        _ = try await browser.text("\(link).click()", session: page)
        try await browser.wait(until: "document.getElementById('entry-id').textContent.endsWith('\(child)')", session: page)
        #expect(try await browser.text("document.getElementById('entry-error').hidden", session: page) == "true")
        let why = try await browser.text("document.getElementById('entry-why').textContent", session: page)
        #expect(why.contains(parent) && why.contains("quarantined"), "\(why)")
        #expect(try await browser.text("document.querySelectorAll('#entry-actions button').length", session: page) == "0")

        if let path = ProcessInfo.processInfo.environment["OUTBOX_INSPECTOR_SCREENSHOT"] {
            try await browser.screenshot(session: page).write(to: URL(fileURLWithPath: path))
        }
        let png = try await browser.screenshot(session: page)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        await inspector.stop()
        await server.stop()
    }

    @Test("with --allow-actions, the page's retry button sends a quarantined parent back to the queue")
    func retriesFromThePage() async throws {
        let (root, parent, child) = try await InspectorFixture.stuckQueue(count: 2)
        let server = try await ReferenceServer.start(keyStore: InMemoryIdempotencyKeyStore())
        #expect(try await InspectorFixture.drain(root, server).status == 3)
        let inspector = try await InspectorFixture.inspect(root, ["--allow-actions"])
        let browser = try HeadlessBrowser()
        defer { browser.close() }
        var address = URLComponents(url: inspector.baseURL, resolvingAgainstBaseURL: false)!
        address.fragment = "entry=\(parent)"
        let page = try await browser.open(address.url!)
        try await browser.wait(until: "document.querySelector('#entry-actions button[data-action=retry]') !== null", session: page)
        _ = try await browser.text("document.querySelector('#entry-actions button[data-action=retry]').click()", session: page)
        try await browser.wait(until: "document.getElementById('entry-message').textContent.startsWith('retry done')", session: page)
        try await browser.wait(until: "document.getElementById('count-pending').textContent === '2'", session: page)
        await inspector.stop()
        let explained = try await OutboxTool.run(["explain", root, child, "--json"])
        #expect(explained.stdout.contains(#""status":"pending""#), "\(explained.stdout)")
        await server.stop()
    }
}
