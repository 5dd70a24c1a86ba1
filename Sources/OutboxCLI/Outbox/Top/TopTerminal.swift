import Dispatch
import Foundation
import OutboxLocking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The terminal under `outbox top`: on a terminal, the alternate screen
/// redrawn in place, `q` or Ctrl-C to quit, and the terminal as it was
/// afterwards; in a pipe, one block of lines per refresh.
final class TopTerminal {
    /// Whether the screen is redrawn in place.
    let fullScreen: Bool
    private let quit = Locked(false)
    private let savedMode: termios?
    private let signals: [any DispatchSourceSignal]

    init(fullScreen: Bool) {
        self.fullScreen = fullScreen
        guard fullScreen else {
            savedMode = nil
            signals = []
            return
        }
        // Keys one at a time, not echoed; Ctrl-C still interrupts (ISIG stays on).
        var mode = termios()
        if isatty(STDIN_FILENO) == 1, tcgetattr(STDIN_FILENO, &mode) == 0 {
            savedMode = mode
            var raw = mode
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
            _ = tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        } else {
            savedMode = nil
        }
        let quit = quit
        signals = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { quit.withLock { $0 = true } }
            source.resume()
            return source
        }
        StandardStreams.write("\u{1B}[?1049h\u{1B}[?25l")
        if savedMode != nil { Self.readKeys(quit) }
    }

    /// Whether the person asked to quit (a `q`, Ctrl-C, SIGTERM).
    var quitting: Bool { quit.withLock { $0 } }

    func show(_ lines: [String]) {
        if fullScreen {
            StandardStreams.write("\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\n") + "\n\u{1B}[J")
        } else {
            StandardStreams.write(lines.joined(separator: "\n") + "\n\n")
        }
    }

    /// Waits `interval`, or less if the person quits meanwhile.
    func wait(_ interval: Duration) async {
        let deadline = ContinuousClock.now + interval
        while !quitting, ContinuousClock.now < deadline {
            try? await Task.sleep(for: min(.milliseconds(50), deadline - ContinuousClock.now))
        }
    }

    /// Puts the terminal back as it was.
    func restore() {
        guard fullScreen else { return }
        for source in signals { source.cancel() }
        StandardStreams.write("\u{1B}[?25h\u{1B}[?1049l")
        if var mode = savedMode { _ = tcsetattr(STDIN_FILENO, TCSANOW, &mode) }
    }

    /// Reads keys on a thread of its own (a blocking read, never on the
    /// cooperative pool) until `q`, or the end of standard input.
    private static func readKeys(_ quit: Locked<Bool>) {
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(STDIN_FILENO, &byte, 1) == 1 {
                if byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") {
                    quit.withLock { $0 = true }
                    return
                }
            }
        }
    }
}
