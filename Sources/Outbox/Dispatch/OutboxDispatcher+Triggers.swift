import Foundation
import Logging
import OutboxStorage

/// What starts a drain: the lifecycle (start, stop), connectivity, the app
/// becoming active, pause and resume.
extension OutboxDispatcher {
    /// Flushes now (the cold-start trigger) and follows `connectivity`.
    /// After ``stop()``, starts again (and sends what was recorded meanwhile).
    ///
    /// With a monitor, the cold-start flush waits for its first answer (the
    /// current state), so nothing is attempted while the device is offline.
    public func start(connectivity: (any ConnectivityMonitor)? = nil) {
        guard lifecycle != .started else { return }
        lifecycle = .started
        startSnapshots()
        defer { feed.publishQueueChange() }
        guard let connectivity else {
            online = true
            poke()
            return
        }
        online = false  // until the monitor says otherwise
        monitorTask = Task { [weak self] in
            var first = true
            for await isOnline in connectivity.updates() {
                if first {
                    first = false
                    await self?.coldStart(isOnline: isOnline)
                } else {
                    await self?.connectivityChanged(isOnline: isOnline)
                }
            }
        }
    }

    func coldStart(isOnline: Bool) {
        online = isOnline
        feed.publishQueueChange()
        if isOnline { Task { await self.backOnline() } }
    }

    /// Stops: no new attempt starts, running attempts are cancelled (each
    /// is recorded as interrupted and resent later with the same key), the
    /// timer and the connectivity subscription end, and so does every event
    /// stream. Returns once the running drain has recorded its attempts, or
    /// at once if the calling task is cancelled. ``start(connectivity:)``
    /// starts again.
    public func stop() async {
        lifecycle = .stopped
        monitorTask?.cancel()
        monitorTask = nil
        timer?.task.cancel()
        timer = nil
        for sleeper in sleepers { sleeper.signal() }  // a drain(until:) waiting for a retry time ends
        if let running {
            running.task.cancel()
            _ = await valueUnlessCancelled(of: running.task)
        }
        await stopSnapshots()
        eventPublisher.finish()
        feed.publishQueueChange()
    }

    /// Connectivity changed: offline stops new attempts; online flushes.
    public func connectivityChanged(isOnline: Bool) {
        guard online != isOnline else { return }
        online = isOnline
        feed.publishQueueChange()
        logger.debug("connectivity changed", metadata: ["online": "\(isOnline)"])
        if isOnline { Task { await self.backOnline() } }
    }

    /// The app came to the foreground: a good time to retry.
    public func appDidBecomeActive() { poke() }

    /// Stops starting attempts (running ones finish) until ``resume()`` —
    /// whatever else happens meanwhile: enqueues, retry times, the network
    /// coming back, ``flush()``, ``drain(until:)`` and a ``stop()``/``start(connectivity:)``
    /// cycle all leave it paused. Enqueues are still recorded. ``isPaused``
    /// tells; ``queueUpdates()`` shows it.
    public func pause() {
        paused = true
        feed.publishQueueChange()
    }

    /// Resumes after ``pause()``: flushes, and the retry timer runs again.
    public func resume() {
        paused = false
        feed.publishQueueChange()
        poke()
    }
}
