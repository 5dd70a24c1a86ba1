import Foundation
import OutboxLocking

/// Chromium without a screen, driven over the DevTools protocol through a
/// pipe (`--remote-debugging-pipe`: messages are JSON, each ended by a NUL
/// byte, on descriptors 3 and 4): a page is opened, its script runs, and a
/// test reads what a person would see, types nothing, and takes its picture.
final class HeadlessBrowser: @unchecked Sendable {
    private let process = Process()
    private let toBrowser = Pipe()
    private let profile: URL
    private let state = Locked<(buffer: Data, nextID: Int, waiting: [Int: CheckedContinuation<Data, any Error>], ended: Bool)>(
        (Data(), 1, [:], false))

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Chromium's path: `CHROMIUM` if set, else Debian's or another usual place; `nil` when none is installed.
    static let executable: String? = {
        let candidates = [ProcessInfo.processInfo.environment["CHROMIUM"]].compactMap { $0 }
            + ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Whether a run must have a browser (CI sets `OUTBOX_REQUIRE_BROWSER=1`):
    /// then a missing one fails the browser tests instead of skipping them.
    static var required: Bool { ProcessInfo.processInfo.environment["OUTBOX_REQUIRE_BROWSER"] == "1" }

    init(width: Int = 1280, height: Int = 1400) throws {
        guard let executable = Self.executable else { throw Failure(description: "no Chromium installed (apt-get install chromium)") }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-chromium-\(UUID().uuidString)")
        let fromBrowser = Pipe()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The shell puts the two pipes where Chromium expects them (3: what it reads, 4: what it writes).
        process.arguments = [
            "-c", #"exec "$0" "$@" 3<&0 4>&1 </dev/null >/dev/null 2>/dev/null"#, executable,
            "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--remote-debugging-pipe", "--user-data-dir=\(profile.path)", "--window-size=\(width),\(height)", "about:blank",
        ]
        process.standardInput = toBrowser
        process.standardOutput = fromBrowser
        fromBrowser.fileHandleForReading.readabilityHandler = { [state] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            let answers = state.withLock { state -> [(CheckedContinuation<Data, any Error>, Result<Data, Failure>)] in
                state.buffer.append(data)
                var answers: [(CheckedContinuation<Data, any Error>, Result<Data, Failure>)] = []
                while let end = state.buffer.firstIndex(of: 0) {
                    let message = state.buffer[state.buffer.startIndex..<end]
                    state.buffer = Data(state.buffer[(end + 1)...])
                    guard let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any],
                        let id = object["id"] as? Int, let waiter = state.waiting.removeValue(forKey: id)
                    else { continue }  // an event, or an answer nobody waits for
                    if let error = object["error"] {
                        answers.append((waiter, .failure(Failure(description: "Chromium refused: \(error)"))))
                    } else {
                        answers.append((waiter, .success(Data(message))))
                    }
                }
                if data.isEmpty {
                    state.ended = true
                    answers += state.waiting.values.map { ($0, .failure(Failure(description: "Chromium ended"))) }
                    state.waiting = [:]
                }
                return answers
            }
            for (waiter, answer) in answers { waiter.resume(with: answer.mapError { $0 as any Error }) }
        }
        try process.run()
    }

    deinit { close() }

    /// Ends the browser and removes its profile.
    func close() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: profile)
    }

    /// Sends one command and returns its `result`.
    func call(_ method: String, _ params: [String: Any] = [:], session: String? = nil) async throws -> [String: Any] {
        var message: [String: Any] = ["method": method, "params": params]
        if let session { message["sessionId"] = session }
        let answer: Data = try await withCheckedThrowingContinuation { continuation in
            let id = state.withLock { state -> Int? in
                guard !state.ended else { return nil }
                defer { state.nextID += 1 }
                state.waiting[state.nextID] = continuation
                return state.nextID
            }
            guard let id else { return continuation.resume(throwing: Failure(description: "Chromium ended")) }
            message["id"] = id
            do {
                var bytes = try JSONSerialization.data(withJSONObject: message)
                bytes.append(0)
                try toBrowser.fileHandleForWriting.write(contentsOf: bytes)
            } catch {
                if let waiter = state.withLock({ $0.waiting.removeValue(forKey: id) }) { waiter.resume(throwing: error) }
            }
        }
        let object = try JSONSerialization.jsonObject(with: answer) as? [String: Any]
        return object?["result"] as? [String: Any] ?? [:]
    }

    /// Opens `url` in a new tab; returns the session that talks to it.
    func open(_ url: URL) async throws -> String {
        let target = try await call("Target.createTarget", ["url": url.absoluteString])
        guard let targetID = target["targetId"] as? String else { throw Failure(description: "no tab: \(target)") }
        let attached = try await call("Target.attachToTarget", ["targetId": targetID, "flatten": true])
        guard let session = attached["sessionId"] as? String else { throw Failure(description: "no session: \(attached)") }
        return session
    }

    /// The value of a JavaScript expression in the page, as a string (`""` for `null`).
    func text(_ expression: String, session: String) async throws -> String {
        let result = try await call(
            "Runtime.evaluate", ["expression": "String((() => { try { return \(expression) } catch (e) { return null } })() ?? '')", "returnByValue": true],
            session: session)
        return (result["result"] as? [String: Any])?["value"] as? String ?? ""
    }

    /// Waits until `expression` is true in the page: the page itself checks
    /// it at every change of its document (a `MutationObserver`) and answers
    /// the one awaited call, so nothing here polls or sleeps. `limit` (the
    /// page's own timer) only guards against a page that never gets there.
    /// A document replaced meanwhile (the first load) is waited on again.
    func wait(until expression: String, session: String, limit: Duration = .seconds(240)) async throws {
        let script = """
            new Promise((resolve) => {
              const holds = () => { try { return Boolean(\(expression)) } catch (e) { return false } };
              if (holds()) return resolve("true");
              const observer = new MutationObserver(() => { if (holds()) { observer.disconnect(); resolve("true"); } });
              observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
              setTimeout(() => { observer.disconnect(); resolve(holds() ? "true" : "limit"); }, \(limit.components.seconds * 1000));
            })
            """
        while true {
            let result: [String: Any]
            do {
                result = try await call(
                    "Runtime.evaluate", ["expression": script, "awaitPromise": true, "returnByValue": true], session: session)
            } catch let failure as Failure where failure.description.contains("context") || failure.description.contains("navigated") {
                continue  // the document the observer watched was replaced: watch the new one
            }
            if (result["result"] as? [String: Any])?["value"] as? String == "true" { return }
            let shown = try await text("document.body.innerText", session: session)
            throw Failure(description: "the page never got to \(expression); it shows:\n\(shown)")
        }
    }

    /// The page as a PNG.
    func screenshot(session: String) async throws -> Data {
        let shot = try await call("Page.captureScreenshot", ["format": "png", "captureBeyondViewport": true], session: session)
        guard let base64 = shot["data"] as? String, let png = Data(base64Encoded: base64) else {
            throw Failure(description: "no screenshot")
        }
        return png
    }
}
