extension Duration {
    /// A retention or timeout as a person says it, for failure messages:
    /// `300 s` as "5 minutes", `90 s` as "90 seconds", `24 h` as "24 hours".
    package var spokenText: String {
        let seconds = components.seconds
        if seconds >= 7200 && seconds % 3600 == 0 { return "\(seconds / 3600) hours" }
        if seconds >= 120 && seconds % 60 == 0 { return "\(seconds / 60) minutes" }
        return "\(seconds) second\(seconds == 1 ? "" : "s")"
    }
}
