import Testing

/// Every end-to-end suite is nested here so they run one at a time: libjack keeps process-wide
/// state, so one test process must not talk to two servers at once.
@Suite("End to end", .serialized)
enum EndToEnd {}
